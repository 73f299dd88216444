/* manythreads: one process with hundreds of threads alive at once, each burning CPU time in
 * turn, for the tests of a profiler's per-thread state.
 *
 *   thread_main -> thread_burn          BURN_MS of CPU time in each of THREADS threads
 *
 * Every thread starts, waits at a barrier until all of them exist, burns its share, and waits
 * at a second barrier, so that all THREADS are alive together twice; then they exit and the
 * process does it again ROUNDS times (new thread ids each round). It prints the number of
 * threads it made.
 * Usage: manythreads [THREADS [BURN_MS [ROUNDS]]], by default 300 threads, 5 ms, 3 rounds. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

#define THREADS_DEFAULT 300
#define BURN_MS_DEFAULT 5
#define ROUNDS_DEFAULT 3

static pthread_barrier_t started, finished;
static unsigned long burn_ms;

WORKLOAD_FUNCTION static void thread_burn(void) {
        spin_cpu_ms(burn_ms);
}

WORKLOAD_FUNCTION static void *thread_main(void *arg) {
        (void) pthread_barrier_wait(&started);
        thread_burn();
        call_barrier();
        (void) pthread_barrier_wait(&finished);
        return arg;
}

int main(int argc, char **argv) {
        unsigned long n, rounds, made = 0;
        pthread_t *threads;
        pthread_attr_t attr;
        int r;

        workload_arg(argc, argv, 1, THREADS_DEFAULT, &n);
        workload_arg(argc, argv, 2, BURN_MS_DEFAULT, &burn_ms);
        workload_arg(argc, argv, 3, ROUNDS_DEFAULT, &rounds);
        threads = calloc(n, sizeof *threads);
        if (!threads)
                return EXIT_FAILURE;
        /* Small stacks: hundreds of the default 8 MiB would be gigabytes of address space. */
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        for (unsigned long round = 0; round < rounds; round++) {
                pthread_barrier_init(&started, NULL, (unsigned) n);
                pthread_barrier_init(&finished, NULL, (unsigned) n);
                for (unsigned long i = 0; i < n; i++) {
                        r = pthread_create(&threads[i], &attr, thread_main, NULL);
                        if (r != 0) {
                                fprintf(stderr, "manythreads: thread %lu: %s\n", i, strerror(r));
                                return EXIT_FAILURE;
                        }
                        made++;
                }
                for (unsigned long i = 0; i < n; i++)
                        pthread_join(threads[i], NULL);
                pthread_barrier_destroy(&started);
                pthread_barrier_destroy(&finished);
        }
        pthread_attr_destroy(&attr);
        free(threads);
        printf("%lu\n", made);
        return EXIT_SUCCESS;
}
