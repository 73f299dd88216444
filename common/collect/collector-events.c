/* The collector's perf events and rings. A resource becomes one or more events (add_event(),
 * add_tracepoint()); attaching opens each per CPU on the targets (open_one()) after the side
 * band's rings (open_rings()): per CPU a side band ring, and a sample ring per resource, mapped
 * by its first event. Periods are drawn here too (draw_period()), for the kernel's events and for
 * the resources counted in user space; how each resource's intervals are drawn in the kernel
 * (plan_sampling(), sampling-bpf.c) and how far it is thinned under load (thin_pressure(),
 * thin_note(), thinning.c) as well. */
#include "collector-events.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "alloc-preload.h"
#include "collector-python.h"
#include "grow.h"
#include "log.h"
#include "perf-event.h"
#include "perf-record.h"
#include "time-util.h"

/* xorshift64*: the jitter needs speed and independence from the program, not secrecy. */
static uint64_t rng_next(struct collector *c) {
        c->rng ^= c->rng >> 12;
        c->rng ^= c->rng << 25;
        c->rng ^= c->rng >> 27;
        return c->rng * 2685821657736338717ULL;
}

/* A period drawn uniformly from [P/2, 3P/2], mean P (paper §7.1); P itself without jitter. */
uint64_t draw_period(struct collector *c, uint64_t p) {
        if (!c->config.jitter || p < 2)
                return p;
        return p / 2 + rng_next(c) % (p + 1);
}

