/* bench-alloc N SIZE [wait]: N pairs of malloc(SIZE) and free, then prints the CPU time of one
 * pair in nanoseconds (user and system, of this process): the cost per allocation that
 * bench-alloc.py compares unprofiled, counted by cppd's preloaded library, sampled by cppctl
 * record, under heaptrack and under uprobes (perf's, cppctl attach's). wait: after a byte on
 * stdin (attach first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
        unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
        size_t size = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
        struct timespec a, b;
        void *volatile sink;
        char c;

        if (argc > 3 && strcmp(argv[3], "wait") == 0 && read(0, &c, 1) != 1)
                return 1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        for (unsigned long i = 0; i < n; i++) {
                sink = malloc(size);
                free(sink);
        }
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double) (n ? n : 1));
        return 0;
}
