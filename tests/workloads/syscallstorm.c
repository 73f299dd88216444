/* syscallstorm: as many system calls as one thread can make, from deep in a large stack, for
 * the test that a profiler's ring buffers overflow without harm and that what they drop is
 * counted exactly.
 *
 *   main -> storm_descend (DEPTH frames, 256 bytes of locals each) -> storm_calls -> getppid(2)
 *
 * getppid(2) is about the cheapest system call there is: a few hundred nanoseconds each, about
 * one per microsecond. At syscalls/1 every call is a sample carrying the whole copied user
 * stack (8 KiB and more: the locals keep the stack that deep), far more than a collector can
 * unwind, so the kernel drops records and says how many in PERF_RECORD_LOST. The process prints
 * the number of calls it made on stdout.
 * Usage: syscallstorm [MS [DEPTH]], by default 2000 ms at depth 40. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "workload.h"

#define MS_DEFAULT 2000
#define DEPTH_DEFAULT 40
#define CHECK_CALLS 1024 /* calls between two looks at the clock */

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* syscall(2) itself, not glibc's getppid(), which could one day be answered without entering
 * the kernel. */
WORKLOAD_FUNCTION static unsigned long storm_calls(unsigned long ms) {
        uint64_t end = monotonic_ns() + (uint64_t) ms * 1000000u;
        unsigned long n = 0;

        do {
                for (unsigned i = 0; i < CHECK_CALLS; i++)
                        (void) syscall(SYS_getppid);
                n += CHECK_CALLS;
        } while (monotonic_ns() < end);
        return n;
}

WORKLOAD_FUNCTION static unsigned long storm_descend(unsigned long depth, unsigned long ms) {
        volatile char pad[256];
        unsigned long n;

        memset((char *) pad, (int) depth, sizeof pad);
        n = depth > 1 ? storm_descend(depth - 1, ms) : storm_calls(ms);
        (void) pad[depth % sizeof pad]; /* a read after the call: no tail call, the locals live */
        return n;
}

int main(int argc, char **argv) {
        unsigned long ms, depth;

        workload_arg(argc, argv, 1, MS_DEFAULT, &ms);
        workload_arg(argc, argv, 2, DEPTH_DEFAULT, &depth);
        printf("%lu\n", storm_descend(depth, ms));
        return EXIT_SUCCESS;
}
