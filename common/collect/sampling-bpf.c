/* Random sampling in the kernel.
 *
 * A fixed period locks onto any loop whose cycle divides it (paper §7.1). The kernel has no
 * random period, but it runs BPF programs at tracepoints and at each overflow of a perf event,
 * and a BPF program may write a sample of its own, with the kernel's callchain and user stack of
 * that moment, into a PERF_COUNT_SW_BPF_OUTPUT event (bpf_perf_event_output()). So each resource
 * gets an output event per CPU, for every task, whose ring is the resource's ring on that CPU,
 * and programs of one of two kinds.
 *
 * Counting programs (page faults, context switches, system calls: the events that come by the
 * million) are BPF_PROG_TYPE_RAW_TRACEPOINT programs attached with BPF_RAW_TRACEPOINT_OPEN: no
 * perf event, no record, no overflow path, and their answer gates nothing. At each hit:
 *
 *      left = left - 1                      this CPU's countdown (a per-CPU array)
 *      at 0: a candidate; left = a new geometric draw of mean P (emit_draw()), and a candidate
 *            of a thread or cgroup we follow goes on to the decision below with period P
 *
 * ceil(E) for an exponential E of rate -ln(1 - 1/P) is geometric: each event a candidate with
 * probability 1/P, independently of the others, as a coin per event would give, without the
 * coin. E comes from a table of the exponential's quantiles at u = i/4096 (a map we fill), a
 * bucket of equal probability picked by the top 12 bits of a random u32 and a point linearly
 * within it by the rest; the last bucket adds its start and draws again (the exponential
 * forgets). Filters run per candidate only: since every event of the CPU is a candidate with the
 * same probability, ours are too, and the cost per event stays a decrement.
 *
 * Every-event programs (other counted events, and all with every_event):
 *
 *   - for a software or hardware event: a BPF_PROG_TYPE_PERF_EVENT program on each of its
 *     events, run at each overflow (kernel period 1 for counted events) before the sample is
 *     written; it always returns 0, so the event's own sample (and its 16 KiB of stack) is never
 *     written. It may share a resource with counting programs (page faults: user-mode ones
 *     counted down at their tracepoint, kernel-mode ones by the software event with a coin);
 *     both weigh their samples alike;
 *   - for a tracepoint: a BPF_PROG_TYPE_TRACEPOINT program, run at each hit. Such a program
 *     belongs to the tracepoint, not to one event: whatever it returns gates every perf user of
 *     that tracepoint on the machine (perf trace, perf record beside us). Ours always returns 1,
 *     so others see every hit. It is attached through a holder, a disabled tracepoint event on
 *     ourselves, never inherited (an inherited event's exit takes the program off the tracepoint
 *     on 6.18).
 *
 * The gate (a clock redrawn from user space, the collector's redraw_clock(), opened per CPU for
 * every task but following some threads): a BPF_PROG_TYPE_PERF_EVENT program at each overflow
 * that returns 1, the event writing its own sample, for a thread in the thread map below, and
 * for any other task 0 and a 16-byte notice to the CPU's output event, so that the collector
 * redraws the clock at every overflow, ours or not. No coin: the clock's intervals are drawn in
 * user space.
 *
 * Tracepoint programs run for every task on the machine, so a collector of some threads filters
 * by thread id in a hash map, which a program on sched:sched_process_fork extends to the
 * children of the threads in it, at their birth; a collector of a cgroup (counting programs
 * only) by bpf_current_task_under_cgroup().
 *
 * The decision, on this CPU's state, for a candidate (period P) or an overflow (period 1):
 *
 *      k = max(k, k_min)                    k_min: 1 in how many the collector wants kept
 *      keep with probability period / k     bpf_get_prandom_u32() < (2^32 - 1) period / k
 *      on keep: kept++, and past the budget of this window: k = 2k (at most k_max), and the
 *               count starts again at half the budget
 *               write the sample, raw data = { k, the tracepoint's field }; count a full ring
 *      a new window (SAMPLING_BPF_WINDOW_NS) after one under a quarter of the budget: k = k/2
 *
 * A flood from k = period reaches the right k within one window, keeping there about the budget
 * plus half of it per doubling (3.5 budgets for a factor of 32); a window with half the budget
 * leaves k where it is, so a steady flood settles.
 *
 * The intervals are independent (geometric with mean k events, or k times the kernel period),
 * and each kept sample carries the k it was drawn with: its weight, the inverse of the
 * probability that kept it, which makes sums of weights unbiased however k moves, since k
 * depends only on the past. A flood is thinned within one sample on the CPU it floods, before a
 * ring can fill.
 *
 * The programs are built here as arrays and loaded with bpf(2): libbpf would bring an ELF
 * loader, BTF and a build-time BPF compiler for what fits on a few screens. */
#include "sampling-bpf.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perf-event.h"

#define MAX_HOLDERS 8
#define MAX_TIDS 65536
/* Buckets of the interval's quantile table: each holds 1/N of the probability, so the table is
 * exact in mass per bucket and linear within; the last, the tail, is drawn again (the
 * exponential forgets). */
#define N_QUANTILES 4096
#define QUANTILE_BITS 12
/* Fixed-point fraction of the quantiles (in events). */
#define QUANTILE_ONE 65536.0
/* Tail redraws before the interval is cut short: 4096^-8 of them are. */
#define MAX_TAIL_DRAWS 8

/* The collector's wishes (an array of one, written by us, read by the programs). */
struct ctl {
        uint64_t k_min;
        uint64_t budget;
        uint64_t k_max;
        uint64_t period; /* counting programs: the mean interval between candidates, events */
};

/* Each CPU's state (a per-CPU array of one, written by the programs only). */
struct state {
        uint64_t k;
        uint64_t window_start;
        uint64_t kept;
        uint64_t failed;   /* samples the output event had no room for */
        uint64_t failed_k; /* the largest k among them: what the heaviest weighed */
        uint64_t left;     /* counting programs: events to the next candidate, this one included */
};

/* One bucket of the interval's inverse distribution function (counting programs): the
 * exponential quantiles at u = i / N_QUANTILES and (i + 1) / N_QUANTILES, in 1/65536 events. */
struct quantile {
        uint64_t at;
        uint64_t next;
};

enum prog {
        PROG_PERF_EVENT,
        PROG_TRACEPOINT,
        PROG_FORK,
        PROG_COUNT,           /* counting, at a raw tracepoint */
        PROG_COUNT_USER_ADDR, /* the same, for hits whose first argument is a user address */
        PROG_GATE,            /* at a redrawn clock's overflow: lets its sample through for our threads */
        PROG_PYTHON,          /* at a redrawn clock's overflow: the Python frames of its sample */
        _PROG_MAX
};

struct sampling_bpf {
        int ctl_fd, state_fd, out_fd, tids_fd, cgroup_fd, quantiles_fd;
        int prog_fd[_PROG_MAX];
        unsigned field_offset, field_size; /* of the tracepoint program, once loaded */
        int field_arg;                     /* of the counting programs: -1, none */
        int holders[MAX_HOLDERS];          /* tracepoint events of our own that carry programs, and raw
                                   * tracepoint attachments */
        unsigned n_holders;
        struct ctl ctl;
        uint64_t rng; /* the first countdowns' draws */
        unsigned n_cpus;
        const struct sampling_bpf_py *py; /* Python frames' maps, or NULL */
        int py_out_fd;                    /* the Python output events, by CPU */
};

/* A walk's scratch (a per-CPU array of one): the companion record, the thread state read, and
 * a window of the thread's frames. */
#define PY_RECORD_MAX \
        (sizeof(struct sampling_bpf_py_header) + \
         SAMPLING_BPF_PY_MAX_FRAMES * sizeof(struct sampling_bpf_py_frame))
#define PY_READ 128 /* bytes of a frame: every field within 120 of its start */
#define PY_TS PY_RECORD_MAX
#define PY_TS_READ 256 /* bytes of a thread state, from ts_lo: every field within 248 */
#define PY_WIN (PY_TS + PY_TS_READ)
#define PY_WINDOW 4096 /* bytes of the frames read at once (a power of two) */
#define PY_STATS (PY_WIN + PY_WINDOW + 2 * PY_READ)
/* After the window: the walker's own bookkeeping, per CPU. */
struct py_stats {
        uint64_t busy;  /* a walk in progress on this CPU: a program nested in it (an interrupt's)
                         * does not walk, so as not to write over its scratch */
        uint64_t walks; /* walks that read frames, */
        uint64_t ns;    /* and the time they took */
        /* The walk's window: kept here, not on the program's stack, where the verifier would
         * follow their values through every frame and every path (seconds of loading). */
        uint64_t wlo, wn; /* the window's first address and its length (0: none) */
        uint64_t chunk;   /* the thread's stack chunk (0: unknown) */
};
#define PY_SCRATCH_SIZE (PY_STATS + sizeof(struct py_stats))

struct sampling_bpf_py {
        int procs_fd, scratch_fd;
        long fsbase_offset;
};

static int sys_bpf(int cmd, union bpf_attr *attr) {
        long r = syscall(SYS_bpf, cmd, attr, sizeof *attr);

        return r < 0 ? -errno : (int) r;
}

static int map_create(enum bpf_map_type type, unsigned key_size, unsigned value_size, unsigned max_entries,
                      const char *name) {
        union bpf_attr a = {
                .map_type = type,
                .key_size = key_size,
                .value_size = value_size,
                .max_entries = max_entries,
        };

        strncpy(a.map_name, name, sizeof a.map_name - 1);
        return sys_bpf(BPF_MAP_CREATE, &a);
}

static int map_update(int fd, const void *key, const void *value) {
        union bpf_attr a = {
                .map_fd = (uint32_t) fd,
                .key = (uint64_t) (uintptr_t) key,
                .value = (uint64_t) (uintptr_t) value,
                .flags = BPF_ANY,
        };

        return sys_bpf(BPF_MAP_UPDATE_ELEM, &a);
}

int sampling_bpf_supported(void) {
        static int cached = 1;
        int fd;

        if (cached <= 0)
                return cached;
        fd = map_create(BPF_MAP_TYPE_ARRAY, sizeof(uint32_t), sizeof(struct ctl), 1, "cppd_probe");
        if (fd < 0)
                return cached = fd;
        close(fd);
        return cached = 0;
}

static int write_ctl(struct sampling_bpf *s) {
        uint32_t key = 0;

        return map_update(s->ctl_fd, &key, &s->ctl);
}

int sampling_bpf_new(unsigned n_cpus, struct sampling_bpf **ret) {
        _cleanup_(sampling_bpf_freep) struct sampling_bpf *s = NULL;
        int r;

        s = malloc(sizeof *s);
        if (!s)
                return -ENOMEM;
        *s = (struct sampling_bpf) {
                .ctl_fd = -1,
                .state_fd = -1,
                .out_fd = -1,
                .tids_fd = -1,
                .cgroup_fd = -1,
                .quantiles_fd = -1,
                .prog_fd = { -1, -1, -1, -1, -1, -1, -1 },
                .py_out_fd = -1,
                .n_cpus = n_cpus,
                .field_arg = -1,
                .ctl = { .k_min = 1, .k_max = 1, .period = 1 },
        };
        s->ctl_fd = map_create(BPF_MAP_TYPE_ARRAY, sizeof(uint32_t), sizeof(struct ctl), 1, "cppd_ctl");
        if (s->ctl_fd < 0)
                return s->ctl_fd;
        s->state_fd = map_create(BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(uint32_t), sizeof(struct state), 1,
                                 "cppd_state");
        if (s->state_fd < 0)
                return s->state_fd;
        s->out_fd = map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, sizeof(uint32_t), sizeof(uint32_t), n_cpus,
                               "cppd_out");
        if (s->out_fd < 0)
                return s->out_fd;
        r = write_ctl(s);
        if (r < 0)
                return r;
        *ret = take_ptr(&s);
        return 0;
}

