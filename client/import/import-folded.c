/* cppctl import --folded FILE: stores a folded-stacks file as one run of one resource. The whole
 * file goes in one transaction, so a bad line (reported with its number) or a full disk leaves
 * the store exactly as it was.
 *
 * A file may hold millions of distinct stacks, tens of millions of trie nodes: more than memory
 * should hold, as ids or as text. So the lines are read (a mebibyte at a time, split where they
 * lie) into stacks of frame ids, the functions and frames found or added as they come (a few
 * thousand distinct names: each is interned once and its frame id kept by the name's dense id,
 * so that a frame of a line costs one hash lookup, where the store's caches take three), and
 * sorted and summed in bounded memory (stack-sort.c). In that order the trie is written keeping
 * only the path to the last stack: a stack shares a prefix with the one before it, and below a
 * node this import added there can be no node it has not added, so only the children of nodes
 * that were there before are looked up, and a node's children go in one after another, at the
 * end of the stack table and its index. Each distinct stack is one sample row. Into a new store
 * the transaction writes the file in place (store_begin_bulk()): each page once, not to the log
 * and again at the checkpoint. */
#include "import-folded.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "folded.h"
#include "grow.h"
#include "log.h"
#include "name-table.h"
#include "read-line.h"
#include "report.h"
#include "resource.h"
#include "stack-sort.h"
#include "store-batch.h"
#include "store-error.h"

/* Samples are grouped in time buckets of this many seconds (an import is one bucket). */
#define IMPORT_BUCKET_SECONDS 60
/* The memory the stacks are sorted in before they are spilled to a temporary file. */
#define IMPORT_SORT_MEMORY (64u << 20)
/* The store's pages kept in memory while the transaction writes. */
#define IMPORT_CACHE_MEMORY (64u << 20)

static_assert(FOLDED_MAX_FRAMES <= STACK_SORT_MAX_IDS, "a folded line is one stack to sort");

struct import_state {
        struct store *store;
        struct stack_sort *sort;
        struct store_batch *batch;
        int64_t resource_id, thread_id, bucket;
        uint64_t lines, samples, stacks;
        uint64_t gticks; /* the resource's in the store, this file's lines included */
        char name[FOLDED_MAX_NAME + 1];
        struct name_table *names; /* the file's frame names */
        uint32_t *frame_ids;      /* by name id: the frame's id in the store */
        size_t n_frame_ids, cap_frame_ids;
        struct folded_frame frames[FOLDED_MAX_FRAMES];
        uint32_t ids[FOLDED_MAX_FRAMES]; /* the frame ids of the line */
        /* Writing: the last stack written, its frame ids and its nodes' ids, and whether each node
         * was added by this import (so that its children cannot be in the store yet). */
        uint32_t path_frames[FOLDED_MAX_FRAMES], path[FOLDED_MAX_FRAMES];
        bool added[FOLDED_MAX_FRAMES];
        size_t path_n;
};

static void import_state_freep(struct import_state **p) {
        if (*p)
                free((*p)->frame_ids);
        free(*p);
}

/* Sets *RET to the store's id of the frame named by F, found or added. Returns 0 or a negative
 * errno. */
static int frame_id(struct import_state *st, const struct folded_frame *f, uint32_t *ret) {
        int64_t name, fn, frame;
        int r;

        name = name_table_intern(st->names, f->name, f->len);
        if (name < 0)
                return (int) name;
        if ((size_t) name < st->n_frame_ids) {
                *ret = st->frame_ids[name];
                return 0;
        }
        assert((size_t) name == st->n_frame_ids); /* ids count up from 0 */
        r = GROW(st->frame_ids, st->cap_frame_ids, st->n_frame_ids + 1);
        if (r < 0)
                return r;
        memcpy(st->name, f->name, f->len);
        st->name[f->len] = '\0';
        r = store_function_id(st->store, st->name, 0, false, &fn);
        if (r >= 0)
                r = store_frame_id(st->store, fn, -1, NULL, 0, false, &frame);
        if (r < 0)
                return r;
        st->frame_ids[st->n_frame_ids++] = (uint32_t) frame; /* the store's ids fit in 32 bits */
        *ret = (uint32_t) frame;
        return 0;
}

/* Adds one parsed line of N frames to the stacks to sort. Returns 0 or a negative errno, logged. */
static int import_stack(struct import_state *st, const struct import_folded_args *a, size_t n,
                        uint64_t count) {
        int r;

        for (size_t i = 0; i < n; i++) {
                r = frame_id(st, &st->frames[i], &st->ids[i]);
                if (r < 0)
                        return log_store_error(r, a->db, st->store);
        }
        r = stack_sort_add(st->sort, st->ids, n, count);
        if (r < 0)
                return log_error_errno(
                        r, "Cannot sort the stacks in a temporary file (in $TMPDIR, else /tmp): %m");
        st->samples += count;
        return 0;
}

