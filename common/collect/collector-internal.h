/* What the collector's parts share: the collector and the objects it holds, grouped by the part
 * that keeps them. The parts only look down, each using the ones listed before it:
 *
 *   collector-events.c     perf events and rings: their attributes, opening, the periods' jitter
 *   collector-tasks.c      processes, threads, their units (the reader thread's exec units and
 *                          cgroup cache), the side-band records that tell of them, reaping
 *   collector-stacks.c     the frame trie and a sample's stack: unwinding, JIT maps, symbols
 *   collector-aggregate.c  hits per (resource, thread, trie node) per time bucket; the rows a
 *                          flush writes
 *   collector.c            creation, resources, attaching, draining and dispatching records,
 *                          flushing: the public interface (collector.h)
 *
 * Only the collector's own files include this header. */
#pragma once

#include <assert.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "alloc-probe.h"
#include "collector.h"
#include "idmap.h"
#include "name-table.h"
#include "proc-maps.h"
#include "resource.h"
#include "ring-buffer.h"
#include "ring-reader.h"
#include "sampling-bpf.h"
#include "symbolize.h"
#include "symtab.h"
#include "thinning.h"
#include "unwind.h"

/* Field widths of an aggregation key: resource, thread slot, trie node. */
#define KEY_RESOURCE_BITS 5
#define KEY_SLOT_BITS 27
#define NS_PER_MS 1000000ULL
/* How often a process's perf map (JIT symbols) is looked at again for a PC it lacks. */
#define JIT_RECHECK_NS 1000000000ULL
/* How often the tasks followed are checked for being gone when no loss said to. */
#define GONE_CHECK_NS 10000000000ULL
/* One sample in this many has its phases timed (collector_stats.unwind_ns, symbolize_ns): the
 * clock costs as much as the rest of a cached sample's symbolization. */
#define TIMED_EVERY 16
/* Bytes a thread's stack copies keep above the highest top its unwinds needed. */
#define STACK_TOP_SLACK 64
/* A clock's kernel period is this fraction of its period; the BPF program keeps 1 tick in it. */
#define CLOCK_SPLIT 10
/* The kernel's shortest cpu-clock period (perf_swevent_init_hrtimer()). */
#define CLOCK_MIN_NS 10000ULL
/* The shortest clock period redrawn from user space (redraw_clock()), gated to some threads
 * (record, attach): the reader wakes at each overflow, at most 1,000 times a second per CPU; a
 * wake and an ioctl a sample cost the sampled program less than the nine more ticks a sample of
 * a program's coin (CLOCK_SPLIT) take (BENCHMARKS.md, "`cppctl record`'s clock redrawn too"). */
#define REDRAW_MIN_NS 1000000ULL
/* The same for a clock of every task (the daemon's): there every task's sample, on every CPU,
 * wakes the reader, and below 5 ms a loaded machine's daemon fell behind (a CI run: 64 of
 * ripgrep's samples kept against perf's 1,251, the clock thinned for the queue's pressure). */
#define REDRAW_ALL_MIN_NS 5000000ULL
/* The longest mean interval a redrawn clock's thinning draws: thinning relaxes at samples, so
 * a clock thinned past this (a stalled consumer doubles it every few ms) would hardly come back. */
#define REDRAW_MAX_NS 1000000000ULL
/* The most intervals one late redraw counts as missed: a reader stopped for seconds does not
 * draw for each. */
#define REDRAW_MAX_MISSED 100000
/* A redrawn clock is redrawn at every this many overflows, and the kernel repeats the period in
 * between: each redraw wakes the reader and costs a cross-CPU interrupt (its ioctl), which were
 * most of what the clock cost. The intervals stay independent of the program: each block of
 * equal ones starts at a random phase and is of random length (doc/sampling.md). */
#define REDRAW_EVERY 4
/* Thinning changes a redrawn clock's log holds until the consumer passes them. */
#define REDRAW_LOG 8
/* Late samples a redrawn clock's log holds until the consumer passes them: the log grows as the
 * consumer falls behind (a storm in another resource's rings keeps it behind the clock's
 * samples by hundreds of them); past this, their missed intervals count as lost. */
#define REDRAW_MISSED_MAX 65536u
/* The resource of events that count none (the side band's dummy). */
#define NO_RESOURCE COLLECTOR_MAX_RESOURCES
/* The idle task's process, thread and frame name (perf's). */
#define IDLE_NAME "swapper"