struct sampling_bpf *sampling_bpf_free(struct sampling_bpf *s) {
        if (!s)
                return NULL;
        for (unsigned i = 0; i < s->n_holders; i++)
                close(s->holders[i]);
        for (int i = 0; i < _PROG_MAX; i++)
                if (s->prog_fd[i] >= 0)
                        close(s->prog_fd[i]);
        if (s->ctl_fd >= 0)
                close(s->ctl_fd);
        if (s->state_fd >= 0)
                close(s->state_fd);
        if (s->out_fd >= 0)
                close(s->out_fd);
        if (s->tids_fd >= 0)
                close(s->tids_fd);
        if (s->cgroup_fd >= 0)
                close(s->cgroup_fd);
        if (s->quantiles_fd >= 0)
                close(s->quantiles_fd);
        if (s->py_out_fd >= 0)
                close(s->py_out_fd);
        free(s);
        return NULL;
}

int sampling_bpf_py_new(long fsbase_offset, struct sampling_bpf_py **ret) {
        _cleanup_(sampling_bpf_py_freep) struct sampling_bpf_py *py = malloc(sizeof *py);

        if (!py)
                return -ENOMEM;
        if (fsbase_offset < 0 || fsbase_offset > 65535)
                return -EINVAL;
        *py = (struct sampling_bpf_py) { .procs_fd = -1, .scratch_fd = -1, .fsbase_offset = fsbase_offset };
        py->procs_fd = map_create(BPF_MAP_TYPE_HASH, sizeof(uint32_t), sizeof(struct sampling_bpf_py_proc),
                                  16384, "cppd_py_procs");
        if (py->procs_fd < 0)
                return py->procs_fd;
        py->scratch_fd = map_create(BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(uint32_t), PY_SCRATCH_SIZE, 1,
                                    "cppd_py_scratch");
        if (py->scratch_fd < 0)
                return py->scratch_fd;
        *ret = take_ptr(&py);
        return 0;
}

struct sampling_bpf_py *sampling_bpf_py_free(struct sampling_bpf_py *py) {
        if (!py)
                return NULL;
        if (py->procs_fd >= 0)
                close(py->procs_fd);
        if (py->scratch_fd >= 0)
                close(py->scratch_fd);
        free(py);
        return NULL;
}

int sampling_bpf_py_set_process(struct sampling_bpf_py *py, pid_t tgid,
                                const struct sampling_bpf_py_proc *proc) {
        uint32_t key = (uint32_t) tgid;

        return map_update(py->procs_fd, &key, proc);
}

static int possible_cpus(void);

int sampling_bpf_py_stats(const struct sampling_bpf_py *py, uint64_t *ret_walks, uint64_t *ret_ns) {
        int n = possible_cpus();
        size_t stride = (PY_SCRATCH_SIZE + 7) / 8 * 8;
        _cleanup_free_ uint8_t *v = NULL;
        uint32_t key = 0;
        union bpf_attr a = { .map_fd = (uint32_t) py->scratch_fd, .key = (uint64_t) (uintptr_t) &key };
        uint64_t walks = 0, ns = 0;
        int r;

        if (n < 0)
                return n;
        v = malloc((size_t) n * stride);
        if (!v)
                return -ENOMEM;
        a.value = (uint64_t) (uintptr_t) v;
        r = sys_bpf(BPF_MAP_LOOKUP_ELEM, &a);
        if (r < 0)
                return r;
        for (int i = 0; i < n; i++) {
                struct py_stats st;

                memcpy(&st, v + (size_t) i * stride + PY_STATS, sizeof st);
                walks += st.walks;
                ns += st.ns;
        }
        *ret_walks = walks;
        *ret_ns = ns;
        return 0;
}

void sampling_bpf_py_remove_process(struct sampling_bpf_py *py, pid_t tgid) {
        uint32_t key = (uint32_t) tgid;
        union bpf_attr a = { .map_fd = (uint32_t) py->procs_fd, .key = (uint64_t) (uintptr_t) &key };

        (void) sys_bpf(BPF_MAP_DELETE_ELEM, &a);
}

int sampling_bpf_use_python(struct sampling_bpf *s, const struct sampling_bpf_py *py) {
        if (s->py_out_fd < 0) {
                s->py_out_fd = map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY, sizeof(uint32_t), sizeof(uint32_t),
                                          s->n_cpus, "cppd_py_out");
                if (s->py_out_fd < 0)
                        return s->py_out_fd;
        }
        s->py = py;
        return 0;
}

int sampling_bpf_set_python_output(struct sampling_bpf *s, unsigned cpu, int perf_fd) {
        uint32_t key = cpu, value = (uint32_t) perf_fd;

        if (s->py_out_fd < 0)
                return -EINVAL;
        return map_update(s->py_out_fd, &key, &value);
}

int sampling_bpf_set_output(struct sampling_bpf *s, unsigned cpu, int perf_fd) {
        uint32_t key = cpu, value = (uint32_t) perf_fd;

        return map_update(s->out_fd, &key, &value);
}

int sampling_bpf_set_keep(struct sampling_bpf *s, uint64_t one_in) {
        s->ctl.k_min = one_in ? one_in : 1;
        if (s->ctl.k_max < s->ctl.k_min)
                s->ctl.k_max = s->ctl.k_min;
        return write_ctl(s);
}

int sampling_bpf_set_budget(struct sampling_bpf *s, uint64_t budget, uint64_t max_one_in) {
        s->ctl.budget = budget;
        s->ctl.k_max = budget ? max_one_in : s->ctl.k_min;
        if (s->ctl.k_max < s->ctl.k_min)
                s->ctl.k_max = s->ctl.k_min;
        return write_ctl(s);
}

int sampling_bpf_add_tid(struct sampling_bpf *s, pid_t tid) {
        uint32_t key = (uint32_t) tid, one = 1;

        return s->tids_fd < 0 ? 0 : map_update(s->tids_fd, &key, &one);
}

void sampling_bpf_remove_tid(struct sampling_bpf *s, pid_t tid) {
        uint32_t key = (uint32_t) tid;
        union bpf_attr a = { .map_fd = (uint32_t) s->tids_fd, .key = (uint64_t) (uintptr_t) &key };

        if (s->tids_fd >= 0)
                (void) sys_bpf(BPF_MAP_DELETE_ELEM, &a);
}

/* How many values a per-CPU map holds: one per possible CPU (the highest in
 * /sys/devices/system/cpu/possible, "0-3" or "0,2-5", plus one). */
static int possible_cpus(void) {
        _cleanup_fclose_ FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
        char line[256], *p;
        long highest = -1;

        if (!f || !fgets(line, sizeof line, f))
                return -errno ? -errno : -EIO;
        for (p = line; *p;) {
                char *end;
                long v = strtol(p, &end, 10);

                if (end == p)
                        break;
                highest = MAX(highest, v);
                p = *end ? end + 1 : end;
        }
        return highest >= 0 ? (int) highest + 1 : -EIO;
}

uint64_t sampling_bpf_failed(const struct sampling_bpf *s, uint64_t *max_k) {
        _cleanup_free_ struct state *v = NULL;
        int n = possible_cpus();
        uint32_t key = 0;
        uint64_t sum = 0;
        union bpf_attr a = { .map_fd = (uint32_t) s->state_fd, .key = (uint64_t) (uintptr_t) &key };

        *max_k = 0;
        if (n <= 0 || !(v = calloc((size_t) n, sizeof *v)))
                return 0;
        a.value = (uint64_t) (uintptr_t) v;
        if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &a) < 0)
                return 0;
        for (int i = 0; i < n; i++) {
                sum += v[i].failed;
                *max_k = MAX(*max_k, v[i].failed_k);
        }
        return sum;
}

/* xorshift64*, for the first countdowns only (the programs draw the rest). */
static uint64_t rng_next(struct sampling_bpf *s) {
        s->rng ^= s->rng >> 12;
        s->rng ^= s->rng << 25;
        s->rng ^= s->rng >> 27;
        return s->rng * 2685821657736338717ULL;
}

/* The exponential's quantile at u = I / N_QUANTILES for rate LAMBDA, in 1/65536 events. */
static uint64_t quantile(unsigned i, double lambda) {
        return (uint64_t) (-log1p(-(double) i / N_QUANTILES) / lambda * QUANTILE_ONE);
}

int sampling_bpf_set_period(struct sampling_bpf *s, uint64_t period) {
        _cleanup_free_ struct state *v = NULL;
        double lambda;
        uint32_t key = 0;
        int n = possible_cpus(), r;

        if (period == 0 || period > SAMPLING_BPF_MAX_COUNT_PERIOD)
                return -ERANGE;
        if (n <= 0)
                return n < 0 ? n : -EIO;
        if (s->quantiles_fd < 0) {
                s->quantiles_fd = map_create(BPF_MAP_TYPE_ARRAY, sizeof(uint32_t), sizeof(struct quantile),
                                             N_QUANTILES, "cppd_quantiles");
                if (s->quantiles_fd < 0)
                        return s->quantiles_fd;
        }
        /* ceil(E) for E exponential of rate lambda is geometric with P(G > n) = e^(-lambda n) =
         * (1 - 1/period)^n: mean period, each event a candidate with probability 1/period,
         * independently. Period 1: lambda infinite, every quantile 0, every event. */
        lambda = -log1p(-1.0 / (double) period);
        for (unsigned i = 0; i < N_QUANTILES; i++) {
                struct quantile q = {
                        .at = quantile(i, lambda),
                        .next = i + 1 < N_QUANTILES ? quantile(i + 1, lambda) : 0,
                };

                r = map_update(s->quantiles_fd, &i, &q);
                if (r < 0)
                        return r;
        }
        s->ctl.period = period;
        r = write_ctl(s);
        if (r < 0)
                return r;

        /* Each CPU's first countdown, drawn here from the same distribution. */
        if (s->rng == 0 && getrandom(&s->rng, sizeof s->rng, 0) != sizeof s->rng)
                s->rng = (uint64_t) getpid() * 0x9e3779b97f4a7c15ULL;
        s->rng |= 1;
        v = calloc((size_t) n, sizeof *v);
        if (!v)
                return -ENOMEM;
        for (int i = 0; i < n; i++) {
                double u = ((double) (rng_next(s) >> 11) + 1.0) / 9007199254740992.0; /* (0, 1] */

                v[i].left = MAX((uint64_t) ceil(-log(u) / lambda), 1u);
        }
        return map_update(s->state_fd, &key, v);
}

int sampling_bpf_filter_cgroup(struct sampling_bpf *s, int cgroup_fd) {
        uint32_t key = 0, value = (uint32_t) cgroup_fd;

        if (s->prog_fd[PROG_COUNT] >= 0 || s->prog_fd[PROG_COUNT_USER_ADDR] >= 0)
                return -EBUSY; /* the counting programs were built without the filter */
        if (s->cgroup_fd < 0) {
                s->cgroup_fd = map_create(BPF_MAP_TYPE_CGROUP_ARRAY, sizeof(uint32_t), sizeof(uint32_t), 1,
                                          "cppd_cgroup");
                if (s->cgroup_fd < 0)
                        return s->cgroup_fd;
        }
        return map_update(s->cgroup_fd, &key, &value);
}

/* ---- the programs ---- */

/* Labels of a block of a program (each block has its own, from its base). */
enum {
        L_PASS,
        L_SAME,
        L_K_OK,
        L_K_MAX,
        L_KEEP,
        L_EMIT,
        L_DROP,
        L_COUNT,
        L_DRAW,
        L_INTERP,
        L_DRAWN,
        L_NONZERO,
        L_NEXT,  /* the allocation program: the next block */
        L_WHOLE, /* and its intervals ended without one more */
        LABELS_PER_BLOCK
};

