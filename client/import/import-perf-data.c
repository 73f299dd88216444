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
 * Samples are decoded here and handed to the collector as struct record_sample, with the user
 * registers it unwinds with picked out of perf's larger set; their stacks are not copied. The
 * binaries are read from this machine, by the paths in the recording, as perf report does.
 *
 * Losses come in two records that count the same dropped samples: PERF_RECORD_LOST, written
 * into a ring by the kernel once it has room again (so the last ones of a recording may never
 * be written), and PERF_RECORD_LOST_SAMPLES, which perf record (6.0 on) writes at the end from
 * each event's own lost counter. Neither sum always covers the other (files of syscallstorm
 * under -m 1: 6,084 in LOST records against 6,244 in LOST_SAMPLES, and 4,734 against 4,733), so
 * each event's loss is the larger, charged to its resource, and every header says how many
 * samples the file does not hold. */
#include "import-perf-data.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "collector.h"
#include "grow.h"
#include "log.h"
#include "perf-data.h"
#include "perf-record.h"
#include "report.h"
#include "resource.h"
#include "store-error.h"
#include "unwind.h"

#define PERF_RECORD_FINISHED_ROUND 68

/* What a record's time may be: perf's clocks (boot-relative by default, or CLOCK_REALTIME with
 * -k) are far below 2^62 ns (146 years); a time past it is a damaged file, and would place
 * samples centuries away. */
#define IMPORT_MAX_TIME_NS (UINT64_C(1) << 62)
/* The longest recording believed: a year. A wider spread of times means damaged times, which
 * would put samples in the wrong centuries' buckets. */
#define IMPORT_MAX_SPAN_NS (UINT64_C(366) * 24 * 3600 * 1000000000)

struct import_event {
        const struct perf_data_event *event;
        uint64_t id;     /* the collector's sample id */
        uint64_t period; /* P, in the event's units */
        uint64_t carry;  /* periods not yet a whole hit */
        uint64_t samples, hits;
        uint64_t lost_records, lost_samples; /* sums of PERF_RECORD_LOST, _LOST_SAMPLES */
        uint64_t gticks;                     /* the periods' sum: what the store will hold of it */
        char name[64];
};

struct item {
        uint64_t time;
        uint64_t offset; /* in the data section: file order, for ties */
};