/* An aggregation key is resource << 59 | thread slot << 32 | trie node (aggregate()): every
 * resource index must fit its bits, and the three fields the 64 bits. */
static_assert(COLLECTOR_MAX_RESOURCES <= 1u << KEY_RESOURCE_BITS, "a resource index fits the key");
static_assert(KEY_RESOURCE_BITS + KEY_SLOT_BITS + 32 == 64, "the key's fields fill 64 bits");
static_assert(COLLECTOR_MAX_NODES < UINT32_MAX, "a trie node fits the key's low 32 bits");

enum event_role {
        ROLE_SAMPLE,  /* one hit a sample */
        ROLE_SYSCALL, /* one hit, and the system call's name ends the stack */
        ROLE_BYTES,   /* counted in user space from the returned byte count */
        ROLE_WEIGHT,  /* counted in the program (alloc-preload.h): the hits are in its raw data */
        ROLE_OFFCPU,  /* a switch out: the stack waits for the switch back in */
};

struct cresource {
        char *name;
        char *unit;
        char *event;                /* what measures it, for the store: "software:cpu-clock" */
        const struct resource *def; /* NULL for --event */
        uint64_t period;            /* gticks */
        bool active;
        bool unnamed; /* no event to open: never active (collector_resource_stats) */
        uint64_t samples, hits, lost, lost_flushed;
        uint64_t hits_flushed;    /* hits, at the last flush that committed */
        uint64_t lost_records;    /* of lost: told by the kernel's LOST records */
        uint64_t lost_unreported; /* of lost: counted by the programs, not yet told by the kernel */
        int64_t store_id;
        struct sampling_bpf *bpf; /* random intervals in the kernel; NULL: none */
        uint64_t keep_base;       /* BPF: 1 in this many kernel overflows is a period */
        bool random;              /* intervals drawn per sample (BPF, or user-space counters) */
        bool redraw;              /* a clock whose next period the reader draws at each sample */
        uint64_t redraw_period;   /* redraw: the mean period, ns */
        uint64_t redraw_factor;   /* redraw: its thinning, periods this many times as long (atomic) */
        uint64_t redraw_missed;   /* redraw: intervals whose end the reader was too late for that
                                   * no sample could stand for, not yet counted as lost (atomic) */
        struct thinning thin;
        uint64_t last_time;     /* of its latest sample, for losses (which carry none) */
        uint64_t uncounted;     /* ROLE_WEIGHT: processes that said they could not count it, */
        uint32_t uncounted_pid; /* the first of them */
        char uncounted_comm[16];
        uint64_t uncounted_flushed; /* the processes not counted the store was last told of */
        uint64_t ring_unmatched;    /* ROLE_WEIGHT: samples LOST records told of that no gap in a
                                     * thread's sequence has shown yet (handle_parsed_sample()) */
        bool probed;                /* alloc-*: counted by uprobes (alloc-probe.h), each sample's intervals in
                      * its raw field */
        /* Its samples with Python frames, those cut, and the frames unreadable (python_count());
         * and the samples the store was last told of */
        uint64_t py_samples, py_cut, py_unreadable, py_flushed;
};

/* One redrawn clock's event (one CPU): its fd and resource, and the thinning factors its
 * intervals were drawn with, as the reader drew them (redraw_clock()): for the samples taken
 * after TIME[i] (the redraw that first drew with it), FACTOR[i]; before the first, 1. The consumer reads the factor of each sample's
 * interval here, since it may have changed since; under redraw_lock. */
struct redraw_log {
        uint64_t id; /* the clock's own (a gate's notices come under another) */
        int fd, cpu;
        unsigned resource;
        uint64_t time[REDRAW_LOG], factor[REDRAW_LOG];
        unsigned n;
        uint64_t last; /* the factor of the latest draw */
        /* The late samples not yet weighed: the sample at MISSED_TIME[i] stands for MISSED[i]
         * more intervals, for i in [MISSED_HEAD, MISSED_HEAD + N_MISSED) of CAP_MISSED. */
        uint64_t *missed_time, *missed;
        unsigned missed_head, n_missed, cap_missed;
        uint64_t seen;   /* the time of the latest overflow drawn for (the reader's) */
        uint64_t period; /* the period in force since then (the reader's) */
        uint64_t carry;  /* intervals the next overflow stands for too (the floor's stretch) */
        uint64_t target; /* when the overflow asked for would come without delays (the reader's) */
        uint64_t delay;  /* how late overflows come after that, smoothed (redraw_clock()) */
        unsigned count;  /* overflows since the last redraw (the reader's) */
        /* Due a redraw (REDRAW_EVERY overflows since the last): the latest overflow in the pass,
         * of event PENDING_ID at PENDING_TIME, carrying PENDING_MISSED intervals more. */
        bool pending;
        uint64_t pending_id, pending_time, pending_missed;
};

