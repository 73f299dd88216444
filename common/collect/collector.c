/* The collector.
 *
 * Events. Each resource becomes one or more perf events (resource.h), opened per CPU with
 * inherit=1 for the target (the kernel cannot mmap an inherited per-task event with cpu=-1),
 * all sampling events of a CPU writing into that CPU's sample ring (PERF_EVENT_IOC_SET_OUTPUT).
 * The side band (MMAP2, COMM, FORK/EXIT) rides on dummy events that write into a
 * second, smaller ring per CPU: samples with copied stacks fill a ring a hundred times faster
 * than processes come and go, and when the rings are not emptied in time the kernel drops what
 * does not fit; in a ring of their own, the records every later sample is attributed by are not
 * dropped with the samples. Samples never ask for PERF_SAMPLE_PERIOD, which would make the kernel
 * sample every software event and tracepoint; a sample is worth one period.
 *
 * Reading. A thread (ring-reader.c) empties the rings into memory in time order across CPUs, so
 * that a sample is seen after the MMAP2 that mapped its code and before the exec that unmapped
 * it, whichever CPUs they came from, and so that a slow moment here (the first symbol of a
 * library with debug information) costs memory, not samples. PERF_RECORD_LOST is counted per
 * resource and reported with every profile.
 *
 * Stacks. A sample's user stack comes from the kernel's frame-pointer callchain or from DWARF
 * unwinding of its copied stack (unwind.c); each PC is found in the process's address space
 * (proc-maps.c) and symbolized once per distinct address (symbolize.c) into frames. Stacks are
 * interned in a trie of frame indexes, so a stack seen before costs one hash lookup per frame
 * and no allocation; hits are summed per (resource, thread, trie node) for the current time
 * bucket. A flush maps new frames, trie nodes and threads to store ids, writes the sums in one
 * transaction and starts over.
 *
 * Resources counted in user space: bytes-read/-written take every sys_exit of their system
 * calls and credit a hit per period boundary crossed (paper §5.1); real-time adds to the
 * cpu-clock samples of on-CPU time the off-CPU time between a context switch out (whose sample
 * gives the stack) and the thread's next switch in (a PERF_RECORD_SWITCH). */
#include "collector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-login.h>

#include "idmap.h"
#include "perf-event.h"
#include "perf-map.h"
#include "perf-record.h"
#include "proc-maps.h"
#include "ring-buffer.h"
#include "ring-reader.h"
#include "symbolize.h"
#include "syscall-names.h"
#include "time-util.h"
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
/* The resource of events that count none (the side band's dummy). */
#define NO_RESOURCE COLLECTOR_MAX_RESOURCES

enum event_role {
        ROLE_SAMPLE,            /* one hit a sample */
        ROLE_SYSCALL,           /* one hit, and the system call's name ends the stack */
        ROLE_BYTES,             /* counted in user space from the returned byte count */
        ROLE_OFFCPU,            /* a switch out: the stack waits for the switch back in */
};

struct cresource {
        char *name;
        char *unit;
        char *event;                    /* what measures it, for the store: "software:cpu-clock" */
        const struct resource *def;     /* NULL for --event */
        uint64_t period;                /* gticks */
        bool active;
        bool unnamed;                   /* no event to open: never active (collector_resource_stats) */
        uint64_t samples, hits, lost, lost_flushed;
        int64_t store_id;
};

struct cevent {
        unsigned resource;
        bool shared;                    /* not opened: another event counts it (context switches) */
        enum event_role role;
        struct perf_event_attr attr;
        unsigned raw_offset, raw_size;  /* SYSCALL: the syscall number; BYTES: the return value */
        const char *filter;
        uint64_t period;                /* the kernel period (ns for clocks), for jitter */
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
        bool offcpu_pending;
        uint32_t offcpu_node;
        uint64_t offcpu_since;          /* ns */
        uint64_t offcpu_remaining;      /* ns to the next real-time boundary */
        /* The user part of its last stack, outermost PC first, as far as it came from modules:
         * the trie node each PC's frames end at, while the process's mappings (their
         * generation) and the trie (its epoch) stay the same (sample_stack()). */
        struct stack_step *steps;
        uint32_t n_steps, cap_steps;
        uint64_t steps_space, steps_epoch;
        /* Where its stacks end: the highest top its unwinds needed, as told to the ring reader
         * (under that generation of its table), which cuts its stack copies there; OFF once a
         * cut copy fell short (learn_stack_top()). */
        uint64_t stack_top, stack_top_generation;
        bool stack_top_off;
};

/* One PC of a thread's last stack: its trie node, and the frames (and unknown frames among
 * them) from the outermost PC to it. */
struct stack_step {
        uint64_t pc;
        uint32_t node;
        uint32_t frames, unknown;
};

struct process {
        uint32_t pid;
        char comm[16];
        char *exe;                      /* the executable's path; NULL until known */
        char *unit;                     /* its systemd unit, from its cgroup; NULL if none */
        bool exe_pending;               /* exec'd: the next file mapped executable is the program */
        struct proc_maps *maps;
        int64_t store_id;
        bool exited;
        uint64_t *bytes_remaining;      /* per resource counted in user space: gticks to the
                                         * next period boundary (bytes, shared switches) */
        struct symtab *jit;             /* /tmp/perf-PID.map, read when a PC falls outside modules */
        off_t jit_size;
        uint64_t jit_checked;           /* CLOCK_MONOTONIC ns of the last look at the map's size */
};

struct trie_node {
        uint32_t parent;
        uint32_t frame;
        int64_t store_id;
};

struct agg {
        uint64_t hits, samples;
};

struct collector {
        struct collector_config config;
        struct store *store;
        struct symbolizer *sym;
        struct unwinder *unwinder;      /* one for every process: it learns modules, not processes */

        struct cresource resources[COLLECTOR_MAX_RESOURCES];
        unsigned n_resources;
        struct cevent *events;
        unsigned n_events;
        struct cfd *fds;
        size_t n_fds, cap_fds;
        int n_cpus;
        struct ring_buffer **rings;     /* by CPU the sample rings, then the side band's; NULL until
                                         * their owners (dummy events) open */
        int n_ring_list;
        struct ring_buffer **ring_list; /* the rings that exist, for the reader */
        struct ring_reader *reader;
        const uint8_t *queue;           /* records taken from the reader, handled up to queue_off */
        size_t queue_size, queue_off;

        /* Units of processes seen to exec, learned by the reader thread while they lived:
         * pid -> unit name or EXEC_UNIT_*, under exec_units_lock. */
        pthread_mutex_t exec_units_lock;
        struct idmap *exec_units;
        /* The reader thread's: each /proc/PID/cgroup text seen at an exec and its unit, as
         * libsystemd read it (strdup()ed, or NULL: none). A unit is a function of the cgroup. */
        struct name_table *cgroups;
        char **cgroup_units;            /* by id in cgroups */
        size_t cap_cgroup_units;
        struct idmap *event_ids;        /* kernel event id -> index in events */
        unsigned switches_via_offcpu;   /* context-switches counted from real-time's switch
                                         * samples, or NO_RESOURCE */

        struct idmap *processes;        /* pid -> struct process * */
        struct idmap *threads;          /* tid -> struct thread * */
        struct thread **slots;          /* thread slot -> thread */
        size_t n_slots, cap_slots;

        struct trie_node *nodes;        /* nodes[0]: the empty stack */
        size_t n_nodes, cap_nodes;
        struct idmap *trie;             /* pair(parent, frame) -> node */
        uint64_t trie_epoch;            /* counts the trie's fresh starts (trim()) */

        struct idmap *agg_index;        /* key -> index in agg */
        uint64_t *agg_keys;
        struct agg *agg;
        size_t n_agg, cap_agg;
        int64_t agg_bucket;             /* unix seconds; -1 when empty */
        uint64_t flush_failed_ns;       /* CLOCK_MONOTONIC of the last failed flush; 0: none */
        /* What the flush in progress inserted: the run, and its first process and thread ids,
         * for a rollback to forget (forget_ids()). */
        bool txn_run;
        int64_t txn_process_id, txn_thread_id;

        int64_t realtime_offset;        /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns */
        uint64_t rng;
        int64_t run_id;
        char *run_kind, *run_command;
        char *run_host;                 /* offline: the recording's machine */
        int64_t run_started;            /* offline: when the recording began */
        bool offline;                   /* records come from a file: never read /proc */
        uint64_t lost_checked;          /* stats.lost when mark_gone() last looked */
        uint64_t gone_checked_ns;       /* and when (CLOCK_MONOTONIC) */
        uint64_t feed_hits;             /* offline: the hits of the sample being fed */
        bool run_ended;
        struct collector_stats stats;

        uint64_t pcs[COLLECTOR_MAX_STACK];
        uint32_t stack[COLLECTOR_MAX_STACK];   /* frame indexes, innermost first */
        uint16_t pc_frames[COLLECTOR_MAX_STACK];        /* by PC: its frames in stack (0: unstable) */
};

/* Values of exec_units: a unit name (malloc()ed), or one of these. */
#define EXEC_UNIT_TAKEN 0               /* handled: the map cannot delete */
#define EXEC_UNIT_NONE 1                /* looked at the exec, and the process had none */

static void exec_unit_free(uint64_t v) {
        if (v > EXEC_UNIT_NONE)
                free((char *) (uintptr_t) v);
}

/* xorshift64*: the jitter needs speed and independence from the program, not secrecy. */
static uint64_t rng_next(struct collector *c) {
        c->rng ^= c->rng >> 12;
        c->rng ^= c->rng << 25;
        c->rng ^= c->rng >> 27;
        return c->rng * 2685821657736338717ULL;
}

/* A period drawn uniformly from [P/2, 3P/2], mean P (paper §7.1); P itself without jitter. */
static uint64_t draw_period(struct collector *c, uint64_t p) {
        if (!c->config.jitter || p < 2)
                return p;
        return p / 2 + rng_next(c) % (p + 1);
}

int collector_new(const struct collector_config *config, struct store *store, struct collector **ret) {
        _cleanup_(collector_freep) struct collector *c = NULL;
        long n_cpus = sysconf(_SC_NPROCESSORS_CONF);

        if (config->unwind == UNWIND_DWARF && !UNWIND_SUPPORTED)
                return -EOPNOTSUPP;
        if (n_cpus <= 0)
                return -EIO;
        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->config = *config;
        c->store = store;
        c->n_cpus = n_cpus;
        c->sym = symbolizer_new();
        c->unwinder = unwinder_new();
        c->rings = calloc(2 * n_cpus, sizeof *c->rings);
        c->event_ids = idmap_new();
        c->processes = idmap_new();
        c->threads = idmap_new();
        c->trie = idmap_new();
        c->agg_index = idmap_new();
        c->ring_list = calloc(2 * n_cpus, sizeof *c->ring_list);
        c->exec_units = idmap_new();
        pthread_mutex_init(&c->exec_units_lock, NULL);
        c->cap_nodes = 1024;
        c->nodes = malloc(c->cap_nodes * sizeof *c->nodes);
        if (!c->sym || !c->unwinder || !c->rings || !c->event_ids || !c->processes || !c->threads ||
            !c->trie || !c->agg_index || !c->ring_list || !c->exec_units || !c->nodes)
                return -ENOMEM;
        c->nodes[0] = (struct trie_node) {};
        c->n_nodes = 1;
        c->sym->lines = !config->function_frames;      /* frames stored as functions need none */
        c->agg_bucket = -1;
        c->switches_via_offcpu = NO_RESOURCE;
        c->realtime_offset = (int64_t) (now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC));
        c->rng = now_ns(CLOCK_MONOTONIC) | 1;
        *ret = take_ptr(&c);
        return 0;
}

