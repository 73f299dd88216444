/* The collector: perf events for the requested resources on a target (a command, a process),
 * their ring buffers read and decoded, address spaces followed, stacks unwound and symbolized,
 * and hits aggregated per (resource, thread, stack) in memory until a flush writes them to the
 * store in one transaction. cppctl record and attach drive it; the daemon will too. */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"
#include "perf-record.h"
#include "resource.h"
#include "store.h"

enum unwind_mode {
        UNWIND_DWARF, /* copy the user stack, unwind with libdw: right without frame pointers */
        UNWIND_FP,    /* the kernel's frame-pointer callchain: cheap, loses callers in -O2 code */
};

struct collector_config {
        enum unwind_mode unwind;
        bool kernel;                  /* keep kernel frames in stacks */
        uint32_t stack_size;          /* DWARF: bytes of user stack copied per sample */
        uint32_t ring_size;           /* bytes of ring buffer per CPU (a power of two) */
        bool jitter;                  /* random intervals, drawn per sample (paper §7.1):
                                         * geometric in the kernel (sampling-bpf.c), or where
                                         * BPF cannot be used, periods redrawn now and then */
        bool every_event;             /* random intervals by a coin at every event (the kernel
                                         * period 1, a program at each overflow), even where a
                                         * countdown at a tracepoint would do, at several times
                                         * the cost per event (sampling-bpf.c) */
        uint32_t max_rate;            /* samples a second a resource may bring before it is
                                         * thinned at random (thinning.c); 0: never thinned */
        unsigned bucket_seconds;      /* samples are summed per time bucket of this size */
        size_t queue_size;            /* bytes of records read from the rings, not yet handled */
        bool no_python;               /* native frames only: no Python frames (collector-python.c) */
        bool realtime_reader;         /* the thread that empties the rings in the real-time
                                       * class where allowed (ring_reader_set_realtime()): a
                                       * redrawn clock's draws on time on a busy machine */
        bool function_frames;         /* store frames as functions, without address, file and
                                         * line: one stack per path of functions, not per path of
                                         * call sites (recursion makes the latter without end) */
        bool preloaded;               /* the command starts with the allocation counter preloaded
                                         * (alloc-preload.h: cppctl record); without it the
                                         * alloc-* resources are counted by uprobes on glibc's
                                         * allocator in each process (alloc-probe.h) */
        char *const *alloc_units;     /* uprobes: only in the processes of these units; NULL: in
                                   * every process followed */
        unsigned alloc_max_processes; /* uprobes: at most this many processes per libc; 0: any */
        bool mmap_build_ids;          /* records fed (collector_feed) come from events that asked
                                         * for build ids in MMAP2 (record_parse_mmap2()); the
                                         * collector's own events never ask (collector.c) */
};

#define COLLECTOR_CONFIG_DEFAULT_STACK 16384u
/* Samples a second of one resource handled without thinning: about a CPU's worth of DWARF
 * unwinding on a small machine. */
#define COLLECTOR_DEFAULT_MAX_RATE 20000u
#define COLLECTOR_CONFIG_DEFAULT \
        { \
                .unwind = UNWIND_DWARF, .function_frames = true, .jitter = true, \
                .max_rate = COLLECTOR_DEFAULT_MAX_RATE, .stack_size = COLLECTOR_CONFIG_DEFAULT_STACK, \
                .ring_size = 8u << 20, .bucket_seconds = 60, .queue_size = 256u << 20, \
        }

/* Frames a stack keeps: the kernel's callchain limit is 127; DWARF goes deeper. */
#define COLLECTOR_MAX_STACK 512
/* PCs of a thread's last stack whose trie nodes are kept for its next sample (24 bytes each). */
#define COLLECTOR_MAX_STEPS 256
/* Bounds on the caches of a long-running collector (cppd): distinct stacks (trie nodes),
 * symbolized addresses, and modules with their symbols and debug information in memory. */
#define COLLECTOR_MAX_NODES (1u << 20)
#define COLLECTOR_MAX_FRAMES (1u << 20)
#define COLLECTOR_MAX_MODULES 128
/* Cgroups whose units the collector remembers (a few KiB each at most). */
#define COLLECTOR_MAX_CGROUPS 1024
/* Distinct (resource, thread, stack) hits held while the store cannot be written (a full disk):
 * past it, samples are counted as lost, not kept. About 40 bytes each. */
#define COLLECTOR_MAX_HELD (1u << 20)

struct collector;