struct cevent {
        unsigned resource;
        bool shared; /* not opened: another event counts it (context switches) */
        enum event_role role;
        struct perf_event_attr attr;
        unsigned raw_offset, raw_size; /* SYSCALL: the syscall number; BYTES: the return value;
                                        * WEIGHT: the hits (8 bytes), and the thinning K after them */
        const char *filter;
        uint64_t period;                 /* the kernel period (ns for clocks), for jitter */
        uint64_t fixed_period;           /* the period without BPF (plan_sampling()) */
        bool bpf;                        /* its resource's program decides which overflows stay */
        bool redraw;                     /* a clock redrawn at each sample (redraw_clock()) */
        bool gated;                      /* redraw, of some threads: opened per CPU for every task,
                                          * its resource's gate keeps their samples (plan_redraw()) */
        const struct count_point *count; /* not opened: a program at these raw tracepoints
                                          * counts its events down (plan_sampling()) */
        bool output;                     /* the BPF output event the programs write kept samples to, each
                                * with its weight (sampling-bpf.h) */
        bool python;                     /* the BPF output event of Python frames' companion records */
};

/* An event that a raw tracepoint sees too, where a counting program can take its place: each hit
 * of POINT is one event (USER_ADDR: if its first argument is a user address), and FIELD_ARG
 * (-1: none) is the argument a sample keeps (the system call's number). KERNEL_MODE: the point
 * sees the event in user mode only; the event itself stays open, excluding user mode, at
 * kernel period 1 with a coin (page faults taken in the kernel, on user memory). */
struct count_point {
        uint32_t type;
        uint64_t config;   /* SOFTWARE: the event; TRACEPOINT: unused (matched by role) */
        const char *probe; /* the tracefs name whose presence says the point exists */
        const char *point;
        bool user_addr;
        bool kernel_mode;
        int field_arg;
};

struct cfd {
        int fd;
        unsigned event;
};

struct process;

struct thread {
        uint32_t tid;
        struct process *process;
        char comm[16];
        uint32_t slot;
        int64_t store_id;
        bool exited;
        uint64_t gone_ns; /* found gone then (mark_gone()), its records maybe still queued */
        bool offcpu_pending;
        uint32_t offcpu_node;
        uint64_t offcpu_since;     /* ns */
        uint64_t offcpu_remaining; /* ns to the next real-time boundary */
        /* The user part of its last stack, outermost PC first, as far as it came from modules:
         * the trie node each PC's frames end at, while the process's mappings (their
         * generation) and the trie (its epoch) stay the same (sample_stack()). */
        struct stack_step *steps;
        uint32_t n_steps;
        size_t cap_steps;
        uint64_t steps_space, steps_epoch;
        /* Where its stacks end: the highest top its unwinds needed, as told to the ring reader
         * (under that generation of its table), which cuts its stack copies there; OFF once a
         * cut copy fell short (learn_stack_top()). */
        uint64_t stack_top, stack_top_generation;
        bool stack_top_off;
        uint64_t weight_seq[2]; /* ROLE_WEIGHT: the last sequence number of alloc-bytes',
                                 * alloc-count's samples (alloc-preload.h); 0: none yet */
        /* Its Python frames of the sample to come (python_companion()): a companion record */
        uint8_t *py_raw;
        uint32_t py_size;
        size_t py_cap;
        uint64_t py_time;
};

/* One PC of a thread's last stack: its trie node, and the frames (and unknown frames among
 * them) from the outermost PC to it. */
struct stack_step {
        uint64_t pc;
        uint32_t node;
        uint32_t frames, unknown;
};

/* Executable mappings a process keeps, with their records' times, for an exec met after them
 * (handle_comm()). */
#define RECENT_MAPS 4

struct recent_map {
        uint64_t time, start, end, pgoff;
        uint32_t module;
        char *file; /* the mapped file, if one we can open; NULL otherwise */
};