int add_event(struct collector *c, unsigned resource, enum event_role role, uint32_t type, uint64_t config,
              uint64_t period, struct cevent **ret) {
        struct cevent *e;
        int r = GROW(c->events, c->cap_events, (size_t) c->n_events + 1);

        if (r < 0)
                return r;
        e = &c->events[c->n_events++];
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

int add_tracepoint(struct collector *c, unsigned resource, enum event_role role, const char *name,
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
        else if (role == ROLE_WEIGHT) /* the preloaded library's calls only */
                e->filter = c->resources[resource].def->config == ALLOC_OPTION_BYTES ?
                        "option == " ALLOC_STR(ALLOC_OPTION_BYTES) :
                        "option == " ALLOC_STR(ALLOC_OPTION_CALLS);
        return 0;
}

/* Bytes of a resource's sample ring (its share of ring_size), or of a side band ring: a quarter
 * of ring_size; at least 64 KiB. */
static size_t ring_size(const struct collector *c, bool side_band) {
        return MAX(c->config.ring_size / (side_band ? 4 : MAX(c->ring_share, 1u)), 65536u);
}

/* Fills E's attr for opening: what every event shares, from the configuration. */
static void prepare_attr(struct collector *c, struct cevent *e, bool side_band, bool inherit,
                         bool enable_on_exec) {
        struct perf_event_attr *a = &e->attr;
        bool dwarf = c->config.unwind == UNWIND_DWARF;

        a->sample_period = e->period;
        a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
        if (!dwarf || c->config.kernel)
                a->sample_type |= PERF_SAMPLE_CALLCHAIN;
        if (a->type == PERF_TYPE_TRACEPOINT || e->output)
                a->sample_type |= PERF_SAMPLE_RAW;
        if ((e->gated && e->output) || e->python) {
                /* A gate's notices: what redraw_clock() reads, and no stack; Python frames'
                 * companions likewise. */
                a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                        PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
                dwarf = false;
        }
        if (dwarf) {
                a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
                a->sample_regs_user = UNWIND_REGS_MASK;
                a->sample_stack_user = c->config.stack_size;
                a->exclude_callchain_user = 1;
        }
        /* Not exclude_kernel: every context switch happens in the kernel (env-probe.md). */
        a->exclude_callchain_kernel = !c->config.kernel || (e->gated && e->output) || e->python;
        a->exclude_hv = 1;
        a->sample_id_all = 1;
        /* The samples the event could not write, which the kernel reports only at the ring's
         * next write: the last of a flood are told by nothing else (count_unreported()). */
        a->read_format = side_band || c->no_format_lost ? 0 : PERF_FORMAT_LOST;
        a->inherit = inherit;
        a->disabled = enable_on_exec;
        a->enable_on_exec = enable_on_exec;
        a->use_clockid = 1;
        a->clockid = CLOCK_MONOTONIC;
        a->watermark = 1;
        /* A sample ring wakes the reader at an eighth: a storm's first rate is then measured
         * (thinning.c) while the ring still has room. A redrawn clock's wakes it every
         * REDRAW_EVERY samples, whose hook draws the next intervals. */
        a->wakeup_watermark = ring_size(c, side_band) / (side_band ? 2 : 8);
        if (e->redraw || e->gated) {
                a->watermark = 0;
                a->wakeup_events = REDRAW_EVERY;
        }
        a->context_switch = e->role == ROLE_OFFCPU;
        /* Not build_id: the kernel then leaves a build-id flag in the MMAP2 records of every other
         * event on the host (record.h), and perf record beside cppd misreads its own file. A
         * module is known by its path, device and inode, and by the build id in its file once
         * read (symbolize.c). */
        a->mmap = a->mmap2 = a->comm = a->comm_exec = a->task = side_band;
}

static int add_fd(struct collector *c, int fd, unsigned event) {
        int r = GROW(c->fds, c->cap_fds, c->n_fds + 1);

        if (r < 0)
                return r;
        c->fds[c->n_fds++] = (struct cfd) { .fd = fd, .event = event };
        return 0;
}

/* Keeps a log for redrawn clock event ID (file FD, resource RES, on CPU); a gated clock's also
 * under the id of NOTICES, its CPU's output event, whose notices of other tasks' overflows
 * redraw it too. Returns 0 or a negative errno. */
static int add_redraw_log(struct collector *c, uint64_t id, int fd, unsigned res, int notices, int cpu) {
        _cleanup_free_ struct redraw_log *l = calloc(1, sizeof *l);
        uint64_t notices_id = 0, *slot;
        int r = -ENOMEM;

        if (!l)
                return -ENOMEM;
        if (notices >= 0 && ioctl(notices, PERF_EVENT_IOC_ID, &notices_id) < 0)
                return -errno;
        *l = (struct redraw_log) {
                .id = id, .fd = fd, .resource = res, .last = 1, .period = c->resources[res].redraw_period
        };
        l->cpu = cpu;
        pthread_mutex_lock(&c->redraw_lock);
        if (GROW(c->redraw_logs, c->cap_redraw_logs, c->n_redraw_logs + 1) == 0 &&
            (r = idmap_put(c->redraw_ids, id, c->n_redraw_logs, &slot)) >= 0 &&
            (notices < 0 || (r = idmap_put(c->redraw_ids, notices_id, c->n_redraw_logs, &slot)) >= 0)) {
                c->redraw_logs[c->n_redraw_logs++] = take_ptr(&l);
                r = 0;
        }
        pthread_mutex_unlock(&c->redraw_lock);
        return r;
}

/* The output event that carries resource RES's gate notices on CPU (opened by open_bpf(), CPU
 * by CPU), or -1. */
static int notices_fd(const struct collector *c, unsigned res, int cpu) {
        int n = 0;

        for (size_t f = 0; f < c->n_fds; f++) {
                const struct cevent *e = &c->events[c->fds[f].event];

                if (e->resource == res && e->gated && e->output && n++ == cpu)
                        return c->fds[f].fd;
        }
        return -1;
}

/* Opens event EV on target ID, CPU, into that CPU's sample ring or, for the SIDE_BAND, its side
 * band ring: the first event opened into a ring maps it (the dummy events of open_rings()). A
 * gate's notices (plan_redraw()) have a small ring of their own per CPU: lost there, a notice
 * costs one interval not redrawn, and no sample; in the samples' ring, its loss could not be
 * told from a sample's. Returns 0 or a negative errno. */
int open_one(struct collector *c, unsigned ev, const struct targets *t, pid_t id_, int cpu, bool side_band) {
        struct cevent *e = &c->events[ev];
        bool notices = e->gated && e->output;
        int k = side_band                             ? c->n_cpus + cpu :
                e->resource == NO_RESOURCE || notices ? cpu :
                                                        (2 + (int) e->resource) * c->n_cpus + cpu;
        struct ring_buffer **ring = &c->rings[k];
        _cleanup_close_ int fd = -1;
        uint64_t id, *slot;
        int r;

        prepare_attr(c, e, side_band, t->inherit, t->enable_on_exec);
        c->bpf_failed = false;
        fd = perf_event_open_fd(&e->attr, id_, cpu, -1, t->flags);
        if (fd == -EINVAL && e->attr.read_format) {
                /* A kernel before 6.0: no count of an event's own losses (count_unreported()). */
                c->no_format_lost = true;
                e->attr.read_format = 0;
                fd = perf_event_open_fd(&e->attr, id_, cpu, -1, t->flags);
        }
        if (fd < 0) {
                /* A CPU's clock for every task needs CAP_PERFMON (or perf_event_paranoid <= 0),
                 * a task's does not: without it, the task's own clock at fixed periods. */
                c->bpf_failed = e->gated && (fd == -EACCES || fd == -EPERM);
                return fd;
        }
        if (e->filter && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, e->filter) < 0)
                return -errno;
        if ((e->bpf || e->gated) && !e->output) {
                r = e->gated ? sampling_bpf_gate(c->resources[e->resource].bpf, fd) :
                               sampling_bpf_attach(c->resources[e->resource].bpf, fd);
                if (r < 0) {
                        c->bpf_failed = true;
                        return r;
                }
        } else if (e->redraw && c->py && c->resources[e->resource].bpf) {
                /* Every task's clock: a program only for Python frames, whose failure costs
                 * them, not the clock. */
                r = sampling_bpf_python_clock(c->resources[e->resource].bpf, fd);
                if (r < 0 && !c->py_why[0]) {
                        snprintf(c->py_why, sizeof c->py_why, "the clock's program was refused (%s)",
                                 strerror(-r));
                        log_warning("Python frames: %s", c->py_why);
                }
        }
        if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
                return -errno;
        if (!*ring) {
                size_t size = notices ? 65536 : ring_size(c, side_band);

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
                c->ring_resource[c->n_ring_list] = notices ? RING_READER_HOOK_ONLY :
                        side_band                          ? NO_RESOURCE :
                                                             e->resource;
                c->ring_list[c->n_ring_list++] = *ring;
        } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, (*ring)->fd) < 0)
                return -errno;
        r = idmap_put(c->event_ids, id, ev, &slot);
        if (r < 0)
                return r;
        if (e->python)
                python_event_opened(c, id);
        if (e->redraw) {
                r = add_redraw_log(c, id, fd, e->resource, e->gated ? notices_fd(c, e->resource, cpu) : -1,
                                   cpu);
                if (r < 0)
                        return r;
        }
        r = add_fd(c, fd, ev);
        if (r < 0)
                return r;
        take_fd(&fd);
        return 0;
}

bool unsupported(int r) {
        return r == -ENOENT || r == -EOPNOTSUPP || r == -ENODEV;
}

/* Of two context-switch software events on one task only the one opened last gets samples (seen
 * on 6.18, with perf itself too), so context-switches and real-time share real-time's: each of
 * its switch samples also counts toward context-switches, through an interval counter that
 * keeps context-switches' own period. */
void share_context_switches(struct collector *c) {
        unsigned offcpu = NO_RESOURCE, switches = NO_RESOURCE;

        for (unsigned ev = 0; ev < c->n_events; ev++) {
                const struct cevent *e = &c->events[ev];

                if (e->role == ROLE_OFFCPU)
                        offcpu = e->resource;
                else if (e->attr.type == PERF_TYPE_SOFTWARE &&
                         e->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES && e->resource != NO_RESOURCE)
                        switches = ev;
        }
        if (offcpu == NO_RESOURCE || switches == NO_RESOURCE)
                return;
        c->events[switches].shared = true;
        c->switches_via_offcpu = c->events[switches].resource;
}

/* The side band's rings, opened before any resource: per target and CPU a dummy event that
 * carries the side band (MMAP2, COMM, FORK/EXIT) into the side band's ring. Each resource's
 * sample ring is mapped by its first event on the CPU (a ring outlives a resource closed again:
 * the mapping holds it). */
