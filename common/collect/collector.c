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
 * sample every software event and tracepoint; a sample is worth one period, times the overload
 * thinning in force when it was taken (thinning.c).
 *
 * Intervals. By default they are random, drawn per sample in the kernel (sampling-bpf.c): page
 * faults, context switches and system calls are counted down per CPU by a BPF program at their
 * raw tracepoints, which draws each next countdown from a geometric distribution of mean P;
 * other counted events are counted at kernel period 1 and a program keeps each hit with
 * probability 1/P (as all of them with every_event); either way each event is sampled with
 * probability 1/P independently and no loop can lock on. A clock is redrawn instead: one CPU's
 * for every task (the daemon's), or gated to the threads followed (record, attach: a program
 * lets their samples through and writes a notice for any other task's overflow), one tick a
 * sample, whose arrival wakes the reader thread, which gives the clock its next interval, drawn
 * at random (redraw_clock()); a clock under REDRAW_MIN_NS or of a cgroup ticks at a tenth of
 * its period (CLOCK_SPLIT) and the program keeps 1 tick in 10. Each resource has its own
 * sample ring per CPU and its own thinning, so one
 * resource's storm fills its own ring and is thinned while the others keep their samples.
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
 * gives the stack) and the thread's next switch in (a PERF_RECORD_SWITCH).
 *
 * This file keeps creation, resources, attaching, draining and dispatching records, and the
 * flush; the objects the collector holds have files of their own, listed in
 * collector-internal.h: events and rings, tasks, stacks, aggregation. */
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

#include "alloc-preload.h"
#include "collector-aggregate.h"
#include "collector-events.h"
#include "collector-internal.h"
#include "collector-python.h"
#include "collector-stacks.h"
#include "collector-tasks.h"
#include "grow.h"
#include "idmap.h"
#include "log.h"
#include "perf-event.h"
#include "perf-map.h"
#include "perf-record.h"
#include "proc-maps.h"
#include "ring-buffer.h"
#include "ring-reader.h"
#include "sampling-bpf.h"
#include "symbolize.h"
#include "syscall-names.h"
#include "thinning.h"
#include "time-util.h"
#include "unwind.h"

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
        c->rings = calloc((2 + COLLECTOR_MAX_RESOURCES) * n_cpus, sizeof *c->rings);
        c->event_ids = idmap_new();
        c->redraw_ids = idmap_new();
        pthread_mutex_init(&c->redraw_lock, NULL);
        c->processes = idmap_new();
        c->threads = idmap_new();
        c->trie = idmap_new();
        c->agg_index = idmap_new();
        c->ring_list = calloc((2 + COLLECTOR_MAX_RESOURCES) * n_cpus, sizeof *c->ring_list);
        c->ring_resource = calloc((2 + COLLECTOR_MAX_RESOURCES) * n_cpus, sizeof *c->ring_resource);
        pthread_mutex_init(&c->thin_lock, NULL);
        c->exec_units = idmap_new();
        pthread_mutex_init(&c->exec_units_lock, NULL);
        c->cap_nodes = 1024;
        c->nodes = malloc(c->cap_nodes * sizeof *c->nodes);
        if (!c->sym || !c->unwinder || !c->rings || !c->event_ids || !c->redraw_ids || !c->processes ||
            !c->threads || !c->trie || !c->agg_index || !c->ring_list || !c->exec_units || !c->nodes ||
            !c->ring_resource)
                return -ENOMEM;
        c->nodes[0] = (struct trie_node) {};
        c->n_nodes = 1;
        c->sym->lines = !config->function_frames; /* frames stored as functions need none */
        unwinder_keep_sps(c->unwinder, c->sps, COLLECTOR_MAX_STACK); /* Python frames' places */
        c->agg_bucket = -1;
        c->switches_via_offcpu = NO_RESOURCE;
        c->realtime_offset = (int64_t) (now_ns(CLOCK_REALTIME) - now_ns(CLOCK_MONOTONIC));
        c->rng = now_ns(CLOCK_MONOTONIC) | 1;
        c->redraw_rng = c->rng * 0x9e3779b97f4a7c15ULL | 1;
        *ret = take_ptr(&c);
        return 0;
}

