/* The resource table. One row per resource; the collector, the importer and every report take
 * names, units, default periods and events from here and nowhere else.
 *
 * Defaults aim at about a thousand samples a second of a busy thread at most: enough for a
 * profile of a short command, little enough that DWARF unwinding (16 KiB of stack a sample)
 * stays cheap. */
#include "resource.h"

#include <ctype.h>
#include <linux/perf_event.h>
#include <string.h>

#include "alloc-preload.h"
#include "cleanup.h"

static const char *const syscall_enter[] = { "raw_syscalls:sys_enter", NULL };
static const char *const read_exits[] = {
        "syscalls:sys_exit_read",   "syscalls:sys_exit_pread64", "syscalls:sys_exit_readv",
        "syscalls:sys_exit_preadv", "syscalls:sys_exit_preadv2", NULL,
};
static const char *const write_exits[] = {
        "syscalls:sys_exit_write",   "syscalls:sys_exit_pwrite64", "syscalls:sys_exit_writev",
        "syscalls:sys_exit_pwritev", "syscalls:sys_exit_pwritev2", NULL,
};
/* Intel since Ice Lake, Intel Skylake to Cascade Lake, AMD Zen 2-4 (the closest AMD has: FP
 * dispatch faults). */
static const char *const prctl_enter[] = { "syscalls:sys_enter_prctl", NULL };
static const char *const fp_assists[] = { "ASSISTS:FP", "FP_ASSIST:ANY", "FP_DISPATCH_FAULTS:ANY", NULL };

const struct resource resource_table[] = {
        { "cpu-time", "1 ms of CPU time", "time on a CPU, user and kernel", 1, RESOURCE_CLOCK,
          PERF_COUNT_SW_CPU_CLOCK, NULL },
        { "real-time", "1 ms of real time", "time on or off a CPU: CPU time plus time blocked or waiting", 1,
          RESOURCE_REAL_TIME, PERF_COUNT_SW_CPU_CLOCK, NULL },
        { "page-faults", "1 page fault", "minor and major page faults", 16, RESOURCE_SOFTWARE,
          PERF_COUNT_SW_PAGE_FAULTS, NULL },
        { "minor-faults", "1 minor fault", "page faults served without I/O", 16, RESOURCE_SOFTWARE,
          PERF_COUNT_SW_PAGE_FAULTS_MIN, NULL },
        { "major-faults", "1 major fault", "page faults that waited for I/O", 1, RESOURCE_SOFTWARE,
          PERF_COUNT_SW_PAGE_FAULTS_MAJ, NULL },
        { "context-switches", "1 context switch", "times a thread left a CPU", 1, RESOURCE_SOFTWARE,
          PERF_COUNT_SW_CONTEXT_SWITCHES, NULL },
        { "syscalls", "1 system call", "system calls entered; the call's name ends each stack", 10,
          RESOURCE_TRACEPOINT, 0, syscall_enter },
        { "bytes-read", "1 byte read", "bytes returned by read, pread64, readv, preadv, preadv2", 4096,
          RESOURCE_BYTES, 0, read_exits },
        { "bytes-written", "1 byte written", "bytes accepted by write, pwrite64, writev, pwritev, pwritev2",
          4096, RESOURCE_BYTES, 0, write_exits },
        { "fp-assists", "1 FP assist", "floating-point assists (microcode), a hardware event", 1000,
          RESOURCE_PFM, 0, fp_assists },
        { "alloc-bytes", "1 byte allocated",
          "bytes allocated by malloc, calloc, realloc, aligned_alloc, posix_memalign, memalign, valloc, "
          "operator new (cppctl record)",
          524288, RESOURCE_ALLOC, ALLOC_OPTION_BYTES, prctl_enter },
        { "alloc-count", "1 allocation", "calls of those allocation functions (cppctl record)", 1000,
          RESOURCE_ALLOC, ALLOC_OPTION_CALLS, prctl_enter },
};

const unsigned n_resource_table = ELEMENTSOF(resource_table);

const struct resource *resource_find(const char *name) {
        for (unsigned i = 0; i < n_resource_table; i++)
                if (streq(resource_table[i].name, name))
                        return &resource_table[i];
        return NULL;
}

bool resource_name_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n > 128)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) name[i]) && !strchr(":_.-", name[i]))
                        return false;
        return true;
}