int open_rings(struct collector *c, const struct targets *t) {
        unsigned side = c->n_events;
        int r;

        r = add_event(c, NO_RESOURCE, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 1, NULL);
        if (r < 0)
                return r;
        for (int i = 0; i < t->n; i++)
                for (int cpu = 0; cpu < c->n_cpus; cpu++) {
                        r = open_one(c, side, t, t->ids[i], cpu, true);
                        if (r == -ESRCH && i > 0)
                                break; /* a thread exited meanwhile */
                        if (r < 0)
                                return r;
                }
        return 0;
}

static bool is_clock(const struct cevent *e) {
        return e->attr.type == PERF_TYPE_SOFTWARE &&
                (e->attr.config == PERF_COUNT_SW_CPU_CLOCK || e->attr.config == PERF_COUNT_SW_TASK_CLOCK);
}

/* A resource back to fixed periods: BPF could not be used (no CAP_BPF, an old kernel). */
void drop_bpf(struct collector *c, unsigned res) {
        for (unsigned ev = 0; ev < c->n_events; ev++)
                if (c->events[ev].resource == res && (c->events[ev].bpf || c->events[ev].gated)) {
                        c->events[ev].bpf = c->events[ev].gated = c->events[ev].redraw = false;
                        c->events[ev].count = NULL;
                        c->events[ev].attr.exclude_user = 0;
                        c->events[ev].period = c->events[ev].fixed_period;
                }
        c->resources[res].bpf = sampling_bpf_free(c->resources[res].bpf);
        c->resources[res].random = c->resources[res].redraw = false;
        thinning_init(&c->resources[res].thin, 0);
}

/* Samples each CPU may keep per SAMPLING_BPF_WINDOW_NS before the kernel thins a resource by
 * itself: its share of max_rate, and no more than a quarter of its ring can hold (the reader is
 * woken at an eighth), so that a reader kept from running for a few windows still finds room.
 * 0 with max_rate 0: no budget. */
static uint64_t budget_of(const struct collector *c, unsigned ring_share) {
        uint64_t sample = 512 + (c->config.unwind == UNWIND_DWARF ? c->config.stack_size : 1024);
        uint64_t ring = c->config.ring_size / MAX(ring_share, 1u), share, fits;

        if (c->config.max_rate == 0)
                return 0; /* never thinned: asked for (--max-rate 0) */
        share = (uint64_t) c->config.max_rate * SAMPLING_BPF_WINDOW_NS / 1000000000ULL /
                (uint64_t) MAX(c->n_cpus, 1);
        fits = ring / 4 / sample;
        return MAX(MIN(share, fits), 1u);
}

static uint64_t kernel_budget(const struct collector *c) {
        return budget_of(c, c->ring_share);
}

uint64_t collector_window_budget(const struct collector *c) {
        unsigned share = c->ring_share;

        /* Before the events are planned: a ring per resource, as plan_sampling() will share. */
        if (share == 0)
                for (share = 1; share < c->n_resources;)
                        share *= 2;
        return budget_of(c, share) * (uint64_t) MAX(c->n_cpus, 1);
}

/* The events a counting program can take over (sampling-bpf.c): where a raw tracepoint sees the
 * same events as perf's event. exceptions:page_fault_user (x86) fires at each fault taken in user
 * mode; faults the kernel takes on user memory (a read() into a fresh buffer) stay with the
 * software event, user mode excluded, since exceptions:page_fault_kernel also sees the faults
 * taken with page faults disabled, which the event skips: those of every perf sample's copy of
 * a user stack that runs past its end (about one a sample). sched:sched_switch fires where
 * context-switches counts, in the task switched out; raw_syscalls:sys_enter at each call. */
static const struct count_point count_points[] = {
        { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "exceptions:page_fault_user", "page_fault_user",
          true, true, -1 },
        { PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "sched:sched_switch", "sched_switch", false,
          false, -1 },
        { PERF_TYPE_TRACEPOINT, 0, "raw_syscalls:sys_enter", "sys_enter", false, false, 1 },
};

/* The counting point of event E, or NULL: none, or the machine has not its tracepoints. */
static const struct count_point *count_point_of(const struct cevent *e) {
        for (size_t i = 0; i < ELEMENTSOF(count_points); i++) {
                const struct count_point *cp = &count_points[i];
                uint64_t id;

                if (cp->type != e->attr.type)
                        continue;
                if (cp->type == PERF_TYPE_SOFTWARE ? cp->config != e->attr.config : e->role != ROLE_SYSCALL)
                        continue;
                return tracepoint_id(cp->probe, &id) == 0 ? cp : NULL;
        }
        return NULL;
}

/* Whether resource RES's intervals can be drawn by counting programs: every event it samples has
 * raw tracepoints, and its period is within what they draw. */
static bool countable(const struct collector *c, unsigned res) {
        bool any = false;

        if (c->config.every_event)
                return false;
        for (unsigned ev = 0; ev < c->n_events; ev++) {
                const struct cevent *e = &c->events[ev];

                if (e->resource != res || e->shared || (e->role != ROLE_SAMPLE && e->role != ROLE_SYSCALL))
                        continue;
                if (!count_point_of(e) || e->period > SAMPLING_BPF_MAX_COUNT_PERIOD)
                        return false;
                any = true;
        }
        return any;
}

/* Whether resource RES is a clock that can be redrawn (redraw_clock()): every event of it a
 * sampling clock, of period REDRAW_MIN_NS or more (REDRAW_ALL_MIN_NS for every task's). Sets it
 * up if so. The clock must be one CPU's,
 * opened for every task there, so that it runs all the time and a sample's interval is the time
 * between its sample and the redraw: an inherited per-task event cannot be redrawn (the ioctl
 * reaches the parent only), and a task's clock, or a cgroup's, stops while it is off the CPU.
 * So the clock of some threads (record, attach) is one CPU's too, gated: a program at each
 * overflow lets the sample through for the threads followed and what they start
 * (sampling_bpf_gate()), and the other tasks' time passes unsampled, as on an idle CPU. Without
 * the gate (no BPF), such a clock is not redrawn. Not a cgroup's: a gate by cgroup is left for
 * when a unit's clock needs it. */