static void process_free(struct process *p) {
        if (!p)
                return;
        free(p->exe);
        free(p->unit);
        proc_maps_free(p->maps);
        symtab_free(p->jit);
        free(p->bytes_remaining);
        free(p);
}

static void forget_cgroups(struct collector *c);

static void thread_free(struct thread *t) {
        free(t->steps);
        free(t);
}

struct collector *collector_free(struct collector *c) {
        uint64_t key, value;
        size_t i = 0;

        if (!c)
                return NULL;
        ring_reader_free(c->reader);    /* first: its thread reads the rings */
        if (c->exec_units) {
                i = 0;
                while (idmap_next(c->exec_units, &i, &key, &value))
                        exec_unit_free(value);
                idmap_free(c->exec_units);
                pthread_mutex_destroy(&c->exec_units_lock);
                i = 0;
        }
        forget_cgroups(c);
        free(c->cgroup_units);
        for (size_t f = 0; f < c->n_fds; f++)
                close(c->fds[f].fd);
        free(c->fds);
        for (int k = 0; c->rings && k < 2 * c->n_cpus; k++)
                ring_buffer_free(c->rings[k]);
        free(c->rings);
        if (c->processes)
                while (idmap_next(c->processes, &i, &key, &value))
                        process_free((struct process *) (uintptr_t) value);
        for (size_t s = 0; s < c->n_slots; s++)
                thread_free(c->slots[s]);
        free(c->slots);
        idmap_free(c->processes);
        idmap_free(c->threads);
        idmap_free(c->event_ids);
        idmap_free(c->trie);
        idmap_free(c->agg_index);
        free(c->agg_keys);
        free(c->agg);
        free(c->nodes);
        free(c->events);
        free(c->ring_list);
        for (unsigned r = 0; r < c->n_resources; r++) {
                free(c->resources[r].name);
                free(c->resources[r].unit);
                free(c->resources[r].event);
        }
        free(c->run_kind);
        free(c->run_command);
        free(c->run_host);
        unwinder_free(c->unwinder);
        symbolizer_free(c->sym);
        free(c);
        return NULL;
}

/* ---- resources and events ---- */

static int add_event(struct collector *c, unsigned resource, enum event_role role, uint32_t type,
                     uint64_t config, uint64_t period, struct cevent **ret) {
        struct cevent *a = realloc(c->events, (c->n_events + 1) * sizeof *a), *e;

        if (!a)
                return -ENOMEM;
        c->events = a;
        e = &a[c->n_events++];
        *e = (struct cevent) {
                .resource = resource,
                .role = role,
                .period = period,
                .attr = {
                        .size = sizeof(struct perf_event_attr),
                        .type = type,
                        .config = config,
                },
        };
        if (ret)
                *ret = e;
        return 0;
}

static int add_tracepoint(struct collector *c, unsigned resource, enum event_role role, const char *name,
                          const char *field, uint64_t period) {
        struct cevent *e;
        uint64_t id;
        int r;

        r = tracepoint_id(name, &id);
        if (r < 0)
                return r;
        r = add_event(c, resource, role, PERF_TYPE_TRACEPOINT, id, period, &e);
        if (r < 0)
                return r;
        if (field) {
                r = tracepoint_field(name, field, &e->raw_offset, &e->raw_size);
                if (r < 0)
                        return r;
                if (e->raw_size != 4 && e->raw_size != 8)
                        return -EBADMSG;
        }
        if (role == ROLE_BYTES)
                e->filter = "ret > 0";
        return 0;
}

int collector_add_resource(struct collector *c, const char *name, bool event, uint64_t period) {
        const struct resource *def = event ? NULL : resource_find(name);
        unsigned i = c->n_resources, n_events = c->n_events;
        struct cresource *res;
        char desc[256];
        int r;

        if (!event && !def)
                return -ENOENT;
        for (unsigned j = 0; j < c->n_resources; j++)
                if (streq(c->resources[j].name, name))
                        return -EEXIST;
        if (i >= COLLECTOR_MAX_RESOURCES)
                return -E2BIG;
        if (period == 0)
                period = def ? def->default_period : 1;
        /* Clocks count nanoseconds: a period of N ms must fit the kernel's u64 and be sane. */
        if (def && (def->kind == RESOURCE_CLOCK || def->kind == RESOURCE_REAL_TIME) && period > 3600 * 1000)
                return -EINVAL;

        res = &c->resources[i];
        *res = (struct cresource) { .def = def, .period = period };

        if (event) {
                struct perf_event_attr attr = {};
                bool tracepoint;

                r = perf_event_name(name, &attr, &tracepoint);
                if (r < 0)
                        return r;
                r = add_event(c, i, ROLE_SAMPLE, attr.type, attr.config, period, NULL);
                if (r < 0)
                        return r;
                c->events[c->n_events - 1].attr.config1 = attr.config1;
                c->events[c->n_events - 1].attr.config2 = attr.config2;
                snprintf(desc, sizeof desc, "%s:%s", tracepoint ? "tracepoint" :
                         attr.type == PERF_TYPE_SOFTWARE ? "software" : "pfm", name);
        } else
                switch (def->kind) {
                case RESOURCE_SOFTWARE:
                case RESOURCE_CLOCK:
                        r = add_event(c, i, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, def->config,
                                      def->kind == RESOURCE_CLOCK ? period * NS_PER_MS : period, NULL);
                        if (r < 0)
                                return r;
                        snprintf(desc, sizeof desc, "software:%s",
                                 def->config == PERF_COUNT_SW_CPU_CLOCK ? "cpu-clock" : def->name);
                        break;
                case RESOURCE_REAL_TIME:
                        r = add_event(c, i, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
                                      period * NS_PER_MS, NULL);
                        if (r >= 0)
                                r = add_event(c, i, ROLE_OFFCPU, PERF_TYPE_SOFTWARE,
                                              PERF_COUNT_SW_CONTEXT_SWITCHES, 1, NULL);
                        if (r < 0)
                                return r;
                        snprintf(desc, sizeof desc, "software:cpu-clock+context-switches");
                        break;
                case RESOURCE_TRACEPOINT:
                        r = add_tracepoint(c, i, ROLE_SYSCALL, def->events[0], "id", period);
                        if (r < 0)
                                goto fail;
                        snprintf(desc, sizeof desc, "tracepoint:%s", def->events[0]);
                        break;
                case RESOURCE_BYTES:
                        for (const char *const *tp = def->events; *tp; tp++) {
                                r = add_tracepoint(c, i, ROLE_BYTES, *tp, "ret", 1);
                                if (r < 0)
                                        goto fail;
                        }
                        snprintf(desc, sizeof desc, "tracepoint:%s...", def->events[0]);
                        break;
                case RESOURCE_PFM: {
                        struct perf_event_attr attr = {};
                        const char *const *pfm;

                        for (pfm = def->events; *pfm; pfm++)
                                if (pfm_event_encode(*pfm, &attr) == 0)
                                        break;
                        if (!*pfm) {
                                /* A CPU newer than this libpfm4, or without the event: the
                                 * resource is known, and not counted here, like a missing PMU. */
                                res->unnamed = true;
                                snprintf(desc, sizeof desc, "pfm:%s", def->events[0]);
                                break;
                        }
                        r = add_event(c, i, ROLE_SAMPLE, attr.type, attr.config, period, NULL);
                        if (r < 0)
                                return r;
                        c->events[c->n_events - 1].attr.config1 = attr.config1;
                        snprintf(desc, sizeof desc, "pfm:%s", *pfm);
                        break;
                }
                }

        res->name = strdup(name);
        res->unit = strdup(def ? def->unit : "1 event");
        res->event = strdup(desc);
        if (!res->name || !res->unit || !res->event) {
                r = -ENOMEM;
                goto fail;
        }
        c->n_resources++;
        return i;
fail:
        c->n_events = n_events;         /* drop this resource's half-made events */
        free(res->name);
        free(res->unit);
        free(res->event);
        *res = (struct cresource) {};
        return r;
}

/* Bytes of a sample ring, or of a side band ring: a quarter of the samples' (at least 64 KiB). */
static size_t ring_size(const struct collector *c, bool side_band) {
        return side_band ? MAX(c->config.ring_size / 4, 65536u) : c->config.ring_size;
}

/* Fills E's attr for opening: what every event shares, from the configuration. */
static void prepare_attr(struct collector *c, struct cevent *e, bool side_band, bool inherit, bool enable_on_exec) {
        struct perf_event_attr *a = &e->attr;
        bool dwarf = c->config.unwind == UNWIND_DWARF;

        a->sample_period = e->period;
        a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
        if (!dwarf || c->config.kernel)
                a->sample_type |= PERF_SAMPLE_CALLCHAIN;
        if (a->type == PERF_TYPE_TRACEPOINT)
                a->sample_type |= PERF_SAMPLE_RAW;
        if (dwarf) {
                a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
                a->sample_regs_user = UNWIND_REGS_MASK;
                a->sample_stack_user = c->config.stack_size;
                a->exclude_callchain_user = 1;
        }
        /* Not exclude_kernel: every context switch happens in the kernel (env-probe.md). */
        a->exclude_callchain_kernel = !c->config.kernel;
        a->exclude_hv = 1;
        a->sample_id_all = 1;
        a->inherit = inherit;
        a->disabled = enable_on_exec;
        a->enable_on_exec = enable_on_exec;
        a->use_clockid = 1;
        a->clockid = CLOCK_MONOTONIC;
        a->watermark = 1;
        a->wakeup_watermark = ring_size(c, side_band) / 2;
        a->context_switch = e->role == ROLE_OFFCPU;
        /* Not build_id: the kernel then leaves a build-id flag in the MMAP2 records of every other
         * event on the host (record.h), and perf record beside cppd misreads its own file. A
         * module is known by its path, device and inode, and by the build id in its file once
         * read (symbolize.c). */
        a->mmap = a->mmap2 = a->comm = a->comm_exec = a->task = side_band;
}

static int add_fd(struct collector *c, int fd, unsigned event) {
        if (c->n_fds == c->cap_fds) {
                size_t cap = c->cap_fds ? c->cap_fds * 2 : 64;
                struct cfd *a = realloc(c->fds, cap * sizeof *a);

                if (!a)
                        return -ENOMEM;
                c->fds = a;
                c->cap_fds = cap;
        }
        c->fds[c->n_fds++] = (struct cfd) { .fd = fd, .event = event };
        return 0;
}

/* What events are opened on: a thread (and, inheriting, what it starts), every task (pid -1),
 * or a cgroup (its directory's fd, with PERF_FLAG_PID_CGROUP). */
struct targets {
        const pid_t *ids;
        int n;
        unsigned long flags;
        bool inherit;
        bool enable_on_exec;
};