/* The Python walker's labels (emit_python()): its own block after the three above, a few shared
 * ones then some per frame. */
enum {
        PY_L_WALK,
        PY_L_END,
        PY_L_ERR,
        PY_L_LOOP,
        PY_L_BAD,
        PY_L_WRITE,
        PY_L_DONE,
        PY_L_OUT,
        PY_L_NOCHUNK,
        PY_L_FRAMES, /* then PY_L_PER_FRAME per frame: */
};
enum {
        PY_L_SHIM_,
        PY_L_PREV_,
        PY_L_INSTR_,
        PY_L_NEW_,
        PY_L_CLAMPED_,
        PY_L_SMALL_,
        PY_L_READ_,
        PY_L_HAVE_,
        PY_L_PER_FRAME
};
#define PY_L_SHIM(i) (PY_L_FRAMES + PY_L_PER_FRAME * (i) + PY_L_SHIM_)
#define PY_L_PREV(i) (PY_L_FRAMES + PY_L_PER_FRAME * (i) + PY_L_PREV_)
#define PY_L_INSTR(i) (PY_L_FRAMES + PY_L_PER_FRAME * (i) + PY_L_INSTR_)
#define PY_L_NEW(i) (PY_L_FRAMES + PY_L_PER_FRAME * (i) + PY_L_NEW_)
#define PY_L_CLAMPED(i) (PY_L_FRAMES + PY_L_PER_FRAME * (i) + PY_L_CLAMPED_)
#define PY_L_SMALL(i) (PY_L_FRAMES + PY_L_PER_FRAME * (i) + PY_L_SMALL_)
#define PY_L_READ(i) (PY_L_FRAMES + PY_L_PER_FRAME * (i) + PY_L_READ_)
#define PY_L_HAVE(i) (PY_L_FRAMES + PY_L_PER_FRAME * (i) + PY_L_HAVE_)
#define PY_LABELS (PY_L_FRAMES + PY_L_PER_FRAME * SAMPLING_BPF_PY_MAX_FRAMES)

struct asm_prog {
        struct bpf_insn insn[16384];
        unsigned n;
        int label[3 * LABELS_PER_BLOCK + PY_LABELS]; /* instruction index of each label; -1 until
                                                      * placed */
        unsigned base;                               /* the block being written: its labels start here */
        struct asm_fix {
                unsigned at, label;
        } fix[2048]; /* jumps to patch */
        unsigned n_fix;
};

static void emit(struct asm_prog *p, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
        if (p->n < ELEMENTSOF(p->insn))
                p->insn[p->n] = (struct bpf_insn) {
                        .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm
                };
        p->n++;
}

/* A conditional or unconditional jump to LABEL of the current block, placed later with place(). */
static void jump(struct asm_prog *p, uint8_t code, uint8_t dst, uint8_t src, int32_t imm, unsigned label) {
        if (p->n_fix < ELEMENTSOF(p->fix))
                p->fix[p->n_fix] = (struct asm_fix) { .at = p->n, .label = p->base + label };
        p->n_fix++;
        emit(p, BPF_JMP | code, dst, src, 0, imm);
}

static void place(struct asm_prog *p, unsigned label) {
        p->label[p->base + label] = (int) p->n;
}

/* r = the map of FD (a 16-byte load the kernel resolves). */
static void load_map(struct asm_prog *p, uint8_t reg, int fd) {
        emit(p, BPF_LD | BPF_DW | BPF_IMM, reg, BPF_PSEUDO_MAP_FD, 0, fd);
        emit(p, 0, 0, 0, 0, 0);
}

static void call(struct asm_prog *p, int32_t helper) {
        emit(p, BPF_JMP | BPF_CALL, 0, 0, 0, helper);
}

#define MOV_X(d, s) emit(p, BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV_K(d, k) emit(p, BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, k)
#define ADD_K(d, k) emit(p, BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, k)
#define ALU_X(op, d, s) emit(p, BPF_ALU64 | (op) | BPF_X, d, s, 0, 0)
#define ALU_K(op, d, k) emit(p, BPF_ALU64 | (op) | BPF_K, d, 0, 0, k)
#define LDX(size, d, s, off) emit(p, BPF_LDX | BPF_MEM | (size), d, s, off, 0)
#define STX(size, d, s, off) emit(p, BPF_STX | BPF_MEM | (size), d, s, off, 0)
#define ST(size, d, off, k) emit(p, BPF_ST | BPF_MEM | (size), d, 0, off, k)
#define EXIT() emit(p, BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* Stack slots (below r10). */
enum {
        SLOT_TID = -4,    /* u32: the thread id looked up */
        SLOT_KEY = -8,    /* u32: key 0 */
        SLOT_RAW = -24,   /* 16 bytes: the sample's raw data */
        SLOT_INDEX = -40, /* u32: the quantile bucket drawn */
        SLOT_FRAC = -48,  /* u64: where in it */
        SLOT_SIZE = -56,  /* u64: the allocation program: the bytes of the allocation */
        SLOT_M = -64,     /* u64: and the intervals it ended (the sample's field) */
        SLOT_COIN = -72,  /* u64: and the chance of one more, in 2^-32 */
        /* The Python walker's (emit_python()) */
        SLOT_PY_R7 = -136, /* the registers it borrows */
        SLOT_PY_R8 = -144,
        SLOT_PY_R9 = -152,
        SLOT_PY_TGID = -156,  /* u32 */
        SLOT_PY_CF = -168,    /* u64: 3.11: the _PyCFrame of the next entry frame */
        SLOT_PY_FS = -176,    /* u64: the thread's %fs base, its struct pthread */
        SLOT_PY_TMP = -184,   /* u64: a word read */
        SLOT_PY_FRAME = -216, /* pointer: the frame in the window, less PY_WIN */
        SLOT_PY_BASE = -224,  /* pointer: the scratch */
        SLOT_PY_T0 = -232,    /* u64: when the walk began */
};

static int assemble(struct asm_prog *p) {
        if (p->n > ELEMENTSOF(p->insn) || p->n_fix > ELEMENTSOF(p->fix))
                return -E2BIG;
        for (unsigned i = 0; i < p->n_fix; i++) {
                int to = p->label[p->fix[i].label];

                if (to < 0)
                        return -EINVAL;
                p->insn[p->fix[i].at].off = (int16_t) (to - (int) p->fix[i].at - 1);
        }
        return 0;
}

/* REG = element 0 of the map of FD; to L_PASS if there is none. */
static void emit_lookup(struct asm_prog *p, int fd, uint8_t reg) {
        ST(BPF_W, BPF_REG_10, SLOT_KEY, 0);
        load_map(p, BPF_REG_1, fd);
        MOV_X(BPF_REG_2, BPF_REG_10);
        ADD_K(BPF_REG_2, SLOT_KEY);
        call(p, BPF_FUNC_map_lookup_elem);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0, L_PASS);
        MOV_X(reg, BPF_REG_0);
}

/* To L_PASS unless the current thread is in the thread map (if there is one). */
static void emit_thread_filter(const struct sampling_bpf *s, struct asm_prog *p) {
        if (s->tids_fd < 0)
                return;
        call(p, BPF_FUNC_get_current_pid_tgid);
        STX(BPF_W, BPF_REG_10, BPF_REG_0, SLOT_TID); /* the thread id, the low half */
        load_map(p, BPF_REG_1, s->tids_fd);
        MOV_X(BPF_REG_2, BPF_REG_10);
        ADD_K(BPF_REG_2, SLOT_TID);
        call(p, BPF_FUNC_map_lookup_elem);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0, L_PASS);
}

/* With r7 = ctl and r8 = this CPU's state: a new window relaxes k after a calm one; then
 * r9 = k = max(k, k_min), never past k_max; keep with probability period / k (to L_DROP if
 * not), period being ctl's for a counting program's candidates (CANDIDATE) and 1 for a coin's
 * overflow; count the kept sample, and past the budget double k for the next ones. */
static void emit_decide(struct asm_prog *p, bool candidate) {
        /* A new window? Then relax after a calm one, and count afresh. */
        call(p, BPF_FUNC_ktime_get_ns);
        LDX(BPF_DW, BPF_REG_2, BPF_REG_8, offsetof(struct state, window_start));
        MOV_X(BPF_REG_3, BPF_REG_0);
        ALU_X(BPF_SUB, BPF_REG_3, BPF_REG_2);
        emit(p, BPF_LD | BPF_DW | BPF_IMM, BPF_REG_4, 0, 0, (int32_t) SAMPLING_BPF_WINDOW_NS);
        emit(p, 0, 0, 0, 0, 0);
        jump(p, BPF_JLT | BPF_X, BPF_REG_3, BPF_REG_4, 0, L_SAME);
        STX(BPF_DW, BPF_REG_8, BPF_REG_0, offsetof(struct state, window_start));
        LDX(BPF_DW, BPF_REG_3, BPF_REG_8, offsetof(struct state, kept));
        ST(BPF_DW, BPF_REG_8, offsetof(struct state, kept), 0);
        ALU_K(BPF_LSH, BPF_REG_3, 2);
        LDX(BPF_DW, BPF_REG_4, BPF_REG_7, offsetof(struct ctl, budget));
        jump(p, BPF_JGE | BPF_X, BPF_REG_3, BPF_REG_4, 0, L_SAME);
        LDX(BPF_DW, BPF_REG_5, BPF_REG_8, offsetof(struct state, k));
        ALU_K(BPF_RSH, BPF_REG_5, 1);
        STX(BPF_DW, BPF_REG_8, BPF_REG_5, offsetof(struct state, k));
        place(p, L_SAME);

        /* k = max(k, k_min), never past k_max */
        LDX(BPF_DW, BPF_REG_9, BPF_REG_8, offsetof(struct state, k));
        LDX(BPF_DW, BPF_REG_4, BPF_REG_7, offsetof(struct ctl, k_min));
        jump(p, BPF_JGE | BPF_X, BPF_REG_9, BPF_REG_4, 0, L_K_OK);
        MOV_X(BPF_REG_9, BPF_REG_4);
        place(p, L_K_OK);
        LDX(BPF_DW, BPF_REG_4, BPF_REG_7, offsetof(struct ctl, k_max));
        jump(p, BPF_JLE | BPF_X, BPF_REG_9, BPF_REG_4, 0, L_K_MAX);
        MOV_X(BPF_REG_9, BPF_REG_4);
        place(p, L_K_MAX);
        STX(BPF_DW, BPF_REG_8, BPF_REG_9, offsetof(struct state, k));

        /* Keep with probability period / k (a candidate came 1 in period already). */
        if (candidate)
                LDX(BPF_DW, BPF_REG_4, BPF_REG_7, offsetof(struct ctl, period));
        else
                MOV_K(BPF_REG_4, 1);
        jump(p, BPF_JLE | BPF_X, BPF_REG_9, BPF_REG_4, 0, L_KEEP);
        call(p, BPF_FUNC_get_prandom_u32);
        emit(p, BPF_ALU | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, -1); /* 0xffffffff, zero-extended */
        if (candidate) {
                LDX(BPF_DW, BPF_REG_4, BPF_REG_7, offsetof(struct ctl, period));
                ALU_X(BPF_MUL, BPF_REG_1, BPF_REG_4);
        }
        ALU_X(BPF_DIV, BPF_REG_1, BPF_REG_9);
        jump(p, BPF_JGE | BPF_X, BPF_REG_0, BPF_REG_1, 0, L_DROP);
        place(p, L_KEEP);

        /* Count it; past the budget, the next ones are thinned twice as much. */
        LDX(BPF_DW, BPF_REG_3, BPF_REG_8, offsetof(struct state, kept));
        ADD_K(BPF_REG_3, 1);
        STX(BPF_DW, BPF_REG_8, BPF_REG_3, offsetof(struct state, kept));
        LDX(BPF_DW, BPF_REG_4, BPF_REG_7, offsetof(struct ctl, budget));
        jump(p, BPF_JEQ | BPF_K, BPF_REG_4, 0, 0, L_EMIT);
        jump(p, BPF_JLE | BPF_X, BPF_REG_3, BPF_REG_4, 0, L_EMIT);
        MOV_X(BPF_REG_5, BPF_REG_9);
        ALU_K(BPF_LSH, BPF_REG_5, 1);
        LDX(BPF_DW, BPF_REG_1, BPF_REG_7, offsetof(struct ctl, k_max));
        jump(p, BPF_JGT | BPF_X, BPF_REG_5, BPF_REG_1, 0, L_EMIT);
        STX(BPF_DW, BPF_REG_8, BPF_REG_5, offsetof(struct state, k));
        ALU_K(BPF_RSH, BPF_REG_4, 1);
        STX(BPF_DW, BPF_REG_8, BPF_REG_4, offsetof(struct state, kept));
        place(p, L_EMIT);
}

