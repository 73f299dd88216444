/* timed FILE COMMAND [ARGS]: runs COMMAND and writes its wall time in seconds to FILE, so that a
 * benchmark measures the profiled program itself, not the profiler's setup and teardown around
 * it (perf record spends most of a second after the program exits). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
        struct timespec a, b;
        int status;
        pid_t pid;
        FILE *f;

        if (argc < 3) {
                fprintf(stderr, "usage: timed FILE COMMAND [ARGS]\n");
                return 2;
        }
        clock_gettime(CLOCK_MONOTONIC, &a);
        pid = fork();
        if (pid < 0)
                return 1;
        if (pid == 0) {
                execvp(argv[2], argv + 2);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return 1;
        clock_gettime(CLOCK_MONOTONIC, &b);
        f = fopen(argv[1], "we");
        if (!f)
                return 1;
        fprintf(f, "%.6f\n", (double) (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
        fclose(f);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