struct collector_resource_stats {
        const char *name;
        uint64_t period;
        bool active;      /* its events opened */
        bool unnamed;     /* a hardware event libpfm4 has no name for on this CPU */
        uint64_t samples; /* samples that became hits */
        uint64_t hits;
        uint64_t stored;        /* of the hits, those a flush committed to the store */
        uint64_t lost;          /* PERF_RECORD_LOST */
        const char *sampling;   /* how intervals are drawn: "random" (geometric, per
                                         * sample, in the kernel), "fixed" (they may alias) */
        uint64_t thinned;       /* the largest overload thinning: 1 in N kept; 1: none */
        uint64_t kernel_period; /* the period the kernel counts (ns for clocks) */
        uint64_t keep_one_in;   /* and 1 in how many of its overflows are kept, now */
        uint64_t uncounted;     /* alloc-*: processes whose allocator the preloaded library
                                 * could not see (an allocator of their own), not counted; */
        uint32_t uncounted_pid; /* the first of them */
        const char *uncounted_comm;
        const char *uncounted_why; /* why (uprobes); NULL: an allocator of its own */
        /* alloc-* by uprobes (alloc-probe.h); probed 0 and libc NULL otherwise */
        unsigned probed, probed_ever; /* processes probed now, and since the start */
        const char *libc;             /* the first glibc probed, with its version */
        unsigned late;                /* processes probed after their start: the first */
        uint64_t late_max_ns;         /* late_max_ns of their allocations not counted */
};

struct collector_stats {
        uint64_t records, samples, lost, bad_records;
        uint64_t frames, frames_unknown;
        uint64_t unwind_ns, symbolize_ns; /* time spent per phase, estimated from one
                                                 * sample in 16, for benchmarks */
        uint64_t processes, threads, modules, stack_nodes;
        uint64_t addresses;                    /* distinct user addresses symbolized (cache misses) */
        uint64_t stacks_cut, stacks_cut_short; /* samples whose stack copy ended at its thread's
                                                 * top, and threads for which that fell short */
        uint64_t proc_rereads;                 /* processes read again from /proc (process_reread()) */
        /* Python frames (collector-python.c): samples with them, of which cut at the walker's
         * bound, frames unreadable, processes registered, Pythons that cannot be read */
        uint64_t python_samples, python_cut, python_unreadable, python_processes, python_unsupported;
        uint64_t python_walks, python_walk_ns; /* the kernel's walks that read frames, their time */
        /* Now, not since the start: what is in memory. */
        uint64_t live_processes, live_threads; /* followed, exited ones until their hits are stored */
        uint64_t held;                         /* distinct hits not yet stored (COLLECTOR_MAX_HELD) */
        uint64_t lag_ns;                       /* age of the oldest record not yet handled; 0: none */
        uint64_t queue_bytes;                  /* the reader's queues' buffers (ring_reader_stats) */
};

/* Creates a collector writing to STORE (borrowed; may be NULL until collector_flush). Returns
 * 0 and sets *ret, or -ENOMEM; -EOPNOTSUPP for DWARF unwinding on an unsupported
 * architecture. */
int collector_new(const struct collector_config *config, struct store *store, struct collector **ret);
struct collector *collector_free(struct collector *c);
DEFINE_CLEANUP(struct collector *, collector_free);

/* Adds a resource: a name from the resource table, or an event name (perf software event,
 * tracepoint "sys:name", libpfm4 event) when EVENT is true. PERIOD 0 takes the default.
 * Returns the resource's index, -ENOENT for an unknown name, -EINVAL for a bad period,
 * -EEXIST if already added, -E2BIG past COLLECTOR_MAX_RESOURCES, -EOPNOTSUPP for alloc-bytes or
 * alloc-count without the preloaded counter (config.preloaded). */
#define COLLECTOR_MAX_RESOURCES 32
int collector_add_resource(struct collector *c, const char *name, bool event, uint64_t period);

/* Opens the events of every resource for process PID and, through inheritance, the threads and
 * children it creates after; ENABLE_ON_EXEC starts counting at its next exec (cppctl record),
 * else at once (attach: each existing thread gets its own events). For each resource that this
 * machine cannot count (-ENOENT/-EOPNOTSUPP/-ENODEV from the kernel or libpfm4),
 * *ret_unsupported gets its bit and the others go on. Returns the number of resources active,
 * or a negative errno: -EACCES/-EPERM (see perf_event_hint()), -ESRCH, -EMFILE, or -ENODEV when
 * no resource could be opened. *ret_failed names the resource behind an error. */
int collector_attach(struct collector *c, pid_t pid, bool enable_on_exec, uint32_t *ret_unsupported,
                     const char **ret_failed);

/* Opens the events of every resource on every task of the machine (per CPU, pid -1), after
 * learning the running processes from /proc. Results as collector_attach(). Needs root or
 * CAP_PERFMON (perf_event_paranoid). */
int collector_attach_system(struct collector *c, uint32_t *ret_unsupported, const char **ret_failed);

/* Opens the events of every resource on the tasks of one cgroup (v2), whose directory is open
 * as CGROUP_FD (borrowed; it may be closed after), per CPU with PERF_FLAG_PID_CGROUP. Results as
 * collector_attach(). */