/* Where a sample's field comes from: nowhere, a tracepoint record's 4 or 8 bytes at an offset,
 * or a raw tracepoint's argument. */
struct field {
        enum {
                FIELD_NONE,
                FIELD_RECORD,
                FIELD_ARG,
                FIELD_SLOT /* 8 bytes at SLOT_M */
        } kind;
        unsigned offset, size; /* RECORD: bytes; ARG: the argument's index */
};

/* ---- Python frames ---- */

#define PY_OFF(field) ((int16_t) offsetof(struct sampling_bpf_py_proc, field))
#define PY_ST(field) ((int16_t) (PY_STATS + offsetof(struct py_stats, field)))
#define PY_REC(i, field) \
        ((int16_t) (sizeof(struct sampling_bpf_py_header) + (i) * sizeof(struct sampling_bpf_py_frame) + \
                    offsetof(struct sampling_bpf_py_frame, field)))

/* DST = SIZE bytes at (the process entry's u16 FIELD: a frame's, below 128, or a thread state's,
 * below 256) past BASE_SLOT's pointer (a pointer into the scratch, spilled there) plus AT. Uses
 * r0, r1. */
static void py_field(struct asm_prog *p, int16_t field, uint8_t size, uint8_t dst, int16_t base_slot,
                     int16_t at) {
        LDX(BPF_H, BPF_REG_1, BPF_REG_8, field);
        ALU_K(BPF_AND, BPF_REG_1, at == (int16_t) PY_TS ? PY_TS_READ - 1 : PY_READ - 1);
        LDX(BPF_DW, BPF_REG_0, BPF_REG_10, base_slot);
        ALU_X(BPF_ADD, BPF_REG_1, BPF_REG_0);
        LDX(size, dst, BPF_REG_1, at);
}

/* probe_read_user(SLOT_PY_TMP, 8, r3); to LABEL if it fails. */
static void py_read_word(struct asm_prog *p, unsigned label) {
        MOV_X(BPF_REG_1, BPF_REG_10);
        ADD_K(BPF_REG_1, SLOT_PY_TMP);
        MOV_K(BPF_REG_2, 8);
        call(p, BPF_FUNC_probe_read_user);
        jump(p, BPF_JNE | BPF_K, BPF_REG_0, 0, 0, label);
}

static void py_flag(struct asm_prog *p, int32_t flag) {
        LDX(BPF_B, BPF_REG_1, BPF_REG_7, offsetof(struct sampling_bpf_py_header, flags));
        ALU_K(BPF_OR, BPF_REG_1, flag);
        STX(BPF_B, BPF_REG_7, BPF_REG_1, offsetof(struct sampling_bpf_py_header, flags));
}

/* SLOT_PY_FRAME = where frame r9 is in the window (the scratch from PY_WIN), read anew when it is
 * not in the one read last: PY_WINDOW bytes ending past it, not below the thread's stack chunk
 * (CPython keeps a thread's frames contiguous there, callers below callees: a window holds a
 * few dozen), or its PY_READ bytes alone where that read fails (a generator's frame, on the
 * heap). To PY_L_ERR if even that fails. Frame I's labels. */
static void py_window(struct asm_prog *p, unsigned i) {
        LDX(BPF_DW, BPF_REG_1, BPF_REG_7, PY_ST(wlo));
        MOV_X(BPF_REG_2, BPF_REG_9);
        ALU_X(BPF_SUB, BPF_REG_2, BPF_REG_1); /* its offset in the window */
        LDX(BPF_DW, BPF_REG_3, BPF_REG_7, PY_ST(wn));
        ADD_K(BPF_REG_3, -PY_READ);
        jump(p, BPF_JSLT | BPF_K, BPF_REG_2, 0, 0, PY_L_NEW(i));
        jump(p, BPF_JSLE | BPF_X, BPF_REG_2, BPF_REG_3, 0, PY_L_HAVE(i));
        place(p, PY_L_NEW(i));
        /* lo = frame + PY_READ - PY_WINDOW, or the chunk's start if that is higher and below it */
        MOV_X(BPF_REG_3, BPF_REG_9);
        ADD_K(BPF_REG_3, PY_READ - PY_WINDOW);
        LDX(BPF_DW, BPF_REG_4, BPF_REG_7, PY_ST(chunk));
        jump(p, BPF_JGT | BPF_X, BPF_REG_4, BPF_REG_9, 0, PY_L_CLAMPED(i));
        jump(p, BPF_JGE | BPF_X, BPF_REG_3, BPF_REG_4, 0, PY_L_CLAMPED(i));
        MOV_X(BPF_REG_3, BPF_REG_4);
        place(p, PY_L_CLAMPED(i));
        MOV_X(BPF_REG_2, BPF_REG_9);
        ADD_K(BPF_REG_2, PY_READ);
        ALU_X(BPF_SUB, BPF_REG_2, BPF_REG_3);
        jump(p, BPF_JGT | BPF_K, BPF_REG_2, 0, PY_WINDOW, PY_L_SMALL(i));
        jump(p, BPF_JLT | BPF_K, BPF_REG_2, 0, PY_READ, PY_L_SMALL(i));
        STX(BPF_DW, BPF_REG_7, BPF_REG_3, PY_ST(wlo));
        STX(BPF_DW, BPF_REG_7, BPF_REG_2, PY_ST(wn));
        MOV_X(BPF_REG_1, BPF_REG_7);
        ADD_K(BPF_REG_1, (int32_t) PY_WIN);
        call(p, BPF_FUNC_probe_read_user);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0, PY_L_READ(i));
        place(p, PY_L_SMALL(i)); /* the frame alone */
        STX(BPF_DW, BPF_REG_7, BPF_REG_9, PY_ST(wlo));
        ST(BPF_DW, BPF_REG_7, PY_ST(wn), PY_READ);
        MOV_X(BPF_REG_1, BPF_REG_7);
        ADD_K(BPF_REG_1, (int32_t) PY_WIN);
        MOV_K(BPF_REG_2, PY_READ);
        MOV_X(BPF_REG_3, BPF_REG_9);
        call(p, BPF_FUNC_probe_read_user);
        jump(p, BPF_JNE | BPF_K, BPF_REG_0, 0, 0, PY_L_ERR);
        place(p, PY_L_READ(i));
        LDX(BPF_DW, BPF_REG_1, BPF_REG_7, PY_ST(wlo));
        MOV_X(BPF_REG_2, BPF_REG_9);
        ALU_X(BPF_SUB, BPF_REG_2, BPF_REG_1);
        place(p, PY_L_HAVE(i));
        ALU_K(BPF_AND, BPF_REG_2, PY_WINDOW - 1); /* within it already: a bound the verifier sees */
        ALU_X(BPF_ADD, BPF_REG_2, BPF_REG_7);
        STX(BPF_DW, BPF_REG_10, BPF_REG_2, SLOT_PY_FRAME);
}

/* With ctx in r6: if the current process is a registered Python, its thread's Python frames as a
 * companion record to the Python output event of this CPU (see sampling-bpf.h). r7, r8 and r9
 * are kept; r0-r5 are not. Reads are bounded (a window of the thread's frames, at most
 * SAMPLING_BPF_PY_MAX_FRAMES frames, one more read per 3.11 entry frame), and a read that fails,
 * a chain that loops or an owner that is no frame's ends the walk, flagged. */