static int item_cmp(const void *a, const void *b) {
        const struct item *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->offset < y->offset ? -1 : x->offset > y->offset;
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

        if (e->attr.type == PERF_TYPE_SOFTWARE && e->attr.config < ELEMENTSOF(software) &&
            software[e->attr.config])
                snprintf(buf, size, "%s", software[e->attr.config]);
        else if (e->name)
                snprintf(buf, size, "%.*s", (int) strcspn(e->name, ":/"), e->name);
        else
                snprintf(buf, size, "event-%zu", index);
        for (char *p = buf; *p; p++) /* the store's resource names: [a-z0-9:_.-] */
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

/* Sample S of event IE as the collector takes it: its id, and the user registers it unwinds with,
 * picked out of perf's set into REGS (UNWIND_N_REGS) in UNWIND_REGS_MASK's order. The stack is
 * not copied: it points into the record. */
static void to_record_sample(const struct import_event *ie, const struct perf_data_sample *s, bool dwarf,
                             uint64_t *regs, struct record_sample *ret) {
        uint64_t mask = ie->event->attr.sample_regs_user;
        bool have = dwarf && s->regs && s->abi != 0 && (mask & UNWIND_REGS_MASK) == UNWIND_REGS_MASK;
        unsigned n = 0;

        for (unsigned bit = 0; have && bit < 64; bit++)
                if (UNWIND_REGS_MASK & (UINT64_C(1) << bit))
                        regs[n++] = s->regs[__builtin_popcountll(mask & ((UINT64_C(1) << bit) - 1))];
        *ret = (struct record_sample) {
                .id = ie->id,
                .ip = s->ip,
                .pid = s->pid,
                .tid = s->tid,
                .time = s->time,
                .nr = s->nr,
                .ips = s->ips,
                .abi = have ? s->abi : 0,
                .regs = have ? regs : NULL,
                .stack_size = have && s->stack ? s->stack_size : 0,
                .stack = have ? s->stack : NULL,
                .dyn_size = have && s->stack ? s->dyn_size : 0,
        };
}

/* Feeds the records of ITEMS[0..n), all held in D's window, to the collector in time order. */
static int feed_round(struct collector *c, struct perf_data *d, struct import_event *events,
                      struct item *items, size_t n, bool dwarf, uint64_t *bad) {
        uint64_t regs[UNWIND_N_REGS + 1];

        qsort(items, n, sizeof *items, item_cmp);
        for (size_t i = 0; i < n; i++) {
                const struct perf_event_header *h = perf_data_record(d, items[i].offset);
                const struct perf_data_event *e;
                struct import_event *ie;
                struct perf_data_sample s;
                struct record_sample rs;
                uint64_t hits, lost;
                int r;

                r = perf_data_parse_lost(d, h, &e, &lost);
                if (r < 0)
                        (*bad)++;
                if (r > 0) {
                        ie = &events[e ? (size_t) (e - d->events) : 0];
                        if (h->type == PERF_RECORD_LOST)
                                ie->lost_records += lost;
                        else
                                ie->lost_samples += lost;
                }
                if (r != 0)
                        continue;
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
                        return log_error_errno(
                                r, "%s: samples with fields cppd cannot read (perf record -s or -b)",
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
                to_record_sample(ie, &s, dwarf, regs, &rs);
                ie->hits += hits;
                r = collector_feed_sample(c, &rs, hits);
                if (r < 0)
                        return r;
        }
        return 0;
}

int import_perf_data(const char *path, const char *db, bool kernel, bool lines, const char *host) {
        _cleanup_(perf_data_freep) struct perf_data *d = NULL;
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(collector_freep) struct collector *c = NULL;
        _cleanup_free_ struct import_event *events = NULL;
        _cleanup_free_ struct item *items = NULL;
        struct collector_config config = COLLECTOR_CONFIG_DEFAULT;
        struct collector_stats stats;
        size_t n_items = 0, cap_items = 0;
        uint64_t offset = 0, first = 0, last = 0, bad = 0, total_samples = 0;
        const struct perf_event_header *h;
        bool dwarf = false;
        struct stat st;
        int r;

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
                /* Only the events that asked write build ids into MMAP2 (record.h). */
                if (d->events[i].attr.build_id)
                        config.mmap_build_ids = true;
        }
        while ((r = perf_data_next(d, &offset, &h)) > 0) {
                const struct perf_data_event *e;
                struct perf_data_sample smp;
                struct import_event *ie;
                uint64_t t = perf_data_record_time(d, h);

                if (t > IMPORT_MAX_TIME_NS) {
                        log_error("%s: the record at data offset %" PRIu64 " says its time is %" PRIu64
                                  " ns, "
                                  "past any clock perf records with: a damaged file; nothing was stored",
                                  path, offset - h->size, t);
                        return EXIT_FAILURE_;
                }
                if (t && (!first || t < first))
                        first = t;
                last = MAX(last, t);
                if (h->type != PERF_RECORD_SAMPLE || !(e = perf_data_sample_event(d, h)) ||
                    perf_data_parse_sample(e, h, &smp) < 0)
                        continue;
                ie = &events[e - d->events];
                /* Every sum a view takes must fit: the periods add up to the hits stored. */
                if (__builtin_add_overflow(ie->gticks, smp.period, &ie->gticks) ||
                    ie->gticks > STORE_MAX_GTICKS) {
                        log_error(
                                "%s: the periods of event %s add up to more than 2^62 (at data offset %" PRIu64
                                "): a damaged file; nothing was stored",
                                path, ie->name, offset - h->size);
                        return EXIT_FAILURE_;
                }
                ie->carry += smp.period; /* the sum, for now */
                ie->samples++;
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
        if (last - first > IMPORT_MAX_SPAN_NS) {
                log_error("%s: the records' times spread over %.0f days (from %" PRIu64 " to %" PRIu64
                          " ns), "
                          "longer than any recording: damaged times; nothing was stored",
                          path, (double) (last - first) / 86400e9, first, last);
                return EXIT_FAILURE_;
        }

        config.unwind = dwarf ? UNWIND_DWARF : UNWIND_FP;
        config.kernel = kernel;
        config.function_frames = !lines;
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
                        r = collector_add_offline_resource(c, ie->name, event_unit(&d->events[i], ie->name),
                                                           what, ie->period, &ie->id);
                }
                if (r < 0)
                        return exit_status(log_error_errno(r, "Cannot add resource %s: %m", ie->name));
        }
        for (size_t i = 0; i < d->n_events; i++) {
                uint64_t have;

                r = store_resource_gticks(s, events[i].name, &have);
                if (r < 0)
                        return exit_status(log_store_error(r, db, s));
                if (have > STORE_MAX_GTICKS || events[i].gticks > STORE_MAX_GTICKS - have) {
                        log_error("%s: with its %" PRIu64
                                  " gticks of %s, %s would hold more than 2^62, past what "
                                  "views can sum; nothing was stored",
                                  path, events[i].gticks, events[i].name, db);
                        return EXIT_FAILURE_;
                }
        }
        collector_set_run(c, "import", d->cmdline ?: path);
        /* perf's clock is the boot's; the file was last written as the recording ended. */
        if (stat(path, &st) < 0)
                st.st_mtim = (struct timespec) { time(NULL), 0 };
        r = collector_set_origin(c, host ?: d->hostname,
                                 st.st_mtim.tv_sec - (int64_t) ((last - first) / 1000000000),
                                 (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec -
                                         (int64_t) last);
        if (r < 0)
                return exit_status(log_error_errno(r, "Out of memory"));

        /* Second pass: round by round, in time order, each round held in the reader's window. */
        offset = 0;
        perf_data_hold(d, 0);
        for (uint64_t at = 0; (r = perf_data_next(d, &offset, &h)) > 0; at = offset) {
                if (h->type == PERF_RECORD_FINISHED_ROUND) {
                        r = feed_round(c, d, events, items, n_items, dwarf, &bad);
                        if (r < 0)
                                break;
                        n_items = 0;
                        perf_data_hold(d, offset);
                        continue;
                }
                if (GROW(items, cap_items, n_items + 1) < 0)
                        return exit_status(log_error_errno(ENOMEM, "Out of memory"));
                items[n_items++] = (struct item) { perf_data_record_time(d, h), at };
        }
        if (r >= 0)
                r = feed_round(c, d, events, items, n_items, dwarf, &bad);
        if (r < 0) {
                log_error_errno(r, "Cannot import %s: %m; nothing was stored", path);
                return EXIT_FAILURE_;
        }
        for (size_t i = 0; i < d->n_events; i++) {
                /* The collector counts losses as the rings report them: a LOST record of our id. */
                struct {
                        struct perf_event_header h;
                        uint64_t id, lost;
                } lost = {
                        .h = { .type = PERF_RECORD_LOST, .size = sizeof lost },
                        .id = events[i].id,
                        .lost = MAX(events[i].lost_records, events[i].lost_samples),
                };

                if (lost.lost > 0 && (r = collector_feed(c, &lost.h, 0)) < 0)
                        return exit_status(
                                log_error_errno(r, "Cannot import %s: %m; nothing was stored", path));
        }
        r = collector_flush(c, true);
        if (r < 0)
                return exit_status(log_store_error(r, db, s));

        collector_get_stats(c, &stats);
        printf("Imported %s into %s as run %" PRId64 " (%s unwinding, %s%s):\n", path, db,
               collector_run_id(c), dwarf ? "DWARF" : "frame-pointer", d->hostname ? "recorded on " : "",
               d->hostname ?: "host unknown");
        for (size_t i = 0; i < d->n_events; i++)
                printf("  %-20s %" PRIu64 " samples, %" PRIu64 " hits of %" PRIu64 " %s; "
                       "%" PRIu64 " samples lost\n",
                       events[i].name, events[i].samples, events[i].hits, events[i].period,
                       event_unit(&d->events[i], events[i].name) + 2,
                       MAX(events[i].lost_records, events[i].lost_samples));
        if (bad)
                printf("  %" PRIu64 " samples could not be read and were left out\n", bad);
        if (stats.frames)
                printf("  %.1f%% of frames unsymbolized\n",
                       100.0 * (double) stats.frames_unknown / (double) stats.frames);
        return EXIT_OK;
}
