/* cppctl import perf.data: perf's recordings through cppd's own collector, so that they are
 * unwound, symbolized and stored exactly as cppctl record's samples are.
 *
 * Each event becomes a resource named as perf names it ("cpu-clock", "page-faults", "cycles"),
 * counted in the event's own units (nanoseconds for the clocks). A sample weighs its period, as
 * in perf report: the resource's period P is the event's fixed sample period, or, for perf's
 * default frequency mode, the mean period of its samples; each sample adds its period to a
 * counter that gives a hit per P crossed (the paper's interval counter, §5.1), so the hits add
 * up to the periods' sum and fractions match perf's.
 *
 * perf writes each CPU's buffer in turn, so records are ordered by time only within a round
 * (between FINISHED_ROUND records); they are sorted by time per round, as perf report does,
 * before the collector sees them: a sample must come after the mmap of its code.
 *
 * Samples are rewritten into the collector's layout (record.h: IDENTIFIER first; the user
 * registers it unwinds with, in its order) since perf asks for more fields and registers. The
 * binaries are read from this machine, by the paths in the recording, as perf report does. */
#include "cppctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "collector.h"
#include "log.h"
#include "perf-data.h"
#include "record.h"
#include "resource.h"
#include "unwind.h"

#define PERF_RECORD_FINISHED_ROUND 68

struct import_event {
        const struct perf_data_event *event;
        uint64_t id;                    /* the collector's sample id */
        uint64_t period;                /* P, in the event's units */
        uint64_t carry;                 /* periods not yet a whole hit */
        uint64_t samples, hits;
        char name[64];
};

struct item {
        uint64_t time;
        uint64_t seq;                   /* file order, for ties */
        const struct perf_event_header *h;
};

