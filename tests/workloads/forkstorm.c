/* forkstorm: processes that start and exit as fast as the machine allows, for the tests that a
 * profiler following every process stays within its memory bounds.
 *
 *   main -> storm_fork -> fork(2); the child -> storm_child -> _exit(0)
 *
 * Up to PARALLEL children live at once (the parent reaps one before it forks past that), so
 * the storm is thousands of processes a second, each a new pid with its own address space, and
 * none lives long enough to be sampled twice. The process prints the number of children and
 * the rate per second on stdout; it fails if a fork fails other than with EAGAIN.
 * Usage: forkstorm [MS [PARALLEL]], by default 2000 ms, 8 children at once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

#define MS_DEFAULT 2000
#define PARALLEL_DEFAULT 8

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

WORKLOAD_FUNCTION static void storm_child(void) {
        _exit(0);
}

/* Returns the number of children that exited 0, or -1 (errno set) when fork(2) failed. */
WORKLOAD_FUNCTION static long storm_fork(unsigned long ms, unsigned long parallel) {
        uint64_t end = monotonic_ns() + (uint64_t) ms * 1000000u;
        unsigned long live = 0;
        long done = 0;
        int status;

        while (monotonic_ns() < end) {
                pid_t pid;

                if (live >= parallel) {
                        if (wait(&status) > 0) {
                                live--;
                                done += WIFEXITED(status) && WEXITSTATUS(status) == 0;
                        }
                        continue;
                }
                pid = fork();
                if (pid == 0)
                        storm_child();
                if (pid < 0) {
                        if (errno == EAGAIN && live > 0)
                                continue; /* the pid limit: wait for one */
                        return -1;
                }
                live++;
        }
        for (; live > 0; live--)
                if (wait(&status) > 0)
                        done += WIFEXITED(status) && WEXITSTATUS(status) == 0;
        call_barrier();
        return done;
}

int main(int argc, char **argv) {
        unsigned long ms, parallel;
        uint64_t start = monotonic_ns();
        long n;

        workload_arg(argc, argv, 1, MS_DEFAULT, &ms);
        workload_arg(argc, argv, 2, PARALLEL_DEFAULT, &parallel);
        n = storm_fork(ms, parallel);
        if (n < 0) {
                fprintf(stderr, "forkstorm: fork: %s\n", strerror(errno));
                return EXIT_FAILURE;
        }
        printf("%ld %.0f\n", n, (double) n * 1e9 / (double) (monotonic_ns() - start));
        return EXIT_SUCCESS;
}
