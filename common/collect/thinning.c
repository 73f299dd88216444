/* Overload thinning (issue 16, point 2).
 *
 * When a resource brings more samples than its budget, losing the surplus in bursts (a full ring,
 * PERF_RECORD_LOST) loses them from the bursty code and biases what is left toward calm code.
 * Instead the kernel keeps fewer, at random (sampling-bpf.c): 1 in P*FACTOR hits instead of 1 in
 * P, and each sample kept then is worth FACTOR hits, so fractions stay unbiased and hits still
 * count gticks / period.
 *
 * The rate is measured in windows of sample time (the kernel's timestamps), not of handling
 * time, so a consumer that lags still sees the true rate; it reacts when it reads the samples,
 * and judges a new factor only by samples taken after it was set.
 * A window over budget multiplies the factor by the overshoot rounded up to a power of two, at
 * most THINNING_MAX_RAISE (losses are the reader thread's to react to, below). A factor halves at most once
 * per THINNING_RELAX_NS, after a window under a quarter of the budget: a storm that stops and
 * starts again is not sampled at full rate in between for longer than that.
 *
 * The consumer may lag by seconds; the ring reader thread does not. It tells each ring's rate per
 * pass (ring-reader.c), and a ring's rate over the whole budget raises the
 * factor at once by the overshoot rounded up to a power of two (at most THINNING_MAX_JUMP); a
 * loss, or a consumer so far behind that the queue is full, doubles the factor of the resource
 * that floods (its last rate over a quarter of the budget), never of a calm one; at most once
 * per THINNING_PRESSURE_NS: the first pass of a storm (the ring's
 * watermark, a fraction of a millisecond at a million events a second) sets about the right
 * factor, before the ring overflows.
 *
 * A sample's weight is the factor in force when it was taken, found in the history of changes
 * (times from CLOCK_MONOTONIC when the map was written; the kernel applies the change at once,
 * so a sample taken later was drawn under it). Samples older than the history's window are
 * weighted by its oldest entry. */
#include "thinning.h"

#include <string.h>

#include "cleanup.h"

void thinning_init(struct thinning *t, uint64_t budget) {
        *t = (struct thinning) { .budget = budget, .factor = 1, .max_factor = 1 };
        t->history[0] = (struct thinning_change) { .time_ns = 0, .factor = 1 };
        t->n_history = 1;
}

uint64_t thinning_factor_at(const struct thinning *t, uint64_t time_ns) {
        for (unsigned k = 0; k < t->n_history && k < THINNING_HISTORY; k++) {
                const struct thinning_change *c = &t->history[(t->n_history - 1 - k) % THINNING_HISTORY];

                if (c->time_ns <= time_ns)
                        return c->factor;
        }
        return t->history[t->n_history > THINNING_HISTORY ? t->n_history % THINNING_HISTORY : 0].factor;
}

void thinning_changed(struct thinning *t, uint64_t factor, uint64_t now_ns) {
        t->history[t->n_history % THINNING_HISTORY] = (struct thinning_change) { now_ns, factor };
        t->n_history++;
        t->factor = factor;
        t->last_change_ns = now_ns;
        if (factor > t->max_factor)
                t->max_factor = factor;
}

uint64_t thinning_pressure(struct thinning *t, uint64_t n, uint64_t first_ns, uint64_t last_ns,
                           uint64_t budget, uint64_t now_ns) {
        uint64_t raise = 2, rate;

        if (t->budget == 0 || t->factor >= THINNING_MAX_FACTOR ||
            now_ns < t->last_change_ns + THINNING_PRESSURE_NS)
                return 0;
        if (n == 0 && t->rate <= t->budget / 4)
                return 0;
        if (n > 0) {
                if (first_ns < t->last_change_ns || budget == 0)
                        return 0;
                rate = n * 1000000000ULL / MAX(last_ns - first_ns, 1000u);
                t->rate = rate;
                if (rate <= budget)
                        return 0;
                while (raise < THINNING_MAX_JUMP && rate > budget * raise)
                        raise *= 2;
        }
        return MIN(t->factor * raise, (uint64_t) THINNING_MAX_FACTOR);
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