struct collector *collector_free(struct collector *c) {
        uint64_t key, value;
        size_t i = 0;

        if (!c)
                return NULL;
        ring_reader_free(c->reader); /* first: its thread reads the rings */
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
        for (int k = 0; c->rings && k < (2 + COLLECTOR_MAX_RESOURCES) * c->n_cpus; k++)
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
        idmap_free(c->redraw_ids);
        for (size_t l = 0; l < c->n_redraw_logs; l++) {
                free(c->redraw_logs[l]->missed_time);
                free(c->redraw_logs[l]->missed);
                free(c->redraw_logs[l]);
        }
        free(c->redraw_logs);
        pthread_mutex_destroy(&c->redraw_lock);
        idmap_free(c->trie);
        idmap_free(c->agg_index);
        free(c->agg_keys);
        free(c->agg);
        free(c->nodes);
        free(c->events);
        free(c->ring_list);
        free(c->ring_resource);
        pthread_mutex_destroy(&c->thin_lock);
        for (unsigned r = 0; r < c->n_resources; r++) {
                free(c->resources[r].name);
                free(c->resources[r].unit);
                free(c->resources[r].event);
                sampling_bpf_free(c->resources[r].bpf);
        }
        python_stop(c); /* after the resources' programs, which use its maps */
        alloc_probe_free(c->alloc_probe);
        free(c->alloc_stats);
        free(c->run_kind);
        free(c->run_command);
        free(c->run_host);
        unwinder_free(c->unwinder);
        symbolizer_free(c->sym);
        free(c);
        return NULL;
}

/* ---- resources and events ---- */

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
                        goto fail;
                r = add_event(c, i, ROLE_SAMPLE, attr.type, attr.config, period, NULL);
                if (r < 0)
                        goto fail;
                c->events[c->n_events - 1].attr.config1 = attr.config1;
                c->events[c->n_events - 1].attr.config2 = attr.config2;
                snprintf(desc, sizeof desc, "%s:%s",
                         tracepoint                              ? "tracepoint" :
                                 attr.type == PERF_TYPE_SOFTWARE ? "software" :
                                                                   "pfm",
                         name);
        } else
                switch (def->kind) {
                case RESOURCE_SOFTWARE:
                case RESOURCE_CLOCK:
                        r = add_event(c, i, ROLE_SAMPLE, PERF_TYPE_SOFTWARE, def->config,
                                      def->kind == RESOURCE_CLOCK ? period * NS_PER_MS : period, NULL);
                        if (r < 0)
                                goto fail;
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
                                goto fail;
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
                case RESOURCE_ALLOC:
                        if (!c->config.preloaded) {
                                r = add_alloc_probed(c, i, period);
                                if (r < 0)
                                        goto fail;
                                snprintf(desc, sizeof desc, "uprobe:glibc-allocator");
                                break;
                        }
                        r = add_tracepoint(c, i, ROLE_WEIGHT, def->events[0], "arg2", 1);
                        if (r < 0)
                                goto fail;
                        snprintf(desc, sizeof desc, "preload:%s", ALLOC_PRELOAD_LIBRARY);
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
                                goto fail;
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
        c->n_events = n_events; /* drop this resource's half-made events */
        sampling_bpf_free(res->bpf);
        free(res->name);
        free(res->unit);
        free(res->event);
        *res = (struct cresource) {};
        return r;
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
                if (GROW(tids, cap, n + 1) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                tids[n++] = tid;
        }
        closedir(d);
        *ret = take_ptr(&tids);
        return n;
}

/* The reader thread's hook at each sample: Python frames' companions named early, a redrawn
 * clock's overflows counted; at the end of each pass, the clocks due redrawn. */
