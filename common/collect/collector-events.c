/* The collector's perf events and rings. A resource becomes one or more events (add_event(),
 * add_tracepoint()); attaching opens each per CPU on the targets (open_one()) after the rings'
 * owners (open_rings()): per CPU a sample ring and a side band ring. Periods are drawn here too
 * (draw_period()), for the kernel's events and for the resources counted in user space. */
#include "collector-events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "perf-event.h"
#include "perf-record.h"

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
        return 0;
}

/* Bytes of a sample ring, or of a side band ring: a quarter of the samples' (at least 64 KiB). */
static size_t ring_size(const struct collector *c, bool side_band) {
        return side_band ? MAX(c->config.ring_size / 4, 65536u) : c->config.ring_size;
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

/* Opens event EV on target ID, CPU, into that CPU's sample ring or, for the SIDE_BAND, its side
 * band ring: the first event opened into a ring maps it (the dummy events of open_rings()).
 * Returns 0 or a negative errno. */
int open_one(struct collector *c, unsigned ev, const struct targets *t, pid_t id_, int cpu, bool side_band) {
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

/* The rings' owners, opened before any resource so that resources come and go (an unsupported
 * one is closed again) without the rings depending on them: per CPU, a dummy software event that
 * maps the sample ring, and per target and CPU a dummy event that carries the side band (MMAP2,
 * COMM, FORK/EXIT) into the side band's ring. */
int open_rings(struct collector *c, const struct targets *t) {
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
                                break; /* a thread exited meanwhile */
                        if (r < 0)
                                return r;
                }
        return 0;
}