/* Opens event EV on target ID, CPU, into that CPU's sample ring or, for the SIDE_BAND, its side
 * band ring: the first event opened into a ring maps it (the dummy events of open_rings()).
 * Returns 0 or a negative errno. */
static int open_one(struct collector *c, unsigned ev, const struct targets *t, pid_t id_, int cpu, bool side_band) {
        struct cevent *e = &c->events[ev];
        struct ring_buffer **ring = &c->rings[side_band ? c->n_cpus + cpu : cpu];
        _cleanup_close_ int fd = -1;
        uint64_t id, *slot;
        int r;

        prepare_attr(c, e, side_band, t->inherit, t->enable_on_exec);
        fd = perf_event_open_fd(&e->attr, id_, cpu, -1, t->flags);
        if (fd < 0)
                return fd;
        if (e->filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, e->filter) < 0)
                return -errno;
        if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
                return -errno;
        if (!*ring) {
                size_t size = ring_size(c, side_band);

                /* Without CAP_IPC_LOCK the locked-memory budget may be small: halve until the
                 * ring fits, down to 64 KiB. */
                for (;;) {
                        r = ring_buffer_map(fd, size, ring);
                        if (r != -EPERM || size <= 65536)
                                break;
                        size /= 2;
                }
                if (r < 0)
                        return r;
                c->ring_list[c->n_ring_list++] = *ring;
        } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, (*ring)->fd) < 0)
                return -errno;
        r = idmap_put(c->event_ids, id, ev, &slot);
        if (r < 0)
                return r;
        r = add_fd(c, fd, ev);
        if (r < 0)
                return r;
        take_fd(&fd);
        return 0;
}

static bool unsupported(int r) {
        return r == -ENOENT || r == -EOPNOTSUPP || r == -ENODEV;
}

/* The threads of PID, from /proc/PID/task. Returns how many were put in *ret (malloc()ed). */
static int list_threads(pid_t pid, pid_t **ret) {
        _cleanup_free_ pid_t *tids = NULL;
        DIR *d;
        struct dirent *de;
        char path[64];
        size_t n = 0, cap = 0;

        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        if (!d)
                return errno == ENOENT ? -ESRCH : -errno;
        while ((de = readdir(d))) {
                long tid = strtol(de->d_name, NULL, 10);

                if (tid <= 0)
                        continue;
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 16;
                        pid_t *a = realloc(tids, ncap * sizeof *a);

                        if (!a) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        tids = a;
                        cap = ncap;
                }
                tids[n++] = tid;
        }
        closedir(d);
        *ret = take_ptr(&tids);
        return n;
}

static struct process *process_get(struct collector *c, uint32_t pid, bool from_proc);

/* PID's systemd unit from its cgroup, through libsystemd: a system unit, else a user unit
 * ("app.service" under user@1000.service). strdup()ed; NULL: none, or PID is gone. */
static char *systemd_unit(uint32_t pid) {
        char *unit = NULL;

        if (sd_pid_get_unit(pid, &unit) < 0 && sd_pid_get_user_unit(pid, &unit) < 0)
                return NULL;
        return unit;
}

/* Reads /proc/PID/cgroup into BUF (SIZE bytes, NUL-terminated). Returns its length, -E2BIG if it
 * does not fit, or a negative errno (the process is gone). */
static ssize_t read_cgroup(uint32_t pid, char *buf, size_t size) {
        char path[64];
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/%u/cgroup", pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                n = -errno;
        close(fd);
        if (n < 0)
                return n;
        if ((size_t) n == size - 1)
                return -E2BIG;
        buf[n] = '\0';
        return n;
}

/* Forgets every cgroup the reader thread has seen. */
static void forget_cgroups(struct collector *c) {
        for (size_t i = 0; c->cgroups && i < name_table_size(c->cgroups); i++)
                free(c->cgroup_units[i]);
        c->cgroups = name_table_free(c->cgroups);
}

/* systemd_unit() of PID, for the reader thread. A busy host runs thousands of short processes
 * from a few cgroups, so the answer is kept per cgroup text, once that text is read the same
 * before and after libsystemd's reads of it (the process did not move meanwhile): an exec then
 * costs one read of /proc/PID/cgroup rather than two of libsystemd's. */
static char *exec_unit(struct collector *c, uint32_t pid) {
        char text[2048], again[sizeof text], *unit, *copy;
        ssize_t n = read_cgroup(pid, text, sizeof text);
        uint32_t id = NAME_NONE;
        int64_t added;

        if (n >= 0 && c->cgroups)
                id = name_table_find(c->cgroups, text);
        if (id != NAME_NONE)
                return c->cgroup_units[id] ? strdup(c->cgroup_units[id]) : NULL;
        unit = systemd_unit(pid);
        if (n < 0 || read_cgroup(pid, again, sizeof again) != n || memcmp(text, again, n) != 0)
                return unit;

        if (c->cgroups && name_table_size(c->cgroups) >= COLLECTOR_MAX_CGROUPS)
                forget_cgroups(c);      /* a host making cgroups without end: start over */
        if (!c->cgroups)
                c->cgroups = name_table_new();
        if (!c->cgroups)
                return unit;
        if (name_table_size(c->cgroups) == c->cap_cgroup_units) {
                size_t cap = c->cap_cgroup_units ? c->cap_cgroup_units * 2 : 64;
                char **a = realloc(c->cgroup_units, cap * sizeof *a);

                if (!a)
                        return unit;
                c->cgroup_units = a;
                c->cap_cgroup_units = cap;
        }
        copy = unit ? strdup(unit) : NULL;
        if (unit && !copy)
                return unit;
        added = name_table_intern(c->cgroups, text, n);
        if (added >= 0)
                c->cgroup_units[added] = copy;
        else
                free(copy);
        return unit;
}

/* The reader thread's hook: at an exec, learn the process's unit while it surely lives (systemd
 * moves a service's process into its cgroup before the exec), or that it has none. */
static void on_exec_record(void *userdata, const struct perf_event_header *h) {
        struct collector *c = userdata;
        struct record_comm m;
        uint64_t *slot = NULL, v;
        char *unit;
        int r;

        if (h->type != PERF_RECORD_COMM || !(h->misc & PERF_RECORD_MISC_COMM_EXEC) ||
            record_parse_comm(h, &m) < 0 || m.pid != m.tid)
                return;
        unit = exec_unit(c, m.pid);
        v = unit ? (uintptr_t) unit : EXEC_UNIT_NONE;
        pthread_mutex_lock(&c->exec_units_lock);
        r = idmap_put(c->exec_units, m.pid, v, &slot);
        if (r == 0) {
                exec_unit_free(*slot);          /* an older exec's, not handled yet */
                *slot = v;
        }
        pthread_mutex_unlock(&c->exec_units_lock);
        if (r < 0)
                free(unit);
}

/* What the reader thread learned of PID's unit at its exec: 1 and *ret (a string to free, or
 * NULL: it had none), or 0 if it did not look. */
static int take_exec_unit(struct collector *c, uint32_t pid, char **ret) {
        uint64_t *slot, v = EXEC_UNIT_TAKEN;

        pthread_mutex_lock(&c->exec_units_lock);
        slot = idmap_get(c->exec_units, pid);
        if (slot) {
                v = *slot;
                *slot = EXEC_UNIT_TAKEN;
        }
        pthread_mutex_unlock(&c->exec_units_lock);
        *ret = v > EXEC_UNIT_NONE ? (char *) (uintptr_t) v : NULL;
        return v != EXEC_UNIT_TAKEN;
}

/* Starts the thread that empties the rings, telling it each event's sample layout. */
static int start_reader(struct collector *c) {
        uint64_t id, ev;
        size_t i = 0;
        int r;

        c->reader = ring_reader_new(c->ring_list, c->n_ring_list, c->config.queue_size);
        if (!c->reader)
                return -ENOMEM;
        ring_reader_set_hook(c->reader, on_exec_record, c);
        while (idmap_next(c->event_ids, &i, &id, &ev)) {
                r = ring_reader_add_event(c->reader, id, c->events[ev].attr.sample_type, UNWIND_N_REGS,
                                          UNWIND_N_REGS > 0 ? UNWIND_REG_SP : -1);
                if (r < 0)
                        return r;
        }
        return ring_reader_start(c->reader);
}

/* Of two context-switch software events on one task only the one opened last gets samples (seen
 * on 6.18, with perf itself too), so context-switches and real-time share real-time's: each of
 * its switch samples also counts toward context-switches, through an interval counter that
 * keeps context-switches' own period. */
static void share_context_switches(struct collector *c) {
        unsigned offcpu = NO_RESOURCE, switches = NO_RESOURCE;

        for (unsigned ev = 0; ev < c->n_events; ev++) {
                const struct cevent *e = &c->events[ev];

                if (e->role == ROLE_OFFCPU)
                        offcpu = e->resource;
                else if (e->attr.type == PERF_TYPE_SOFTWARE && e->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES &&
                         e->resource != NO_RESOURCE)
                        switches = ev;
        }
        if (offcpu == NO_RESOURCE || switches == NO_RESOURCE)
                return;
        c->events[switches].shared = true;
        c->switches_via_offcpu = c->events[switches].resource;
}

/* The rings' owners, opened before any resource so that resources come and go (an unsupported
 * one is closed again) without the rings depending on them: per CPU, a dummy software event that
 * maps the sample ring, and per target and CPU a dummy event that carries the side band (MMAP2,
 * COMM, FORK/EXIT) into the side band's ring. */
static int open_rings(struct collector *c, const struct targets *t) {
        unsigned owner = c->n_events, side = c->n_events + 1;
        int r;

        r = add_event(c, NO_RESOURCE, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 1, NULL);
        if (r >= 0)
                r = add_event(c, NO_RESOURCE, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 1, NULL);
        if (r < 0)
                return r;
        for (int cpu = 0; cpu < c->n_cpus; cpu++) {
                r = open_one(c, owner, t, t->ids[0], cpu, false);
                if (r < 0)
                        return r;
        }
        for (int i = 0; i < t->n; i++)
                for (int cpu = 0; cpu < c->n_cpus; cpu++) {
                        r = open_one(c, side, t, t->ids[i], cpu, true);
                        if (r == -ESRCH && i > 0)
                                break;  /* a thread exited meanwhile */
                        if (r < 0)
                                return r;
                }
        return 0;
}

/* Opens the side band and every resource's events on T, then starts the reader. See
 * collector_attach() for the results. */