static bool plan_redraw(struct collector *c, unsigned res, const struct targets *t) {
        struct cresource *r = &c->resources[res];
        bool any = false, gated = t->ids[0] != -1;
        struct cevent *out = NULL;

        if (c->config.every_event || t->n < 1 || (t->flags & PERF_FLAG_PID_CGROUP))
                return false;
        for (unsigned ev = 0; ev < c->n_events; ev++) {
                const struct cevent *e = &c->events[ev];

                if (e->resource != res || e->shared)
                        continue;
                if (e->role != ROLE_SAMPLE || !is_clock(e) ||
                    e->period < (gated ? REDRAW_MIN_NS : REDRAW_ALL_MIN_NS))
                        return false;
                any = true;
        }
        if (!any)
                return false;
        /* The gate's notices of other tasks' overflows come through an output event per CPU,
         * the first event of the resource's ring there (open_bpf()). */
        if (gated &&
            (sampling_bpf_new(c->n_cpus, &r->bpf) < 0 || sampling_bpf_filter_threads(r->bpf) < 0 ||
             add_event(c, res, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, 1, &out) < 0)) {
                r->bpf = sampling_bpf_free(r->bpf);
                return false;
        }
        if (gated)
                out->output = true;
        for (unsigned ev = 0; ev < c->n_events; ev++) {
                struct cevent *e = &c->events[ev];

                if (e->resource != res || e->shared || e->output)
                        continue;
                /* The first interval is P itself, then each is drawn at a sample: should the
                 * draws stop, a loop of period P aliases, which test-sampling sees. */
                e->redraw = true;
                e->gated = gated;
                e->fixed_period = e->period;
                r->redraw_period = e->period;
        }
        if (out)
                out->gated = true; /* a notice's layout: no stack (prepare_attr()) */
        r->redraw = r->random = true;
        r->redraw_factor = 1;
        /* The kernel does not thin a clock by itself: what it would let through is the budget. */
        thinning_init(&r->thin,
                      kernel_budget(c) * (uint64_t) c->n_cpus * (1000000000ULL / SAMPLING_BPF_WINDOW_NS));
        return true;
}

/* How each resource's intervals are drawn (see the top of collector.c): an event raw tracepoints
 * see (page faults, context switches, system calls) by a counting program there, a geometric
 * countdown per CPU, unless every_event asks for a coin at each; other counted events at
 * kernel period 1, the program keeping 1 in P; a clock of period REDRAW_MIN_NS or more (every
 * task's: REDRAW_ALL_MIN_NS), one CPU's, redrawn at each sample from user space (plan_redraw());
 * another clock at P / CLOCK_SPLIT (not under the kernel's floor), keeping 1 in CLOCK_SPLIT; a
 * hardware event likewise at P / 16. Resources
 * counted in user space (bytes, context switches shared with real-time) draw their own
 * intervals per sample. Without BPF, periods stay fixed (rejitter() redraws them now and then).
 * Also sizes the resources' rings: each gets an equal share of ring_size. */
void plan_sampling(struct collector *c, const struct targets *t) {
        unsigned n_rings = 0;

        for (unsigned i = 0; i < c->n_resources; i++) {
                bool has_events = false;

                for (unsigned ev = 0; ev < c->n_events; ev++)
                        has_events |= c->events[ev].resource == i && !c->events[ev].shared;
                n_rings += has_events;
        }
        c->ring_share = 1;
        while (c->ring_share < n_rings)
                c->ring_share *= 2;
        for (unsigned i = 0; i < c->n_resources; i++) {
                struct cresource *res = &c->resources[i];
                bool tracepoint = false, count = countable(c, i);
                unsigned role = ROLE_SAMPLE, raw_size = 0;
                struct cevent *out;

                for (unsigned ev = 0; ev < c->n_events; ev++)
                        tracepoint |= c->events[ev].resource == i &&
                                c->events[ev].attr.type == PERF_TYPE_TRACEPOINT;
                thinning_init(&res->thin, 0);
                if (res->probed) {
                        /* Drawn by the allocation program, with its budget as the others'. */
                        res->random = true;
                        if (sampling_bpf_set_budget(res->bpf, kernel_budget(c),
                                                    res->keep_base * THINNING_MAX_FACTOR) >= 0)
                                thinning_init(&res->thin,
                                              4 * kernel_budget(c) * (uint64_t) c->n_cpus *
                                                      (1000000000ULL / SAMPLING_BPF_WINDOW_NS));
                        continue;
                }
                res->random = c->config.jitter && res->def &&
                        (res->def->kind == RESOURCE_BYTES || res->def->kind == RESOURCE_ALLOC ||
                         i == c->switches_via_offcpu);
                /* A tracepoint's every-event program runs for every task: it can keep to threads,
                 * not to a cgroup's (a counting program can). */
                if (tracepoint && !count && (t->flags & PERF_FLAG_PID_CGROUP))
                        continue;
                /* Counted in user space, or in the program: drawn there, no program needed. */
                if (!c->config.jitter || res->unnamed || res->bpf ||
                    (res->def && (res->def->kind == RESOURCE_BYTES || res->def->kind == RESOURCE_ALLOC)))
                        continue;
                if (plan_redraw(c, i, t))
                        continue;
                if (sampling_bpf_new(c->n_cpus, &res->bpf) < 0)
                        continue;
                for (unsigned ev = 0; ev < c->n_events; ev++) {
                        struct cevent *e = &c->events[ev];
                        uint64_t fine;

                        if (e->resource != i || e->shared ||
                            (e->role != ROLE_SAMPLE && e->role != ROLE_SYSCALL))
                                continue;
                        e->fixed_period = e->period;
                        e->bpf = true;
                        role = e->role;
                        if (e->role == ROLE_SYSCALL)
                                raw_size = e->raw_size;
                        if (count) {
                                e->count = count_point_of(e);
                                e->attr.exclude_user = e->count->kernel_mode;
                                fine = 1;
                                res->keep_base = e->period;
                        } else if (is_clock(e)) {
                                fine = MAX(e->period / CLOCK_SPLIT, CLOCK_MIN_NS);
                                res->keep_base = MAX(e->period / fine, 1u);
                        } else if (e->attr.type == PERF_TYPE_SOFTWARE ||
                                   e->attr.type == PERF_TYPE_TRACEPOINT) {
                                fine = 1;
                                res->keep_base = e->period;
                        } else {
                                fine = MAX(e->period / 16, 1u);
                                res->keep_base = MAX(e->period / fine, 1u);
                        }
                        e->period = fine;
                }
                /* Its samples come from the programs, through an output event per CPU. */
                if (res->keep_base == 0 ||
                    add_event(c, i, role, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, 1, &out) < 0 ||
                    (count && sampling_bpf_set_period(res->bpf, res->keep_base) < 0) ||
                    sampling_bpf_set_keep(res->bpf, res->keep_base) < 0 ||
                    sampling_bpf_set_budget(res->bpf, kernel_budget(c),
                                            res->keep_base * THINNING_MAX_FACTOR) < 0) {
                        drop_bpf(c, i);
                        continue;
                }
                out->bpf = out->output = true;
                out->fixed_period = 1;
                out->raw_offset = SAMPLING_BPF_RAW_FIELD;
                out->raw_size = raw_size;
                res->random = true;
                /* Four times what the kernel lets through on every CPU (whose onset of a flood
                 * brings a few budgets at once): a higher rate seen here means the kernel's
                 * thinning did not hold. */
                thinning_init(&res->thin,
                              4 * kernel_budget(c) * (uint64_t) c->n_cpus *
                                      (1000000000ULL / SAMPLING_BPF_WINDOW_NS));
        }
        /* Python frames where a program keeps the samples or a clock is redrawn: the programs
         * walk them (collector-python.c). Where they cannot, native frames only. */
        for (unsigned i = 0; i < c->n_resources; i++) {
                struct cevent *py;

                if (c->resources[i].probed || !(c->resources[i].bpf || c->resources[i].redraw) ||
                    python_plan(c, i) < 0)
                        continue;
                if (add_event(c, i, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, 1, &py) >= 0)
                        py->python = true;
        }
}

