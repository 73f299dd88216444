/* Overload thinning of one resource: how many of its random samples the kernel keeps, raised when
 * the resource floods and relaxed when it calms, with the history of changes that weights each
 * sample by the thinning in force when it was taken. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Decisions look at windows of this much sample time. */
#define THINNING_WINDOW_NS 10000000ULL
/* Reacting: the factor grows at most this much per window (1 to 1024 in 50 ms). */
#define THINNING_MAX_RAISE 4
/* Relaxing: it halves at most once per this much time, and only after a calm window (a rate
 * under a quarter of the budget, no loss). */
#define THINNING_RELAX_NS 250000000ULL
/* The largest factor: past it the resource loses samples rather than thin further. */
#define THINNING_MAX_FACTOR 65536
/* The reader thread's reactions (a ring's rate over its share of the budget, a loss) change the
 * factor at most once per this much time, by at most THINNING_MAX_JUMP. */
#define THINNING_PRESSURE_NS 2000000ULL
#define THINNING_MAX_JUMP 64
/* Changes remembered for weighting samples still in the rings or the queue. */
#define THINNING_HISTORY 64

struct thinning_change {
        uint64_t time_ns; /* CLOCK_MONOTONIC, the samples' clock */
        uint64_t factor;
};

struct thinning {
        uint64_t budget;     /* samples a second the resource may bring; 0: no limit */
        uint64_t factor;     /* 1 in FACTOR random samples kept, now */
        uint64_t max_factor; /* the largest so far, for the header */
        uint64_t window_start_ns, window_samples, window_lost;
        uint64_t last_change_ns;
        uint64_t rate; /* samples a second, as the reader last measured it */
        struct thinning_change history[THINNING_HISTORY]; /* a ring, the latest at n - 1 */
        unsigned n_history;
};

/* Starts with factor 1 and BUDGET samples a second (0: never thin). */
void thinning_init(struct thinning *t, uint64_t budget);

/* The factor in force at TIME_NS: the weight of a sample taken then. */
uint64_t thinning_factor_at(const struct thinning *t, uint64_t time_ns);

/* Counts a sample taken at TIME_NS (LOST: samples the kernel lost, reported then) and, at the end
 * of a window, decides. Returns the new factor when it changed (the caller tells the kernel, and
 * records NOW_NS as the change's time with thinning_changed()), else 0. */
uint64_t thinning_note(struct thinning *t, uint64_t time_ns, uint64_t lost);

/* A ring of the resource brought N samples from FIRST_NS to LAST_NS, against BUDGET samples a
 * second, seen at NOW_NS; N = 0 means it lost samples, or the consumer is behind, which raises
 * the factor only of a resource whose last rate was over a quarter of the budget (a calm
 * resource that loses because another floods is not the one to thin). Returns
 * the raised factor (the caller tells the kernel and calls thinning_changed()), or 0: within
 * budget, samples from before the last change, a change younger than THINNING_PRESSURE_NS, or
 * the factor at its maximum. */
uint64_t thinning_pressure(struct thinning *t, uint64_t n, uint64_t first_ns, uint64_t last_ns,
                           uint64_t budget, uint64_t now_ns);

/* Records that the kernel keeps 1 in FACTOR from NOW_NS on. */
void thinning_changed(struct thinning *t, uint64_t factor, uint64_t now_ns);