static int open_events(struct collector *c, const struct targets *t, uint32_t *ret_unsupported,
                       const char **ret_failed) {
        uint32_t unsupported_mask = 0;
        unsigned n_resource_events = c->n_events;
        int n_active = 0, r;

        *ret_failed = NULL;
        if (c->reader)
                return -EBUSY;          /* one target set per collector */
        share_context_switches(c);
        r = open_rings(c, t);
        if (r < 0)
                return r;

        for (unsigned res = 0; res < c->n_resources; res++) {
                size_t first_fd = c->n_fds;

                if (c->resources[res].unnamed) {
                        unsupported_mask |= 1u << res;
                        continue;
                }
                r = 0;
                for (unsigned ev = 0; r >= 0 && ev < n_resource_events; ev++) {
                        if (c->events[ev].resource != res || c->events[ev].shared)
                                continue;
                        for (int i = 0; r >= 0 && i < t->n; i++)
                                for (int cpu = 0; r >= 0 && cpu < c->n_cpus; cpu++) {
                                        r = open_one(c, ev, t, t->ids[i], cpu, false);
                                        if (r == -ESRCH && i > 0) {
                                                r = 0;  /* a thread exited meanwhile */
                                                break;
                                        }
                                }
                }
                if (r < 0) {
                        /* Close this resource's events; the rings belong to the side band. */
                        for (size_t f = first_fd; f < c->n_fds; f++)
                                close(c->fds[f].fd);
                        c->n_fds = first_fd;
                        if (unsupported(r)) {
                                unsupported_mask |= 1u << res;
                                continue;
                        }
                        *ret_failed = c->resources[res].name;
                        return r;
                }
                c->resources[res].active = true;
                n_active++;
        }
        if (c->switches_via_offcpu != NO_RESOURCE) {
                unsigned sw = c->switches_via_offcpu, rt = NO_RESOURCE;

                for (unsigned ev = 0; ev < c->n_events; ev++)
                        if (c->events[ev].role == ROLE_OFFCPU)
                                rt = c->events[ev].resource;
                c->resources[sw].active = rt != NO_RESOURCE && c->resources[rt].active;
        }
        *ret_unsupported = unsupported_mask;
        if (n_active == 0)
                return -ENODEV;
        r = start_reader(c);
        return r < 0 ? r : n_active;
}

int collector_attach(struct collector *c, pid_t pid, bool enable_on_exec, uint32_t *ret_unsupported,
                     const char **ret_failed) {
        _cleanup_free_ pid_t *tids = NULL;
        struct targets t = { .inherit = true, .enable_on_exec = enable_on_exec };

        if (enable_on_exec) {
                tids = malloc(sizeof *tids);
                if (!tids)
                        return -ENOMEM;
                tids[0] = pid;
                t.n = 1;
        } else {
                /* Each existing thread needs its own events: inheritance only reaches threads
                 * created after the open. */
                t.n = list_threads(pid, &tids);
                if (t.n < 0)
                        return t.n;
                if (!process_get(c, pid, true))
                        return -ENOMEM;
        }
        t.ids = tids;
        return open_events(c, &t, ret_unsupported, ret_failed);
}

/* Learns every process in /proc (or, with CGROUP_FD >= 0, those listed in that cgroup's
 * cgroup.procs): their names, units and address spaces, for the samples that come before any
 * record tells about them. */
static int scan_processes(struct collector *c, int cgroup_fd) {
        _cleanup_fclose_ FILE *procs = NULL;
        DIR *d = NULL;
        struct dirent *de;
        char line[32];

        if (cgroup_fd >= 0) {
                int fd = openat(cgroup_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);

                if (fd < 0 || !(procs = fdopen(fd, "re"))) {
                        if (fd >= 0)
                                close(fd);
                        return -errno;
                }
                while (fgets(line, sizeof line, procs)) {
                        long pid = strtol(line, NULL, 10);

                        if (pid > 0 && !process_get(c, pid, true))
                                return -ENOMEM;
                }
                return 0;
        }
        d = opendir("/proc");
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                long pid = strtol(de->d_name, NULL, 10);

                if (pid > 0 && !process_get(c, pid, true)) {
                        closedir(d);
                        return -ENOMEM;
                }
        }
        closedir(d);
        return 0;
}

int collector_attach_system(struct collector *c, uint32_t *ret_unsupported, const char **ret_failed) {
        static const pid_t all = -1;
        struct targets t = { .ids = &all, .n = 1 };
        int r;

        r = scan_processes(c, -1);
        if (r < 0)
                return r;
        return open_events(c, &t, ret_unsupported, ret_failed);
}

int collector_attach_cgroup(struct collector *c, int cgroup_fd, uint32_t *ret_unsupported, const char **ret_failed) {
        struct targets t = { .ids = &cgroup_fd, .n = 1, .flags = PERF_FLAG_PID_CGROUP };
        int r;

        r = scan_processes(c, cgroup_fd);
        if (r < 0)
                return r;
        return open_events(c, &t, ret_unsupported, ret_failed);
}

int collector_fd(struct collector *c) {
        return c->reader ? ring_reader_fd(c->reader) : -1;
}

void collector_stop(struct collector *c) {
        if (c->reader)
                ring_reader_stop(c->reader);

}

/* ---- processes and threads ---- */