static void emit_python(const struct sampling_bpf *s, struct asm_prog *p) {
        unsigned saved_base = p->base;

        if (!s->py || s->py_out_fd < 0)
                return;
        p->base = 3 * LABELS_PER_BLOCK;
        STX(BPF_DW, BPF_REG_10, BPF_REG_7, SLOT_PY_R7);
        STX(BPF_DW, BPF_REG_10, BPF_REG_8, SLOT_PY_R8);
        STX(BPF_DW, BPF_REG_10, BPF_REG_9, SLOT_PY_R9);

        /* r8 = the process's entry, r7 = this CPU's scratch */
        call(p, BPF_FUNC_get_current_pid_tgid);
        ALU_K(BPF_RSH, BPF_REG_0, 32);
        STX(BPF_W, BPF_REG_10, BPF_REG_0, SLOT_PY_TGID);
        load_map(p, BPF_REG_1, s->py->procs_fd);
        MOV_X(BPF_REG_2, BPF_REG_10);
        ADD_K(BPF_REG_2, SLOT_PY_TGID);
        call(p, BPF_FUNC_map_lookup_elem);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0, PY_L_OUT);
        MOV_X(BPF_REG_8, BPF_REG_0);
        ST(BPF_W, BPF_REG_10, SLOT_PY_TGID, 0);
        load_map(p, BPF_REG_1, s->py->scratch_fd);
        MOV_X(BPF_REG_2, BPF_REG_10);
        ADD_K(BPF_REG_2, SLOT_PY_TGID);
        call(p, BPF_FUNC_map_lookup_elem);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0, PY_L_OUT);
        MOV_X(BPF_REG_7, BPF_REG_0);
        /* This CPU's scratch, unless a walk it interrupted holds it. */
        LDX(BPF_DW, BPF_REG_1, BPF_REG_7, (int16_t) (PY_STATS + offsetof(struct py_stats, busy)));
        jump(p, BPF_JNE | BPF_K, BPF_REG_1, 0, 0, PY_L_OUT);
        ST(BPF_DW, BPF_REG_7, (int16_t) (PY_STATS + offsetof(struct py_stats, busy)), 1);
        call(p, BPF_FUNC_ktime_get_ns);
        STX(BPF_DW, BPF_REG_10, BPF_REG_0, SLOT_PY_T0);
        ST(BPF_W, BPF_REG_7, offsetof(struct sampling_bpf_py_header, magic), (int32_t) SAMPLING_BPF_PY_MAGIC);
        ST(BPF_W, BPF_REG_7, offsetof(struct sampling_bpf_py_header, flags), 0); /* flags, pad, n */
        ST(BPF_DW, BPF_REG_10, SLOT_PY_CF, 0);
        ST(BPF_DW, BPF_REG_7, PY_ST(wlo), 0);
        ST(BPF_DW, BPF_REG_7, PY_ST(wn), 0);
        ST(BPF_DW, BPF_REG_7, PY_ST(chunk), 0);
        MOV_X(BPF_REG_1, BPF_REG_7);
        STX(BPF_DW, BPF_REG_10, BPF_REG_1, SLOT_PY_BASE); /* py_field()'s base for the thread state */

        /* The thread's %fs base: its struct pthread (glibc), from the task. */
        call(p, BPF_FUNC_get_current_task);
        MOV_X(BPF_REG_3, BPF_REG_0);
        ADD_K(BPF_REG_3, (int32_t) s->py->fsbase_offset);
        MOV_X(BPF_REG_1, BPF_REG_10);
        ADD_K(BPF_REG_1, SLOT_PY_FS);
        MOV_K(BPF_REG_2, 8);
        call(p, BPF_FUNC_probe_read_kernel);
        jump(p, BPF_JNE | BPF_K, BPF_REG_0, 0, 0, PY_L_DONE);

        /* The interpreter's key, read at each sample: unset before Py_Initialize(), new after a fork. */
        LDX(BPF_DW, BPF_REG_3, BPF_REG_8, PY_OFF(key_addr));
        py_read_word(p, PY_L_DONE);
        LDX(BPF_W, BPF_REG_1, BPF_REG_10, SLOT_PY_TMP);
        jump(p, BPF_JNE | BPF_K, BPF_REG_1, 0, 1, PY_L_DONE);
        LDX(BPF_W, BPF_REG_2, BPF_REG_10, SLOT_PY_TMP + 4);
        jump(p, BPF_JGT | BPF_K, BPF_REG_2, 0, 31, PY_L_DONE);

        /* The thread state: pthread_getspecific(key) done by hand. */
        ALU_K(BPF_LSH, BPF_REG_2, 4);
        LDX(BPF_H, BPF_REG_1, BPF_REG_8, PY_OFF(tsd_first));
        ALU_X(BPF_ADD, BPF_REG_2, BPF_REG_1);
        LDX(BPF_DW, BPF_REG_3, BPF_REG_10, SLOT_PY_FS);
        ALU_X(BPF_ADD, BPF_REG_3, BPF_REG_2);
        ADD_K(BPF_REG_3, 8);
        py_read_word(p, PY_L_DONE);
        LDX(BPF_DW, BPF_REG_3, BPF_REG_10, SLOT_PY_TMP);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_3, 0, 0, PY_L_DONE); /* a thread without Python */
        STX(BPF_DW, BPF_REG_7, BPF_REG_3, offsetof(struct sampling_bpf_py_header, tstate));
        LDX(BPF_H, BPF_REG_1, BPF_REG_8, PY_OFF(ts_lo));
        ALU_X(BPF_ADD, BPF_REG_3, BPF_REG_1);
        MOV_X(BPF_REG_1, BPF_REG_7);
        ADD_K(BPF_REG_1, (int32_t) PY_TS);
        MOV_K(BPF_REG_2, PY_TS_READ);
        call(p, BPF_FUNC_probe_read_user);
        jump(p, BPF_JNE | BPF_K, BPF_REG_0, 0, 0, PY_L_DONE);
        /* Its thread's, or garbage in the slot. */
        py_field(p, PY_OFF(ts_thread_id), BPF_DW, BPF_REG_2, SLOT_PY_BASE, (int16_t) PY_TS);
        LDX(BPF_DW, BPF_REG_3, BPF_REG_10, SLOT_PY_FS);
        jump(p, BPF_JNE | BPF_X, BPF_REG_2, BPF_REG_3, 0, PY_L_DONE);
        LDX(BPF_H, BPF_REG_1, BPF_REG_8, PY_OFF(ts_chunk));
        jump(p, BPF_JEQ | BPF_K, BPF_REG_1, 0, SAMPLING_BPF_PY_NONE, PY_L_NOCHUNK);
        py_field(p, PY_OFF(ts_chunk), BPF_DW, BPF_REG_2, SLOT_PY_BASE, (int16_t) PY_TS);
        STX(BPF_DW, BPF_REG_7, BPF_REG_2, PY_ST(chunk));
        place(p, PY_L_NOCHUNK);
        py_field(p, PY_OFF(ts_frame), BPF_DW, BPF_REG_9, SLOT_PY_BASE, (int16_t) PY_TS);
        LDX(BPF_H, BPF_REG_1, BPF_REG_8, PY_OFF(cf_current));
        jump(p, BPF_JEQ | BPF_K, BPF_REG_1, 0, SAMPLING_BPF_PY_NONE, PY_L_WALK);
        /* 3.11, 3.12: r9 is the innermost eval's _PyCFrame */
        STX(BPF_DW, BPF_REG_10, BPF_REG_9, SLOT_PY_CF);
        MOV_X(BPF_REG_3, BPF_REG_9);
        ALU_X(BPF_ADD, BPF_REG_3, BPF_REG_1);
        py_read_word(p, PY_L_DONE);
        LDX(BPF_DW, BPF_REG_9, BPF_REG_10, SLOT_PY_TMP);
        place(p, PY_L_WALK);

        for (unsigned i = 0; i < SAMPLING_BPF_PY_MAX_FRAMES; i++) {
                jump(p, BPF_JEQ | BPF_K, BPF_REG_9, 0, 0, PY_L_END);
                py_window(p, i);
                py_field(p, PY_OFF(fr_owner), BPF_B, BPF_REG_2, SLOT_PY_FRAME, (int16_t) PY_WIN);
                STX(BPF_B, BPF_REG_7, BPF_REG_2, PY_REC(i, owner));
                ST(BPF_DW, BPF_REG_7, PY_REC(i, anchor), 0);
                ST(BPF_B, BPF_REG_7, PY_REC(i, entry), 0);
                jump(p, BPF_JEQ | BPF_K, BPF_REG_2, 0, 3, PY_L_SHIM(i));
                jump(p, BPF_JGT | BPF_K, BPF_REG_2, 0, 3, PY_L_BAD);
                py_field(p, PY_OFF(fr_code), BPF_DW, BPF_REG_3, SLOT_PY_FRAME, (int16_t) PY_WIN);
                STX(BPF_DW, BPF_REG_7, BPF_REG_3, PY_REC(i, code));
                py_field(p, PY_OFF(fr_globals), BPF_DW, BPF_REG_4, SLOT_PY_FRAME, (int16_t) PY_WIN);
                STX(BPF_DW, BPF_REG_7, BPF_REG_4, PY_REC(i, globals));
                py_field(p, PY_OFF(fr_instr), BPF_DW, BPF_REG_4, SLOT_PY_FRAME, (int16_t) PY_WIN);
                ALU_X(BPF_SUB, BPF_REG_4, BPF_REG_3);
                STX(BPF_W, BPF_REG_7, BPF_REG_4, PY_REC(i, instr));
                /* An instruction outside [code, code + 2^28) is not this code's. */
                jump(p, BPF_JLT | BPF_K, BPF_REG_4, 0, 1 << 28, PY_L_INSTR(i));
                ST(BPF_W, BPF_REG_7, PY_REC(i, instr), -1);
                place(p, PY_L_INSTR(i));
                /* The first frame of an eval invocation (3.11): its _PyCFrame is the anchor, and
                 * the next entry's is the one before it. */
                LDX(BPF_H, BPF_REG_1, BPF_REG_8, PY_OFF(fr_entry));
                jump(p, BPF_JEQ | BPF_K, BPF_REG_1, 0, SAMPLING_BPF_PY_NONE, PY_L_PREV(i));
                py_field(p, PY_OFF(fr_entry), BPF_B, BPF_REG_2, SLOT_PY_FRAME, (int16_t) PY_WIN);
                STX(BPF_B, BPF_REG_7, BPF_REG_2, PY_REC(i, entry));
                jump(p, BPF_JEQ | BPF_K, BPF_REG_2, 0, 0, PY_L_PREV(i));
                LDX(BPF_DW, BPF_REG_3, BPF_REG_10, SLOT_PY_CF);
                STX(BPF_DW, BPF_REG_7, BPF_REG_3, PY_REC(i, anchor));
                jump(p, BPF_JEQ | BPF_K, BPF_REG_3, 0, 0, PY_L_PREV(i));
                LDX(BPF_H, BPF_REG_1, BPF_REG_8, PY_OFF(cf_previous));
                jump(p, BPF_JEQ | BPF_K, BPF_REG_1, 0, SAMPLING_BPF_PY_NONE, PY_L_PREV(i));
                ALU_X(BPF_ADD, BPF_REG_3, BPF_REG_1);
                ST(BPF_DW, BPF_REG_10, SLOT_PY_CF, 0);
                py_read_word(p, PY_L_PREV(i));
                LDX(BPF_DW, BPF_REG_3, BPF_REG_10, SLOT_PY_TMP);
                STX(BPF_DW, BPF_REG_10, BPF_REG_3, SLOT_PY_CF);
                jump(p, BPF_JA, 0, 0, 0, PY_L_PREV(i));
                /* 3.12+: a frame the C stack owns marks where an eval invocation begins. */
                place(p, PY_L_SHIM(i));
                ST(BPF_DW, BPF_REG_7, PY_REC(i, code), 0);
                STX(BPF_DW, BPF_REG_7, BPF_REG_9, PY_REC(i, anchor));
                ST(BPF_B, BPF_REG_7, PY_REC(i, entry), 1);
                place(p, PY_L_PREV(i));
                ST(BPF_H, BPF_REG_7, offsetof(struct sampling_bpf_py_header, n), (int32_t) i + 1);
                py_field(p, PY_OFF(fr_previous), BPF_DW, BPF_REG_3, SLOT_PY_FRAME, (int16_t) PY_WIN);
                jump(p, BPF_JEQ | BPF_X, BPF_REG_3, BPF_REG_9, 0, PY_L_LOOP);
                MOV_X(BPF_REG_9, BPF_REG_3);
        }
        jump(p, BPF_JEQ | BPF_K, BPF_REG_9, 0, 0, PY_L_END);
        py_flag(p, SAMPLING_BPF_PY_TRUNCATED);
        jump(p, BPF_JA, 0, 0, 0, PY_L_END);
        place(p, PY_L_ERR);
        py_flag(p, SAMPLING_BPF_PY_READ_ERROR);
        jump(p, BPF_JA, 0, 0, 0, PY_L_END);
        place(p, PY_L_LOOP);
        py_flag(p, SAMPLING_BPF_PY_LOOP);
        jump(p, BPF_JA, 0, 0, 0, PY_L_END);
        place(p, PY_L_BAD);
        py_flag(p, SAMPLING_BPF_PY_BAD_OWNER);
        place(p, PY_L_END);
        LDX(BPF_DW, BPF_REG_1, BPF_REG_10, SLOT_PY_CF);
        STX(BPF_DW, BPF_REG_7, BPF_REG_1, offsetof(struct sampling_bpf_py_header, anchor));
        call(p, BPF_FUNC_ktime_get_ns);
        LDX(BPF_DW, BPF_REG_1, BPF_REG_10, SLOT_PY_T0);
        ALU_X(BPF_SUB, BPF_REG_0, BPF_REG_1);
        LDX(BPF_DW, BPF_REG_1, BPF_REG_7, (int16_t) (PY_STATS + offsetof(struct py_stats, ns)));
        ALU_X(BPF_ADD, BPF_REG_1, BPF_REG_0);
        STX(BPF_DW, BPF_REG_7, BPF_REG_1, (int16_t) (PY_STATS + offsetof(struct py_stats, ns)));
        LDX(BPF_DW, BPF_REG_1, BPF_REG_7, (int16_t) (PY_STATS + offsetof(struct py_stats, walks)));
        ADD_K(BPF_REG_1, 1);
        STX(BPF_DW, BPF_REG_7, BPF_REG_1, (int16_t) (PY_STATS + offsetof(struct py_stats, walks)));

        /* Written if it has a frame or a flag. */
        LDX(BPF_H, BPF_REG_5, BPF_REG_7, offsetof(struct sampling_bpf_py_header, n));
        LDX(BPF_B, BPF_REG_1, BPF_REG_7, offsetof(struct sampling_bpf_py_header, flags));
        jump(p, BPF_JNE | BPF_K, BPF_REG_1, 0, 0, PY_L_WRITE);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_5, 0, 0, PY_L_DONE);
        place(p, PY_L_WRITE);
        ALU_K(BPF_MUL, BPF_REG_5, sizeof(struct sampling_bpf_py_frame));
        ADD_K(BPF_REG_5, sizeof(struct sampling_bpf_py_header));
        jump(p, BPF_JGT | BPF_K, BPF_REG_5, 0, (int32_t) PY_RECORD_MAX, PY_L_DONE);
        MOV_X(BPF_REG_1, BPF_REG_6);
        load_map(p, BPF_REG_2, s->py_out_fd);
        emit(p, BPF_LD | BPF_DW | BPF_IMM, BPF_REG_3, 0, 0, (int32_t) BPF_F_CURRENT_CPU);
        emit(p, 0, 0, 0, 0, 0);
        MOV_X(BPF_REG_4, BPF_REG_7);
        call(p, BPF_FUNC_perf_event_output);
        place(p, PY_L_DONE);
        ST(BPF_DW, BPF_REG_7, (int16_t) (PY_STATS + offsetof(struct py_stats, busy)), 0);
        place(p, PY_L_OUT);
        LDX(BPF_DW, BPF_REG_7, BPF_REG_10, SLOT_PY_R7);
        LDX(BPF_DW, BPF_REG_8, BPF_REG_10, SLOT_PY_R8);
        LDX(BPF_DW, BPF_REG_9, BPF_REG_10, SLOT_PY_R9);
        p->base = saved_base;
}