static void on_sample(void *userdata, const struct perf_event_header *h) {
        struct collector *c = userdata;

        if (!h)
                redraw_clocks(c); /* the end of a pass */
        else if (!python_prefetch(c, h))
                redraw_clock(c, h);
}

/* Starts the thread that empties the rings, telling it each event's sample layout. */
static int start_reader(struct collector *c) {
        bool timely = c->py; /* whether the reader acts at samples (on_sample()) */
        uint64_t id, ev;
        size_t i = 0;
        int r;

        c->reader = ring_reader_new(c->ring_list, c->n_ring_list, c->config.queue_size);
        if (!c->reader)
                return -ENOMEM;
        ring_reader_set_hook(c->reader, on_exec_record, c);
        for (unsigned res = 0; res < c->n_resources; res++)
                timely |= c->resources[res].redraw;
        if (timely)
                ring_reader_set_sample_hook(c->reader, on_sample, c);
        ring_reader_set_pressure(c->reader, on_pressure, c);
        r = ring_reader_set_classes(c->reader, c->ring_resource, c->n_resources);
        if (r < 0)
                return r;
        while (idmap_next(c->event_ids, &i, &id, &ev)) {
                r = ring_reader_add_event(c->reader, id, c->events[ev].attr.sample_type, UNWIND_N_REGS,
                                          UNWIND_N_REGS > 0 ? UNWIND_REG_SP : -1);
                if (r < 0)
                        return r;
        }
        r = ring_reader_start(c->reader);
        /* Punctuality buys nothing where the reader only copies records for the consumer. */
        if (r < 0 || !c->config.realtime_reader || !timely)
                return r;
        r = ring_reader_set_realtime(c->reader);
        __atomic_store_n(&c->reader_realtime, r >= 0, __ATOMIC_RELAXED); /* the reader reads it */
        if (r < 0)
                log_info("The ring reader runs in the normal scheduling class (%s: it needs CAP_SYS_NICE or "
                         "an RLIMIT_RTPRIO of 1): on a busy machine a redrawn clock's samples come late, and "
                         "the intervals it missed are weighed by guess (doc/sampling.md)",
                         strerror(-r));
        return 0;
}

static bool owns_ring(const struct collector *c, int fd) {
        for (int i = 0; i < c->n_ring_list; i++)
                if (c->ring_list[i]->fd == fd)
                        return true;
        return false;
}

/* Opens the side band and every resource's events on T, then starts the reader. See
 * collector_attach() for the results. */
