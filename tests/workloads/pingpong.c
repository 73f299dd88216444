/* pingpong: two threads pass a byte back and forth through two pipes, so that each blocks once
 * per round, for the tests of context switches.
 *
 *   main -> ping_loop -> write(ping), read(pong)             the main thread
 *   pong_thread -> pong_loop -> read(ping), write(pong)      the second thread
 *
 * The threads switch out when read(2) finds the pipe empty, and in write(2) when waking the
 * other thread preempts the writer. How often each happens depends on the scheduler (on two
 * CPUs, 0.3 to 1 switches per thread and round), but the two threads are symmetric, so the
 * switches split evenly between (main ping_loop) and (pong_thread pong_loop). The second
 * thread's stack begins with glibc's start_thread and clone3 below pong_thread. As in reader, a
 * walk of frame pointers alone loses the loops, the callers of glibc's frameless read() and
 * write().
 * Usage: pingpong [ROUNDS], by default 20000. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

#define ROUNDS_DEFAULT 20000

struct pipes {
        int ping[2]; /* main thread -> second thread */
        int pong[2]; /* second thread -> main thread */
        unsigned long rounds;
};

/* One round of each loop moves one byte each way. Nothing here installs a signal handler, so
 * read(2) and write(2) on a pipe cannot fail with EINTR. */
WORKLOAD_FUNCTION static int pong_loop(const struct pipes *p) {
        char c;

        for (unsigned long i = 0; i < p->rounds; i++) {
                ssize_t n = read(p->ping[0], &c, 1);

                if (n <= 0)
                        return n < 0 ? -errno : -EPIPE;
                if (write(p->pong[1], &c, 1) < 0)
                        return -errno;
        }
        return 0;
}

WORKLOAD_FUNCTION static void *pong_thread(void *arg) {
        const struct pipes *p = arg;
        int r = pong_loop(p);

        call_barrier();
        if (r < 0)
                close(p->pong[1]); /* the main thread's read returns 0: it gives up */
        return (void *) (intptr_t) r;
}

/* Returns 0, or a negative errno; -EPIPE if the second thread closed its end. */
WORKLOAD_FUNCTION static int ping_loop(const struct pipes *p) {
        char c = 'x';

        for (unsigned long i = 0; i < p->rounds; i++) {
                ssize_t n;

                if (write(p->ping[1], &c, 1) < 0)
                        return -errno;
                n = read(p->pong[0], &c, 1);
                if (n <= 0)
                        return n < 0 ? -errno : -EPIPE;
        }
        return 0;
}

int main(int argc, char **argv) {
        struct pipes p;
        pthread_t thread;
        void *thread_result;
        int r;

        workload_arg(argc, argv, 1, ROUNDS_DEFAULT, &p.rounds);
        if (pipe2(p.ping, O_CLOEXEC) < 0 || pipe2(p.pong, O_CLOEXEC) < 0) {
                fprintf(stderr, "%s: cannot create pipes: %m\n", argv[0]);
                return EXIT_FAILURE;
        }
        r = pthread_create(&thread, NULL, pong_thread, &p);
        if (r != 0) {
                fprintf(stderr, "%s: cannot start a thread: %s\n", argv[0], strerror(r));
                return EXIT_FAILURE;
        }

        r = ping_loop(&p);
        call_barrier();
        if (r < 0)
                close(p.ping[1]); /* the second thread's read returns 0: it gives up */
        (void) pthread_join(thread, &thread_result);
        if (r >= 0)
                r = (int) (intptr_t) thread_result;
        if (r < 0) {
                fprintf(stderr, "%s: ping-pong failed: %s\n", argv[0], strerror(-r));
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
