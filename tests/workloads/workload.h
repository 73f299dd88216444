/* What the test workloads share: keeping their call paths intact at -O2, reading their size
 * parameters, and burning a known amount of CPU time.
 *
 * The integration tests assert that a profiler attributes resources to particular call paths, so
 * the functions on those paths must survive optimization as real calls with their own names:
 * WORKLOAD_FUNCTION keeps GCC from inlining them, and also from cloning them under a new name
 * (foo.constprop.0, foo.isra.0) or merging them; call_barrier() after a call keeps it from
 * becoming a tail call, which would replace the caller's frame by the callee's.
 *
 * CPU loops run for a given CPU time of the calling thread rather than a given number of
 * iterations, so that the sample counts the tests expect do not depend on the machine's speed;
 * spin_cpu_ms() is always inlined, so it adds no frame of its own. */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__clang__)
#define WORKLOAD_FUNCTION __attribute__((noinline))
#else
#define WORKLOAD_FUNCTION __attribute__((noipa))
#endif

#define call_barrier() __asm__ __volatile__("" ::: "memory")

/* Iterations of the empty loop between two looks at the clock: about a third of a millisecond,
 * so the clock_gettime(2) calls cost well under 1% of the samples. */
#define SPIN_CHECK_ITERATIONS 1000000u

/* Sets *ret to argv[i] as a positive decimal number, or to def when there are fewer arguments.
 * On anything else it says so on stderr and exits 1. */
static inline void workload_arg(int argc, char **argv, int i, unsigned long def, unsigned long *ret) {
        unsigned long v;
        char *end;

        if (argc <= i) {
                *ret = def;
                return;
        }
        errno = 0;
        v = strtoul(argv[i], &end, 10);
        if (argv[i][0] < '0' || argv[i][0] > '9' || *end != '\0' || errno != 0 || v == 0) {
                fprintf(stderr, "%s: argument %d must be a positive number, not '%s'\n", argv[0], i, argv[i]);
                exit(EXIT_FAILURE);
        }
        *ret = v;
}

static inline __attribute__((always_inline)) uint64_t thread_cpu_ns(void) {
        struct timespec ts;

        /* Cannot fail for the calling thread's own clock. */
        (void) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Spins until the calling thread has used ms more milliseconds of CPU time. Always inlined, so
 * that the samples land in the function the tests look for, the caller. */
static inline __attribute__((always_inline)) void spin_cpu_ms(unsigned long ms) {
        uint64_t end = thread_cpu_ns() + (uint64_t) ms * 1000000u;

        do {
                for (unsigned i = 0; i < SPIN_CHECK_ITERATIONS; i++)
                        call_barrier(); /* keeps the empty loop */
        } while (thread_cpu_ns() < end);
}