static int open_events(struct collector *c, const struct targets *t, uint32_t *ret_unsupported,
                       const char **ret_failed) {
        static const pid_t all = -1;
        const struct targets every = { .ids = &all, .n = 1 };
        uint32_t unsupported_mask = 0;
        unsigned n_resource_events;
        int n_active = 0, r;

        *ret_failed = NULL;
        if (c->reader)
                return -EBUSY; /* one target set per collector */
        share_context_switches(c);
        python_start(c);
        plan_sampling(c, t);
        n_resource_events = c->n_events;
        r = open_rings(c, t);
        if (r < 0)
                return r;

        for (unsigned res = 0; res < c->n_resources; res++) {
                size_t first_fd = c->n_fds;

                if (c->resources[res].unnamed) {
                        unsupported_mask |= 1u << res;
                        continue;
                }
                r = c->resources[res].bpf ? open_bpf(c, res, t) : 0;
                for (unsigned ev = 0; r >= 0 && ev < n_resource_events; ev++) {
                        const struct cevent *e = &c->events[ev];

                        /* Not: shared, a BPF output (open_bpf()), an event whose programs at
                         * tracepoints sample (attached by open_bpf()), but for what they cannot
                         * see (kernel-mode page faults). */
                        if (e->resource != res || e->shared || e->output || e->python ||
                            (e->bpf &&
                             ((e->count && !e->count->kernel_mode) ||
                              (!e->count && e->attr.type == PERF_TYPE_TRACEPOINT))))
                                continue;
                        /* A gated clock once per CPU, for every task (plan_redraw()). */
                        for (int i = 0; r >= 0 && i < (e->gated ? 1 : t->n); i++)
                                for (int cpu = 0; r >= 0 && cpu < c->n_cpus; cpu++) {
                                        r = e->gated ? open_one(c, ev, &every, -1, cpu, false) :
                                                       open_one(c, ev, t, t->ids[i], cpu, false);
                                        if (r == -ESRCH && i > 0) {
                                                r = 0; /* a thread exited meanwhile */
                                                break;
                                        }
                                }
                }
                if (r < 0) {
                        /* Close this resource's events, but not those that own a ring (they
                         * are output events, which nothing writes to once the programs are
                         * gone): later events of the resource go to those rings. */
                        size_t kept = first_fd;

                        for (size_t f = first_fd; f < c->n_fds; f++) {
                                if (owns_ring(c, c->fds[f].fd))
                                        c->fds[kept++] = c->fds[f];
                                else
                                        close(c->fds[f].fd);
                        }
                        c->n_fds = kept;
                        if (c->bpf_failed && !c->resources[res].probed) {
                                /* Fixed periods, then, and said so in every header. */
                                drop_bpf(c, res);
                                res--;
                                continue;
                        }
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
        r = start_alloc_probe(c, t, c->alloc_why, sizeof c->alloc_why);
        if (r < 0)
                return r;
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
                /* Events per task start at the exec (enable_on_exec); a gated clock, one
                 * CPU's, at once: its samples before the exec are dropped. */
                c->before_exec = pid;
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

int collector_attach_cgroup(struct collector *c, int cgroup_fd, uint32_t *ret_unsupported,
                            const char **ret_failed) {
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

/* A random sample of resource RES worth HITS periods, taken at TIME: the header's largest
 * thinning, the time of the resource's latest sample, and its rate for overload thinning. */
static void note_weighed(struct collector *c, unsigned res, uint64_t hits, uint64_t time) {
        struct cresource *r = &c->resources[res];

        pthread_mutex_lock(&c->thin_lock);
        if (hits > r->thin.max_factor)
                r->thin.max_factor = hits;
        pthread_mutex_unlock(&c->thin_lock);
        r->last_time = time;
        thin_note(c, res, time, 0);
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
        if (c->before_exec && s->pid == (uint32_t) c->before_exec)
                return 0; /* a gated clock's, before the command's exec: cppctl's own fork */
        t = thread_get(c, s->pid, s->tid);
        if (!t)
                return -ENOMEM;
        c->stats.samples++;
        if (c->py && !t->process->py)
                python_process_seen(c, t->process, s->time);

        if (e->output) {
                /* Worth the 1 in K overflows it was kept from (sampling-bpf.c): K / keep_base
                 * periods, K being keep_base times a power of two. */
                struct cresource *res = &c->resources[e->resource];
                uint64_t k;

                if (!s->raw || s->raw_size < SAMPLING_BPF_RAW_FACTOR + 8)
                        return -EBADMSG;
                memcpy(&k, s->raw + SAMPLING_BPF_RAW_FACTOR, 8);
                hits = MAX((k + res->keep_base / 2) / res->keep_base, 1u);
                note_weighed(c, e->resource, hits, s->time);
                if (res->probed) {
                        /* And the intervals the allocation ended (sampling_bpf_alloc_program()). */
                        uint64_t m;

                        if (s->raw_size < SAMPLING_BPF_RAW_FIELD + 8)
                                return -EBADMSG;
                        memcpy(&m, s->raw + SAMPLING_BPF_RAW_FIELD, 8);
                        m = MAX(m, 1u);
                        hits = m > UINT32_MAX / hits ? UINT32_MAX : hits * m;
                }
        } else if (e->bpf)
                return 0; /* the program writes its samples itself; none come here */
        else if (e->redraw) {
                /* Worth the thinning factor its interval was drawn with (redraw_clock()). */
                hits = redraw_weight(c, s->id, s->time);
                note_weighed(c, e->resource, hits, s->time);
        }

        switch (e->role) {
        case ROLE_SAMPLE:
                if (c->feed_hits)
                        hits = c->feed_hits; /* offline: a sample weighted by its period */
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
        case ROLE_WEIGHT:
                /* The intervals the allocation ended, as the program counted them; 0: it
                 * cannot count (an allocator of its own), said once at its start. */
                v = raw_field(s, e, &ok);
                if (!ok)
                        return -EBADMSG;
                if (v == 0) {
                        struct cresource *res = &c->resources[e->resource];

                        if (res->uncounted++ == 0) {
                                res->uncounted_pid = s->pid;
                                snprintf(res->uncounted_comm, sizeof res->uncounted_comm, "%s",
                                         t->process->comm);
                        }
                        return 0;
                }
                hits = MIN(v, (uint64_t) UINT32_MAX);
                /* The thread's sequence (arg4), from 1: a gap is samples lost, the ring's
                 * (already counted from LOST records) or the kernel's throttling (told nowhere
                 * else), also before the first sample seen of the thread; a number not past
                 * the last, a new program in the thread (an exec, or a thread id used again),
                 * whose count starts afresh. */
                if (e->raw_size == 8 && e->raw_offset + 24 <= s->raw_size) {
                        struct cresource *res = &c->resources[e->resource];
                        uint64_t seq, *last = &t->weight_seq[res->def->config == ALLOC_OPTION_BYTES ? 0 : 1];

                        memcpy(&seq, s->raw + e->raw_offset + 16, 8);
                        if (seq <= *last)
                                *last = 0;
                        if (seq > *last + 1) {
                                uint64_t gap = seq - *last - 1, known = MIN(gap, res->ring_unmatched);

                                res->ring_unmatched -= known;
                                res->lost += gap - known;
                                c->stats.lost += gap - known;
                        }
                        *last = seq;
                }
                /* K, the thinning it was drawn under, in the field after the hits (arg3). */
                if (e->raw_size == 8 && e->raw_offset + 16 <= s->raw_size) {
                        struct cresource *res = &c->resources[e->resource];
                        uint64_t k;

                        memcpy(&k, s->raw + e->raw_offset + 8, 8);
                        pthread_mutex_lock(&c->thin_lock);
                        if (k > res->thin.max_factor && k <= UINT32_MAX)
                                res->thin.max_factor = k;
                        pthread_mutex_unlock(&c->thin_lock);
                        res->last_time = s->time;
                }
                break;
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

        {
                struct python_stats before = c->py_stats;

                node = sample_stack(c, s, t, leaf);
                python_count(c, e->resource, &before);
        }
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
        if (c->events[*slot].python) {
                struct thread *t = thread_get(c, s.pid, s.tid);

                return t ? python_companion(c, t, &s) : -ENOMEM;
        }
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

static int handle_lost(struct collector *c, const struct perf_event_header *h) {
        uint64_t id, lost, *slot;
        unsigned res = 0;

        if (record_parse_lost(h, &id, &lost) < 0)
                return -EBADMSG;
        /* The id is the event whose record did not fit. Losses of the side band are charged to
         * the first resource: samples were surely lost with them. */
        slot = idmap_get(c->event_ids, id);
        if (slot && c->events[*slot].gated && c->events[*slot].output)
                return 0; /* notices (open_one()): a clock redrawn one interval late, no sample */
        if (slot && c->events[*slot].python)
                return 0; /* companions: their samples come without Python frames */
        if (slot && c->events[*slot].resource != NO_RESOURCE)
                res = c->events[*slot].resource;
        if (res < c->n_resources) {
                struct cresource *r = &c->resources[res];
                /* Losses already counted, in the resource's and the daemon's totals, from the
                 * programs' or the events' own count (count_unreported()). */
                uint64_t known = MIN(lost, r->lost_unreported);

                r->lost_unreported -= known;
                r->lost_records += lost;
                r->lost += lost - known;
                r->ring_unmatched += lost;
                thin_note(c, res, r->last_time, lost);
                lost -= known;
        }
        c->stats.lost += lost;
        return 0;
}

/* The samples resource RES's events could not write into their rings, as the kernel counts
 * them (PERF_FORMAT_LOST; inherited events count into the parent's), or 0 where it cannot. */
static uint64_t events_lost(struct collector *c, unsigned res) {
        uint64_t lost = 0;

        for (size_t f = 0; f < c->n_fds; f++) {
                const struct cevent *e = &c->events[c->fds[f].event];
                uint64_t v[2];

                /* Not a gate's notices nor Python's companions: their losses cost no sample
                 * (handle_lost()). */
                if (e->resource == res && !e->output && !e->python &&
                    (e->attr.read_format & PERF_FORMAT_LOST) &&
                    read(c->fds[f].fd, v, sizeof v) == (ssize_t) sizeof v)
                        lost += v[1];
        }
        return lost;
}

/* The kernel reports a ring's losses at its next write, so a flood's last losses go unreported
 * when nothing is written after them: the programs count what they could not write, and the
 * kernel what an event could not (events_lost()), which counts here as lost until LOST records
 * come for it. */
static void count_unreported(struct collector *c) {
        for (unsigned i = 0; i < c->n_resources; i++) {
                struct cresource *r = &c->resources[i];
                uint64_t failed, failed_k,
                        missed = __atomic_exchange_n(&r->redraw_missed, 0, __ATOMIC_RELAXED);

                /* A redrawn clock's intervals the reader was too late for (redraw_clock()). */
                if (missed) {
                        r->lost += missed;
                        c->stats.lost += missed;
                        thin_note(c, i, r->last_time, missed);
                }
                if (!r->bpf) {
                        /* Samples the events write themselves: the kernel's count of each
                         * event's refused samples (PERF_FORMAT_LOST). */
                        failed = events_lost(c, i);
                        failed_k = 0;
                } else
                        failed = sampling_bpf_failed(r->bpf, &failed_k);
                if (failed && failed_k && r->keep_base) {
                        /* The header's "lost, each of weight 1 to thinned" holds for them too. */
                        failed_k = MAX((failed_k + r->keep_base / 2) / r->keep_base, 1u);
                        pthread_mutex_lock(&c->thin_lock);
                        if (failed_k > r->thin.max_factor)
                                r->thin.max_factor = failed_k;
                        pthread_mutex_unlock(&c->thin_lock);
                }
                if (failed > r->lost_records + r->lost_unreported) {
                        uint64_t more = failed - r->lost_records - r->lost_unreported;

                        r->lost_unreported += more;
                        r->lost += more;
                        c->stats.lost += more;
                }
        }
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
                return 0; /* THROTTLE and others carry nothing we count */
        }
}

static void rejitter(struct collector *c) {
        for (size_t f = 0; f < c->n_fds; f++) {
                const struct cevent *e = &c->events[c->fds[f].event];
                uint64_t p;

                if (e->resource == NO_RESOURCE || e->role == ROLE_BYTES || e->period < 2 || e->bpf ||
                    e->redraw)
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
                                break; /* what was queued when we were called: done */
                        r = ring_reader_take(c->reader, &c->queue, &c->queue_size);
                        if (r < 0)
                                return r;
                        c->queue_off = 0;
                        took = true;
                        continue;
                }
                h = (const void *) (c->queue + c->queue_off);
                if (h->size < sizeof *h || c->queue_off + h->size > c->queue_size) {
                        c->queue_off = c->queue_size; /* the reader only queues whole records */
                        continue;
                }
                c->queue_off += h->size;
                n++;
                r = handle_record(c, h);
                {
                        uint64_t t;

                        if (record_time(h, &t) == 0 && t > c->handled_ns)
                                c->handled_ns = t; /* mark_gone() */
                }
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
        } while (r == 0); /* the queue was full: more waits in the rings */
        return 0;
}

/* ---- flushing to the store ---- */

void collector_forget_store_ids(struct collector *c) {
        forget_ids(c, false);
}

int collector_flush(struct collector *c, bool final) {
        int r;

        if (!c->store)
                return -EINVAL;
        if (c->run_ended)
                return 0;
        count_unreported(c);
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
        for (unsigned i = 0; i < c->n_resources; i++) {
                c->resources[i].lost_flushed = c->resources[i].lost;
                c->resources[i].hits_flushed = c->resources[i].hits;
        }
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

int64_t collector_close_buckets(struct collector *c, int64_t wall) {
        int64_t b = wall - wall % (int64_t) c->config.bucket_seconds;

        if (b > c->bucket_floor)
                c->bucket_floor = b;
        return c->bucket_floor;
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
        ret->python_samples = c->py_stats.samples;
        ret->python_cut = c->py_stats.cut;
        ret->python_unreadable = c->py_stats.unreadable;
        ret->python_processes = __atomic_load_n(&c->py_registered, __ATOMIC_RELAXED);
        ret->python_unsupported = __atomic_load_n(&c->py_unsupported, __ATOMIC_RELAXED);
        if (c->py)
                (void) sampling_bpf_py_stats(c->py, &ret->python_walks, &ret->python_walk_ns);
        ret->lag_ns = 0;
        if (c->reader) {
                uint64_t t = 0, now = now_ns(CLOCK_MONOTONIC);
                struct ring_reader_stats rs;

                ring_reader_get_stats(c->reader, &rs);
                ret->stacks_cut = rs.stacks_cut;
                ret->queue_bytes = rs.queue_bytes;
                if (c->queue_off + sizeof(struct perf_event_header) <= c->queue_size)
                        (void) record_time((const struct perf_event_header *) (c->queue + c->queue_off), &t);
                else
                        t = ring_reader_oldest(c->reader);
                if (t && now > t)
                        ret->lag_ns = now - t;
        }
}

const char *collector_python_why(const struct collector *c) {
        return c->py_why[0] ? c->py_why : NULL;
}

const char *collector_alloc_why(const struct collector *c) {
        return c->alloc_why[0] ? c->alloc_why : NULL;
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
                .stored = r->hits_flushed,
                .lost = r->lost,
                .sampling = r->random ? "random" : "fixed",
                .thinned = r->thin.max_factor ? r->thin.max_factor : 1,
                .keep_one_in = r->redraw ? r->thin.factor :
                        r->bpf           ? r->keep_base * r->thin.factor :
                                           1,
                .uncounted = r->uncounted,
                .uncounted_pid = r->uncounted_pid,
                .uncounted_comm = r->uncounted_comm,
        };
        if (r->probed && c->alloc_probe && c->alloc_stats) {
                const struct alloc_probe_stats *a = c->alloc_stats;

                alloc_probe_get_stats(c->alloc_probe, c->alloc_stats);
                ret->uncounted = a->not_measured;
                ret->uncounted_pid = (uint32_t) a->first_pid;
                ret->uncounted_comm = a->first_comm;
                ret->uncounted_why = a->first_why;
                ret->probed = a->probed;
                ret->probed_ever = a->ever;
                ret->libc = a->libc[0] ? a->libc : NULL;
                ret->late = a->late;
                ret->late_max_ns = a->late_max_ns;
        }
        for (unsigned ev = 0; ev < c->n_events; ev++)
                if (c->events[ev].resource == i && !c->events[ev].shared &&
                    c->events[ev].role != ROLE_OFFCPU) {
                        ret->kernel_period =
                                c->events[ev].redraw ? c->events[ev].fixed_period : c->events[ev].period;
                        break;
                }
}