int add_alloc_probed(struct collector *c, unsigned res, uint64_t period) {
        struct cresource *r = &c->resources[res];
        struct cevent *out;
        int k;

        if (period > SAMPLING_BPF_MAX_COUNT_PERIOD)
                return -ERANGE;
        k = sampling_bpf_new(c->n_cpus, &r->bpf);
        if (k >= 0)
                k = sampling_bpf_set_period(r->bpf, period);
        if (k >= 0)
                k = sampling_bpf_set_keep(r->bpf, period);
        if (k >= 0)
                k = add_event(c, res, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, 1, &out);
        if (k < 0)
                return k;
        out->bpf = out->output = true;
        out->fixed_period = 1;
        out->raw_offset = SAMPLING_BPF_RAW_FIELD;
        out->raw_size = 8;
        r->keep_base = period;
        r->probed = true;
        return 0;
}

int start_alloc_probe(struct collector *c, const struct targets *t, char *why, size_t why_size) {
        struct sampling_bpf *bytes = NULL, *calls = NULL;
        struct alloc_probe_config ac = {
                .units = c->config.alloc_units,
                .max_per_libc = c->config.alloc_max_processes,
        };
        uint64_t pid, value;
        size_t i = 0;
        int r;

        why[0] = '\0';
        for (unsigned res = 0; res < c->n_resources; res++) {
                const struct cresource *cr = &c->resources[res];

                if (!cr->probed || !cr->active)
                        continue;
                if (cr->def->config == ALLOC_OPTION_BYTES)
                        bytes = cr->bpf;
                else
                        calls = cr->bpf;
        }
        if (!bytes && !calls)
                return 0;
        ac.prog_fd = sampling_bpf_alloc_program(bytes, calls, alloc_probe_max_size());
        if (ac.prog_fd < 0) {
                snprintf(why, why_size, "%s",
                         ac.prog_fd == -EINVAL        ? "needs Linux 6.6 or later (BPF uprobe_multi links)" :
                                 ac.prog_fd == -EPERM ? "needs CAP_BPF and CAP_PERFMON" :
                                                        strerror(-ac.prog_fd));
                return ac.prog_fd;
        }
        r = alloc_probe_new(&ac, &c->alloc_probe);
        close(ac.prog_fd);
        if (r < 0)
                return r;
        c->alloc_stats = calloc(1, sizeof *c->alloc_stats);
        if (!c->alloc_stats)
                return -ENOMEM;
        /* The processes known now: the target's (attach: one; a cgroup's: its own), or every
         * one on the machine, for the prober to sort by unit. */
        while (idmap_next(c->processes, &i, &pid, &value)) {
                if (t->ids[0] == -1 && !(t->flags & PERF_FLAG_PID_CGROUP)) {
                        alloc_probe_add(c->alloc_probe, (pid_t) pid, 0);
                        continue;
                }
                r = alloc_probe_process(c->alloc_probe, (pid_t) pid, why, why_size);
                if (r < 0 && r != -ESRCH && !(t->flags & PERF_FLAG_PID_CGROUP))
                        return r;
        }
        return 0;
}

/* Keeps resource RES's programs at T's tasks: a cgroup, or threads and what they start; none
 * for every task. */
static int filter_targets(struct collector *c, unsigned res, const struct targets *t) {
        struct sampling_bpf *bpf = c->resources[res].bpf;
        int r;

        if (t->flags & PERF_FLAG_PID_CGROUP)
                return sampling_bpf_filter_cgroup(bpf, t->ids[0]);
        if (t->ids[0] == -1)
                return 0;
        r = sampling_bpf_filter_threads(bpf);
        for (int i = 0; r >= 0 && i < t->n; i++)
                r = sampling_bpf_add_tid(bpf, t->ids[i]);
        return r;
}

/* A BPF resource's own parts, opened before its events: an output event per CPU for every task
 * (the first event of the resource's ring there), and its programs at tracepoints (counting
 * ones, or a tracepoint's every-event one), kept to T's tasks unless T is every task; for a
 * gated clock, only its gate's map of T's threads. Returns 0 or a negative errno (with
 * bpf_failed set). */