/* Writes one distinct stack, FRAMES[0..n), and its COUNT (the sorted order's next). */
static int write_stack(struct import_state *st, const uint32_t *frames, size_t n, uint64_t count) {
        size_t same = 0;
        int64_t id;
        int r;

        while (same < n && same < st->path_n && frames[same] == st->path_frames[same])
                same++;
        for (size_t i = same; i < n; i++) {
                int64_t parent = i > 0 ? st->path[i - 1] : 0;

                r = 0;
                if (i == 0 || !st->added[i - 1])
                        r = store_batch_find_stack(st->batch, parent, frames[i], &id);
                if (r == 0)
                        r = store_batch_add_stack(st->batch, parent, frames[i], i + 1, &id);
                if (r < 0)
                        return r;
                st->path_frames[i] = frames[i];
                st->path[i] = (uint32_t) id;
                st->added[i] = r == 0;
        }
        st->path_n = n;
        st->stacks++;
        return store_batch_add_samples(st->batch, st->resource_id, st->bucket, st->thread_id, st->path[n - 1],
                                       count, count, count);
}

/* Writes the sorted stacks. Returns 0 or a negative errno, logged. */
static int write_stacks(struct import_state *st, const struct import_folded_args *a) {
        _cleanup_(store_batch_freep) struct store_batch *batch = NULL;
        const uint32_t *frames;
        uint64_t count;
        size_t n;
        int r;

        r = store_batch_new(st->store, &batch);
        if (r < 0)
                return log_store_error(r, a->db, st->store);
        st->batch = batch;
        while ((r = stack_sort_next(st->sort, &frames, &n, &count)) > 0) {
                r = write_stack(st, frames, n, count);
                if (r < 0)
                        return log_store_error(r, a->db, st->store);
        }
        if (r < 0)
                return log_error_errno(r, "Cannot read back the sorted stacks from their temporary file: %m");
        r = store_batch_finish(batch);
        if (r < 0)
                return log_store_error(r, a->db, st->store);
        return 0;
}

static int import_file(struct import_state *st, const struct import_folded_args *a, FILE *f) {
        _cleanup_(line_reader_freep) struct line_reader *reader = line_reader_new(f, READ_LINE_MAX);
        const char *line;
        size_t n_frames;
        uint64_t count, gticks;
        ssize_t len;
        int r;

        if (!reader)
                return log_error_errno(ENOMEM, "Out of memory");
        while ((len = line_reader_next(reader, &line)) > 0) {
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
                r = import_stack(st, a, n_frames, count);
                if (r < 0)
                        return r;
        }
        /* A line past the bound is refused as it is read: a newline-free stream (/dev/zero)
         * must not take all memory before the parser sees it. */
        if (len == -E2BIG)
                return log_error_errno(EBADMSG, "%s:%" PRIu64 ": line longer than %u bytes", a->file,
                                       st->lines + 1, READ_LINE_MAX);
        if (len == -ENOMEM)
                return log_error_errno(ENOMEM, "Out of memory");
        if (len < 0)
                return log_error_errno(errno ?: EIO, "%s: read failed: %m", a->file);
        return 0;
}

int import_folded(const struct import_folded_args *a) {
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(stack_sort_freep) struct stack_sort *sort = NULL;
        _cleanup_(name_table_freep) struct name_table *names = NULL;
        _cleanup_(import_state_freep) struct import_state *st = NULL;
        _cleanup_free_ char *base = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        const struct resource *known;
        int64_t run, process, now = time(NULL);
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
        sort = stack_sort_new(IMPORT_SORT_MEMORY);
        names = name_table_new();
        base = strdup(a->file);
        if (!st || !sort || !names || !base) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        st->store = s;
        st->sort = sort;
        st->names = names;
        st->bucket = now - now % IMPORT_BUCKET_SECONDS;

        r = store_set_cache(s, IMPORT_CACHE_MEMORY);
        if (r >= 0)
                r = store_begin_bulk(s);
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

        r = write_stacks(st, a);
        if (r < 0) {
                store_rollback(s);
                log_error("Nothing was imported.");
                return EXIT_FAILURE_;
        }
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
        printf("Imported %" PRIu64 " samples of %s (%" PRIu64
               " distinct stacks) from %s into %s as run %" PRId64 ".\n",
               st->samples, a->resource, st->stacks, a->file, a->db, run);
        return EXIT_OK;
}
