/* timed [-c CPUFILE] FILE COMMAND [ARGS]: runs COMMAND and writes its wall time in seconds to
 * FILE, so that a benchmark measures the profiled program itself, not the profiler's setup and
 * teardown around it (perf record spends most of a second after the program exits). With -c,
 * also the CPU time (user and system, seconds) of COMMAND and of every process it started,
 * daemons included (timed is their subreaper and waits for them all), to CPUFILE: what a profiler
 * costs the program in the kernel is charged to the program, and is measured so even on a
 * machine whose other load makes wall times vary. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
        const char *cpu_file = NULL;
        struct timespec a, b;
        struct rusage ru;
        int status;
        pid_t pid;
        FILE *f;

        if (argc > 2 && strcmp(argv[1], "-c") == 0) {
                cpu_file = argv[2];
                argv += 2;
                argc -= 2;
                if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                        return 1;
        }
        if (argc < 3) {
                fprintf(stderr, "usage: timed [-c CPUFILE] FILE COMMAND [ARGS]\n");
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
        if (cpu_file) {
                /* The command's orphans (a server it started) come to us: wait for them all. */
                while (wait(NULL) > 0 || errno == EINTR)
                        ;
                if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
                        return 1;
                f = fopen(cpu_file, "we");
                if (!f)
                        return 1;
                fprintf(f, "%.6f\n",
                        (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                                (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
                fclose(f);
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
