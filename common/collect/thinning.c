/* Overload thinning, the collector's part.
 *
 * When a resource brings more samples than can be handled, losing the surplus in bursts (a full
 * ring, PERF_RECORD_LOST) loses them from the bursty code and biases what is left toward calm
 * code. Instead fewer are kept, at random, and each kept sample carries its weight (the 1 in K it
 * was drawn from), so fractions stay unbiased and hits still count gticks / period.
 *
 * The kernel does the fast part (sampling-bpf.c): each CPU's program doubles K within one sample
 * once the CPU keeps more than its budget in a 10 ms window, and halves it after a calm window.
 * What only the collector sees is handled here, on K's floor (the factor):
 *
 *   - a window of sample time (the kernel's timestamps, so a consumer that lags still sees the
 *     true rate) over the budget multiplies the factor by the overshoot rounded up to a power of
 *     two, at most THINNING_MAX_RAISE;
 *   - a loss in the resource's own ring (rings are per resource, so the loser is the flooder),
 *     or a consumer so far behind that the reader's queue is full (then the resource with the
 *     highest rate), doubles it, at most once per THINNING_PRESSURE_NS;
 *   - it halves at most once per THINNING_RELAX_NS, after a window under a quarter of the budget
 *     without loss: a storm that stops and starts again is not sampled at full rate in between
 *     for longer than that. */
#include "thinning.h"

#include "cleanup.h"

void thinning_init(struct thinning *t, uint64_t budget) {
        *t = (struct thinning) { .budget = budget, .factor = 1, .max_factor = 1 };
}

void thinning_changed(struct thinning *t, uint64_t factor, uint64_t now_ns) {
        t->factor = factor;
        t->last_change_ns = now_ns;
        if (factor > t->max_factor)
                t->max_factor = factor;
}

uint64_t thinning_pressure(struct thinning *t, uint64_t now_ns) {
        if (t->budget == 0 || t->factor >= THINNING_MAX_FACTOR ||
            (t->last_change_ns && now_ns < t->last_change_ns + THINNING_PRESSURE_NS))
                return 0;
        return MIN(t->factor * 2, (uint64_t) THINNING_MAX_FACTOR);
}

uint64_t thinning_note(struct thinning *t, uint64_t time_ns, uint64_t lost) {
        uint64_t rate, want, raise = 1;

        /* Samples taken before the last change were drawn under the old factor: they tell nothing
         * of the new one (the consumer sees them late), so they count toward no window. */
        if (t->budget == 0 || time_ns < t->last_change_ns)
                return 0;
        if (t->window_start_ns == 0 || time_ns < t->window_start_ns)
                t->window_start_ns = time_ns;
        if (time_ns - t->window_start_ns < THINNING_WINDOW_NS) {
                t->window_samples += !lost;
                t->window_lost += lost;
                return 0;
        }
        /* The window ended: its rate in samples a second, then a new window from this sample. */
        rate = t->window_samples * (1000000000ULL / THINNING_WINDOW_NS);
        t->rate = rate;
        want = t->factor;
        if (rate > t->budget) {
                while (raise < THINNING_MAX_RAISE && rate > t->budget * raise)
                        raise *= 2;
                want = t->factor * raise;
        }
        if (want == t->factor && t->factor > 1 && t->window_lost == 0 && rate < t->budget / 4 &&
            time_ns >= t->last_change_ns + THINNING_RELAX_NS)
                want = t->factor / 2;
        if (want > THINNING_MAX_FACTOR)
                want = THINNING_MAX_FACTOR;
        t->window_start_ns = time_ns;
        t->window_samples = !lost;
        t->window_lost = lost;
        return want != t->factor ? want : 0;
}
