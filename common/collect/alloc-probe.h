/* alloc-bytes and alloc-count where cppd cannot preload its library (attach, the daemon): uprobes
 * on glibc's allocation entry points in each process, one BPF uprobe_multi link per process and
 * libc, running the allocation program of sampling-bpf.c. Links are made by a thread of their
 * own (each takes 10-40 ms) from the processes the collector tells of.
 * doc/design/alloc-uprobes.md is the study behind it. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"

struct alloc_probe;

struct alloc_probe_config {
        int prog_fd;           /* sampling_bpf_alloc_program()'s; the probe keeps its own copy */
        char *const *units;    /* probe only the processes of these systemd units; NULL: any asked */
        unsigned max_per_libc; /* at most this many processes probed per libc (each adds to
                                * every probed call there); 0: no limit */
};

/* What the probes did, for headers and status. */
struct alloc_probe_stats {
        unsigned probed;       /* processes probed now */
        unsigned ever;         /* processes probed since the start */
        unsigned not_measured; /* processes asked for but not probed */
        pid_t first_pid;       /* the first of them, */
        char first_comm[16];
        char first_why[160]; /* and why: "no shared glibc (a static executable?)" */
        unsigned over_cap;   /* of not_measured: past max_per_libc */
        unsigned late;       /* processes probed after they started (children): their first
                              * allocations, up to late_max_ns, were not counted */
        uint64_t late_max_ns;
        char libc[200]; /* the first glibc probed: "glibc 2.36 (/usr/lib/x86_64-linux-gnu/libc.so.6)" */
};

/* Creates the probe and starts its thread. Returns 0 and sets *ret, or a negative errno. */
int alloc_probe_new(const struct alloc_probe_config *config, struct alloc_probe **ret);
/* Stops the thread and closes every link (the breakpoints go from every process). */
struct alloc_probe *alloc_probe_free(struct alloc_probe *a);
DEFINE_CLEANUP(struct alloc_probe *, alloc_probe_free);

/* Probes process PID now, in the caller's thread. Returns 1 if probed (or already), 0 if not
 * wanted (not of the units asked, or a kernel thread), or a negative errno, with WHY (SIZE
 * bytes) saying why in words: -ENOEXEC (no glibc to probe, or an allocator of its own),
 * -EOPNOTSUPP (a kernel before 6.6), -EPERM, -ESRCH (gone), -EUSERS (max_per_libc reached). */
int alloc_probe_process(struct alloc_probe *a, pid_t pid, char *why, size_t why_size);

/* Asks the thread to probe PID, started at START_NS (CLOCK_MONOTONIC; 0: long before), or to
 * forget it (exited: its links closed). */
void alloc_probe_add(struct alloc_probe *a, pid_t pid, uint64_t start_ns);
void alloc_probe_exited(struct alloc_probe *a, pid_t pid);

/* Waits until the thread has handled what was asked before the call (tests, the end of a run). */
void alloc_probe_settle(struct alloc_probe *a);

void alloc_probe_get_stats(struct alloc_probe *a, struct alloc_probe_stats *ret);

/* The largest allocation that can succeed on this machine, for the program's sanity bound: 2^47
 * (x86-64's user address space), or less with overcommit's heuristic (MemTotal + SwapTotal) or
 * its limit (CommitLimit). */
uint64_t alloc_probe_max_size(void);
