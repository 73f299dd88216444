/* Overload thinning's bounds, worked by hand: how fast it reacts and relaxes, and which factor
 * weights a sample taken before, at and after a change. */
#include "tap.h"
#include "thinning.h"

#define MS 1000000ULL

/* Feeds samples at RATE a second from FROM for DURATION ns; applies every change at once (as the
 * collector does). Returns the last factor. */
static uint64_t feed(struct thinning *t, uint64_t rate, uint64_t from, uint64_t duration) {
        uint64_t step = 1000000000ULL / rate;

        for (uint64_t time = from; time < from + duration; time += step) {
                uint64_t f = thinning_note(t, time, 0);

                if (f)
                        thinning_changed(t, f, time);
        }
        return t->factor;
}

static void test_react(void) {
        struct thinning t;

        thinning_init(&t, 1000);
        is_int(feed(&t, 500, 1, 100 * MS), 1, "under budget: no thinning");
        thinning_init(&t, 1000);
        feed(&t, 64000, 1, 11 * MS);
        is_int(t.factor, THINNING_MAX_RAISE, "a window 64x over budget raises only x%d", THINNING_MAX_RAISE);
        is_int(thinning_pressure(&t, 640, 20 * MS, 30 * MS, 1000, 30 * MS), THINNING_MAX_RAISE * 64,
               "the reader's view: 64,000/s against 1,000/s jumps x64");
        is_int(thinning_pressure(&t, 640, 20 * MS, 30 * MS, 1000, t.last_change_ns + MS), 0,
               "but not twice within THINNING_PRESSURE_NS");
        thinning_changed(&t, 256, 40 * MS);
        is_int(thinning_pressure(&t, 640, 30 * MS, 40 * MS, 1000, 50 * MS), 0,
               "samples from before the last change tell nothing");
        is_int(thinning_pressure(&t, 0, 0, 0, 1000, 50 * MS), 512, "a loss doubles");
        is_int(t.max_factor, 256, "the header's figure is the most reached");

        thinning_init(&t, 1000);
        is_int(thinning_pressure(&t, 2, 10 * MS, 30 * MS, 1000, 30 * MS), 0, "100/s: within budget");
        is_int(thinning_pressure(&t, 0, 0, 0, 1000, 40 * MS), 0,
               "a calm resource that loses (another floods the queue) is not thinned");
}

static void test_relax(void) {
        struct thinning t;

        thinning_init(&t, 1000);
        thinning_changed(&t, 64, 1);
        feed(&t, 100, 2, THINNING_RELAX_NS - 20 * MS);
        is_int(t.factor, 64, "calm, but not for THINNING_RELAX_NS yet: kept");
        feed(&t, 100, THINNING_RELAX_NS, 20 * MS + 1);
        is_int(t.factor, 32, "then it halves");
        feed(&t, 100, THINNING_RELAX_NS + 30 * MS, 100 * MS);
        is_int(t.factor, 32, "and not again before another THINNING_RELAX_NS");
}

static void test_weights(void) {
        struct thinning t;

        thinning_init(&t, 1000);
        thinning_changed(&t, 4, 100);
        thinning_changed(&t, 16, 200);
        is_int(thinning_factor_at(&t, 50), 1, "before any change: weight 1");
        is_int(thinning_factor_at(&t, 100), 4, "at a change: its factor");
        is_int(thinning_factor_at(&t, 199), 4, "between changes: the earlier");
        is_int(thinning_factor_at(&t, 1000), 16, "after: the latest");
        for (unsigned i = 0; i < THINNING_HISTORY + 5; i++)
                thinning_changed(&t, 2 + i % 2, 1000 + i);
        is_int(thinning_factor_at(&t, 0), 3, "older than the history: its oldest entry");
}

int main(void) {
        test_react();
        test_relax();
        test_weights();
        return tap_done();
}
