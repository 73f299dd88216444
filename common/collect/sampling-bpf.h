/* Random sampling in the kernel: tiny BPF programs count page faults, context switches and system
 * calls down at their raw tracepoints and sample where a geometric countdown ends, or decide at
 * each overflow (or tracepoint hit) of other events whether it becomes a sample; with a
 * probability the collector sets and the kernel raises by itself when a CPU brings more than its
 * budget; and write each kept sample, with its weight, into a BPF output event of our own
 * (paper §7.1's random intervals). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"

/* The kernel's reaction to a flood: each CPU counts its kept samples per window of this many
 * nanoseconds; past the budget the factor doubles at once (for the next overflow), and after a
 * window under a quarter of the budget it halves, never below the collector's. */
#define SAMPLING_BPF_WINDOW_NS 10000000ULL

/* The longest mean interval a counting program draws (sampling_bpf_set_period()): its
 * fixed-point arithmetic holds up to here. */
#define SAMPLING_BPF_MAX_COUNT_PERIOD (1ULL << 26)

/* What a kept sample's raw data holds (PERF_SAMPLE_RAW of the output event): the factor it was
 * kept with (1 in FACTOR overflows), then, for a tracepoint, the field the collector reads (the
 * syscall number), as 8 bytes. */
#define SAMPLING_BPF_RAW_FACTOR 0
#define SAMPLING_BPF_RAW_FIELD 8

struct sampling_bpf;

/* Creates the maps of one resource sampled on N_CPUS CPUs (keep every overflow until told
 * otherwise, no budget). Returns 0 and sets *ret, or a negative errno: -EPERM without CAP_BPF
 * (or CAP_SYS_ADMIN), -ENOSYS without bpf(), -ENOMEM. */
int sampling_bpf_new(unsigned n_cpus, struct sampling_bpf **ret);
struct sampling_bpf *sampling_bpf_free(struct sampling_bpf *s);
DEFINE_CLEANUP(struct sampling_bpf *, sampling_bpf_free);

/* The output event of CPU (a PERF_COUNT_SW_BPF_OUTPUT event opened on that CPU for every task):
 * the samples kept on that CPU are written there. Returns 0 or a negative errno. */
int sampling_bpf_set_output(struct sampling_bpf *s, unsigned cpu, int perf_fd);

/* Sample only the threads named with sampling_bpf_add_tid() and, from then on, what they start
 * (a program on sched:sched_process_fork adds the children). Must come before
 * sampling_bpf_hold_tracepoint(). Returns 0 or a negative errno. */
int sampling_bpf_filter_threads(struct sampling_bpf *s);
int sampling_bpf_add_tid(struct sampling_bpf *s, pid_t tid);
void sampling_bpf_remove_tid(struct sampling_bpf *s, pid_t tid);

/* Attaches the resource's BPF_PROG_TYPE_PERF_EVENT program to perf software or hardware event
 * PERF_FD: at each overflow it decides, writes a kept sample to the output event, and drops the
 * event's own sample. Returns 0, or a negative errno (-EPERM, -EINVAL from an old kernel). */
int sampling_bpf_attach(struct sampling_bpf *s, int perf_fd);

/* Attaches a gate to perf software event PERF_FD (a clock opened per CPU for every task, whose
 * period the collector redraws at each overflow): at each overflow the event writes its own
 * sample for the threads of the map (sampling_bpf_filter_threads(), first); for any other task
 * none, and the output event of the CPU gets a notice instead (raw data: 16 zero bytes), so that
 * the collector redraws the period all the same. No coin. Returns 0 or a negative errno. */
int sampling_bpf_gate(struct sampling_bpf *s, int perf_fd);

/* Runs the resource's BPF_PROG_TYPE_TRACEPOINT program at each hit of tracepoint ID (through a
 * holder event of our own): it decides, copies the 4- or 8-byte field at FIELD_OFFSET (if
 * FIELD_SIZE is not 0) into the raw data, writes a kept sample to the output event, and lets
 * the hit through untouched for every other perf user. Returns 0 or a negative errno. */
int sampling_bpf_hold_tracepoint(struct sampling_bpf *s, uint64_t id, unsigned field_offset,
                                 unsigned field_size);

/* Makes the resource's counting programs draw each interval between candidates at random, geometric
 * with mean PERIOD events (at most SAMPLING_BPF_MAX_COUNT_PERIOD): every event is a candidate
 * with probability 1/PERIOD, independently, without a random draw per event. Must come before
 * sampling_bpf_count_tracepoint(). Returns 0 or a negative errno (-ERANGE). */
int sampling_bpf_set_period(struct sampling_bpf *s, uint64_t period);