/* Writes the 16 bytes at SLOT_RAW as a sample to this CPU's output event (ctx in r6); r0 = the
 * helper's result, negative if the ring had no room. */
static void emit_write_raw(const struct sampling_bpf *s, struct asm_prog *p) {
        MOV_X(BPF_REG_1, BPF_REG_6);
        load_map(p, BPF_REG_2, s->out_fd);
        emit(p, BPF_LD | BPF_DW | BPF_IMM, BPF_REG_3, 0, 0, (int32_t) BPF_F_CURRENT_CPU);
        emit(p, 0, 0, 0, 0, 0);
        MOV_X(BPF_REG_4, BPF_REG_10);
        ADD_K(BPF_REG_4, SLOT_RAW);
        MOV_K(BPF_REG_5, 16);
        call(p, BPF_FUNC_perf_event_output);
}

/* Writes raw = { k, field } as a sample to this CPU's output event (ctx in r6, k in r9). A
 * full ring loses the sample, counted so with the largest k lost (sampling_bpf_failed()): a
 * ring full while k climbs loses samples heavier than any kept. Not thinned further here: a ring full for a while would raise k at every sample, and a
 * few samples of huge weight would carry the profile. */
static void emit_output(const struct sampling_bpf *s, struct field f, struct asm_prog *p) {
        STX(BPF_DW, BPF_REG_10, BPF_REG_9, SLOT_RAW);
        ST(BPF_DW, BPF_REG_10, SLOT_RAW + 8, 0);
        if (f.kind == FIELD_RECORD && f.size == 8) {
                LDX(BPF_DW, BPF_REG_1, BPF_REG_6, (int16_t) f.offset);
                STX(BPF_DW, BPF_REG_10, BPF_REG_1, SLOT_RAW + 8);
        } else if (f.kind == FIELD_RECORD && f.size == 4) {
                LDX(BPF_W, BPF_REG_1, BPF_REG_6, (int16_t) f.offset);
                STX(BPF_W, BPF_REG_10, BPF_REG_1, SLOT_RAW + 8);
        } else if (f.kind == FIELD_ARG) {
                LDX(BPF_DW, BPF_REG_1, BPF_REG_6, (int16_t) (8 * f.offset));
                STX(BPF_DW, BPF_REG_10, BPF_REG_1, SLOT_RAW + 8);
        } else if (f.kind == FIELD_SLOT) {
                LDX(BPF_DW, BPF_REG_1, BPF_REG_10, SLOT_M);
                STX(BPF_DW, BPF_REG_10, BPF_REG_1, SLOT_RAW + 8);
        }
        emit_python(s, p);
        emit_write_raw(s, p);
        jump(p, BPF_JSGE | BPF_K, BPF_REG_0, 0, 0, L_DROP);
        LDX(BPF_DW, BPF_REG_3, BPF_REG_8, offsetof(struct state, failed));
        ADD_K(BPF_REG_3, 1);
        STX(BPF_DW, BPF_REG_8, BPF_REG_3, offsetof(struct state, failed));
        LDX(BPF_DW, BPF_REG_3, BPF_REG_8, offsetof(struct state, failed_k));
        emit(p, BPF_JMP | BPF_JGE | BPF_X, BPF_REG_3, BPF_REG_9, 1, 0); /* no heavier: skip the store */
        STX(BPF_DW, BPF_REG_8, BPF_REG_9, offsetof(struct state, failed_k));
}

/* The every-event program: see the top of this file. TRACEPOINT: the tracepoint flavour
 * (returns 1, filters by thread where a thread map exists, copies the field). */
static void build_sampling(const struct sampling_bpf *s, bool tracepoint, struct asm_prog *p) {
        struct field f = { .kind = tracepoint && s->field_size ? FIELD_RECORD : FIELD_NONE,
                           .offset = s->field_offset,
                           .size = s->field_size };

        MOV_X(BPF_REG_6, BPF_REG_1); /* r6 = ctx */
        if (tracepoint)
                emit_thread_filter(s, p);
        emit_lookup(p, s->ctl_fd, BPF_REG_7);
        emit_lookup(p, s->state_fd, BPF_REG_8);
        emit_decide(p, false);
        emit_output(s, f, p);
        place(p, L_DROP);
        MOV_K(BPF_REG_0, tracepoint ? 1 : 0);
        EXIT();
        /* Something missing (cannot happen with an array), or a thread not ours: let it be. */
        place(p, L_PASS);
        MOV_K(BPF_REG_0, 1);
        EXIT();
}

/* The gate (sampling_bpf_gate()): 1, the event writes its own sample, for a thread in the map;
 * for any other task 0, no sample, and a notice of 16 zero bytes to this CPU's output event
 * instead (a full ring loses it: the clock then keeps its period one interval more). */
static void build_gate(const struct sampling_bpf *s, struct asm_prog *p) {
        MOV_X(BPF_REG_6, BPF_REG_1); /* r6 = ctx */
        MOV_K(BPF_REG_7, 0);         /* emit_python() keeps them */
        MOV_K(BPF_REG_8, 0);
        MOV_K(BPF_REG_9, 0);
        emit_thread_filter(s, p);
        emit_python(s, p);
        MOV_K(BPF_REG_0, 1);
        EXIT();
        place(p, L_PASS); /* not ours */
        ST(BPF_DW, BPF_REG_10, SLOT_RAW, 0);
        ST(BPF_DW, BPF_REG_10, SLOT_RAW + 8, 0);
        emit_write_raw(s, p);
        MOV_K(BPF_REG_0, 0);
        EXIT();
}

/* A redrawn clock of every task (sampling_bpf_python_clock()): the Python frames of the sample
 * it writes. */
static void build_python_clock(const struct sampling_bpf *s, struct asm_prog *p) {
        MOV_X(BPF_REG_6, BPF_REG_1); /* r6 = ctx */
        MOV_K(BPF_REG_7, 0);         /* emit_python() keeps them */
        MOV_K(BPF_REG_8, 0);
        MOV_K(BPF_REG_9, 0);
        emit_python(s, p);
        MOV_K(BPF_REG_0, 1);
        EXIT();
}

/* r0 = the next interval, in events (at least 1): u uniform in 32 bits, its top QUANTILE_BITS
 * pick a bucket of the quantile table and the rest a point linearly within it; the last bucket
 * adds its start and draws again (at most MAX_TAIL_DRAWS times). Uses r7 and r9. */
static void emit_draw(const struct sampling_bpf *s, struct asm_prog *p) {
        MOV_K(BPF_REG_7, 0); /* the interval, in 1/65536 events */
        MOV_K(BPF_REG_9, 0); /* tail draws */
        place(p, L_DRAW);
        call(p, BPF_FUNC_get_prandom_u32);
        MOV_X(BPF_REG_1, BPF_REG_0);
        ALU_K(BPF_RSH, BPF_REG_1, 32 - QUANTILE_BITS);
        STX(BPF_W, BPF_REG_10, BPF_REG_1, SLOT_INDEX);
        ALU_K(BPF_AND, BPF_REG_0, (1 << (32 - QUANTILE_BITS)) - 1);
        STX(BPF_DW, BPF_REG_10, BPF_REG_0, SLOT_FRAC);
        load_map(p, BPF_REG_1, s->quantiles_fd);
        MOV_X(BPF_REG_2, BPF_REG_10);
        ADD_K(BPF_REG_2, SLOT_INDEX);
        call(p, BPF_FUNC_map_lookup_elem);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0, L_PASS);
        LDX(BPF_DW, BPF_REG_1, BPF_REG_0, offsetof(struct quantile, at));
        LDX(BPF_W, BPF_REG_3, BPF_REG_10, SLOT_INDEX);
        jump(p, BPF_JNE | BPF_K, BPF_REG_3, 0, N_QUANTILES - 1, L_INTERP);
        ALU_X(BPF_ADD, BPF_REG_7, BPF_REG_1);
        ADD_K(BPF_REG_9, 1);
        jump(p, BPF_JLT | BPF_K, BPF_REG_9, 0, MAX_TAIL_DRAWS, L_DRAW);
        jump(p, BPF_JA, 0, 0, 0, L_DRAWN);
        place(p, L_INTERP);
        LDX(BPF_DW, BPF_REG_2, BPF_REG_0, offsetof(struct quantile, next));
        ALU_X(BPF_SUB, BPF_REG_2, BPF_REG_1);
        LDX(BPF_DW, BPF_REG_3, BPF_REG_10, SLOT_FRAC);
        ALU_X(BPF_MUL, BPF_REG_2, BPF_REG_3);
        ALU_K(BPF_RSH, BPF_REG_2, 32 - QUANTILE_BITS);
        ALU_X(BPF_ADD, BPF_REG_1, BPF_REG_2);
        ALU_X(BPF_ADD, BPF_REG_7, BPF_REG_1);
        place(p, L_DRAWN);
        /* ceil(interval), at least 1: ceil of an exponential is geometric */
        MOV_X(BPF_REG_0, BPF_REG_7);
        ADD_K(BPF_REG_0, 65535);
        ALU_K(BPF_RSH, BPF_REG_0, 16);
        jump(p, BPF_JNE | BPF_K, BPF_REG_0, 0, 0, L_NONZERO);
        MOV_K(BPF_REG_0, 1);
        place(p, L_NONZERO);
}

/* The counting program, at a raw tracepoint (ctx: its arguments, 8 bytes each): this CPU's
 * countdown is taken down by one; at zero the hit is a candidate, the next countdown is drawn,
 * and a candidate of ours (thread or cgroup filter, if any) goes through emit_decide() with
 * probability period / k. USER_ADDR: hits whose first argument is a kernel address (a kernel
 * page fault on kernel memory) do not count. */