struct process {
        uint32_t pid;
        char comm[16];
        char *exe;        /* the executable's path; NULL until known */
        char *unit;       /* its systemd unit, from its cgroup; NULL if none */
        bool exe_pending; /* exec'd: the next file mapped executable is the program */
        struct proc_maps *maps;
        int64_t store_id;
        bool exited;
        uint64_t gone_ns;          /* found gone then (mark_gone()), its records maybe still queued */
        uint64_t *bytes_remaining; /* per resource counted in user space: gticks to the
                                         * next period boundary (bytes, shared switches) */
        struct symtab *jit;        /* /tmp/perf-PID.map, read when a PC falls outside modules */
        /* The map as last read (size, modification time, inode: a stale map of an earlier
         * process of the same pid, rewritten to the same size, is told apart by its time), and
         * when it was last looked at (CLOCK_MONOTONIC ns). */
        off_t jit_size;
        struct timespec jit_mtime;
        ino_t jit_ino;
        uint64_t jit_checked;
        uint64_t proc_reread_ns; /* when /proc was last read again for it (process_reread()) */
        bool proc_reread_idle;   /* and that read left the address that asked for it unmapped */
        /* The last RECENT_MAPS executable mappings recorded (a ring, the next at n_recent %
         * RECENT_MAPS): an exec's COMM record can be met after its program's own MMAP2s, which
         * two CPUs' rings carry when the task moved during the exec, and a pass of the reader
         * orders records by time only among those it found. */
        struct recent_map recent[RECENT_MAPS];
        unsigned n_recent;
        /* Python (collector-python.c): what the walker was told of it, once looked at */
        struct py_process *py;
        bool py_given_up;       /* a Python that cannot be read: said once */
        uint64_t py_generation; /* of its mappings when last looked at (0: never) */
        uint64_t py_retry;      /* CLOCK_MONOTONIC ns before which it is not looked at again */
        unsigned py_tries;      /* looks that found no glibc mapped yet */
};

struct trie_node {
        uint32_t parent;
        uint32_t frame;
        int64_t store_id;
};

struct agg {
        uint64_t hits, samples;
        uint64_t squares; /* the sum of each sample's hits squared */
};

struct collector {
        /* collector.c: what every part uses */
        struct collector_config config;
        struct store *store;
        struct symbolizer *sym;
        struct unwinder *unwinder; /* one for every process: it learns modules, not processes */

        /* collector-events.c, and attaching: resources, their events, the rings and their reader */
        struct cresource resources[COLLECTOR_MAX_RESOURCES];
        unsigned n_resources;
        struct cevent *events;
        unsigned n_events;
        size_t cap_events;
        struct cfd *fds;
        size_t n_fds, cap_fds;
        int n_cpus;
        struct ring_buffer **rings; /* by CPU the shared sample rings, then the side band's, then
                                     * each resource's; NULL until their first event opens */
        unsigned ring_share;        /* a resource's ring is the sample ring size / this */
        unsigned *ring_resource;    /* by index in ring_list: the resource whose samples it
                                     * holds, or NO_RESOURCE */
        pthread_mutex_t thin_lock;  /* the resources' thinning: the reader thread raises it */
        bool bpf_failed;            /* the last open_one() failed at attaching BPF */
        bool no_format_lost;        /* the kernel refused PERF_FORMAT_LOST (before Linux 6.0) */
        bool reader_realtime;       /* the reader thread is in the real-time class (start_reader()) */
        int n_ring_list;
        struct ring_buffer **ring_list; /* the rings that exist, for the reader */
        struct ring_reader *reader;
        const uint8_t *queue; /* records taken from the reader, handled up to queue_off */
        size_t queue_size, queue_off;
        struct idmap *event_ids; /* kernel event id -> index in events */
        /* Redrawn clocks (redraw_clock()): kernel event id -> index in redraw_logs, under
         * redraw_lock; and the reader thread's generator. */
        pthread_mutex_t redraw_lock;
        struct idmap *redraw_ids;
        struct redraw_log **redraw_logs;
        size_t n_redraw_logs, cap_redraw_logs;
        uint64_t redraw_rng;
        pid_t before_exec;               /* a command not yet started (record): a gated clock's samples of
                            * it until its exec are cppctl's, not the command's; 0: none */
        unsigned switches_via_offcpu;    /* context-switches counted from real-time's switch
                                         * samples, or NO_RESOURCE */
        struct alloc_probe *alloc_probe; /* alloc-* by uprobes: the processes' links; NULL: none */
        /* collector-python.c: Python frames */
        struct sampling_bpf_py *py;             /* the walker's maps; NULL: native frames only */
        struct py_code_cache *py_names;         /* code objects read, per process (under py_lock) */
        pthread_mutex_t py_lock;                /* the names, and what the reader thread sees: */
        struct idmap *py_pids;                  /* pid -> struct py_process *, the registry (under py_lock):
                                         * what the walker is told, 0 none, PY_GIVEN_UP */
        struct idmap *py_ids;                   /* the Python output events' ids (under py_lock) */
        uint64_t py_spaces;                     /* the last space given (struct py_process; under py_lock) */
        uint64_t py_registered, py_unsupported; /* registrations, Pythons given up (atomic) */
        bool py_lock_ready;
        struct py_prober *py_prober; /* the thread that looks at processes as they exec */
        char py_why[200];            /* why not, said once; "" */
        struct python_stats {
                uint64_t samples;    /* with Python frames */
                uint64_t frames;     /* Python frames stored */
                uint64_t unreadable; /* of which [python: unreadable] */
                uint64_t cut;        /* samples whose outermost Python frames were cut */
                uint64_t unplaced;   /* runs of Python frames put at the stack's outer end */
        } py_stats;
        struct alloc_probe_stats *alloc_stats; /* its figures, as last read (for the strings) */
        char alloc_why[160];                   /* why it could not start; "": it did */