static int load_proc_maps(struct collector *c, struct process *p) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        char path[64];

        snprintf(path, sizeof path, "/proc/%u/maps", p->pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (getline(&line, &cap, f) > 0) {
                struct proc_maps_line l;
                uint32_t module = SYMBOLIZER_NO_MODULE;
                int r;

                if (proc_maps_parse_line(line, &l) < 0 || !l.exec)
                        continue;
                if (l.path[0] == '/' || streq(l.path, "[vdso]")) {
                        r = symbolizer_module(c->sym, l.path, NULL, 0, (uint64_t) l.dev_major << 32 | l.dev_minor,
                                              l.ino, &module);
                        if (r < 0)
                                return r;
                }
                r = proc_maps_add(p->maps, l.start, l.end, l.pgoff, module);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Reads P's systemd unit while it lives. Keeps the old one if P is gone or has none. */
static void read_unit(struct process *p) {
        char *unit = systemd_unit(p->pid);

        if (!unit)
                return;
        free(p->unit);
        p->unit = unit;
}

static void read_comm(const char *path, char comm[static 16]) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");

        if (f && fgets(comm, 16, f))
                comm[strcspn(comm, "\n")] = '\0';
}

/* The process PID, created if new; FROM_PROC reads its maps and name from /proc (attach, or a
 * process whose FORK we never saw). NULL: no memory. */
static struct process *process_get(struct collector *c, uint32_t pid, bool from_proc) {
        struct process *p;
        uint64_t *slot;
        char path[64];

        slot = idmap_get(c->processes, pid);
        if (slot)
                return (struct process *) (uintptr_t) *slot;
        p = calloc(1, sizeof *p);
        if (!p)
                return NULL;
        p->pid = pid;
        p->maps = proc_maps_new();
        p->bytes_remaining = calloc(COLLECTOR_MAX_RESOURCES, sizeof *p->bytes_remaining);
        if (!p->maps || !p->bytes_remaining || idmap_put(c->processes, pid, (uintptr_t) p, &slot) < 0) {
                process_free(p);
                return NULL;
        }
        for (unsigned r = 0; r < c->n_resources; r++)
                p->bytes_remaining[r] = draw_period(c, c->resources[r].period);
        if (from_proc && !c->offline) {
                char exe[4096];
                ssize_t n;

                snprintf(path, sizeof path, "/proc/%u/comm", pid);
                read_comm(path, p->comm);
                snprintf(path, sizeof path, "/proc/%u/exe", pid);
                n = readlink(path, exe, sizeof exe - 1);
                if (n > 0) {
                        exe[n] = '\0';
                        p->exe = strdup(exe);
                }
                read_unit(p);
                (void) load_proc_maps(c, p);    /* gone or forbidden: its frames stay unknown */
        }
        c->stats.processes++;
        return p;
}

/* The thread TID of process PID, created if new. NULL: no memory (or too many threads). */
static struct thread *thread_get(struct collector *c, uint32_t pid, uint32_t tid) {
        struct thread *t;
        struct process *p;
        uint64_t *slot;

        slot = idmap_get(c->threads, tid);
        if (slot) {
                t = (struct thread *) (uintptr_t) *slot;
                if (t->process->pid == pid)
                        return t;
                /* The tid was reused by another process: a new thread in the same slot's place. */
        }
        p = process_get(c, pid, !idmap_get(c->processes, pid));
        if (!p)
                return NULL;
        if (c->n_slots >= (1u << KEY_SLOT_BITS))
                return NULL;
        if (c->n_slots == c->cap_slots) {
                size_t cap = c->cap_slots ? c->cap_slots * 2 : 64;
                struct thread **a = realloc(c->slots, cap * sizeof *a);

                if (!a)
                        return NULL;
                c->slots = a;
                c->cap_slots = cap;
        }
        t = calloc(1, sizeof *t);
        if (!t)
                return NULL;
        t->tid = tid;
        t->process = p;
        t->slot = c->n_slots;
        memcpy(t->comm, p->comm, sizeof t->comm);
        if (idmap_put(c->threads, tid, (uintptr_t) t, &slot) < 0) {
                free(t);
                return NULL;
        }
        *slot = (uintptr_t) t;
        c->slots[c->n_slots++] = t;
        c->stats.threads++;
        return t;
}

/* ---- stacks ---- */

static int64_t trie_child(struct collector *c, uint32_t parent, uint32_t frame) {
        uint64_t *slot;
        int r;

        r = idmap_put(c->trie, idmap_pair(parent, frame), c->n_nodes, &slot);
        if (r < 0)
                return r;
        if (r == 0)
                return *slot;
        if (c->n_nodes >= UINT32_MAX - 1)
                return -E2BIG;
        if (c->n_nodes == c->cap_nodes) {
                size_t cap = c->cap_nodes * 2;
                struct trie_node *a = realloc(c->nodes, cap * sizeof *a);

                if (!a)
                        return -ENOMEM;
                c->nodes = a;
                c->cap_nodes = cap;
        }
        c->nodes[c->n_nodes] = (struct trie_node) { .parent = parent, .frame = frame };
        c->stats.stack_nodes++;
        return c->n_nodes++;
}

/* Looks PC up in P's JIT map, reading /tmp/perf-PID.map again if it has grown (looked at once a
 * second at most). */
static const char *jit_lookup(struct collector *c, struct process *p, uint64_t pc) {
        const struct symtab_entry *e = p->jit ? symtab_lookup(p->jit, pc) : NULL;
        char path[128];
        struct stat st;
        uint64_t now;

        if (e)
                return name_table_get(c->sym->names, e->name);
        /* At most once a second a process: PCs outside every module come by the thousand (a
         * frame-pointer walk through code built without them), and each look is two stat()s. */
        now = now_ns(CLOCK_MONOTONIC);
        if (p->jit_checked && now - p->jit_checked < JIT_RECHECK_NS)
                return NULL;
        p->jit_checked = now;
        /* The process's own /tmp first: it may be private (PrivateTmp=, a container), or ours. */
        snprintf(path, sizeof path, "/proc/%u/root/tmp/perf-%u.map", p->pid, p->pid);
        if (p->exited || stat(path, &st) < 0) {
                snprintf(path, sizeof path, "/tmp/perf-%u.map", p->pid);
                if (stat(path, &st) < 0)
                        return NULL;
        }
        if (st.st_size == p->jit_size)
                return NULL;
        {
                _cleanup_fclose_ FILE *f = fopen(path, "re");
                struct symtab *t;

                if (!f || perf_map_load(f, c->sym->names, &t) < 0)
                        return NULL;
                symtab_free(p->jit);
                p->jit = t;
                p->jit_size = st.st_size;
        }
        e = symtab_lookup(p->jit, pc);
        return e ? name_table_get(c->sym->names, e->name) : NULL;
}

/* Appends the frames of user address PC (innermost first) to the stack at *n. Returns 1 if they
 * come from a module (the same PC in the same mappings gives the same frames), 0 if not (a JIT
 * map may be read anew, an unknown address become known), or a negative errno. */
static int add_user_pc(struct collector *c, struct process *p, uint64_t pc, size_t *n) {
        const struct mapping *m = proc_maps_find(p->maps, pc);
        uint32_t first, count;
        int64_t f;
        int r;

        if (m && m->module != SYMBOLIZER_NO_MODULE) {
                if (!symbolizer_get_module(c->sym, m->module)->loaded)
                        (void) symbolizer_load(c->sym, m->module, p->exited ? 0 : p->pid, m->start, m->end);
                r = symbolizer_resolve(c->sym, m->module, pc - m->start + m->pgoff, &first, &count);
                if (r < 0)
                        return r;
                for (uint32_t i = count; i > 0 && *n < COLLECTOR_MAX_STACK; i--)
                        c->stack[(*n)++] = first + i - 1;
                return 1;
        }
        {
                const char *jit = jit_lookup(c, p, pc);

                f = jit ? symbolizer_jit(c->sym, jit) : symbolizer_synthetic(c->sym, "[unknown]", true);
        }
        if (f < 0)
                return f;
        if (*n < COLLECTOR_MAX_STACK)
                c->stack[(*n)++] = f;
        return 0;
}

/* Appends the frames of user PCs [FROM, TO) to the stack at *n, noting each one's count and
 * whether it is stable (STEP_UNSTABLE) in pc_frames. Returns 0 or a negative errno. */
#define STEP_UNSTABLE 0x8000
static int add_user_pcs(struct collector *c, struct process *p, size_t from, size_t to, size_t *n) {
        for (size_t i = from; i < to; i++) {
                size_t before = *n;
                int r = add_user_pc(c, p, c->pcs[i], n);

                if (r < 0)
                        return r;
                /* A PC cut short by the stack's bound is not its whole self: not one to keep. */
                c->pc_frames[i] = (uint16_t) (*n - before) | (r == 0 || *n == COLLECTOR_MAX_STACK ? STEP_UNSTABLE : 0);
        }
        return 0;
}

/* Keeps step K of thread T's stack (the K-th PC from the outermost). False: no memory, or
 * deeper than kept (COLLECTOR_MAX_STEPS). */
static bool keep_step(struct thread *t, uint32_t k, const struct stack_step *step) {
        if (k >= COLLECTOR_MAX_STEPS)
                return false;
        if (k >= t->cap_steps) {
                uint32_t cap = t->cap_steps ? 2 * t->cap_steps : 8;
                struct stack_step *a = realloc(t->steps, cap * sizeof *a);

                if (!a)
                        return false;
                t->steps = a;
                t->cap_steps = cap;
        }
        t->steps[k] = *step;
        t->n_steps = k + 1;
        return true;
}

struct unwind_target {
        struct collector *collector;
        struct process *process;
};

/* The unwinder's view of P's address space: the module at PC, loaded on first use. */
static int find_module(void *userdata, uint64_t pc, struct unwind_module *ret) {
        struct unwind_target *x = userdata;
        const struct mapping *m = proc_maps_find(x->process->maps, pc);
        struct module *mod;
        uint64_t bias;

        if (!m || m->module == SYMBOLIZER_NO_MODULE)
                return -ENOENT;
        mod = symbolizer_get_module(x->collector->sym, m->module);
        if (!mod->loaded)
                (void) symbolizer_load(x->collector->sym, m->module, x->process->exited ? 0 : x->process->pid,
                                       m->start, m->end);
        if (mod->load_error < 0 || module_bias(mod, m->start, m->pgoff, &bias) < 0)
                return -ENOENT;
        *ret = (struct unwind_module) {
                .key = symbolizer_canonical(x->collector->sym, m->module),
                .cfi = module_cfi(mod),
                .bias = bias,
        };
        return 0;
}

static bool is_context(uint64_t ip) {
        return ip >= (uint64_t) PERF_CONTEXT_MAX;
}

/* After sample S of thread T unwound to TOP (unwinder_unwind()): tells the ring
 * reader where T's stack copies may end, a little above the highest top seen, so that the
 * copies stop carrying the environment above the outermost frame. A copy that a top cut short
 * (it ends there, and its unwind did not reach the outermost frame: the thread switched stacks,
 * or its tid went to a new thread before the reader saw the exit) turns cutting off for T. */
static void learn_stack_top(struct collector *c, struct thread *t, const struct record_sample *s, uint64_t top) {
        uint64_t generation = ring_reader_stack_tops_generation(c->reader);

        if (t->stack_top_off || top == 0)
                return;
        if (top == UNWIND_SHORT) {
                if (t->stack_top > 0 && t->stack_top_generation == generation &&
                    s->regs[UNWIND_REG_SP] + s->dyn_size == t->stack_top) {
                        t->stack_top_off = true;
                        c->stats.stacks_cut_short++;
                        (void) ring_reader_set_stack_top(c->reader, t->tid, 0, s->time);
                }
                return;
        }
        top += STACK_TOP_SLACK;
        if (top <= t->stack_top && t->stack_top_generation == generation)
                return;
        if (ring_reader_set_stack_top(c->reader, t->tid, MAX(top, t->stack_top), s->time) == 0) {
                t->stack_top = MAX(top, t->stack_top);
                t->stack_top_generation = generation;
        }
}

/* Builds sample S's stack for thread T, with an optional synthetic LEAF frame (a system
 * call's name), and returns its trie node, or a negative errno. */
static int64_t sample_stack(struct collector *c, const struct record_sample *s, struct thread *t, int64_t leaf) {
        struct process *p = t->process;
        size_t n = 0, n_pcs = 0, kept = 0, first_user, end;
        uint64_t context = PERF_CONTEXT_USER, t0, frames = 0, unknown = 0;
        bool timed = c->stats.samples % TIMED_EVERY == 0;
        int64_t node = 0;
        int r;

        /* The kernel's callchain: kernel frames (kept with --kernel) and, without DWARF, the
         * user frames, each section after its PERF_CONTEXT_* marker. */
        for (uint64_t i = 0; i < s->nr; i++) {
                uint64_t ip = s->ips[i];

                if (is_context(ip)) {
                        context = ip;
                        continue;
                }
                if (context == PERF_CONTEXT_KERNEL && c->config.kernel) {
                        int64_t f = symbolizer_kernel(c->sym, ip);

                        if (f < 0)
                                return f;
                        if (n < COLLECTOR_MAX_STACK)
                                c->stack[n++] = f;
                } else if (context == PERF_CONTEXT_USER && c->config.unwind == UNWIND_FP &&
                           n_pcs < COLLECTOR_MAX_STACK) {
                        c->pcs[n_pcs] = n_pcs == 0 ? ip : ip - 1;       /* return addresses: the call */
                        n_pcs++;
                }
        }
        if (leaf >= 0 && n < COLLECTOR_MAX_STACK)
                c->stack[n++] = leaf;

        if (c->config.unwind == UNWIND_DWARF && s->regs && s->abi != PERF_SAMPLE_REGS_ABI_NONE) {
                struct unwind_target target = { .collector = c, .process = p };
                uint64_t top;

                t0 = timed ? now_ns(CLOCK_MONOTONIC) : 0;
                n_pcs = unwinder_unwind(c->unwinder, find_module, &target, p->maps->generation, s->regs, s->stack,
                                        s->dyn_size, c->pcs, COLLECTOR_MAX_STACK, &top);
                if (timed)
                        c->stats.unwind_ns += (now_ns(CLOCK_MONOTONIC) - t0) * TIMED_EVERY;
                if (c->reader)
                        learn_stack_top(c, t, s, top);
        }

        /* The outermost PCs this thread's last sample had too, in the same mappings and trie,
         * end at the trie node kept for them: only the PCs below them are looked up. */
        if (t->steps_space == p->maps->generation && t->steps_epoch == c->trie_epoch)
                while (kept < n_pcs && kept < t->n_steps && t->steps[kept].pc == c->pcs[n_pcs - 1 - kept])
                        kept++;
        first_user = n;
        t0 = timed ? now_ns(CLOCK_MONOTONIC) : 0;
        r = add_user_pcs(c, p, 0, n_pcs - kept, &n);
        if (r < 0)
                return r;
        if (kept > 0 && n + t->steps[kept - 1].frames > COLLECTOR_MAX_STACK) {
                /* Too deep for all of it: the outermost frames give way, as always. */
                r = add_user_pcs(c, p, n_pcs - kept, n_pcs, &n);
                if (r < 0)
                        return r;
                kept = 0;
        }
        if (timed)
                c->stats.symbolize_ns += (now_ns(CLOCK_MONOTONIC) - t0) * TIMED_EVERY;
        if (n == 0 && kept == 0) {
                int64_t f = symbolizer_synthetic(c->sym, "[unknown]", true);

                if (f < 0)
                        return f;
                c->stack[n++] = f;
        }

        /* Into the trie, outermost frame first: the user frames from the kept node, noting each
         * stable PC's node for the next sample; then the leaf and the kernel's frames. */
        t->n_steps = kept;
        if (kept > 0) {
                node = t->steps[kept - 1].node;
                frames = t->steps[kept - 1].frames;
                unknown = t->steps[kept - 1].unknown;
        }
        end = n;
        for (size_t i = n_pcs - kept; i > 0; i--) {
                uint16_t count = c->pc_frames[i - 1] & ~STEP_UNSTABLE;

                for (; count > 0 && end > first_user; count--) {
                        const struct frame *f = &c->sym->frames[c->stack[--end]];

                        frames++;
                        unknown += f->unknown;
                        node = trie_child(c, node, c->stack[end]);
                        if (node < 0)
                                return node;
                }
                if (!(c->pc_frames[i - 1] & STEP_UNSTABLE) && t->n_steps == n_pcs - i)
                        (void) keep_step(t, t->n_steps, &(struct stack_step) {
                                        .pc = c->pcs[i - 1], .node = node, .frames = frames, .unknown = unknown,
                                });
        }
        t->steps_space = p->maps->generation;
        t->steps_epoch = c->trie_epoch;
        for (size_t i = end; i > 0; i--) {
                const struct frame *f = &c->sym->frames[c->stack[i - 1]];

                frames++;
                unknown += f->unknown;
                node = trie_child(c, node, c->stack[i - 1]);
                if (node < 0)
                        return node;
        }
        c->stats.frames += frames;
        c->stats.frames_unknown += unknown;
        return node;
}

/* ---- aggregation ---- */

static int64_t bucket_of(struct collector *c, uint64_t time_ns) {
        int64_t wall = ((int64_t) time_ns + c->realtime_offset) / 1000000000;

        return wall - wall % (int64_t) c->config.bucket_seconds;
}

/* Flushes the bucket in memory when a record at TIME_NS belongs to a later one. Records call
 * it before they look up their thread or build their stack: a flush forgets exited threads
 * (moving the others' slots) and may start the trie over, so no thread or node may be held
 * across it. */
static int flush_before(struct collector *c, uint64_t time_ns) {
        uint64_t now;

        if (c->agg_bucket < 0 || !c->store || bucket_of(c, time_ns) <= c->agg_bucket)
                return 0;
        /* While the store fails (a full disk), later samples join the bucket in memory (up to
         * COLLECTOR_MAX_HELD keys), and a flush is tried at most once a second, not per sample. */
        now = now_ns(CLOCK_MONOTONIC);
        if (c->flush_failed_ns && now - c->flush_failed_ns < 1000000000)
                return 0;
        if (collector_flush(c, false) < 0)
                c->flush_failed_ns = now;
        return 0;
}

static int aggregate(struct collector *c, unsigned resource, struct thread *t, uint32_t node,
                     uint64_t hits, uint64_t time_ns) {
        uint64_t key = (uint64_t) resource << (64 - KEY_RESOURCE_BITS) | (uint64_t) t->slot << 32 | node;
        int64_t bucket = bucket_of(c, time_ns);
        uint64_t *slot;
        int r;

        /* One bucket at a time in memory: a record of a later bucket has flushed the earlier
         * one (flush_before()); a late sample of an earlier bucket joins the current one. */
        if (c->agg_bucket < 0 || bucket > c->agg_bucket)
                c->agg_bucket = bucket;

        if (c->n_agg >= COLLECTOR_MAX_HELD && !idmap_get(c->agg_index, key)) {
                c->resources[resource].lost++;  /* the store has failed for too long */
                return 0;
        }
        r = idmap_put(c->agg_index, key, c->n_agg, &slot);
        if (r < 0)
                return r;
        if (r > 0) {
                if (c->n_agg == c->cap_agg) {
                        size_t cap = c->cap_agg ? c->cap_agg * 2 : 1024;
                        struct agg *a = realloc(c->agg, cap * sizeof *a);
                        uint64_t *k;

                        if (!a)
                                return -ENOMEM;
                        c->agg = a;
                        k = realloc(c->agg_keys, cap * sizeof *k);
                        if (!k)
                                return -ENOMEM;
                        c->agg_keys = k;
                        c->cap_agg = cap;
                }
                c->agg[c->n_agg] = (struct agg) {};
                c->agg_keys[c->n_agg] = key;
                c->n_agg++;
        }
        c->agg[*slot].hits += hits;
        c->agg[*slot].samples++;
        c->resources[resource].hits += hits;
        c->resources[resource].samples++;
        return 0;
}

/* ---- records ---- */

static uint64_t raw_field(const struct record_sample *s, const struct cevent *e, bool *ok) {
        int64_t v64;
        int32_t v32;

        *ok = s->raw && e->raw_offset + e->raw_size <= s->raw_size;
        if (!*ok)
                return 0;
        if (e->raw_size == 8) {
                memcpy(&v64, s->raw + e->raw_offset, 8);
                return (uint64_t) v64;
        }
        memcpy(&v32, s->raw + e->raw_offset, 4);
        return (uint64_t) (int64_t) v32;
}

/* Sample S of event E: its thread, its stack, and its hits into the bucket. */
static int handle_parsed_sample(struct collector *c, const struct cevent *e, const struct record_sample *s) {
        struct thread *t;
        uint64_t hits = 1, v;
        int64_t node, leaf = -1;
        bool ok;
        int r;

        r = flush_before(c, s->time);
        if (r < 0)
                return r;
        t = thread_get(c, s->pid, s->tid);
        if (!t)
                return -ENOMEM;
        c->stats.samples++;

        switch (e->role) {
        case ROLE_SAMPLE:
                if (c->feed_hits)
                        hits = c->feed_hits;    /* offline: a sample weighted by its period */
                break;
        case ROLE_SYSCALL: {
                char name[64];
                const char *sc;

                v = raw_field(s, e, &ok);
                if (!ok)
                        return -EBADMSG;
                sc = syscall_name(v);
                if (sc)
                        snprintf(name, sizeof name, "syscall:%s", sc);
                else
                        snprintf(name, sizeof name, "syscall:%" PRIu64, v);
                leaf = symbolizer_synthetic(c->sym, name, false);
                if (leaf < 0)
                        return leaf;
                break;
        }
        case ROLE_BYTES: {
                struct cresource *res = &c->resources[e->resource];
                uint64_t *remaining = &t->process->bytes_remaining[e->resource];

                v = raw_field(s, e, &ok);
                if (!ok)
                        return -EBADMSG;
                if ((int64_t) v <= 0)
                        return 0;
                /* The interval counter of paper §5.1: a hit per period boundary crossed. */
                hits = 0;
                if (!c->config.jitter && *remaining > 0) {
                        if (v >= *remaining) {
                                v -= *remaining;
                                hits = 1 + v / res->period;
                                *remaining = res->period - v % res->period;
                        } else
                                *remaining -= v;
                } else
                        while (v > 0) {
                                if (v >= *remaining) {
                                        v -= *remaining;
                                        hits++;
                                        *remaining = draw_period(c, res->period);
                                } else {
                                        *remaining -= v;
                                        v = 0;
                                }
                        }
                if (hits == 0)
                        return 0;
                break;
        }
        case ROLE_OFFCPU:
                node = sample_stack(c, s, t, -1);
                if (node < 0)
                        return node;
                t->offcpu_pending = true;
                t->offcpu_node = node;
                t->offcpu_since = s->time;
                if (c->switches_via_offcpu != NO_RESOURCE) {
                        unsigned sw = c->switches_via_offcpu;
                        uint64_t *remaining = &t->process->bytes_remaining[sw];

                        if (--*remaining > 0)
                                return 0;
                        *remaining = draw_period(c, c->resources[sw].period);
                        return aggregate(c, sw, t, node, 1, s->time);
                }
                return 0;
        }

        node = sample_stack(c, s, t, leaf);
        if (node < 0)
                return node;
        return aggregate(c, e->resource, t, node, hits, s->time);
}

static int handle_sample(struct collector *c, const struct perf_event_header *h) {
        struct record_sample s;
        uint64_t *slot, id;

        if (h->size < sizeof *h + 8)
                return -EBADMSG;
        memcpy(&id, h + 1, 8);
        slot = idmap_get(c->event_ids, id);
        if (!slot)
                return -EBADMSG;
        if (c->events[*slot].resource == NO_RESOURCE)
                return 0;
        if (record_parse_sample(h, c->events[*slot].attr.sample_type, UNWIND_N_REGS, &s) < 0)
                return -EBADMSG;
        return handle_parsed_sample(c, &c->events[*slot], &s);
}

/* A thread came back on a CPU: charge the time since its switch out to real-time. */
static int handle_switch(struct collector *c, const struct perf_event_header *h) {
        uint32_t pid, tid;
        uint64_t *slot, id, time, dt, hits = 0, period_ns;
        struct thread *t;
        unsigned res;
        bool out;
        int r;

        if (record_parse_switch(h, &pid, &tid, &out) < 0 || record_sample_id(h, &id, &time) < 0)
                return -EBADMSG;
        if (out)
                return 0;
        r = flush_before(c, time);
        if (r < 0)
                return r;
        slot = idmap_get(c->threads, tid);
        if (!slot)
                return 0;
        t = (struct thread *) (uintptr_t) *slot;
        if (!t->offcpu_pending || time < t->offcpu_since)
                return 0;
        t->offcpu_pending = false;
        slot = idmap_get(c->event_ids, id);
        if (!slot)
                return -EBADMSG;
        res = c->events[*slot].resource;
        period_ns = c->resources[res].period * NS_PER_MS;
        if (t->offcpu_remaining == 0)
                t->offcpu_remaining = draw_period(c, period_ns);
        dt = time - t->offcpu_since;
        while (dt >= t->offcpu_remaining) {
                dt -= t->offcpu_remaining;
                hits++;
                t->offcpu_remaining = draw_period(c, period_ns);
                if (!c->config.jitter) {
                        hits += dt / period_ns;
                        dt %= period_ns;
                }
        }
        t->offcpu_remaining -= dt;
        return hits ? aggregate(c, res, t, t->offcpu_node, hits, time) : 0;
}

/* Whether a mapped file name names a file we can open: not "//anon" (anonymous executable
 * memory, as JITs make), "/dev/zero", "/anon_hugepage" or "/SYSV..." shared memory. */
static bool mapped_file(const char *name) {
        return name[0] == '/' && !startswith(name, "//anon") && !streq(name, "/dev/zero") &&
               !startswith(name, "/anon_hugepage") && !startswith(name, "/SYSV");
}

static int handle_mmap2(struct collector *c, const struct perf_event_header *h) {
        struct record_mmap2 m;
        struct process *p;
        uint32_t module = SYMBOLIZER_NO_MODULE;
        int r;

        if (record_parse_mmap2(h, c->config.mmap_build_ids, &m) < 0)
                return -EBADMSG;
        if (!(m.prot & 4 /* PROT_EXEC */) || m.len == 0 || m.addr + m.len < m.addr)
                return 0;
        p = process_get(c, m.pid, false);
        if (!p)
                return -ENOMEM;
        if (p->exe_pending && mapped_file(m.filename)) {
                /* The kernel maps the program before its interpreter. */
                free(p->exe);
                p->exe = strdup(m.filename);
                p->exe_pending = false;
        }
        if (mapped_file(m.filename) || streq(m.filename, "[vdso]")) {
                r = symbolizer_module(c->sym, m.filename, m.has_build_id ? m.build_id : NULL,
                                      m.has_build_id ? m.build_id_size : 0,
                                      (uint64_t) m.maj << 32 | m.min, m.ino, &module);
                if (r < 0)
                        return r;
        }
        return proc_maps_add(p->maps, m.addr, m.addr + m.len, m.pgoff, module);
}

static int handle_comm(struct collector *c, const struct perf_event_header *h) {
        struct record_comm m;
        struct thread *t;

        if (record_parse_comm(h, &m) < 0)
                return -EBADMSG;
        t = thread_get(c, m.pid, m.tid);
        if (!t)
                return -ENOMEM;
        snprintf(t->comm, sizeof t->comm, "%s", m.comm);
        if (m.exec || m.pid == m.tid)
                snprintf(t->process->comm, sizeof t->process->comm, "%s", m.comm);
        if (m.exec) {
                /* A new program: the old mappings are gone, its own MMAP2s follow; a new stack
                 * (the reader forgot its top at the same record). */
                proc_maps_clear(t->process->maps);
                t->stack_top = 0;
                t->stack_top_off = false;
                t->process->jit = symtab_free(t->process->jit);
                t->process->jit_size = 0;
                t->process->jit_checked = 0;
                t->process->store_id = 0;       /* a new process row: it runs another program */
                t->process->exe_pending = true;
                {
                        char *unit;

                        /* Asked twice for a process in no unit, systemd's library reads the
                         * cgroup file four times: once is enough. */
                        if (take_exec_unit(c, m.pid, &unit) == 0)
                                read_unit(t->process);
                        else if (unit) {
                                free(t->process->unit);
                                t->process->unit = unit;
                        }
                }
        }
        return 0;
}

/* The process stays until its hits are stored (a flush, later still while the disk is full). */
static void process_exited(struct process *p) {
        p->exited = true;
}

static int handle_task(struct collector *c, const struct perf_event_header *h) {
        struct record_task m;
        struct process *parent, *child;
        struct thread *t;
        uint64_t *slot;

        if (record_parse_task(h, &m) < 0)
                return -EBADMSG;
        if (h->type == PERF_RECORD_EXIT) {
                slot = idmap_get(c->threads, m.tid);
                if (slot) {
                        t = (struct thread *) (uintptr_t) *slot;
                        t->exited = true;
                        t->offcpu_pending = false;
                }
                if (m.pid == m.tid && (slot = idmap_get(c->processes, m.pid)))
                        process_exited((struct process *) (uintptr_t) *slot);
                return 0;
        }
        /* FORK: a new thread of PID, or (pid != ppid) a new process that starts as a copy of
         * its parent's address space. */
        if (m.pid != m.ppid && !idmap_get(c->processes, m.pid)) {
                parent = process_get(c, m.ppid, false);
                child = process_get(c, m.pid, false);
                if (!parent || !child)
                        return -ENOMEM;
                proc_maps_free(child->maps);
                child->maps = proc_maps_copy(parent->maps);
                if (!child->maps)
                        return -ENOMEM;
                memcpy(child->comm, parent->comm, sizeof child->comm);
                if (parent->exe && !(child->exe = strdup(parent->exe)))
                        return -ENOMEM;
                /* A child starts in its parent's cgroup; systemd moves a service's first process
                 * before it execs, which handle_comm() catches. */
                if (parent->unit && !(child->unit = strdup(parent->unit)))
                        return -ENOMEM;
        }
        t = thread_get(c, m.pid, m.tid);
        if (!t)
                return -ENOMEM;
        slot = idmap_get(c->threads, m.ptid);
        if (slot)
                memcpy(t->comm, ((struct thread *) (uintptr_t) *slot)->comm, sizeof t->comm);
        return 0;
}

static int handle_lost(struct collector *c, const struct perf_event_header *h) {
        uint64_t id, lost, *slot;
        unsigned res = 0;

        if (record_parse_lost(h, &id, &lost) < 0)
                return -EBADMSG;
        /* The id is the event whose record did not fit. Losses of the side band are charged to
         * the first resource: samples were surely lost with them. */
        slot = idmap_get(c->event_ids, id);
        if (slot && c->events[*slot].resource != NO_RESOURCE)
                res = c->events[*slot].resource;
        if (res < c->n_resources)
                c->resources[res].lost += lost;
        c->stats.lost += lost;
        return 0;
}

static int handle_record(struct collector *c, const struct perf_event_header *h) {
        c->stats.records++;
        switch (h->type) {
        case PERF_RECORD_SAMPLE:
                return handle_sample(c, h);
        case PERF_RECORD_MMAP2:
                return handle_mmap2(c, h);
        case PERF_RECORD_COMM:
                return handle_comm(c, h);
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
                return handle_task(c, h);
        case PERF_RECORD_LOST:
                return handle_lost(c, h);
        case PERF_RECORD_SWITCH:
                return handle_switch(c, h);
        default:
                return 0;       /* THROTTLE and others carry nothing we count */
        }
}

static void rejitter(struct collector *c) {
        for (size_t f = 0; f < c->n_fds; f++) {
                const struct cevent *e = &c->events[c->fds[f].event];
                uint64_t p;

                if (e->resource == NO_RESOURCE || e->role == ROLE_BYTES || e->period < 2)
                        continue;
                p = draw_period(c, e->period);
                (void) ioctl(c->fds[f].fd, PERF_EVENT_IOC_PERIOD, &p);
        }
}

int collector_drain(struct collector *c, uint64_t budget_ns) {
        uint64_t deadline = budget_ns ? now_ns(CLOCK_MONOTONIC) + budget_ns : 0;
        bool took = false;
        int n = 0, r;

        if (!c->reader)
                return 0;
        for (;;) {
                const struct perf_event_header *h;

                if (c->queue_off + sizeof *h > c->queue_size) {
                        if (took)
                                break;          /* what was queued when we were called: done */
                        r = ring_reader_take(c->reader, &c->queue, &c->queue_size);
                        if (r < 0)
                                return r;
                        c->queue_off = 0;
                        took = true;
                        continue;
                }
                h = (const void *) (c->queue + c->queue_off);
                if (h->size < sizeof *h || c->queue_off + h->size > c->queue_size) {
                        c->queue_off = c->queue_size;   /* the reader only queues whole records */
                        continue;
                }
                c->queue_off += h->size;
                n++;
                r = handle_record(c, h);
                if (r == -ENOMEM || r == -ENOSPC || r == -EIO)
                        return r;
                if (r < 0)
                        c->stats.bad_records++;
                /* Out of time: the rest waits, and the reader's fd is made readable again so that
                 * the loop comes back after its timers. */
                if (deadline && n % 16 == 0 && now_ns(CLOCK_MONOTONIC) >= deadline) {
                        if (c->queue_off < c->queue_size)
                                (void) eventfd_write(ring_reader_fd(c->reader), 1);
                        break;
                }
        }
        if (c->config.jitter)
                rejitter(c);
        return n;
}

int collector_catch_up(struct collector *c, uint64_t timeout_ns) {
        uint64_t end = now_ns(CLOCK_MONOTONIC) + timeout_ns, now;
        int r, q;

        if (!c->reader)
                return 0;
        do {
                now = now_ns(CLOCK_MONOTONIC);
                if (now >= end)
                        return -ETIMEDOUT;
                r = ring_reader_sync(c->reader, (unsigned) ((end - now + 999999) / 1000000));
                if (r < 0)
                        return r;
                q = collector_drain(c, 0);
                if (q < 0)
                        return q;
        } while (r == 0);       /* the queue was full: more waits in the rings */
        return 0;
}

/* ---- flushing to the store ---- */

/* Whether the cached id of a run, process or thread row must go after retention: when its row
 * went (or the store cannot say). */
static bool row_gone(struct collector *c, const char *table, int64_t id) {
        return id && (!c->store || store_row_exists(c->store, table, id) <= 0);
}

/* Forgets the store ids the collector cached: those of rows retention may have deleted, or after
 * a ROLLBACK only those of rows the failed transaction inserted. Rows found or added by key
 * (frames, stacks, modules, resources) are simply looked up again; but a run, a process or a
 * thread forgotten while its row is still there would be inserted again, splitting the run in
 * two and its processes: after a failed flush (a full disk), or after each retention pass
 * (the first a minute after cppd starts). So those are forgotten only if their row is gone;
 * after a rollback, the rowids a transaction inserted are above every committed one, so the
 * first it got divides the two. */
static void forget_ids(struct collector *c, bool rollback) {
        uint64_t key, value;
        size_t i = 0;

        for (size_t f = 0; f < c->sym->n_frames; f++)
                c->sym->frames[f].store_id = 0;
        for (size_t m = 0; m < c->sym->n_modules; m++)
                c->sym->modules[m]->store_id = 0;
        for (size_t n = 0; n < c->n_nodes; n++)
                c->nodes[n].store_id = 0;
        for (size_t s = 0; s < c->n_slots; s++) {
                int64_t id = c->slots[s]->store_id;

                if (rollback ? c->txn_thread_id && id >= c->txn_thread_id : row_gone(c, "thread", id))
                        c->slots[s]->store_id = 0;
        }
        while (idmap_next(c->processes, &i, &key, &value)) {
                struct process *p = (struct process *) (uintptr_t) value;

                if (rollback ? c->txn_process_id && p->store_id >= c->txn_process_id :
                               row_gone(c, "process", p->store_id))
                        p->store_id = 0;
        }
        for (unsigned r = 0; r < c->n_resources; r++)
                c->resources[r].store_id = 0;
        if (rollback ? c->txn_run : row_gone(c, "run", c->run_id))
                c->run_id = 0;
}

void collector_forget_store_ids(struct collector *c) {
        forget_ids(c, false);
}

static int store_module(struct collector *c, uint32_t index, int64_t *ret) {
        struct module *m;
        int r;

        switch (index) {
        case SYMBOLIZER_NO_MODULE:
                *ret = 0;
                return 0;
        case SYMBOLIZER_KERNEL:
                return store_module_id(c->store, "[kernel.kallsyms]", "", ret);
        case SYMBOLIZER_JIT:
                return store_module_id(c->store, "[jit]", "", ret);
        }
        m = symbolizer_get_module(c->sym, index);
        if (m->store_id == 0) {
                r = store_module_id(c->store, m->path, m->build_id, &m->store_id);
                if (r < 0)
                        return r;
        }
        *ret = m->store_id;
        return 0;
}

static int store_frame(struct collector *c, uint32_t index, int64_t *ret) {
        struct frame *f = &c->sym->frames[index];
        bool located = !c->config.function_frames && f->module != SYMBOLIZER_NO_MODULE && f->module != SYMBOLIZER_JIT;
        int64_t module, function;
        int r;

        if (f->store_id == 0) {
                r = store_module(c, f->module, &module);
                if (r < 0)
                        return r;
                r = store_function_id(c->store, name_table_get(c->sym->names, f->function), module, f->unknown,
                                      &function);
                if (r < 0)
                        return r;
                r = store_frame_id(c->store, function, located ? (int64_t) f->address : -1,
                                   located && f->file != NAME_NONE ? name_table_get(c->sym->names, f->file) : NULL,
                                   located ? f->line : 0, f->inlined, &f->store_id);
                if (r < 0)
                        return r;
        }
        *ret = f->store_id;
        return 0;
}

static int store_node(struct collector *c, uint32_t node, int64_t *ret) {
        uint32_t chain[COLLECTOR_MAX_STACK + 1];
        size_t n = 0;
        int64_t parent, frame;
        int r;

        /* The unstored part of the path, innermost first; a stack is at most
         * COLLECTOR_MAX_STACK deep, so it fits. */
        for (uint32_t i = node; i != 0 && c->nodes[i].store_id == 0; i = c->nodes[i].parent)
                chain[n++] = i;
        while (n > 0) {
                uint32_t i = chain[--n];

                parent = c->nodes[i].parent ? c->nodes[c->nodes[i].parent].store_id : 0;
                r = store_frame(c, c->nodes[i].frame, &frame);
                if (r < 0)
                        return r;
                r = store_stack_id(c->store, parent, frame, &c->nodes[i].store_id);
                if (r < 0)
                        return r;
        }
        *ret = c->nodes[node].store_id;
        return 0;
}

static int store_thread(struct collector *c, struct thread *t, int64_t *ret) {
        struct process *p = t->process;
        int r;

        if (p->store_id == 0) {
                r = store_add_process(c->store, c->run_id, p->pid, p->comm[0] ? p->comm : NULL,
                                      p->exe, p->unit, time(NULL), &p->store_id);
                if (r < 0)
                        return r;
                if (!c->txn_process_id)
                        c->txn_process_id = p->store_id;
                /* Threads of the previous program (before an exec) need new rows too. */
                for (size_t s = 0; s < c->n_slots; s++)
                        if (c->slots[s]->process == p)
                                c->slots[s]->store_id = 0;
        }
        if (t->store_id == 0) {
                r = store_add_thread(c->store, p->store_id, t->tid, t->comm[0] ? t->comm : NULL, &t->store_id);
                if (r < 0)
                        return r;
                if (!c->txn_thread_id)
                        c->txn_thread_id = t->store_id;
        }
        *ret = t->store_id;
        return 0;
}

static int flush_rows(struct collector *c, bool final) {
        int r;

        if (c->run_id == 0) {
                r = store_add_run(c->store, &(struct store_run) {
                                .kind = c->run_kind ?: "record",
                                .command = c->run_command,
                                .unwind = c->config.unwind == UNWIND_DWARF ? "dwarf" : "fp",
                                .started = c->run_started ?: time(NULL),
                                .host = c->run_host,
                        }, &c->run_id);
                if (r < 0)
                        return r;
                c->txn_run = true;
        }
        for (unsigned i = 0; i < c->n_resources; i++) {
                struct cresource *res = &c->resources[i];

                if (!res->active)
                        continue;
                if (res->store_id == 0) {
                        r = store_add_run_resource(c->store, c->run_id, res->name, res->unit, res->event,
                                                   res->period, &res->store_id);
                        if (r < 0)
                                return r;
                }
                if (res->lost > res->lost_flushed) {
                        r = store_add_lost(c->store, c->run_id, res->store_id, res->lost - res->lost_flushed);
                        if (r < 0)
                                return r;
                }
        }
        for (size_t i = 0; i < c->n_agg; i++) {
                uint64_t key = c->agg_keys[i];
                unsigned res = key >> (64 - KEY_RESOURCE_BITS);
                struct thread *t = c->slots[(key >> 32) & ((1u << KEY_SLOT_BITS) - 1)];
                int64_t stack, thread;

                r = store_thread(c, t, &thread);
                if (r < 0)
                        return r;
                r = store_node(c, (uint32_t) key, &stack);
                if (r < 0)
                        return r;
                r = store_add_samples(c->store, c->resources[res].store_id, c->agg_bucket, thread, stack,
                                      c->agg[i].hits, c->agg[i].samples);
                if (r < 0)
                        return r;
        }
        if (final)
                return store_end_run(c->store, c->run_id, time(NULL));
        return 0;
}

/* Exit records are lost with a full ring like any other (PERF_RECORD_LOST): after a loss, and
 * at least every GONE_CHECK_NS whatever the rings said, asks the kernel which of the tasks
 * followed are gone, or they would stay for ever. */
static void mark_gone(struct collector *c) {
        uint64_t key, value, now = now_ns(CLOCK_MONOTONIC);
        size_t i = 0;

        if (c->offline || (c->stats.lost == c->lost_checked && now - c->gone_checked_ns < GONE_CHECK_NS))
                return;
        c->lost_checked = c->stats.lost;
        c->gone_checked_ns = now;
        for (size_t s = 0; s < c->n_slots; s++) {
                struct thread *t = c->slots[s];

                if (!t->exited && syscall(SYS_tgkill, (pid_t) t->process->pid, (pid_t) t->tid, 0) < 0 &&
                    errno == ESRCH)
                        t->exited = true;
        }
        while (idmap_next(c->processes, &i, &key, &value)) {
                struct process *p = (struct process *) (uintptr_t) value;

                if (!p->exited && kill((pid_t) p->pid, 0) < 0 && errno == ESRCH)
                        process_exited(p);
        }
}

/* Forgets processes and threads that exited, once their hits are stored, and the units of
 * execs already handled. */
static void reap(struct collector *c) {
        uint64_t key, value, *slot;
        size_t i = 0, kept = 0;

        pthread_mutex_lock(&c->exec_units_lock);
        {
                _cleanup_(idmap_freep) struct idmap *pending = idmap_new();

                while (pending && idmap_next(c->exec_units, &i, &key, &value))
                        if (value != EXEC_UNIT_TAKEN && idmap_put(pending, key, value, &slot) < 0)
                                exec_unit_free(value);
                if (pending) {
                        idmap_free(c->exec_units);
                        c->exec_units = take_ptr(&pending);
                }
        }
        pthread_mutex_unlock(&c->exec_units_lock);
        i = 0;

        mark_gone(c);
        for (size_t s = 0; s < c->n_slots; s++) {
                struct thread *t = c->slots[s];

                if (!t->exited) {
                        t->slot = kept;
                        c->slots[kept++] = t;
                        continue;
                }
                thread_free(t);
        }
        c->n_slots = kept;
        /* The maps cannot delete: rebuild them from what is kept. */
        idmap_clear(c->threads);
        for (size_t s = 0; s < c->n_slots; s++)
                (void) idmap_put(c->threads, c->slots[s]->tid, (uintptr_t) c->slots[s], &slot);

        {
                _cleanup_(idmap_freep) struct idmap *alive = idmap_new();

                if (!alive)
                        return;         /* keep everything; try again next flush */
                while (idmap_next(c->processes, &i, &key, &value)) {
                        struct process *p = (struct process *) (uintptr_t) value;
                        bool used = !p->exited;

                        for (size_t s = 0; !used && s < c->n_slots; s++)
                                used = c->slots[s]->process == p;
                        if (used)
                                (void) idmap_put(alive, key, value, &slot);
                        else
                                process_free(p);
                }
                idmap_clear(c->processes);
                i = 0;
                while (idmap_next(alive, &i, &key, &value))
                        (void) idmap_put(c->processes, key, value, &slot);
        }
}

/* Bounds the caches of a long-running collector, once a flush has emptied the aggregates that
 * refer to trie nodes: a trie past COLLECTOR_MAX_NODES starts over (and with it the frames it
 * refers to, past COLLECTOR_MAX_FRAMES), and at most COLLECTOR_MAX_MODULES stay loaded. */
static void trim(struct collector *c) {
        if (c->n_nodes > COLLECTOR_MAX_NODES || c->sym->n_frames > COLLECTOR_MAX_FRAMES) {
                c->n_nodes = 1;
                idmap_clear(c->trie);
                c->trie_epoch++;        /* the nodes threads kept are gone */
                for (size_t s = 0; s < c->n_slots; s++)
                        c->slots[s]->offcpu_pending = false;    /* its node is gone */
                if (c->sym->n_frames > COLLECTOR_MAX_FRAMES)
                        symbolizer_forget_frames(c->sym);
        }
        if (symbolizer_trim_modules(c->sym, COLLECTOR_MAX_MODULES) > 0)
                unwinder_forget_modules(c->unwinder);
}

int collector_flush(struct collector *c, bool final) {
        int r;

        if (!c->store)
                return -EINVAL;
        if (c->run_ended)
                return 0;
        r = store_begin(c->store);
        if (r < 0)
                return r;
        c->txn_run = false;
        c->txn_process_id = c->txn_thread_id = 0;
        r = flush_rows(c, final);
        if (r >= 0)
                r = store_commit(c->store);
        if (r < 0) {
                store_rollback(c->store);
                forget_ids(c, true);
                return r;
        }
        for (unsigned i = 0; i < c->n_resources; i++)
                c->resources[i].lost_flushed = c->resources[i].lost;
        idmap_clear(c->agg_index);
        c->n_agg = 0;
        c->agg_bucket = -1;
        c->flush_failed_ns = 0;
        c->run_ended = final;
        reap(c);
        trim(c);
        return 0;
}

void collector_release_memory(struct collector *c) {
        symbolizer_release_pages(c->sym);
}

int64_t collector_run_id(const struct collector *c) {
        return c->run_id;
}

int collector_add_offline_resource(struct collector *c, const char *name, const char *unit, const char *event,
                                   uint64_t period, uint64_t *ret_id) {
        unsigned i = c->n_resources;
        struct cresource *res;
        struct cevent *e;
        uint64_t id, *slot;
        int r;

        for (unsigned j = 0; j < c->n_resources; j++)
                if (streq(c->resources[j].name, name))
                        return -EEXIST;
        if (i >= COLLECTOR_MAX_RESOURCES)
                return -E2BIG;
        r = add_event(c, i, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, 0, period, &e);
        if (r < 0)
                return r;
        e->attr.sample_type = RECORD_SAMPLE_TYPE | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        e->attr.sample_regs_user = UNWIND_REGS_MASK;
        /* Ids the kernel never gives: the top bit set. */
        id = UINT64_C(1) << 63 | (c->n_events - 1);
        r = idmap_put(c->event_ids, id, c->n_events - 1, &slot);
        if (r < 0) {
                c->n_events--;
                return r;
        }
        res = &c->resources[i];
        *res = (struct cresource) {
                .period = period ? period : 1,
                .active = true,
                .name = strdup(name),
                .unit = strdup(unit),
                .event = strdup(event),
        };
        if (!res->name || !res->unit || !res->event) {
                free(res->name);
                free(res->unit);
                free(res->event);
                *res = (struct cresource) {};
                return -ENOMEM;
        }
        c->n_resources++;
        c->offline = true;
        *ret_id = id;
        return i;
}

int collector_feed(struct collector *c, const struct perf_event_header *h, uint64_t hits) {
        int r;

        c->feed_hits = hits;
        r = handle_record(c, h);
        c->feed_hits = 0;
        if (r == -EBADMSG)
                c->stats.bad_records++;
        return r == -EBADMSG ? 0 : r;
}

int collector_feed_sample(struct collector *c, const struct record_sample *s, uint64_t hits) {
        uint64_t *slot = idmap_get(c->event_ids, s->id);
        int r;

        if (!slot || c->events[*slot].resource == NO_RESOURCE)
                return 0;
        c->stats.records++;
        c->feed_hits = hits;
        r = handle_parsed_sample(c, &c->events[*slot], s);
        c->feed_hits = 0;
        if (r == -EBADMSG)
                c->stats.bad_records++;
        return r == -EBADMSG ? 0 : r;
}

int collector_set_origin(struct collector *c, const char *host, int64_t started, int64_t realtime_offset_ns) {
        char *h = host ? strdup(host) : NULL;

        if (host && !h)
                return -ENOMEM;
        free(c->run_host);
        c->run_host = h;
        c->run_started = started;
        c->realtime_offset = realtime_offset_ns;
        return 0;
}

void collector_set_run(struct collector *c, const char *kind, const char *command) {
        free(c->run_kind);
        free(c->run_command);
        c->run_kind = kind ? strdup(kind) : NULL;
        c->run_command = command ? strdup(command) : NULL;
}

void collector_get_stats(const struct collector *c, struct collector_stats *ret) {
        *ret = c->stats;
        ret->modules = c->sym->n_modules;
        ret->addresses = c->sym->misses;
        ret->live_processes = idmap_size(c->processes);
        ret->live_threads = c->n_slots;
        ret->held = c->n_agg;
        ret->lag_ns = 0;
        if (c->reader) {
                uint64_t t = 0, now = now_ns(CLOCK_MONOTONIC);
                struct ring_reader_stats rs;

                ring_reader_get_stats(c->reader, &rs);
                ret->stacks_cut = rs.stacks_cut;
                if (c->queue_off + sizeof(struct perf_event_header) <= c->queue_size)
                        (void) record_time((const struct perf_event_header *) (c->queue + c->queue_off), &t);
                else
                        t = ring_reader_oldest(c->reader);
                if (t && now > t)
                        ret->lag_ns = now - t;
        }
}

unsigned collector_n_resources(const struct collector *c) {
        return c->n_resources;
}

void collector_resource_stats(const struct collector *c, unsigned i, struct collector_resource_stats *ret) {
        const struct cresource *r = &c->resources[i];

        *ret = (struct collector_resource_stats) {
                .name = r->name,
                .period = r->period,
                .active = r->active,
                .unnamed = r->unnamed,
                .samples = r->samples,
                .hits = r->hits,
                .lost = r->lost,
        };
}

int collector_kernel_symbols_error(const struct collector *c) {
        return c->sym->kernel_error;
}