/* Sample only the tasks of cgroup CGROUP_FD (a cgroup2 directory) and its descendants: the
 * counting programs drop candidates of other tasks. Must come before
 * sampling_bpf_count_tracepoint(). Returns 0 or a negative errno. */
int sampling_bpf_filter_cgroup(struct sampling_bpf *s, int cgroup_fd);

/* Runs the resource's counting program at each hit of raw tracepoint NAME ("page_fault_user",
 * "sched_switch", "sys_enter"): a countdown per CPU, drawn anew at each candidate, which the
 * program keeps (thread or cgroup filters, then thinning) with the weight of its period. The
 * argument FIELD_ARG (-1: none) goes into the sample's raw field; USER_ADDR: hits whose first
 * argument is a kernel address do not count. The attachment lives as long as S. Returns 0, or a
 * negative errno (-ENOENT: no such tracepoint, -EPERM). */
int sampling_bpf_count_tracepoint(struct sampling_bpf *s, const char *name, int field_arg, bool user_addr);

/* Keeps one overflow (or, for counting programs, one event) in ONE_IN (at least 1; for counting
 * programs the period times a power of two), drawn independently. The kernel may
 * keep fewer under load (sampling_bpf_set_budget()), never more. Returns 0 or a negative errno. */
int sampling_bpf_set_keep(struct sampling_bpf *s, uint64_t one_in);

/* Each CPU keeps at most BUDGET samples per SAMPLING_BPF_WINDOW_NS before the kernel doubles
 * its factor, up to MAX_ONE_IN (0: no budget). Returns 0 or a negative errno. */
int sampling_bpf_set_budget(struct sampling_bpf *s, uint64_t budget, uint64_t max_one_in);

/* Samples the programs kept but the output events had no room for, on every CPU since the
 * start: the kernel reports its ring losses only at the ring's next write, so those at the end
 * of a flood would go unreported. *MAX_K: the largest k among them (what the heaviest weighed,
 * in the programs' units: keep_base per period). */
uint64_t sampling_bpf_failed(const struct sampling_bpf *s, uint64_t *max_k);

/* The kinds of allocation entry points (alloc-probe.c), each probe's cookie. */
enum sampling_bpf_alloc_kind {
        SAMPLING_BPF_ALLOC_MALLOC,
        SAMPLING_BPF_ALLOC_CALLOC,
        SAMPLING_BPF_ALLOC_REALLOC,
        SAMPLING_BPF_ALLOC_MEMALIGN,      /* and aligned_alloc where it is memalign (glibc < 2.38) */
        SAMPLING_BPF_ALLOC_ALIGNED_ALLOC, /* where it is a function of its own */
        SAMPLING_BPF_ALLOC_POSIX_MEMALIGN,
        SAMPLING_BPF_ALLOC_VALLOC,
        SAMPLING_BPF_ALLOC_PVALLOC,
};

/* BPF_TRACE_UPROBE_MULTI (Linux 6.6), which older uapi headers lack. */
#define SAMPLING_BPF_TRACE_UPROBE_MULTI 48

/* Loads the program that counts allocations down at uprobes on an allocator's entry points
 * (attached with BPF_TRACE_UPROBE_MULTI links, each entry point's cookie its kind): the size each
 * call asks for goes down BYTES's countdown (alloc-bytes; intervals in bytes) and each call down
 * CALLS's (alloc-count); either may be NULL, and each must have its period set. A kept sample's
 * raw field (SAMPLING_BPF_RAW_FIELD) is the number of intervals it ended, its weight before
 * thinning. Calls that cannot succeed (more than MAX_SIZE bytes, an invalid alignment) and those
 * glibc relays to its malloc are not counted. Returns the program's fd (the caller's) or a
 * negative errno (-EINVAL from a kernel before 6.6, -EOPNOTSUPP on an architecture whose
 * registers it does not know). */
int sampling_bpf_alloc_program(struct sampling_bpf *bytes, struct sampling_bpf *calls, uint64_t max_size);

/* Python frames (doc/design/python-frames.md). Where a kept sample is of a process registered
 * with sampling_bpf_py_set_process(), the program that keeps it (or, for a sample the kernel
 * writes itself, the gate or a clock's companion program at the same overflow) first walks the
 * sampled thread's Python frames, from its %fs base through the interpreter's thread-specific
 * key to its thread state and frame chain, and writes them, as a companion record, to the
 * resource's Python output event on this CPU: the same ring as the sample, just before it. */
#define SAMPLING_BPF_PY_MAX_FRAMES 64
#define SAMPLING_BPF_PY_MAGIC 0x31465950u /* "PYF1" */
#define SAMPLING_BPF_PY_NONE UINT16_MAX   /* an offset the layout does not have */

