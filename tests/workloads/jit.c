/* jit: runs machine code it generated at run time, and names it in /tmp/perf-PID.map the way
 * JITs (V8, the JVM's perf agents, LuaJIT) do, for the test that profiles name such code.
 *
 *   main -> run_jitted -> jitted_spin      (an anonymous executable mapping, named only by the
 *                                           perf map)
 *
 * The generated function counts a register down from its argument: "mov %edi, %eax; 1: dec
 * %eax; jnz 1b; ret". x86_64 only; elsewhere it exits 77, which the test takes as a skip.
 * Usage: jit [MS [STALE_MS]], by default 300 ms of CPU time; with STALE_MS, that long first
 * under a map of the same size that names the code stale_named. The map file stays: a profiler may read it
 * after the process is gone, as cppd does; the test removes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "workload.h"

#define MS_DEFAULT 300

typedef void (*spin_fn)(unsigned n);

WORKLOAD_FUNCTION static void run_jitted(spin_fn fn, unsigned long ms) {
        uint64_t end = thread_cpu_ns() + ms * 1000000u;

        while (thread_cpu_ns() < end)
                fn(SPIN_CHECK_ITERATIONS);
        call_barrier();
}

int main(int argc, char **argv) {
#if defined(__x86_64__)
        static const unsigned char code[] = {
                0x89, 0xf8, /* mov %edi, %eax */
                0xff, 0xc8, /* 1: dec %eax */
                0x75, 0xfc, /*    jnz 1b */
                0xc3,       /* ret */
        };
        char path[64];
        unsigned long ms, stale_ms;
        FILE *f;
        void *mem;

        workload_arg(argc, argv, 1, MS_DEFAULT, &ms);
        workload_arg(argc, argv, 2, 0, &stale_ms);
        mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                return EXIT_FAILURE;
        }
        memcpy(mem, code, sizeof code);
        if (mprotect(mem, 4096, PROT_READ | PROT_EXEC) < 0) {
                perror("mprotect");
                return EXIT_FAILURE;
        }
        snprintf(path, sizeof path, "/tmp/perf-%d.map", (int) getpid());
        /* First a map of the same size naming the code otherwise, as an earlier process of the
         * same pid may have left it, read while the code runs; then the true one over it. */
        for (int pass = stale_ms ? 0 : 1; pass < 2; pass++) {
                f = fopen(path, "we");
                if (!f ||
                    fprintf(f, "%lx %zx %s\n", (unsigned long) mem, sizeof code,
                            pass ? "jitted_spin" : "stale_named") < 0 ||
                    fclose(f) != 0) {
                        perror(path);
                        return EXIT_FAILURE;
                }
                run_jitted((spin_fn) mem, pass ? ms : stale_ms);
        }
        return EXIT_SUCCESS;
#else
        (void) argc;
        (void) argv;
        return 77;
#endif
}