static int item_cmp(const void *a, const void *b) {
        const struct item *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The event's name without perf's modifiers ("cycles:u" -> "cycles"), or one made of its type. */
static void event_name(const struct perf_data_event *e, size_t index, char *buf, size_t size) {
        static const char *const software[] = {
                [PERF_COUNT_SW_CPU_CLOCK] = "cpu-clock",
                [PERF_COUNT_SW_TASK_CLOCK] = "task-clock",
                [PERF_COUNT_SW_PAGE_FAULTS] = "page-faults",
                [PERF_COUNT_SW_CONTEXT_SWITCHES] = "context-switches",
                [PERF_COUNT_SW_CPU_MIGRATIONS] = "cpu-migrations",
                [PERF_COUNT_SW_PAGE_FAULTS_MIN] = "minor-faults",
                [PERF_COUNT_SW_PAGE_FAULTS_MAJ] = "major-faults",
        };

        if (e->attr.type == PERF_TYPE_SOFTWARE && e->attr.config < ELEMENTSOF(software) && software[e->attr.config])
                snprintf(buf, size, "%s", software[e->attr.config]);
        else if (e->name)
                snprintf(buf, size, "%.*s", (int) strcspn(e->name, ":/"), e->name);
        else
                snprintf(buf, size, "event-%zu", index);
        for (char *p = buf; *p; p++)            /* the store's resource names: [a-z0-9:_.-] */
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.-", *p))
                        *p = '_';
        if (!*buf)
                snprintf(buf, size, "event-%zu", index);
}

static const char *event_unit(const struct perf_data_event *e, const char *name) {
        const struct resource *known = resource_find(name);

        if (e->attr.type == PERF_TYPE_SOFTWARE &&
            (e->attr.config == PERF_COUNT_SW_CPU_CLOCK || e->attr.config == PERF_COUNT_SW_TASK_CLOCK))
                return "1 ns of CPU time";
        return known ? known->unit : "1 event";
}

/* Rewrites sample S of event E into the collector's layout in BUF (64 KiB, a record's most).
 * Returns the record, or NULL if it cannot be (then it is counted as bad). */
static const struct perf_event_header *rewrite(const struct import_event *ie, const struct perf_data_sample *s,
                                               bool dwarf, uint8_t *buf) {
        struct perf_event_header *h = (void *) buf;
        uint8_t *p = buf + sizeof *h, *end = buf + 65535;
        uint64_t mask = ie->event->attr.sample_regs_user, stack = 0;
        bool regs = dwarf && s->regs && s->abi != 0 && (mask & UNWIND_REGS_MASK) == UNWIND_REGS_MASK;

#define PUT(v) do { uint64_t v_ = (v); memcpy(p, &v_, 8); p += 8; } while (0)
        if ((size_t) (end - p) < 8 * (5 + s->nr) + 8 * (2 + UNWIND_N_REGS) + 16)
                return NULL;
        PUT(ie->id);
        PUT(s->ip);
        PUT((uint64_t) s->tid << 32 | s->pid);
        PUT(s->time);
        PUT(s->nr);
        memcpy(p, s->ips, s->nr * 8);
        p += s->nr * 8;
        /* REGS_USER and STACK_USER always, as the collector's offline events declare them;
         * empty without DWARF. */
        {
                PUT(regs ? s->abi : 0);
                for (unsigned bit = 0; regs && bit < 64; bit++)
                        if (UNWIND_REGS_MASK & (UINT64_C(1) << bit))
                                PUT(s->regs[__builtin_popcountll(mask & ((UINT64_C(1) << bit) - 1))]);
                if (regs && s->stack)
                        stack = MIN(s->stack_size, (uint64_t) (end - p - 16) & ~UINT64_C(7));
                PUT(stack);
                if (stack > 0) {
                        memcpy(p, s->stack, stack);
                        p += stack;
                        PUT(MIN(s->dyn_size, stack));
                }
        }
#undef PUT
        *h = (struct perf_event_header) { .type = PERF_RECORD_SAMPLE, .size = (uint16_t) (p - buf) };
        return h;
}

/* Feeds the records of ITEMS[0..n) to the collector in time order. */
static int feed_round(struct collector *c, struct perf_data *d, struct import_event *events, struct item *items,
                      size_t n, bool dwarf, uint8_t *buf, uint64_t *bad) {
        qsort(items, n, sizeof *items, item_cmp);
        for (size_t i = 0; i < n; i++) {
                const struct perf_event_header *h = items[i].h;
                const struct perf_data_event *e;
                struct import_event *ie;
                struct perf_data_sample s;
                uint64_t hits;
                int r;

                if (h->type != PERF_RECORD_SAMPLE) {
                        if (h->type == PERF_RECORD_MMAP2 || h->type == PERF_RECORD_COMM ||
                            h->type == PERF_RECORD_FORK || h->type == PERF_RECORD_EXIT) {
                                r = collector_feed(c, h, 0);
                                if (r < 0)
                                        return r;
                        }
                        continue;
                }
                e = perf_data_sample_event(d, h);
                if (!e) {
                        (*bad)++;
                        continue;
                }
                ie = &events[e - d->events];
                r = perf_data_parse_sample(e, h, &s);
                if (r == -EOPNOTSUPP)
                        return log_error_errno(r, "%s: samples with fields cppd cannot read (perf record -s or -b)",
                                               ie->name);
                if (r < 0) {
                        (*bad)++;
                        continue;
                }
                ie->samples++;
                ie->carry += s.period ? s.period : ie->period;
                hits = ie->carry / ie->period;
                ie->carry -= hits * ie->period;
                if (hits == 0)
                        continue;
                h = rewrite(ie, &s, dwarf, buf);
                if (!h) {
                        (*bad)++;
                        continue;
                }
                ie->hits += hits;
                r = collector_feed(c, h, hits);
                if (r < 0)
                        return r;
        }
        return 0;
}

int import_perf_data(const char *path, const char *db, bool kernel, const char *host) {
        _cleanup_(perf_data_freep) struct perf_data *d = NULL;
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(collector_freep) struct collector *c = NULL;
        _cleanup_free_ struct import_event *events = NULL;
        _cleanup_free_ struct item *items = NULL;
        _cleanup_free_ uint8_t *buf = malloc(65536);
        struct collector_config config = COLLECTOR_CONFIG_DEFAULT;
        struct collector_stats stats;
        size_t n_items = 0, cap_items = 0;
        uint64_t offset = 0, seq = 0, first = 0, last = 0, bad = 0, total_samples = 0;
        const struct perf_event_header *h;
        bool dwarf = false;
        struct stat st;
        int r;

        if (!buf)
                return exit_status(log_error_errno(ENOMEM, "Out of memory"));
        r = perf_data_open(path, &d);
        if (r == -ENOENT || r == -EACCES)
                return exit_status(log_error_errno(EIO, "%s: %s", path, strerror(-r)));
        if (r < 0) {
                log_error("%s: %s", path, perf_data_last_error());
                return EXIT_FAILURE_;
        }
        events = calloc(d->n_events, sizeof *events);
        if (!events)
                return exit_status(log_error_errno(ENOMEM, "Out of memory"));

        /* First pass: the data must read to its end before anything is stored; and the mean
         * period of events sampled by frequency. */
        for (size_t i = 0; i < d->n_events; i++) {
                events[i].event = &d->events[i];
                event_name(&d->events[i], i, events[i].name, sizeof events[i].name);
                if (d->events[i].attr.sample_type & PERF_SAMPLE_STACK_USER)
                        dwarf = true;
        }
        while ((r = perf_data_next(d, &offset, &h)) > 0) {
                const struct perf_data_event *e;
                struct perf_data_sample smp;
                uint64_t t = perf_data_record_time(d, h);

                if (t && (!first || t < first))
                        first = t;
                last = MAX(last, t);
                if (h->type != PERF_RECORD_SAMPLE || !(e = perf_data_sample_event(d, h)) ||
                    perf_data_parse_sample(e, h, &smp) < 0)
                        continue;
                events[e - d->events].carry += smp.period;      /* the sum, for now */
                events[e - d->events].samples++;
                total_samples++;
        }
        if (r < 0) {
                log_error("%s: %s; nothing was stored", path, d->error);
                return EXIT_FAILURE_;
        }
        if (total_samples == 0) {
                log_error("%s: no samples that cppd can read; nothing was stored", path);
                return EXIT_EMPTY;
        }

        config.unwind = dwarf ? UNWIND_DWARF : UNWIND_FP;
        config.kernel = kernel;
        r = store_open(db, STORE_WRITE, &s);
        if (r < 0)
                return exit_status(log_store_error(r, db, s));
        r = collector_new(&config, s, &c);
        if (r < 0)
                return exit_status(log_error_errno(r, "Cannot set up the collector: %m"));
        for (size_t i = 0; i < d->n_events; i++) {
                struct import_event *ie = &events[i];
                const struct perf_event_attr *a = &d->events[i].attr;
                char what[128];

                ie->period = a->freq ? (ie->samples ? ie->carry / ie->samples : 1) : a->sample_period;
                if (ie->period == 0)
                        ie->period = 1;
                ie->carry = 0;
                ie->samples = 0;
                snprintf(what, sizeof what, "perf.data:%s", d->events[i].name ?: ie->name);
                r = collector_add_offline_resource(c, ie->name, event_unit(&d->events[i], ie->name), what,
                                                   ie->period, &ie->id);
                if (r == -EEXIST) {
                        /* Two events of one name (cycles:u and cycles:k): tell them apart. */
                        size_t len = strlen(ie->name);

                        snprintf(ie->name + len, sizeof ie->name - len, "-%zu", i);
                        r = collector_add_offline_resource(c, ie->name, event_unit(&d->events[i], ie->name), what,
                                                           ie->period, &ie->id);
                }
                if (r < 0)
                        return exit_status(log_error_errno(r, "Cannot add resource %s: %m", ie->name));
        }
        collector_set_run(c, "import", d->cmdline ?: path);
        /* perf's clock is the boot's; the file was last written as the recording ended. */
        if (stat(path, &st) < 0)
                st.st_mtim = (struct timespec) { time(NULL), 0 };
        r = collector_set_origin(c, host ?: d->hostname,
                                 st.st_mtim.tv_sec - (int64_t) ((last - first) / 1000000000),
                                 (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec - (int64_t) last);
        if (r < 0)
                return exit_status(log_error_errno(r, "Out of memory"));

        /* Second pass: round by round, in time order. */
        offset = 0;
        while ((r = perf_data_next(d, &offset, &h)) > 0) {
                if (h->type == PERF_RECORD_FINISHED_ROUND) {
                        r = feed_round(c, d, events, items, n_items, dwarf, buf, &bad);
                        if (r < 0)
                                break;
                        n_items = 0;
                        continue;
                }
                if (n_items == cap_items) {
                        size_t cap = cap_items ? 2 * cap_items : 4096;
                        struct item *a = realloc(items, cap * sizeof *a);

                        if (!a)
                                return exit_status(log_error_errno(ENOMEM, "Out of memory"));
                        items = a;
                        cap_items = cap;
                }
                items[n_items++] = (struct item) { perf_data_record_time(d, h), seq++, h };
        }
        if (r >= 0)
                r = feed_round(c, d, events, items, n_items, dwarf, buf, &bad);
        if (r < 0) {
                log_error_errno(r, "Cannot import %s: %m; nothing was stored", path);
                return EXIT_FAILURE_;
        }
        r = collector_flush(c, true);
        if (r < 0)
                return exit_status(log_store_error(r, db, s));

        collector_get_stats(c, &stats);
        printf("Imported %s into %s as run %" PRId64 " (%s unwinding, %s%s):\n", path, db, collector_run_id(c),
               dwarf ? "DWARF" : "frame-pointer", d->hostname ? "recorded on " : "", d->hostname ?: "host unknown");
        for (size_t i = 0; i < d->n_events; i++)
                printf("  %-20s %" PRIu64 " samples, %" PRIu64 " hits of %" PRIu64 " %s\n", events[i].name,
                       events[i].samples, events[i].hits, events[i].period,
                       event_unit(&d->events[i], events[i].name) + 2);
        if (bad)
                printf("  %" PRIu64 " samples could not be read and were left out\n", bad);
        if (stats.frames)
                printf("  %.1f%% of frames unsymbolized\n", 100.0 * (double) stats.frames_unknown / (double) stats.frames);
        return EXIT_OK;
}
