/* forker: CPU time in a second thread, in a forked child and in an exec'd program, for the tests
 * that a profiler follows all three.
 *
 *   main -> (pthread) thread_work          BURN_MS of CPU time in a thread of this process
 *   main -> (fork) child_work              BURN_MS in a child process, which then exits
 *   main -> (fork, exec) PROGRAM           a second child runs PROGRAM, if given, without
 *                                          arguments; the tests pass shortlived
 *
 * The thread starts first, so the fork copies a process with two threads and the child keeps
 * only the forking one. In the thread's stack, glibc's start_thread and clone3 lie below
 * thread_work; the first child's stack is main -> child_work (fork returns twice, from main).
 * The parent itself only waits; it fails if any of the three does.
 * Usage: forker [PROGRAM [BURN_MS]], by default no program and 200 ms. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

#define BURN_MS_DEFAULT 200

WORKLOAD_FUNCTION static void *thread_work(void *arg) {
        spin_cpu_ms(*(const unsigned long *) arg);
        return NULL;
}

WORKLOAD_FUNCTION static void child_work(unsigned long ms) {
        spin_cpu_ms(ms);
}

/* Returns the child's PID, or a negative errno. The child execs program; if it cannot, it says
 * why and exits 127, as a shell would. */
static pid_t fork_exec(const char *program) {
        pid_t pid = fork();

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                execl(program, program, (char *) NULL);
                fprintf(stderr, "forker: cannot execute %s: %m\n", program);
                _exit(127);
        }
        return pid;
}

/* Returns 0 if the child pid exited 0, -ECHILD otherwise. */
static int wait_child(pid_t pid) {
        int status;
        pid_t r;

        do
                r = waitpid(pid, &status, 0);
        while (r < 0 && errno == EINTR);
        return r == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

int main(int argc, char **argv) {
        const char *program = argc > 1 ? argv[1] : NULL;
        pid_t worker, exec_child = 0;
        unsigned long ms;
        pthread_t thread;
        int r;

        workload_arg(argc, argv, 2, BURN_MS_DEFAULT, &ms);

        r = pthread_create(&thread, NULL, thread_work, &ms);
        if (r != 0) {
                fprintf(stderr, "%s: cannot start a thread: %s\n", argv[0], strerror(r));
                return EXIT_FAILURE;
        }
        /* Forked here, not in a helper, so that the child's stack is main -> child_work. */
        worker = fork();
        if (worker == 0) {
                child_work(ms);
                _exit(EXIT_SUCCESS);
        }
        if (worker < 0)
                worker = -errno;
        else if (program)
                exec_child = fork_exec(program);

        (void) pthread_join(thread, NULL);
        if (worker < 0 || exec_child < 0) {
                fprintf(stderr, "%s: cannot fork: %s\n", argv[0],
                        strerror(-(worker < 0 ? worker : exec_child)));
                r = -1;
        }
        if (worker > 0 && wait_child(worker) < 0) {
                fprintf(stderr, "%s: child_work failed\n", argv[0]);
                r = -1;
        }
        if (exec_child > 0 && wait_child(exec_child) < 0) {
                fprintf(stderr, "%s: %s failed\n", argv[0], program);
                r = -1;
        }
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