/* What the walker knows of a registered process: a py_procs map value, written by the
 * collector from struct py_process. */
struct sampling_bpf_py_proc {
        uint64_t key_addr;     /* &_PyRuntime's autoTSSkey: {int initialized; int key} */
        uint16_t tsd_first;    /* glibc: struct pthread -> specific_1stblock (keys < 32) */
        uint16_t ts_lo;        /* the thread state is read from here, 256 bytes: */
        uint16_t ts_frame;     /* from ts_lo: the _PyCFrame pointer, or the frame's (cf_current NONE) */
        uint16_t ts_thread_id; /* from ts_lo: pthread_self() of its thread */
        uint16_t ts_chunk;     /* from ts_lo: its stack chunk, where its frames are; NONE: unknown */
        uint16_t cf_current;   /* _PyCFrame -> its current frame; NONE: ts_frame is the frame */
        uint16_t cf_previous;  /* _PyCFrame -> the caller eval's; NONE: anchors are shim frames */
        uint16_t fr_code, fr_previous, fr_instr, fr_globals, fr_owner, fr_entry; /* < 120 */
        uint16_t pad;
};

/* A companion record's raw data: a header, then N frames, innermost first. */
struct sampling_bpf_py_header {
        uint32_t magic;
        uint8_t flags; /* SAMPLING_BPF_PY_* below */
        uint8_t pad;
        uint16_t n;
        uint64_t tstate;
        uint64_t anchor; /* 3.11: the anchor of the last frames' eval invocation, whose entry frame
                          * the walk did not reach (TRUNCATED, an error) */
};
enum {
        SAMPLING_BPF_PY_TRUNCATED = 1,  /* more frames than SAMPLING_BPF_PY_MAX_FRAMES: the outermost cut */
        SAMPLING_BPF_PY_READ_ERROR = 2, /* a frame could not be read: the walk stopped there */
        SAMPLING_BPF_PY_LOOP = 4,       /* a frame was its own caller */
        SAMPLING_BPF_PY_BAD_OWNER = 8,  /* a frame of no known owner: not a frame */
};
struct sampling_bpf_py_frame {
        uint64_t code;    /* the code object; 0 for a shim (3.12+: owner 3) */
        uint64_t globals; /* f_globals */
        uint32_t instr;   /* the instruction pointer less the code object, bytes; UINT32_MAX: odd */
        uint8_t entry;    /* the first frame of an eval loop's invocation (3.11) */
        uint8_t owner;
        uint16_t pad;
        uint64_t anchor; /* an address in that invocation's native frame (3.11: its _PyCFrame; 3.12+:
                           * the shim frame); 0 if not an entry */
};

/* The maps every resource's walker shares: which processes are Python, and a per-CPU scratch.
 * FSBASE_OFFSET: of task_struct's thread.fsbase (btf_field_offset()). Returns 0 or a negative
 * errno. */
struct sampling_bpf_py;
int sampling_bpf_py_new(long fsbase_offset, struct sampling_bpf_py **ret);
struct sampling_bpf_py *sampling_bpf_py_free(struct sampling_bpf_py *py);
DEFINE_CLEANUP(struct sampling_bpf_py *, sampling_bpf_py_free);
int sampling_bpf_py_set_process(struct sampling_bpf_py *py, pid_t tgid,
                                const struct sampling_bpf_py_proc *proc);
void sampling_bpf_py_remove_process(struct sampling_bpf_py *py, pid_t tgid);
/* The walks that read frames on every CPU since the start, and the time they took in all (the
 * walker times itself: two clock reads a walk). Returns 0 or a negative errno. */
int sampling_bpf_py_stats(const struct sampling_bpf_py *py, uint64_t *ret_walks, uint64_t *ret_ns);

/* Makes S's programs, built after this, walk Python frames: PY outlives S. Returns 0 or a
 * negative errno. */
int sampling_bpf_use_python(struct sampling_bpf *s, const struct sampling_bpf_py *py);
/* The Python output event of CPU (a PERF_COUNT_SW_BPF_OUTPUT event in the resource's ring there). */
int sampling_bpf_set_python_output(struct sampling_bpf *s, unsigned cpu, int perf_fd);
/* Attaches to clock PERF_FD (a redrawn clock of every task, which has no program) one that walks
 * the Python frames of the sample the clock is about to write. Returns 0 or a negative errno. */
int sampling_bpf_python_clock(struct sampling_bpf *s, int perf_fd);

/* Whether BPF sampling can work here: a probe map can be created. Returns 0, or the errno that
 * stopped it. Cached after the first call. */
int sampling_bpf_supported(void);
