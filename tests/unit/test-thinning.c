/* Overload thinning's bounds, worked by hand: how fast the collector's part reacts and
 * relaxes. (The kernel's part, and the weights samples carry, are tested on real events by
 * test-sampling.) */
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
        is_int(t.rate, 500, "the rate of the last whole window");
        thinning_init(&t, 1000);
        feed(&t, 64000, 1, 11 * MS);
        is_int(t.factor, THINNING_MAX_RAISE, "a window 64x over budget raises only x%d", THINNING_MAX_RAISE);
        is_int(thinning_pressure(&t, t.last_change_ns + MS), 0,
               "a loss within THINNING_PRESSURE_NS: no change");
        is_int(thinning_pressure(&t, t.last_change_ns + THINNING_PRESSURE_NS), 2 * THINNING_MAX_RAISE,
               "after it, a loss doubles");
        thinning_changed(&t, THINNING_MAX_FACTOR, 100 * MS);
        is_int(thinning_pressure(&t, 200 * MS), 0, "not past THINNING_MAX_FACTOR");
        is_int(t.max_factor, THINNING_MAX_FACTOR, "the header's figure is the most reached");
        thinning_init(&t, 0);
        is_int(thinning_pressure(&t, 50 * MS), 0, "no budget: never thinned");
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

int main(void) {
        test_react();
        test_relax();
        return tap_done();
}