int open_bpf(struct collector *c, unsigned res, const struct targets *t) {
        static const pid_t all = -1;
        const struct targets every = { .ids = &all, .n = 1 };
        struct sampling_bpf *bpf = c->resources[res].bpf;
        bool filtered = false;
        int r = 0;

        for (unsigned ev = 0; r >= 0 && ev < c->n_events; ev++) {
                const struct cevent *e = &c->events[ev];

                if (e->resource != res || !e->output)
                        continue;
                for (int cpu = 0; r >= 0 && cpu < c->n_cpus; cpu++) {
                        r = open_one(c, ev, &every, -1, cpu, false);
                        if (r >= 0)
                                r = sampling_bpf_set_output(bpf, (unsigned) cpu, c->fds[c->n_fds - 1].fd);
                }
        }
        /* Python frames' companions: into the same rings, each just before its sample. */
        for (unsigned ev = 0; r >= 0 && ev < c->n_events; ev++) {
                const struct cevent *e = &c->events[ev];

                if (e->resource != res || !e->python)
                        continue;
                for (int cpu = 0; r >= 0 && cpu < c->n_cpus; cpu++) {
                        r = open_one(c, ev, &every, -1, cpu, false);
                        if (r >= 0)
                                r = sampling_bpf_set_python_output(bpf, (unsigned) cpu,
                                                                   c->fds[c->n_fds - 1].fd);
                }
        }
        if (r >= 0 && c->resources[res].redraw) {
                /* A gated clock's: the threads its gate lets through. */
                r = filter_targets(c, res, t);
                c->bpf_failed = r < 0;
                return r;
        }
        for (unsigned ev = 0; r >= 0 && ev < c->n_events; ev++) {
                const struct cevent *e = &c->events[ev];

                if (e->resource != res || !e->bpf || e->output ||
                    (!e->count && e->attr.type != PERF_TYPE_TRACEPOINT))
                        continue;
                if (!filtered) {
                        r = filter_targets(c, res, t);
                        filtered = true;
                }
                if (e->count && r >= 0)
                        r = sampling_bpf_count_tracepoint(bpf, e->count->point, e->count->field_arg,
                                                          e->count->user_addr);
                else if (r >= 0)
                        r = sampling_bpf_hold_tracepoint(bpf, e->attr.config, e->raw_offset,
                                                         e->role == ROLE_SYSCALL ? e->raw_size : 0);
        }
        if (r < 0)
                c->bpf_failed = true;
        return r;
}

/* The reader thread, at each sample, as soon as it wakes for it: a redrawn clock's overflows
 * counted, and every REDRAW_EVERY of them, at the end of the pass, its next intervals drawn
 * (redraw_clocks()). The kernel restarts the clock's timer with the period an ioctl gives it,
 * from the ioctl on, and repeats it until the next: so the period asked for is the interval
 * drawn (uniform in [P/2, 3P/2], P times the thinning) less a REDRAW_EVERY-th of the time since
 * the sample (and of the delay below), and the REDRAW_EVERY intervals after the sample end where
 * as many of the drawn length would. Each block of equal intervals is of a length drawn
 * independently of the others and of the program, and starts where the one before ended, at a
 * phase no loop can hold: at one timer tick a sample instead of CLOCK_SPLIT, and one wake-up
 * and cross-CPU interrupt every REDRAW_EVERY samples. A reader later than the draw (it runs
 * below the consumer's priority only when the queue is full) makes that interval the kernel's
 * floor longer.
 *
 * Each sample is worth the thinning factor its interval was drawn with, which may have changed
 * by the time the consumer sees it: the draws' factors are logged where they change
 * (redraw_weight()). */
/* An interval uniform in [MEAN/2, 3 MEAN/2]: the reader's own generator. */
static uint64_t redraw_draw(struct collector *c, uint64_t mean) {
        c->redraw_rng ^= c->redraw_rng >> 12;
        c->redraw_rng ^= c->redraw_rng << 25;
        c->redraw_rng ^= c->redraw_rng >> 27;
        return mean / 2 + c->redraw_rng * 2685821657736338717ULL % (mean + 1);
}

/* Room in log L for one more late sample: its entries moved to the front, or the log grown
 * while it is over half full (each entry then moves a bounded number of times). Returns false
 * at REDRAW_MISSED_MAX entries or without memory. Under redraw_lock. */
static bool missed_room(struct redraw_log *l) {
        unsigned cap = l->cap_missed ? l->cap_missed * 2 : 16;
        uint64_t *time, *missed;

        if (l->missed_head + l->n_missed < l->cap_missed)
                return true;
        if (l->n_missed <= l->cap_missed / 2 && l->cap_missed > 0) {
                memmove(l->missed_time, l->missed_time + l->missed_head,
                        l->n_missed * sizeof *l->missed_time);
                memmove(l->missed, l->missed + l->missed_head, l->n_missed * sizeof *l->missed);
                l->missed_head = 0;
                return true;
        }
        if (l->n_missed >= REDRAW_MISSED_MAX)
                return false;
        time = malloc(cap * sizeof *time);
        missed = malloc(cap * sizeof *missed);
        if (!time || !missed) {
                free(time);
                free(missed);
                return false;
        }
        if (l->n_missed) {
                memcpy(time, l->missed_time + l->missed_head, l->n_missed * sizeof *time);
                memcpy(missed, l->missed + l->missed_head, l->n_missed * sizeof *missed);
        }
        free(l->missed_time);
        free(l->missed);
        l->missed_time = time;
        l->missed = missed;
        l->missed_head = 0;
        l->cap_missed = cap;
        return true;
}

/* Log L's sample at TIME stands for MISSED more intervals (redraw_clock()). */
static void add_missed(struct collector *c, struct redraw_log *l, uint64_t time, uint64_t missed) {
        bool full;

        pthread_mutex_lock(&c->redraw_lock);
        full = !missed_room(l);
        if (!full) {
                l->missed_time[l->missed_head + l->n_missed] = time;
                l->missed[l->missed_head + l->n_missed++] = missed;
        }
        pthread_mutex_unlock(&c->redraw_lock);
        if (full)
                __atomic_add_fetch(&c->resources[l->resource].redraw_missed, missed, __ATOMIC_RELAXED);
}