static void build_count(const struct sampling_bpf *s, bool user_addr, struct asm_prog *p) {
        struct field f = { .kind = s->field_arg >= 0 ? FIELD_ARG : FIELD_NONE,
                           .offset = (unsigned) s->field_arg };

        MOV_X(BPF_REG_6, BPF_REG_1); /* r6 = ctx */
        if (user_addr) {
                LDX(BPF_DW, BPF_REG_1, BPF_REG_6, 0);
                jump(p, BPF_JSLT | BPF_K, BPF_REG_1, 0, 0, L_PASS);
        }
        emit_lookup(p, s->state_fd, BPF_REG_8);
        LDX(BPF_DW, BPF_REG_1, BPF_REG_8, offsetof(struct state, left));
        jump(p, BPF_JGT | BPF_K, BPF_REG_1, 0, 1, L_COUNT);

        /* A candidate: the next countdown, then whether it is ours. */
        emit_draw(s, p);
        STX(BPF_DW, BPF_REG_8, BPF_REG_0, offsetof(struct state, left));
        emit_thread_filter(s, p);
        if (s->cgroup_fd >= 0) {
                load_map(p, BPF_REG_1, s->cgroup_fd);
                MOV_K(BPF_REG_2, 0);
                call(p, BPF_FUNC_current_task_under_cgroup);
                jump(p, BPF_JNE | BPF_K, BPF_REG_0, 0, 1, L_PASS);
        }
        emit_lookup(p, s->ctl_fd, BPF_REG_7);
        emit_decide(p, true);
        emit_output(s, f, p);
        place(p, L_DROP);
        place(p, L_PASS);
        MOV_K(BPF_REG_0, 0);
        EXIT();
        place(p, L_COUNT);
        ALU_K(BPF_SUB, BPF_REG_1, 1);
        STX(BPF_DW, BPF_REG_8, BPF_REG_1, offsetof(struct state, left));
        MOV_K(BPF_REG_0, 0);
        EXIT();
}

/* The allocation program's first arguments in the user registers (struct pt_regs) at the
 * probed function's first instruction. */
#if defined(__x86_64__)
#define ALLOC_ARGS_KNOWN 1
#define ALLOC_ARG0 112 /* rdi */
#define ALLOC_ARG1 104 /* rsi */
#define ALLOC_ARG2 96  /* rdx */
#elif defined(__aarch64__)
#define ALLOC_ARGS_KNOWN 1
#define ALLOC_ARG0 0 /* x0 */
#define ALLOC_ARG1 8
#define ALLOC_ARG2 16
#else
#define ALLOC_ARGS_KNOWN 0
#define ALLOC_ARG0 0
#define ALLOC_ARG1 0
#define ALLOC_ARG2 0
#endif

/* Labels of the allocation program's first block (its size). */
enum {
        S_CALLOC,
        S_REALLOC,
        S_MEMALIGN,
        S_ALIGNED,
        S_POSIX,
        S_SIZED,
        S_OK,
        S_SKIP,
};

/* The allocation program's first block: SLOT_SIZE = the bytes the call asks for, by the kind of
 * entry point (the probe's cookie), or the program ends at once for a call glibc relays to
 * malloc, whose own probe counts it (realloc(NULL, n), an alignment of 16 or less), and for one
 * that cannot succeed (an invalid alignment, more than MAX_SIZE bytes, calloc's product
 * overflowing): doc/design/alloc-uprobes.md, table 1.4. */
static void emit_alloc_size(uint64_t max_size, struct asm_prog *p) {
        MOV_X(BPF_REG_6, BPF_REG_1); /* r6 = ctx */
        call(p, BPF_FUNC_get_attach_cookie);
        LDX(BPF_DW, BPF_REG_1, BPF_REG_6, ALLOC_ARG0);
        LDX(BPF_DW, BPF_REG_2, BPF_REG_6, ALLOC_ARG1);
        LDX(BPF_DW, BPF_REG_3, BPF_REG_6, ALLOC_ARG2);
        emit(p, BPF_LD | BPF_DW | BPF_IMM, BPF_REG_4, 0, 0, (int32_t) (uint32_t) max_size);
        emit(p, 0, 0, 0, 0, (int32_t) (uint32_t) (max_size >> 32));
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, SAMPLING_BPF_ALLOC_CALLOC, S_CALLOC);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, SAMPLING_BPF_ALLOC_REALLOC, S_REALLOC);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, SAMPLING_BPF_ALLOC_MEMALIGN, S_MEMALIGN);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, SAMPLING_BPF_ALLOC_ALIGNED_ALLOC, S_ALIGNED);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, SAMPLING_BPF_ALLOC_POSIX_MEMALIGN, S_POSIX);
        /* malloc(n), valloc(n), pvalloc(n) */
        MOV_X(BPF_REG_5, BPF_REG_1);
        jump(p, BPF_JA, 0, 0, 0, S_SIZED);

        place(p, S_CALLOC); /* calloc(n, size): n * size, unless it passes MAX_SIZE (or 2^64) */
        MOV_K(BPF_REG_5, 0);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_1, 0, 0, S_OK);
        ALU_X(BPF_DIV, BPF_REG_4, BPF_REG_1);
        jump(p, BPF_JGT | BPF_X, BPF_REG_2, BPF_REG_4, 0, S_SKIP);
        MOV_X(BPF_REG_5, BPF_REG_1);
        ALU_X(BPF_MUL, BPF_REG_5, BPF_REG_2);
        jump(p, BPF_JA, 0, 0, 0, S_OK);

        place(p, S_REALLOC); /* realloc(p, n): n; realloc(NULL, n) is malloc's, realloc(p, 0) frees */
        jump(p, BPF_JEQ | BPF_K, BPF_REG_1, 0, 0, S_SKIP);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_2, 0, 0, S_SKIP);
        MOV_X(BPF_REG_5, BPF_REG_2);
        jump(p, BPF_JA, 0, 0, 0, S_SIZED);

        place(p, S_ALIGNED); /* aligned_alloc(alignment, n), its own function: a power of two */
        MOV_X(BPF_REG_7, BPF_REG_1);
        ADD_K(BPF_REG_7, -1);
        ALU_X(BPF_AND, BPF_REG_7, BPF_REG_1);
        jump(p, BPF_JNE | BPF_K, BPF_REG_7, 0, 0, S_SKIP);
        place(p, S_MEMALIGN); /* memalign(alignment, n): n, the alignment over 16 and up to 2^63 */
        jump(p, BPF_JLE | BPF_K, BPF_REG_1, 0, 16, S_SKIP);
        jump(p, BPF_JSLT | BPF_K, BPF_REG_1, 0, 0, S_SKIP);
        MOV_X(BPF_REG_5, BPF_REG_2);
        jump(p, BPF_JA, 0, 0, 0, S_SIZED);

        place(p, S_POSIX); /* posix_memalign(&p, alignment, n): a power of two times 8, over 16 */
        jump(p, BPF_JLE | BPF_K, BPF_REG_2, 0, 16, S_SKIP);
        MOV_X(BPF_REG_7, BPF_REG_2);
        ALU_K(BPF_AND, BPF_REG_7, 7);
        jump(p, BPF_JNE | BPF_K, BPF_REG_7, 0, 0, S_SKIP);
        MOV_X(BPF_REG_7, BPF_REG_2);
        ALU_K(BPF_RSH, BPF_REG_7, 3);
        MOV_X(BPF_REG_8, BPF_REG_7);
        ADD_K(BPF_REG_8, -1);
        ALU_X(BPF_AND, BPF_REG_8, BPF_REG_7);
        jump(p, BPF_JNE | BPF_K, BPF_REG_8, 0, 0, S_SKIP);
        MOV_X(BPF_REG_5, BPF_REG_3);

        place(p, S_SIZED);
        jump(p, BPF_JGT | BPF_X, BPF_REG_5, BPF_REG_4, 0, S_SKIP);
        place(p, S_OK);
        STX(BPF_DW, BPF_REG_10, BPF_REG_5, SLOT_SIZE);
        jump(p, BPF_JA, 0, 0, 0, L_NEXT);
        place(p, S_SKIP);
        MOV_K(BPF_REG_0, 0);
        EXIT();
        place(p, L_NEXT);
}

/* With r8 = this CPU's state: takes the allocation's size (BYTES: SLOT_SIZE) or one call off
 * the countdown at once (an atomic fetch-and-add: a uprobe's program is preemptible, and a
 * plain load and store would lose the updates of a task that ran between them), and goes on
 * only for the call that ends the interval, with r1 = the countdown before it and r2 = the
 * size; others, and calls that meet a countdown another task is redrawing, go to L_NEXT. */
static void emit_countdown(struct asm_prog *p, bool bytes) {
        if (bytes)
                LDX(BPF_DW, BPF_REG_2, BPF_REG_10, SLOT_SIZE);
        else
                MOV_K(BPF_REG_2, 1);
        MOV_X(BPF_REG_1, BPF_REG_2);
        ALU_K(BPF_NEG, BPF_REG_1, 0);
        emit(p, BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_8, BPF_REG_1, offsetof(struct state, left),
             BPF_ADD | BPF_FETCH);
        jump(p, BPF_JSGT | BPF_X, BPF_REG_1, BPF_REG_2, 0, L_NEXT);
        jump(p, BPF_JSLE | BPF_K, BPF_REG_1, 0, 0, L_NEXT);
}

/* alloc-bytes: this CPU's countdown, in bytes, takes the allocation's size. An allocation that
 * reaches its end is a candidate worth m intervals: the one it ended, and of the r bytes past
 * that end, floor(r / P) more and one more with probability frac(r / P) (the mean of the
 * Binomial(r, 1 / P) ends the exact process would put there; so a sum of weights stays
 * unbiased); the next countdown is a fresh draw (the geometric forgets). */
static void emit_alloc_bytes(const struct sampling_bpf *s, struct asm_prog *p) {
        emit_lookup(p, s->state_fd, BPF_REG_8);
        emit_countdown(p, true);
        ALU_X(BPF_SUB, BPF_REG_2, BPF_REG_1); /* r: the bytes past the interval's end */
        STX(BPF_DW, BPF_REG_10, BPF_REG_2, SLOT_COIN);
        emit_lookup(p, s->ctl_fd, BPF_REG_7);
        LDX(BPF_DW, BPF_REG_3, BPF_REG_7, offsetof(struct ctl, period));
        LDX(BPF_DW, BPF_REG_2, BPF_REG_10, SLOT_COIN);
        MOV_X(BPF_REG_4, BPF_REG_2);
        ALU_X(BPF_DIV, BPF_REG_4, BPF_REG_3);
        ADD_K(BPF_REG_4, 1);
        STX(BPF_DW, BPF_REG_10, BPF_REG_4, SLOT_M);
        ALU_X(BPF_MOD, BPF_REG_2, BPF_REG_3); /* below 2^26 (SAMPLING_BPF_MAX_COUNT_PERIOD) */
        ALU_K(BPF_LSH, BPF_REG_2, 32);
        ALU_X(BPF_DIV, BPF_REG_2, BPF_REG_3);
        STX(BPF_DW, BPF_REG_10, BPF_REG_2, SLOT_COIN);
        call(p, BPF_FUNC_get_prandom_u32);
        LDX(BPF_DW, BPF_REG_2, BPF_REG_10, SLOT_COIN);
        jump(p, BPF_JGE | BPF_X, BPF_REG_0, BPF_REG_2, 0, L_WHOLE);
        LDX(BPF_DW, BPF_REG_4, BPF_REG_10, SLOT_M);
        ADD_K(BPF_REG_4, 1);
        STX(BPF_DW, BPF_REG_10, BPF_REG_4, SLOT_M);
        place(p, L_WHOLE);
        emit_draw(s, p);
        STX(BPF_DW, BPF_REG_8, BPF_REG_0, offsetof(struct state, left));
        emit_lookup(p, s->ctl_fd, BPF_REG_7);
        emit_decide(p, true);
        emit_output(s, (struct field) { .kind = FIELD_SLOT }, p);
        place(p, L_DROP);
        place(p, L_PASS);
        place(p, L_NEXT);
}