        /* collector-tasks.c: processes, threads, exec units and the cgroup -> unit cache */
        /* Units of processes seen to exec, learned by the reader thread while they lived:
         * pid -> unit name or EXEC_UNIT_*, under exec_units_lock. */
        pthread_mutex_t exec_units_lock;
        struct idmap *exec_units;
        /* The reader thread's: each /proc/PID/cgroup text seen at an exec and its unit, as
         * libsystemd read it (strdup()ed, or NULL: none). A unit is a function of the cgroup. */
        struct name_table *cgroups;
        char **cgroup_units; /* by id in cgroups */
        size_t cap_cgroup_units;
        struct idmap *processes; /* pid -> struct process * */
        struct idmap *threads;   /* tid -> struct thread * */
        struct thread **slots;   /* thread slot -> thread */
        size_t n_slots, cap_slots;
        uint64_t lost_checked;    /* stats.lost when mark_gone() last looked */
        uint64_t gone_checked_ns; /* and when (CLOCK_MONOTONIC) */
        bool gone_waiting;        /* tasks found gone whose records may still be queued */
        uint64_t handled_ns;      /* the time of the latest record handled */

        /* collector-stacks.c: the frame trie, and the scratch space of one sample's stack */
        struct trie_node *nodes; /* nodes[0]: the empty stack */
        size_t n_nodes, cap_nodes;
        struct idmap *trie;  /* pair(parent, frame) -> node */
        uint64_t trie_epoch; /* counts the trie's fresh starts (trim()) */
        uint64_t pcs[COLLECTOR_MAX_STACK];
        uint64_t sps[COLLECTOR_MAX_STACK];       /* by PC: its frame's stack pointer (DWARF) */
        uint32_t stack[COLLECTOR_MAX_STACK];     /* frame indexes, innermost first */
        uint16_t pc_frames[COLLECTOR_MAX_STACK]; /* by PC: its frames in stack (0: unstable) */

        /* collector-aggregate.c: hits of the bucket in memory; the flush in progress */
        struct idmap *agg_index; /* key -> index in agg */
        uint64_t *agg_keys;
        struct agg *agg;
        size_t n_agg, cap_agg;
        int64_t agg_bucket;       /* unix seconds; -1 when empty */
        int64_t bucket_floor;     /* unix seconds: earlier buckets are closed (collector_close_buckets()) */
        uint64_t flush_failed_ns; /* CLOCK_MONOTONIC of the last failed flush; 0: none */
        /* What the flush in progress inserted: the run, and its first process and thread ids,
         * for a rollback to forget (forget_ids()). */
        bool txn_run;
        int64_t txn_process_id, txn_thread_id;

        /* collector.c: the run, its clock and its counts */
        int64_t realtime_offset; /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
        uint64_t rng;
        int64_t run_id;
        char *run_kind, *run_command;
        char *run_host;      /* offline: the recording's machine */
        int64_t run_started; /* offline: when the recording began */
        bool offline;        /* records come from a file: never read /proc */
        uint64_t feed_hits;  /* offline: the hits of the sample being fed */
        bool run_ended;
        struct collector_stats stats;
};

/* What events are opened on: a thread (and, inheriting, what it starts), every task (pid -1),
 * or a cgroup (its directory's fd, with PERF_FLAG_PID_CGROUP). */
struct targets {
        const pid_t *ids;
        int n;
        unsigned long flags;
        bool inherit;
        bool enable_on_exec;
};