int collector_attach_cgroup(struct collector *c, int cgroup_fd, uint32_t *ret_unsupported,
                            const char **ret_failed);

/* Samples a resource may bring in 10 ms, all CPUs together, before it is thinned (the kernel
 * programs' budget, for a program that thins its own: alloc-preload.h); 0: never thinned. */
uint64_t collector_window_budget(const struct collector *c);

/* A file descriptor that polls readable when records wait to be handled; -1 before attach. */
int collector_fd(struct collector *c);

/* Handles the records the reader thread has taken from the rings: all of them with BUDGET_NS 0,
 * else until BUDGET_NS of time is spent, leaving the rest for the next call (collector_fd()
 * stays readable), so that an event loop's timers (the flush) are not kept waiting by a slow
 * stretch (the first samples of a library, whose debug information is read). Returns the
 * number handled, or -ENOMEM, -ENOSPC, -EIO. Bad records are counted, not fatal. */
int collector_drain(struct collector *c, uint64_t budget_ns);

/* Handles every record the kernel wrote before the call (collector_drain() handles only what
 * the reader has queued, which lags behind on a busy machine), spending at most TIMEOUT_NS:
 * for a flush that must hold everything up to now. Returns 0, -ETIMEDOUT when time ran out
 * first, or collector_drain()'s errors. */
int collector_catch_up(struct collector *c, uint64_t timeout_ns);

/* Gives back memory the collector can do without until it needs it again: the resident pages
 * of the files its modules mapped (symbol tables, debug sections), read again when used. For a
 * long-running collector, now and then (each such page costs a fault when next used). */
void collector_release_memory(struct collector *c);

/* Stops the reader thread after a last pass over the rings; collector_drain(c, 0) then handles
 * the rest. */
void collector_stop(struct collector *c);

/* Writes the aggregated hits, lost counts and new processes to the store in one transaction,
 * then forgets the hits and the processes that exited. FINAL also ends the run. Returns 0 or
 * the store's negative errno (the hits stay in memory for a retry). */
int collector_flush(struct collector *c, bool final);

/* Forgets every store id the collector cached (rows of stacks, frames, processes...), for
 * when rows were deleted under it (retention). The next flush finds or adds them again. */
void collector_forget_store_ids(struct collector *c);

/* Closes the time buckets before the one holding WALL (unix seconds): samples of them handled
 * from now on join that bucket, as late samples join the bucket in memory, so that what the
 * store holds of a closed bucket is final (the daemon ships closed buckets to its fleet store).
 * Call it right after a flush; the floor never goes back. Returns the first bucket still open. */
int64_t collector_close_buckets(struct collector *c, int64_t wall);

/* The store's run id (0 before the first flush). */
int64_t collector_run_id(const struct collector *c);

/* Describes the run for the store: its kind ("record", "attach") and command line. */
void collector_set_run(struct collector *c, const char *kind, const char *command);

/* Offline input: records read from a file (perf.data) rather than from rings, fed one at a time.
 * collector_add_offline_resource() adds resource NAME counted in gticks of UNIT, one hit per
 * PERIOD gticks, measured by EVENT (words for the store), and sets *ret_id to the sample id its
 * samples must carry: PERF_SAMPLE_IDENTIFIER first, then RECORD_SAMPLE_TYPE's fields, then,
 * for DWARF unwinding, REGS_USER (UNWIND_REGS_MASK) and STACK_USER. From then on the collector
 * reads nothing of /proc: the processes are the file's, long gone or their pids reused.
 * collector_feed() handles one record, a sample as HITS hits; collector_feed_sample() one sample
 * already decoded (its id one of ours, its registers in UNWIND_REGS_MASK's order), which spares
 * a copy of its stack into the record layout. collector_set_origin() says where
 * and when the records were taken: HOST (NULL: this machine), the run's start (unix seconds),
 * and the wall-clock time of perf's clock 0 (ns), for the samples' time buckets. */
int collector_add_offline_resource(struct collector *c, const char *name, const char *unit, const char *event,
                                   uint64_t period, uint64_t *ret_id);
int collector_feed(struct collector *c, const struct perf_event_header *h, uint64_t hits);
int collector_feed_sample(struct collector *c, const struct record_sample *s, uint64_t hits);
int collector_set_origin(struct collector *c, const char *host, int64_t started, int64_t realtime_offset_ns);

void collector_get_stats(const struct collector *c, struct collector_stats *ret);
/* Why the uprobes of alloc-* could not count the target's allocations, when collector_attach()
 * failed for it ("an allocator of its own (libjemalloc.so.2 defines malloc)"); NULL otherwise. */
const char *collector_alloc_why(const struct collector *c);

/* Why Python frames are off although asked for (no BTF, BPF refused), or NULL. */
const char *collector_python_why(const struct collector *c);

unsigned collector_n_resources(const struct collector *c);
void collector_resource_stats(const struct collector *c, unsigned i, struct collector_resource_stats *ret);
