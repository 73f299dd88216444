/* Clocks, in one place. */
#pragma once

#include <stdint.h>
#include <time.h>

/* CLOCK's time in nanoseconds (CLOCK_MONOTONIC is the perf events' clock too: see collector.c). */
static inline uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* CLOCK_MONOTONIC's time NS nanoseconds from now, as pthread_cond_timedwait() takes it (with a
 * condition variable set to that clock). */
static inline struct timespec monotonic_in(uint64_t ns) {
        uint64_t t = now_ns(CLOCK_MONOTONIC) + ns;

        return (struct timespec) { .tv_sec = (time_t) (t / 1000000000ULL),
                                   .tv_nsec = (long) (t % 1000000000ULL) };
}
