/* cppctl import --folded FILE: stores a folded-stacks file as one run of one resource. The whole
 * file goes in one transaction, so a bad line (reported with its number) or a full disk leaves
 * the store exactly as it was. Hits are summed per distinct stack in memory first, so a
 * file of a million lines over a hundred thousand stacks writes a hundred thousand rows. */
#include "import-folded.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "folded.h"
#include "idmap.h"
#include "log.h"
#include "name-table.h"
#include "read-line.h"
#include "report.h"
#include "resource.h"
#include "store-error.h"

/* Samples are grouped in time buckets of this many seconds (an import is one bucket). */
#define IMPORT_BUCKET_SECONDS 60

struct import_state {
        struct store *store;
        int64_t resource_id, thread_id;
        struct idmap *hits;          /* stack id -> hits */
        struct name_table *texts;    /* the frames text of each distinct line... */
        struct idmap *stack_of_text; /* ...text id -> its stack id, so a repeat costs one lookup */
        uint64_t lines, samples;
        uint64_t gticks; /* the resource's in the store, this file's lines included */
        char name[FOLDED_MAX_NAME + 1];
        struct folded_frame frames[FOLDED_MAX_FRAMES];
};

/* Adds one parsed line. Returns 0 or a negative errno. */
static int import_stack(struct import_state *st, size_t n, uint64_t count) {
        const char *text = st->frames[0].name;
        size_t len = st->frames[n - 1].name + st->frames[n - 1].len - text;
        int64_t parent = 0, fn, frame, text_id;
        uint64_t *slot, *cached;
        int r;

        text_id = name_table_intern(st->texts, text, len);
        if (text_id < 0)
                return text_id;
        r = idmap_put(st->stack_of_text, text_id, 0, &cached);
        if (r < 0)
                return r;
        if (r == 0)
                parent = *cached;
        for (size_t i = 0; r > 0 && i < n; i++) {
                memcpy(st->name, st->frames[i].name, st->frames[i].len);
                st->name[st->frames[i].len] = '\0';
                r = store_function_id(st->store, st->name, 0, false, &fn);
                if (r < 0)
                        return r;
                r = store_frame_id(st->store, fn, -1, NULL, 0, false, &frame);
                if (r < 0)
                        return r;
                r = store_stack_id(st->store, parent, frame, &parent);
                if (r < 0)
                        return r;
                r = 1;
        }
        /* The store's caches may have grown: look the slot up again. */
        cached = idmap_get(st->stack_of_text, text_id);
        *cached = parent;

        r = idmap_put(st->hits, parent, 0, &slot);
        if (r < 0)
                return r;
        *slot += count; /* import_file() bounded the sum */
        st->samples += count;
        return 0;
}

static int import_file(struct import_state *st, const struct import_folded_args *a, FILE *f) {
        _cleanup_free_ char *line = NULL;
        size_t cap = 0, n_frames;
        uint64_t count, gticks;
        ssize_t len;
        int r;

        while ((len = read_line(f, READ_LINE_MAX, &line, &cap)) > 0) {
                st->lines++;
                r = folded_parse_line(line, len, st->frames, &n_frames, &count);
                if (r == -E2BIG)
                        return log_error_errno(EBADMSG, "%s:%" PRIu64 ": more than %u frames", a->file,
                                               st->lines, FOLDED_MAX_FRAMES);
                if (r == -EILSEQ)
                        return log_error_errno(EBADMSG,
                                               "%s:%" PRIu64 ": a NUL byte at byte %zu of the line "
                                               "(a binary file?)",
                                               a->file, st->lines,
                                               (size_t) ((const char *) memchr(line, '\0', len) - line) + 1);
                if (r == -ERANGE)
                        return log_error_errno(EBADMSG, "%s:%" PRIu64 ": a count past %" PRId64 " (2^63 - 1)",
                                               a->file, st->lines, FOLDED_MAX_COUNT);
                if (r < 0)
                        return log_error_errno(EBADMSG,
                                               "%s:%" PRIu64 ": expected 'f1;f2;...;fn COUNT' "
                                               "(frames root first, non-empty, then a space and a count)",
                                               a->file, st->lines);
                if (r == 0 || count == 0)
                        continue;
                /* Every sum of hits a view takes must fit (STORE_MAX_GTICKS): refuse the line that
                 * would pass the bound, with what the store holds already. */
                if (__builtin_mul_overflow(count, a->period, &gticks) || st->gticks > STORE_MAX_GTICKS ||
                    gticks > STORE_MAX_GTICKS - st->gticks)
                        return log_error_errno(EBADMSG,
                                               "%s:%" PRIu64 ": the counts would add up to more than 2^62 "
                                               "gticks of %s (%" PRIu64 " samples every %" PRIu64
                                               " gticks, with "
                                               "the store's own and the lines before)",
                                               a->file, st->lines, a->resource, count, a->period);
                st->gticks += gticks;
                r = import_stack(st, n_frames, count);
                if (r < 0)
                        return log_store_error(r, a->db, st->store);
        }
        /* A line past the bound is refused as it is read: a newline-free stream (/dev/zero)
         * must not take all memory before the parser sees it. */
        if (len == -E2BIG)
                return log_error_errno(EBADMSG, "%s:%" PRIu64 ": line longer than %u bytes", a->file,
                                       st->lines + 1, READ_LINE_MAX);
        if (len == -ENOMEM)
                return log_error_errno(ENOMEM, "Out of memory");
        if (len < 0 || ferror(f))
                return log_error_errno(errno ?: EIO, "%s: read failed: %m", a->file);
        return 0;
}

