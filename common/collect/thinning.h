/* Overload thinning of one resource, the collector's part: how many of its random samples it
 * asks the kernel to keep, raised when the resource loses samples or the consumer falls behind,
 * relaxed when it calms. (The kernel thins a flood by itself first: sampling-bpf.c.) */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Decisions look at windows of this much sample time. */
#define THINNING_WINDOW_NS 10000000ULL
/* Reacting to a window over budget: the factor grows at most this much per window. */
#define THINNING_MAX_RAISE 4
/* Relaxing: it halves at most once per this much time, and only after a calm window (a rate
 * under a quarter of the budget, no loss). */
#define THINNING_RELAX_NS 250000000ULL
/* The largest factor: past it the resource loses samples rather than thin further. */
#define THINNING_MAX_FACTOR 65536
/* A loss, or a consumer so far behind that the queue is full, doubles the factor at most once
 * per this much time. */
#define THINNING_PRESSURE_NS 2000000ULL

struct thinning {
        uint64_t budget;     /* samples a second the resource may bring; 0: no limit */
        uint64_t factor;     /* 1 in FACTOR random samples kept, asked of the kernel now */
        uint64_t max_factor; /* the most any sample was thinned by, for the header */
        uint64_t window_start_ns, window_samples, window_lost;
        uint64_t last_change_ns;
        uint64_t rate; /* samples a second in the last whole window */
};

/* Starts with factor 1 and BUDGET samples a second (0: never thin). */
void thinning_init(struct thinning *t, uint64_t budget);

/* Counts a sample taken at TIME_NS (LOST: samples the kernel lost, reported then) and, at the end
 * of a window, decides. Returns the new factor when it changed (the caller tells the kernel and
 * calls thinning_changed()), else 0. */
uint64_t thinning_note(struct thinning *t, uint64_t time_ns, uint64_t lost);

/* The resource lost samples, or the consumer is behind and the resource brings the most: returns
 * the doubled factor (the caller tells the kernel and calls thinning_changed()), or 0 within
 * THINNING_PRESSURE_NS of the last change or at the maximum. */
uint64_t thinning_pressure(struct thinning *t, uint64_t now_ns);

/* Records that the kernel keeps 1 in FACTOR from NOW_NS on. */
void thinning_changed(struct thinning *t, uint64_t factor, uint64_t now_ns);