void redraw_clock(void *userdata, const struct perf_event_header *h) {
        struct collector *c = userdata;
        uint64_t id, time, factor = 1, mean, missed = 0, *slot;
        struct redraw_log *l = NULL;

        if (h->size < sizeof *h + 32)
                return;
        memcpy(&id, h + 1, 8); /* PERF_SAMPLE_IDENTIFIER, IP, TID, TIME: prepare_attr() */
        memcpy(&time, (const uint8_t *) (h + 1) + 24, 8);
        pthread_mutex_lock(&c->redraw_lock);
        slot = idmap_get(c->redraw_ids, id);
        if (slot) {
                l = c->redraw_logs[*slot];
                factor = __atomic_load_n(&c->resources[l->resource].redraw_factor, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&c->redraw_lock);
        /* The clock's overflows come in order, but a gate's notices and the samples through
         * two rings, which the reader may meet out of order: a record older than one already
         * drawn for would bring the next overflow forward. */
        if (!l || time <= l->seen)
                return;
        l->seen = time;
        mean = c->resources[l->resource].redraw_period * factor;
        /* At the first overflow after a redraw, the one asked for: how late it came (below),
         * and what the redraw asked it to carry (its stretch). */
        if (l->count++ == 0) {
                /* How late it came: the kernel starts the timer when the ioctl reaches the
                 * clock's CPU (a cross-CPU interrupt, tens of microseconds on a VM), and the
                 * timer's interrupt comes late by as much again, more out of an idle CPU. Each
                 * interval would be longer than drawn by that much (a clock of 1 ms took 0.91
                 * of the CPU time it measured), so the period asked for is shortened by the
                 * delay, smoothed over about 16 overflows. Not by each overflow's own: a long
                 * one (the host stopped the VM's CPU) would then be made up by a burst of
                 * samples of whatever runs after. Only the overflow asked for (not the kernel's
                 * repeats of the period), and a delay under half the mean, count
                 * (doc/sampling.md, "The delay of an overflow"). */
                if (l->target && time >= l->target && time - l->target < mean / 2)
                        l->delay = (l->delay * 15 + (time - l->target)) / 16;
                /* What the redraw asked this overflow to carry (below): an overflow of another
                 * task (a gate's notice) ends the stretch in that task's time, and drops it. */
                if (id == l->id)
                        missed += l->carry;
                l->carry = 0;
        }
        /* The kernel repeats the period between redraws, one every REDRAW_EVERY overflows or
         * more: the clock is redrawn at the end of the pass (redraw_clocks()) from its latest
         * overflow, since the reader wakes at its ring's REDRAW_EVERY-th record, and its count
         * of overflows (a gate's notices in another ring among them) may be past that. */
        if (l->count < REDRAW_EVERY) {
                if (missed)
                        add_missed(c, l, time, missed);
                return;
        }
        if (l->pending && l->pending_missed)
                add_missed(c, l, l->pending_time, l->pending_missed);
        l->pending = true;
        l->pending_id = id;
        l->pending_time = time;
        l->pending_missed = missed;
}

/* Redraws clock L from its latest overflow, PENDING_TIME. */
static void redraw_one(struct collector *c, struct redraw_log *l) {
        uint64_t id = l->pending_id, time = l->pending_time, missed = l->pending_missed, factor, mean, now,
                 late, p, drawn, floor;

        l->pending = false;
        l->count = 0;
        factor = __atomic_load_n(&c->resources[l->resource].redraw_factor, __ATOMIC_RELAXED);
        mean = c->resources[l->resource].redraw_period * factor;
        now = now_ns(CLOCK_MONOTONIC); /* the events' clock (use_clockid) */
        late = now > time ? now - time : 0;
        /* A real-time reader on the clock's own CPU ran there from the overflow on (it preempts
         * at once): the time since is its own, which no interval can sample (none is shorter
         * than half the mean), so it is left out of the clock, the interval starting at the
         * ioctl. Counted in the interval, it went to whatever ran before and after it (a
         * CPU-bound thread beside a busy one came out 5-15% over its CPU time). */
        if (__atomic_load_n(&c->reader_realtime, __ATOMIC_RELAXED) && sched_getcpu() == l->cpu)
                late = 0;
        p = drawn = redraw_draw(c, mean);
        /* The next overflow where the interval drawn ends: the time since the sample is part
         * of it. A reader later than that (a loaded machine) missed the interval's end, and
         * maybe more: the clock goes on where the intervals that fit in its lateness would
         * have ended, and this sample stands for them too, as a thinned one stands for those
         * not kept: it is worth 1 + MISSED intervals (what ran meanwhile is most likely what
         * it caught running, the reader having been kept from the CPU). Unless the period in
         * force ran out meanwhile (the kernel took the next overflow itself, which the reader
         * meets next), or this was a gate's notice (another task's time: not ours to count).
         * A log too full to say so (REDRAW_MISSED_MAX) counts them as lost. */
        if (late >= p && late < l->period)
                while (late >= p && missed < REDRAW_MAX_MISSED) {
                        late -= p;
                        missed++;
                        p = drawn = redraw_draw(c, mean);
                }
        if (missed && id == l->id)
                add_missed(c, l, time, missed);
        floor = MAX(mean / 2, CLOCK_MIN_NS);
        p = late < p ? p - late : p;
        /* But never sooner than half the mean: the kernel repeats the period until the next
         * redraw, and a reader away for a while would come back to a burst of samples a few
         * microseconds apart, and be later still for them. An interval so stretched ends
         * FLOOR - P later than drawn, time in which a sample would have come with probability
         * (FLOOR - P) / MEAN: the next overflow, which ends it, stands for that one too with
         * that probability (left out, the tasks running while the reader is late, a busy
         * thread beside it, lost a fifth of their share on a loaded VM). */
        if (p < floor && redraw_draw(c, mean) - mean / 2 < floor - p)
                l->carry = 1;
        p = MAX(p, floor);
        /* Less the delay, after the guard: the interval still ends no sooner than half the
         * mean after the sample, the kernel's start of it being that much late. */
        p -= MIN(l->delay, mean / 4);
        /* That is the first interval; the kernel repeats the period asked for, so the next
         * REDRAW_EVERY - 1 are as long. The lateness and delay taken off the first are spread
         * over all of them: the REDRAW_EVERY intervals end where REDRAW_EVERY draws of DRAWN
         * after the sample would, the first longer than drawn by what the others are shorter
         * (when the reader and the kernel are that late). */
        p = (p + (REDRAW_EVERY - 1) * drawn) / REDRAW_EVERY;
        l->period = p;
        l->target = now + p;
        (void) ioctl(l->fd, PERF_EVENT_IOC_PERIOD, &p);
        if (factor == l->last)
                return;
        /* From the ioctl on: samples the kernel took before it (a reader late by more than an
         * interval finds several) ended intervals of the factor before. */
        now = now_ns(CLOCK_MONOTONIC);
        pthread_mutex_lock(&c->redraw_lock);
        if (l->n == REDRAW_LOG) {
                memmove(l->time, l->time + 1, (REDRAW_LOG - 1) * sizeof *l->time);
                memmove(l->factor, l->factor + 1, (REDRAW_LOG - 1) * sizeof *l->factor);
                l->n--;
        }
        l->time[l->n] = now;
        l->factor[l->n++] = factor;
        l->last = factor;
        pthread_mutex_unlock(&c->redraw_lock);
}

void redraw_clocks(struct collector *c) {
        for (size_t i = 0;; i++) {
                struct redraw_log *l = NULL;

                pthread_mutex_lock(&c->redraw_lock);
                if (i < c->n_redraw_logs)
                        l = c->redraw_logs[i];
                pthread_mutex_unlock(&c->redraw_lock);
                if (!l)
                        return;
                if (l->pending)
                        redraw_one(c, l);
        }
}

uint64_t redraw_weight(struct collector *c, uint64_t id, uint64_t time) {
        uint64_t factor = 1, intervals = 1, *slot;
        struct redraw_log *l;
        unsigned i = 0, k = 0;

        pthread_mutex_lock(&c->redraw_lock);
        slot = idmap_get(c->redraw_ids, id);
        if (slot) {
                l = c->redraw_logs[*slot];
                while (i < l->n && l->time[i] < time)
                        factor = l->factor[i++];
                /* The entries before the one in force are behind the consumer now. */
                if (i > 1) {
                        memmove(l->time, l->time + i - 1, (l->n - i + 1) * sizeof *l->time);
                        memmove(l->factor, l->factor + i - 1, (l->n - i + 1) * sizeof *l->factor);
                        l->n -= i - 1;
                }
                /* Intervals missed after this sample; older entries' samples were lost. */
                while (k < l->n_missed && l->missed_time[l->missed_head + k] <= time) {
                        if (l->missed_time[l->missed_head + k] == time)
                                intervals += l->missed[l->missed_head + k];
                        k++;
                }
                l->missed_head = k < l->n_missed ? l->missed_head + k : 0;
                l->n_missed -= k;
        }
        pthread_mutex_unlock(&c->redraw_lock);
        return factor * intervals;
}

/* Sets resource R's thinning to 1 in FACTOR: in its BPF program, or in a redrawn clock's
 * periods (at most REDRAW_MAX_NS long). Returns the factor set, or 0 if it could not be. */
static uint64_t set_thinning(struct cresource *r, uint64_t factor) {
        if (r->redraw) {
                factor = MIN(factor, MAX(REDRAW_MAX_NS / r->redraw_period, 1u));
                __atomic_store_n(&r->redraw_factor, factor, __ATOMIC_RELAXED);
                return factor;
        }
        return sampling_bpf_set_keep(r->bpf, r->keep_base * factor) == 0 ? factor : 0;
}

/* Doubles resource RES's thinning (a loss, or the consumer behind), at most once per
 * THINNING_PRESSURE_NS. Called from the consumer and from the reader thread. */
void thin_pressure(struct collector *c, unsigned res) {
        struct cresource *r;
        uint64_t factor, now = now_ns(CLOCK_MONOTONIC);

        if (res >= c->n_resources || (!c->resources[res].bpf && !c->resources[res].redraw))
                return;
        r = &c->resources[res];
        pthread_mutex_lock(&c->thin_lock);
        factor = thinning_pressure(&r->thin, now);
        if (factor && (factor = set_thinning(r, factor)))
                thinning_changed(&r->thin, factor, now);
        pthread_mutex_unlock(&c->thin_lock);
}

/* The consumer is behind: resource CLASS reached its share of the reader's queue, and is the one
 * to thin; or (RING_READER_NO_CLASS) the queue is full, and the resource bringing the most
 * samples is. */
void on_pressure(void *userdata, unsigned class) {
        struct collector *c = userdata;
        unsigned busiest = NO_RESOURCE;
        uint64_t most = 0;

        if (class != RING_READER_NO_CLASS) {
                thin_pressure(c, class);
                return;
        }
        pthread_mutex_lock(&c->thin_lock);
        for (unsigned i = 0; i < c->n_resources; i++)
                if ((c->resources[i].bpf || c->resources[i].redraw) && c->resources[i].thin.rate >= most) {
                        most = c->resources[i].thin.rate;
                        busiest = i;
                }
        pthread_mutex_unlock(&c->thin_lock);
        thin_pressure(c, busiest);
}

/* Counts a sample of resource RES taken at TIME_NS (or LOST samples lost) toward its overload
 * thinning, and tells the kernel when that changes. */
void thin_note(struct collector *c, unsigned res, uint64_t time_ns, uint64_t lost) {
        struct cresource *r = &c->resources[res];
        uint64_t factor;

        if (!r->bpf && !r->redraw)
                return;
        pthread_mutex_lock(&c->thin_lock);
        factor = thinning_note(&r->thin, time_ns, lost);
        if (factor && (factor = set_thinning(r, factor)))
                thinning_changed(&r->thin, factor, now_ns(CLOCK_MONOTONIC));
        pthread_mutex_unlock(&c->thin_lock);
}