/* alloc-count: this CPU's countdown, in calls, as build_count()'s; each sample worth 1. */
static void emit_alloc_calls(const struct sampling_bpf *s, struct asm_prog *p) {
        emit_lookup(p, s->state_fd, BPF_REG_8);
        emit_countdown(p, false);
        emit_draw(s, p);
        STX(BPF_DW, BPF_REG_8, BPF_REG_0, offsetof(struct state, left));
        emit_lookup(p, s->ctl_fd, BPF_REG_7);
        emit_decide(p, true);
        ST(BPF_DW, BPF_REG_10, SLOT_M, 1);
        emit_output(s, (struct field) { .kind = FIELD_SLOT }, p);
        place(p, L_DROP);
        place(p, L_PASS);
        place(p, L_NEXT);
}

/* The allocation program: see sampling_bpf_alloc_program(). It runs in a uprobe's context,
 * preemptible with migration disabled, so its countdowns are taken down atomically
 * (emit_countdown()): a storm of threads on a busy machine lost 13% of its calls to plain
 * loads and stores. The calls that meet a countdown being redrawn (a few instructions) go
 * uncounted; the thinning window's counts are kept plainly (an update lost there moves the
 * thinning, not the weights). */
static void build_alloc(const struct sampling_bpf *bytes, const struct sampling_bpf *calls, uint64_t max_size,
                        struct asm_prog *p) {
        p->base = 0;
        emit_alloc_size(max_size, p);
        if (bytes) {
                p->base = LABELS_PER_BLOCK;
                emit_alloc_bytes(bytes, p);
        }
        if (calls) {
                p->base = 2 * LABELS_PER_BLOCK;
                emit_alloc_calls(calls, p);
        }
        MOV_K(BPF_REG_0, 0);
        EXIT();
}

/* sched:sched_process_fork: a child of a thread in the map joins it. */
static void build_fork(const struct sampling_bpf *s, unsigned parent_offset, unsigned child_offset,
                       struct asm_prog *p) {
        MOV_X(BPF_REG_6, BPF_REG_1);
        LDX(BPF_W, BPF_REG_1, BPF_REG_6, (int16_t) parent_offset);
        STX(BPF_W, BPF_REG_10, BPF_REG_1, -4);
        load_map(p, BPF_REG_1, s->tids_fd);
        MOV_X(BPF_REG_2, BPF_REG_10);
        ADD_K(BPF_REG_2, -4);
        call(p, BPF_FUNC_map_lookup_elem);
        jump(p, BPF_JEQ | BPF_K, BPF_REG_0, 0, 0, L_PASS);
        LDX(BPF_W, BPF_REG_1, BPF_REG_6, (int16_t) child_offset);
        STX(BPF_W, BPF_REG_10, BPF_REG_1, -8);
        ST(BPF_W, BPF_REG_10, -12, 1);
        load_map(p, BPF_REG_1, s->tids_fd);
        MOV_X(BPF_REG_2, BPF_REG_10);
        ADD_K(BPF_REG_2, -8);
        MOV_X(BPF_REG_3, BPF_REG_10);
        ADD_K(BPF_REG_3, -12);
        MOV_K(BPF_REG_4, BPF_ANY);
        call(p, BPF_FUNC_map_update_elem);
        place(p, L_PASS);
        MOV_K(BPF_REG_0, 1);
        EXIT();
}

static int load_as(struct asm_prog *p, enum bpf_prog_type type, uint32_t attach_type) {
        union bpf_attr a = {
                .prog_type = type,
                .expected_attach_type = attach_type,
                .insn_cnt = p->n,
                .insns = (uint64_t) (uintptr_t) p->insn,
                .license = (uint64_t) (uintptr_t) "GPL",
        };
        int r = assemble(p);

        if (r < 0)
                return r;
        strncpy(a.prog_name, "cppd_sample", sizeof a.prog_name - 1);
        r = sys_bpf(BPF_PROG_LOAD, &a);
        if (r < 0 && getenv("CPPD_BPF_LOG")) {
                /* For whoever changes a program: the verifier's reasons. */
                static char log[1 << 20];

                a.log_buf = (uint64_t) (uintptr_t) log;
                a.log_size = sizeof log;
                a.log_level = 1;
                if (sys_bpf(BPF_PROG_LOAD, &a) < 0)
                        fprintf(stderr, "%s\n", log);
        }
        return r;
}

static int load(struct asm_prog *p, enum bpf_prog_type type) {
        return load_as(p, type, 0);
}

static struct asm_prog *asm_new(void) {
        struct asm_prog *p = calloc(1, sizeof *p);

        if (p)
                memset(p->label, -1, sizeof p->label);
        return p;
}

/* A holder: a disabled tracepoint event of ours on tracepoint ID that carries program FD. */
static int hold(struct sampling_bpf *s, uint64_t id, int fd) {
        struct perf_event_attr a = {
                .size = sizeof a,
                .type = PERF_TYPE_TRACEPOINT,
                .config = id,
                .sample_period = 1ULL << 62, /* it never samples: it only holds */
                .disabled = 1,
        };
        int holder;

        if (s->n_holders >= MAX_HOLDERS)
                return -E2BIG;
        holder = (int) syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (holder < 0)
                return -errno;
        if (ioctl(holder, PERF_EVENT_IOC_SET_BPF, fd) < 0) {
                int r = -errno;

                close(holder);
                return r;
        }
        s->holders[s->n_holders++] = holder;
        return 0;
}

int sampling_bpf_attach(struct sampling_bpf *s, int perf_fd) {
        if (s->prog_fd[PROG_PERF_EVENT] < 0) {
                _cleanup_free_ struct asm_prog *p = asm_new();
                int fd;

                if (!p)
                        return -ENOMEM;
                build_sampling(s, false, p);
                fd = load(p, BPF_PROG_TYPE_PERF_EVENT);
                if (fd < 0)
                        return fd;
                s->prog_fd[PROG_PERF_EVENT] = fd;
        }
        return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, s->prog_fd[PROG_PERF_EVENT]) < 0 ? -errno : 0;
}

int sampling_bpf_gate(struct sampling_bpf *s, int perf_fd) {
        if (s->tids_fd < 0)
                return -EINVAL; /* sampling_bpf_filter_threads() first */
        if (s->prog_fd[PROG_GATE] < 0) {
                _cleanup_free_ struct asm_prog *p = asm_new();
                int fd;

                if (!p)
                        return -ENOMEM;
                build_gate(s, p);
                fd = load(p, BPF_PROG_TYPE_PERF_EVENT);
                if (fd < 0)
                        return fd;
                s->prog_fd[PROG_GATE] = fd;
        }
        return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, s->prog_fd[PROG_GATE]) < 0 ? -errno : 0;
}

int sampling_bpf_python_clock(struct sampling_bpf *s, int perf_fd) {
        if (!s->py)
                return -EINVAL; /* sampling_bpf_use_python() first */
        if (s->prog_fd[PROG_PYTHON] < 0) {
                _cleanup_free_ struct asm_prog *p = asm_new();
                int fd;

                if (!p)
                        return -ENOMEM;
                build_python_clock(s, p);
                fd = load(p, BPF_PROG_TYPE_PERF_EVENT);
                if (fd < 0)
                        return fd;
                s->prog_fd[PROG_PYTHON] = fd;
        }
        return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, s->prog_fd[PROG_PYTHON]) < 0 ? -errno : 0;
}

int sampling_bpf_hold_tracepoint(struct sampling_bpf *s, uint64_t id, unsigned field_offset,
                                 unsigned field_size) {
        if (s->prog_fd[PROG_TRACEPOINT] < 0) {
                _cleanup_free_ struct asm_prog *p = asm_new();
                int fd;

                if (!p)
                        return -ENOMEM;
                if (field_size != 0 && field_size != 4 && field_size != 8)
                        return -EINVAL;
                s->field_offset = field_offset;
                s->field_size = field_size;
                build_sampling(s, true, p);
                fd = load(p, BPF_PROG_TYPE_TRACEPOINT);
                if (fd < 0)
                        return fd;
                s->prog_fd[PROG_TRACEPOINT] = fd;
        } else if (field_offset != s->field_offset || field_size != s->field_size)
                return -EINVAL; /* one program per resource: one field */
        return hold(s, id, s->prog_fd[PROG_TRACEPOINT]);
}

int sampling_bpf_count_tracepoint(struct sampling_bpf *s, const char *name, int field_arg, bool user_addr) {
        enum prog which = user_addr ? PROG_COUNT_USER_ADDR : PROG_COUNT;
        union bpf_attr a = {};
        int fd;

        if (s->quantiles_fd < 0)
                return -EINVAL; /* sampling_bpf_set_period() first */
        if (s->n_holders >= MAX_HOLDERS)
                return -E2BIG;
        if (s->prog_fd[which] < 0) {
                _cleanup_free_ struct asm_prog *p = asm_new();

                if (!p)
                        return -ENOMEM;
                if (s->prog_fd[PROG_COUNT] >= 0 || s->prog_fd[PROG_COUNT_USER_ADDR] >= 0) {
                        if (field_arg != s->field_arg)
                                return -EINVAL; /* one resource: one field */
                } else
                        s->field_arg = field_arg;
                build_count(s, user_addr, p);
                fd = load(p, BPF_PROG_TYPE_RAW_TRACEPOINT);
                if (fd < 0)
                        return fd;
                s->prog_fd[which] = fd;
        }
        a.raw_tracepoint.name = (uint64_t) (uintptr_t) name;
        a.raw_tracepoint.prog_fd = (uint32_t) s->prog_fd[which];
        fd = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
        if (fd < 0)
                return fd;
        s->holders[s->n_holders++] = fd;
        return 0;
}

int sampling_bpf_filter_threads(struct sampling_bpf *s) {
        _cleanup_free_ struct asm_prog *p = NULL;
        unsigned parent_offset, parent_size, child_offset, child_size;
        uint64_t id;
        int r, fd;

        if (s->tids_fd >= 0)
                return 0;
        if (s->prog_fd[PROG_TRACEPOINT] >= 0 || s->prog_fd[PROG_COUNT] >= 0 ||
            s->prog_fd[PROG_COUNT_USER_ADDR] >= 0)
                return -EBUSY; /* the sampling programs were built without the filter */
        r = tracepoint_id("sched:sched_process_fork", &id);
        if (r < 0)
                return r;
        r = tracepoint_field("sched:sched_process_fork", "parent_pid", &parent_offset, &parent_size);
        if (r < 0)
                return r;
        r = tracepoint_field("sched:sched_process_fork", "child_pid", &child_offset, &child_size);
        if (r < 0)
                return r;
        if (parent_size != 4 || child_size != 4)
                return -EBADMSG;
        s->tids_fd = map_create(BPF_MAP_TYPE_HASH, sizeof(uint32_t), sizeof(uint32_t), MAX_TIDS, "cppd_tids");
        if (s->tids_fd < 0)
                return s->tids_fd;
        p = asm_new();
        if (!p)
                return -ENOMEM;
        build_fork(s, parent_offset, child_offset, p);
        fd = load(p, BPF_PROG_TYPE_TRACEPOINT);
        if (fd < 0)
                return fd;
        s->prog_fd[PROG_FORK] = fd;
        return hold(s, id, fd);
}

int sampling_bpf_alloc_program(struct sampling_bpf *bytes, struct sampling_bpf *calls, uint64_t max_size) {
        _cleanup_free_ struct asm_prog *p = NULL;

        if (!ALLOC_ARGS_KNOWN)
                return -EOPNOTSUPP;
        if ((!bytes && !calls) || (bytes && bytes->quantiles_fd < 0) || (calls && calls->quantiles_fd < 0))
                return -EINVAL; /* sampling_bpf_set_period() first */
        p = asm_new();
        if (!p)
                return -ENOMEM;
        build_alloc(bytes, calls, max_size, p);
        return load_as(p, BPF_PROG_TYPE_KPROBE, SAMPLING_BPF_TRACE_UPROBE_MULTI);
}