int import_folded(const struct import_folded_args *a) {
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(idmap_freep) struct idmap *hits = NULL, *stack_of_text = NULL;
        _cleanup_(name_table_freep) struct name_table *texts = NULL;
        _cleanup_free_ struct import_state *st = NULL;
        _cleanup_free_ char *base = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        const struct resource *known;
        int64_t run, process, now = time(NULL);
        uint64_t key, value;
        size_t i = 0;
        int r;

        if (a->time > 0)
                now = a->time;

        if (streq(a->file, "-"))
                f = fdopen(dup(STDIN_FILENO), "re");
        else
                f = fopen(a->file, "re");
        if (!f) {
                log_error_errno(errno, "%s: %m", a->file);
                return EXIT_FAILURE_;
        }

        known = resource_find(a->resource);
        if (known && a->unit && !streq(a->unit, known->unit))
                log_warning("--unit ignored: %s is counted in gticks of %s", a->resource, known->unit);

        r = store_open(a->db, STORE_WRITE, &s);
        if (r < 0)
                return exit_status(log_store_error(r, a->db, s));

        st = calloc(1, sizeof *st);
        hits = idmap_new();
        texts = name_table_new();
        stack_of_text = idmap_new();
        base = strdup(a->file);
        if (!st || !hits || !texts || !stack_of_text || !base) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        st->store = s;
        st->hits = hits;
        st->texts = texts;
        st->stack_of_text = stack_of_text;

        r = store_begin(s);
        if (r < 0)
                return exit_status(log_store_error(r, a->db, s));
        r = store_add_run(s,
                          &(struct store_run) { .kind = "import",
                                                .command = a->command,
                                                .source = a->file,
                                                .started = now,
                                                .host = a->host },
                          &run);
        if (r >= 0)
                r = store_add_run_resource(s, run, a->resource,
                                           known           ? known->unit :
                                                   a->unit ?:
                                                             "1 event",
                                           "folded", a->period, &st->resource_id);
        if (r >= 0)
                r = store_add_process(s, run, -1, basename(base), NULL, a->service, now, &process);
        if (r >= 0)
                r = store_add_thread(s, process, -1, NULL, &st->thread_id);
        if (r >= 0)
                r = store_resource_gticks(s, a->resource, &st->gticks);
        if (r < 0) {
                log_store_error(r, a->db, s);
                return EXIT_FAILURE_;
        }

        r = import_file(st, a, f);
        if (r < 0) {
                store_rollback(s);
                log_error("Nothing was imported.");
                return EXIT_FAILURE_;
        }

        while (idmap_next(hits, &i, &key, &value)) {
                r = store_add_samples(s, st->resource_id, now - now % IMPORT_BUCKET_SECONDS, st->thread_id,
                                      key, value, value, value);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                r = store_end_run(s, run, a->time > 0 ? a->time : time(NULL));
        if (r >= 0)
                r = store_commit(s);
        if (r < 0) {
                store_rollback(s);
                log_store_error(r, a->db, s);
                log_error("Nothing was imported.");
                return EXIT_FAILURE_;
        }

        if (st->samples == 0)
                log_warning("%s: no samples (empty, or only comments and zero counts)", a->file);
        printf("Imported %" PRIu64 " samples of %s (%zu distinct stacks) from %s into %s as run %" PRId64
               ".\n",
               st->samples, a->resource, idmap_size(hits), a->file, a->db, run);
        return EXIT_OK;
}
