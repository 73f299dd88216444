/* Building and sending batches. A batch is one closed time bucket of one run: the unit that a
 * host flushes, that a retry repeats and that the marker row in `batches` names, so that a retry
 * never counts twice (schemas/README.md, "ClickHouse fleet store").
 *
 * Building reads the host's SQLite store in one read transaction: the run and its resources,
 * the bucket's sample rows with their process and thread, and the stacks those rows end in,
 * walked from the stored trie to root-first arrays with one recursive query. Each stack is
 * named by the 64-bit FNV-1a hash of its frames, so every host names the same stack alike and
 * ClickHouse keeps one row per stack however many hosts send it (ReplacingMergeTree by hash).
 *
 * This file reads the store's tables directly (through store-internal.h): it is the store's
 * second reader, beside store-read.c, and shares its one connection and snapshot rules. */
#include "ch-write.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grow.h"
#include "idmap.h"
#include "store-internal.h"
#include "store.h"

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
        const unsigned char *p = data;

        for (size_t i = 0; i < n; i++) {
                h ^= p[i];
                h *= FNV_PRIME;
        }
        return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) {
        return fnv(h, s ?: "", strlen(s ?: "") + 1); /* with its NUL: "ab","c" differs from "a","bc" */
}

/* The hash covers every field a view may read, each string with its NUL and the numbers in
 * decimal, frames root first and each ended by 0x1e: so it does not depend on byte order. */
uint64_t ch_stack_hash(const struct ch_frame *frames, size_t n) {
        uint64_t h = FNV_OFFSET;

        for (size_t i = 0; i < n; i++) {
                const struct ch_frame *f = &frames[i];
                char num[64];
                int len;

                h = fnv_str(h, f->function);
                h = fnv_str(h, f->module);
                h = fnv_str(h, f->build_id);
                h = fnv_str(h, f->file);
                len = snprintf(num, sizeof num, "%" PRIu32 ",%" PRId64 ",%d,%d", f->line, f->address,
                               (int) f->inlined, (int) f->unknown);
                h = fnv(h, num, len);
                h = fnv(h, "\x1e", 1);
        }
        /* readers key maps by hash, and UINT64_MAX marks their empty slots */
        return h == UINT64_MAX ? h - 1 : h;
}

struct ch_batch *ch_batch_free(struct ch_batch *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n_tables; i++) {
                free(b->tables[i].table);
                free(b->tables[i].body);
        }
        free(b->tables);
        free(b->host);
        free(b);
        return NULL;
}

static int add_table_owned(struct ch_batch *b, const char *table, char *body, size_t len, uint64_t rows) {
        struct ch_batch_table *t;
        char *name = strdup(table);

        if (!name)
                return -ENOMEM;
        t = realloc(b->tables, (b->n_tables + 1) * sizeof *t);
        if (!t) {
                free(name);
                return -ENOMEM;
        }
        b->tables = t;
        b->tables[b->n_tables++] = (struct ch_batch_table) {
                .table = name,
                .body = body,
                .len = len,
                .rows = rows,
        };
        return 0;
}

int ch_batch_add_table(struct ch_batch *b, const char *table, const char *body, size_t len, uint64_t rows) {
        char *copy = malloc(len + 1);
        int r;

        if (!copy)
                return -ENOMEM;
        memcpy(copy, body, len);
        copy[len] = 0;
        r = add_table_owned(b, table, copy, len, rows);
        if (r < 0)
                free(copy);
        return r;
}

static int take_table(struct ch_batch *b, const char *table, struct ch_buf *buf, uint64_t rows) {
        size_t len;
        char *body = ch_buf_steal(buf, &len);
        int r;

        if (!body) {
                body = strdup("");
                if (!body)
                        return -ENOMEM;
        }
        r = add_table_owned(b, table, body, len, rows);
        if (r < 0)
                free(body);
        return r;
}

static const char *col_text(sqlite3_stmt *st, int i) {
        return (const char *) sqlite3_column_text(st, i) ?: "";
}

static int64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The run's row and its resources' rows, under HOST, UPDATED (unix ms) deciding which copy of a
 * row ClickHouse keeps. */
static int build_run(struct store *s, int64_t run_id, const char *host, int64_t updated, struct ch_batch *b) {
        _cleanup_(ch_buf_done) struct ch_buf runs = {}, rr = {};
        sqlite3_stmt *st = NULL;
        uint64_t n = 0;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT kind, ifnull(command, ''), ifnull(source, ''), kernel, cppd_version, "
                                "ifnull(unwind, ''), started, ifnull(ended, 0) FROM run WHERE id = ?",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, run_id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                int64_t started = sqlite3_column_int64(st, 6), ended = sqlite3_column_int64(st, 7);

                r = 0;
                if (started < 0 || started > UINT32_MAX || ended < 0 || ended > UINT32_MAX)
                        r = -EBADMSG;
                if (r >= 0)
                        r = ch_buf_tsv(&runs, host);
                if (r >= 0)
                        r = ch_buf_printf(&runs, "\t%" PRId64 "\t", run_id);
                for (int i = 0; i < 6 && r >= 0; i++) {
                        r = ch_buf_tsv(&runs, col_text(st, i));
                        if (r >= 0)
                                r = ch_buf_append(&runs, "\t", 1);
                }
                if (r >= 0)
                        r = ch_buf_printf(&runs, "%010" PRId64 "\t%010" PRId64 "\t%" PRId64 "\n", started,
                                          ended, updated);
        } else
                r = rc == SQLITE_DONE ? -ENOENT : store_errno(s, rc);
        sqlite3_finalize(st);
        if (r < 0)
                return r;

        rc = sqlite3_prepare_v2(
                s->db,
                "SELECT r.name, r.unit, ifnull(rr.event, ''), rr.period, rr.lost, rr.sampling, "
                "rr.thinned "
                "FROM run_resource AS rr JOIN resource AS r ON r.id = rr.resource_id "
                "WHERE rr.run_id = ? ORDER BY r.name",
                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, run_id);
        r = 0;
        while (r >= 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t period = sqlite3_column_int64(st, 3), lost = sqlite3_column_int64(st, 4);

                if (period <= 0 || lost < 0) {
                        r = -EBADMSG;
                        break;
                }
                r = ch_buf_tsv(&rr, host);
                if (r >= 0)
                        r = ch_buf_printf(&rr, "\t%" PRId64 "\t", run_id);
                for (int i = 0; i < 3 && r >= 0; i++) {
                        r = ch_buf_tsv(&rr, col_text(st, i));
                        if (r >= 0)
                                r = ch_buf_append(&rr, "\t", 1);
                }
                if (r >= 0)
                        r = ch_buf_printf(&rr, "%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t", period, lost,
                                          updated);
                if (r >= 0)
                        r = ch_buf_tsv(&rr, col_text(st, 5));
                if (r >= 0)
                        r = ch_buf_printf(&rr, "\t%" PRId64 "\n",
                                          MAX((int64_t) sqlite3_column_int64(st, 6), (int64_t) 1));
                n++;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_errno(s, rc);
        sqlite3_finalize(st);
        if (r < 0)
                return r;
        r = take_table(b, CH_TABLE_RUNS, &runs, 1);
        if (r < 0)
                return r;
        return take_table(b, CH_TABLE_RUN_RESOURCES, &rr, n);
}

/* A stack being collected from the recursive query: its frames root first. */
struct stack_frames {
        struct ch_frame *frames;
        size_t n, cap;
};

static int stack_frames_push(struct stack_frames *sf, const struct ch_frame *f) {
        int r = GROW(sf->frames, sf->cap, sf->n + 1);

        if (r < 0)
                return r;
        sf->frames[sf->n++] = *f;
        return 0;
}

/* Appends one stacks row: the hash, then each array in the table's column order. */
static int stack_row(struct ch_buf *out, uint64_t hash, const struct ch_frame *fr, size_t n) {
        int r = ch_buf_printf(out, "%" PRIu64 "\t", hash);

        for (int col = 0; col < 8 && r >= 0; col++) {
                r = ch_buf_append(out, "[", 1);
                for (size_t i = 0; i < n && r >= 0; i++) {
                        const struct ch_frame *f = &fr[i];

                        if (i > 0)
                                r = ch_buf_append(out, ",", 1);
                        if (r < 0)
                                break;
                        switch (col) {
                        case 0:
                        case 1:
                        case 2:
                        case 3:
                                /* A string in an array is a quoted literal; its escapes (\\t,
                                 * \\n, \\\\, \\') already keep tabs and newlines out of the
                                 * row, as ClickHouse writes arrays in TabSeparated itself. */
                                r = ch_buf_quote(out,
                                                 col == 0         ? f->function :
                                                         col == 1 ? f->module :
                                                         col == 2 ? f->build_id :
                                                                    f->file);
                                break;
                        case 4:
                                r = ch_buf_printf(out, "%" PRIu32, f->line);
                                break;
                        case 5:
                                r = ch_buf_printf(out, "%" PRId64, f->address);
                                break;
                        case 6:
                                r = ch_buf_printf(out, "%d", (int) f->inlined);
                                break;
                        case 7:
                                r = ch_buf_printf(out, "%d", (int) f->unknown);
                                break;
                        }
                }
                if (r >= 0)
                        r = ch_buf_append(out, col == 7 ? "]\n" : "]\t", 2);
        }
        return r;
}

static void free_frame_strings(struct stack_frames *sf) {
        for (size_t i = 0; i < sf->n; i++) {
                free((char *) sf->frames[i].function);
                free((char *) sf->frames[i].module);
                free((char *) sf->frames[i].build_id);
                free((char *) sf->frames[i].file);
        }
        sf->n = 0;
}

static void stack_frames_done(struct stack_frames *sf) {
        free_frame_strings(sf);
        sf->frames = mfree(sf->frames);
}

/* Emits the collected stack LEAF, remembers its hash in HASHES (stack id -> hash). Returns 1 if
 * there was one, 0 if none was collected, or a negative errno. */
static int flush_stack(struct stack_frames *sf, int64_t leaf, struct idmap *hashes, struct ch_buf *out) {
        uint64_t h, *slot;
        int r;

        if (sf->n == 0)
                return 0;
        h = ch_stack_hash(sf->frames, sf->n);
        r = stack_row(out, h, sf->frames, sf->n);
        if (r >= 0)
                r = idmap_put(hashes, (uint64_t) leaf, h, &slot);
        free_frame_strings(sf);
        return r < 0 ? r : 1;
}

static char *dup_or_null(const unsigned char *s) {
        return strdup(s ? (const char *) s : "");
}

/* The stacks the bucket's samples end in, walked root first; HASHES gets stack id -> hash. */
static int build_stacks(struct store *s, int64_t run_id, int64_t bucket, struct idmap *hashes,
                        struct ch_batch *b) {
        _cleanup_(ch_buf_done) struct ch_buf out = {};
        _cleanup_(stack_frames_done) struct stack_frames sf = {};
        sqlite3_stmt *st = NULL;
        int64_t leaf = 0, last_depth = 0;
        uint64_t n = 0;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(
                s->db,
                "WITH RECURSIVE used (id) AS ("
                "  SELECT DISTINCT s.stack_id FROM sample AS s "
                "  JOIN thread AS t ON t.id = s.thread_id JOIN process AS p ON p.id = t.process_id "
                "  WHERE p.run_id = ?1 AND s.bucket = ?2), "
                "walk (leaf, node) AS ("
                "  SELECT id, id FROM used "
                "  UNION ALL SELECT w.leaf, st.parent_id FROM walk AS w JOIN stack AS st ON st.id = w.node "
                "  WHERE st.parent_id IS NOT NULL) "
                "SELECT w.leaf, st.depth, fn.name, m.path, m.build_id, fr.file, ifnull(fr.line, 0), "
                "ifnull(fr.address, -1), fr.inlined, fn.unknown "
                "FROM walk AS w JOIN stack AS st ON st.id = w.node JOIN frame AS fr ON fr.id = st.frame_id "
                "JOIN function AS fn ON fn.id = fr.function_id LEFT JOIN module AS m ON m.id = fn.module_id "
                "ORDER BY w.leaf, st.depth",
                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, bucket);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0), depth = sqlite3_column_int64(st, 1);
                int64_t line = sqlite3_column_int64(st, 6);
                struct ch_frame f;

                if (id != leaf) {
                        r = flush_stack(&sf, leaf, hashes, &out);
                        if (r < 0)
                                break;
                        n += r;
                        leaf = id;
                        last_depth = 0;
                }
                /* depths 1, 2, ... without gaps, else the trie is damaged */
                if (depth != last_depth + 1 || line < 0 || line > UINT32_MAX) {
                        r = -EBADMSG;
                        break;
                }
                last_depth = depth;
                f = (struct ch_frame) {
                        .function = dup_or_null(sqlite3_column_text(st, 2)),
                        .module = dup_or_null(sqlite3_column_text(st, 3)),
                        .build_id = dup_or_null(sqlite3_column_text(st, 4)),
                        .file = dup_or_null(sqlite3_column_text(st, 5)),
                        .line = (uint32_t) line,
                        .address = sqlite3_column_int64(st, 7),
                        .inlined = sqlite3_column_int(st, 8) != 0,
                        .unknown = sqlite3_column_int(st, 9) != 0,
                };
                if (!f.function || !f.module || !f.build_id || !f.file) {
                        free((char *) f.function);
                        free((char *) f.module);
                        free((char *) f.build_id);
                        free((char *) f.file);
                        r = -ENOMEM;
                        break;
                }
                r = stack_frames_push(&sf, &f);
                if (r < 0)
                        break;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_errno(s, rc);
        sqlite3_finalize(st);
        if (r >= 0) {
                r = flush_stack(&sf, leaf, hashes, &out);
                n += r > 0;
        }
        if (r < 0)
                return r;
        return take_table(b, CH_TABLE_STACKS, &out, n);
}

static int build_samples(struct store *s, int64_t run_id, int64_t bucket, const char *host,
                         struct idmap *hashes, struct ch_batch *b) {
        _cleanup_(ch_buf_done) struct ch_buf out = {};
        sqlite3_stmt *st = NULL;
        uint64_t n = 0, hits_total = 0;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(
                s->db,
                "SELECT r.name, rr.period, ifnull(p.unit, ''), ifnull(p.pid, -1), ifnull(t.tid, -1), "
                "ifnull(p.comm, ''), ifnull(t.comm, ''), ifnull(p.exe, ''), s.stack_id, s.hits, "
                "s.samples, s.hits_squared "
                "FROM sample AS s JOIN thread AS t ON t.id = s.thread_id "
                "JOIN process AS p ON p.id = t.process_id "
                "JOIN resource AS r ON r.id = s.resource_id "
                "JOIN run_resource AS rr ON rr.run_id = p.run_id AND rr.resource_id = s.resource_id "
                "WHERE p.run_id = ?1 AND s.bucket = ?2",
                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, bucket);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t period = sqlite3_column_int64(st, 1), pid = sqlite3_column_int64(st, 3);
                int64_t tid = sqlite3_column_int64(st, 4), stack = sqlite3_column_int64(st, 8);
                int64_t hits = sqlite3_column_int64(st, 9), samples = sqlite3_column_int64(st, 10);
                int64_t squares = sqlite3_column_int64(st, 11);
                const uint64_t *hash = idmap_get(hashes, (uint64_t) stack);

                if (period <= 0 || hits < 0 || samples < 0 || squares < 0 || !hash) {
                        r = -EBADMSG;
                        break;
                }
                r = ch_buf_printf(&out, "%010" PRId64 "\t", bucket); /* 18.16 reads 10 digits only */
                if (r >= 0)
                        r = ch_buf_tsv(&out, host);
                if (r >= 0)
                        r = ch_buf_printf(&out, "\t%" PRId64 "\t%" PRId64 "\t", run_id, bucket);
                if (r >= 0)
                        r = ch_buf_tsv(&out, col_text(st, 0));
                if (r >= 0)
                        r = ch_buf_printf(&out, "\t%" PRId64 "\t", period);
                if (r >= 0)
                        r = ch_buf_tsv(&out, col_text(st, 2));
                if (r >= 0)
                        r = ch_buf_printf(&out, "\t%" PRId64 "\t%" PRId64 "\t", pid, tid);
                for (int i = 5; i <= 7 && r >= 0; i++) {
                        r = ch_buf_tsv(&out, col_text(st, i));
                        if (r >= 0)
                                r = ch_buf_append(&out, "\t", 1);
                }
                if (r >= 0)
                        r = ch_buf_printf(&out, "%" PRIu64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\n", *hash,
                                          hits, samples, squares);
                if (r < 0)
                        break;
                n++;
                hits_total += hits;
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_errno(s, rc);
        sqlite3_finalize(st);
        if (r < 0)
                return r;
        b->rows = n;
        b->hits = hits_total;
        return take_table(b, CH_TABLE_SAMPLES, &out, n);
}

static int run_host(struct store *s, int64_t run_id, char **ret) {
        sqlite3_stmt *st = NULL;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db, "SELECT host FROM run WHERE id = ?", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, run_id);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                *ret = strdup(col_text(st, 0));
                r = *ret ? 0 : -ENOMEM;
        } else
                r = rc == SQLITE_DONE ? -ENOENT : store_errno(s, rc);
        sqlite3_finalize(st);
        return r;
}

static int build(struct store *s, int64_t run_id, int64_t bucket, const char *host_override,
                 struct ch_batch **ret) {
        _cleanup_(ch_batch_freep) struct ch_batch *b = NULL;
        _cleanup_(idmap_freep) struct idmap *hashes = NULL;
        int r;

        if (run_id <= 0 || bucket < 0 || bucket > UINT32_MAX)
                return -EINVAL;
        b = calloc(1, sizeof *b);
        hashes = idmap_new();
        if (!b || !hashes)
                return -ENOMEM;
        if (host_override) {
                b->host = strdup(host_override);
                if (!b->host)
                        return -ENOMEM;
        } else {
                r = run_host(s, run_id, &b->host);
                if (r < 0)
                        return r;
        }
        b->run = run_id;
        b->batch = bucket;
        r = build_stacks(s, run_id, bucket, hashes, b);
        if (r < 0)
                return r;
        r = build_run(s, run_id, b->host, now_ms(), b);
        if (r < 0)
                return r;
        r = build_samples(s, run_id, bucket, b->host, hashes, b);
        if (r < 0)
                return r;
        *ret = take_ptr(&b);
        return 0;
}

int ch_batch_build(struct store *s, int64_t run_id, int64_t bucket, const char *host_override,
                   struct ch_batch **ret) {
        bool own =
                sqlite3_get_autocommit(s->db) && sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
        int r = build(s, run_id, bucket, host_override, ret);

        if (own)
                (void) sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
        return r;
}

int ch_store_buckets(struct store *s, int64_t run_id, struct ch_bucket **ret, size_t *ret_n) {
        _cleanup_free_ struct ch_bucket *list = NULL;
        sqlite3_stmt *st = NULL;
        size_t n = 0, cap = 0;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(
                s->db,
                "SELECT DISTINCT p.run_id, s.bucket FROM sample AS s "
                "JOIN thread AS t ON t.id = s.thread_id JOIN process AS p ON p.id = t.process_id "
                "WHERE ?1 = 0 OR p.run_id = ?1 ORDER BY p.run_id, s.bucket",
                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, run_id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                r = GROW(list, cap, n + 1);
                if (r < 0)
                        break;
                list[n++] = (struct ch_bucket) { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1) };
        }
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_errno(s, rc);
        sqlite3_finalize(st);
        if (r < 0)
                return r;
        *ret = take_ptr(&list);
        *ret_n = n;
        return 0;
}

/* ---- sending ---- */

/* Counts the rows of TABLE with the batch's key (samples: also its time, which prunes to one
 * partition and one range of the primary key). Returns the count or a negative errno. */
static int64_t count_key(struct ch_client *c, const struct ch_batch *b, const char *table) {
        _cleanup_(ch_buf_done) struct ch_buf q = {};
        _cleanup_free_ char *out = NULL;
        unsigned long long n;
        char *end;
        int r;

        r = ch_buf_printf(&q, "SELECT count() FROM %s WHERE ", table);
        if (r >= 0 && strcmp(table, CH_TABLE_SAMPLES) == 0)
                r = ch_buf_printf(&q, "time = toDateTime(%" PRIu64 ") AND ", b->batch);
        if (r >= 0)
                r = ch_buf_printf(&q, "host = ");
        if (r >= 0)
                r = ch_buf_quote(&q, b->host);
        if (r >= 0)
                r = ch_buf_printf(&q, " AND run = %" PRIu64 " AND batch = %" PRIu64 " FORMAT TabSeparated",
                                  b->run, b->batch);
        if (r < 0)
                return r;
        r = ch_query(c, q.data, NULL, 0, 0, &out, NULL);
        if (r < 0)
                return r;
        errno = 0;
        n = strtoull(out, &end, 10);
        if (end == out || *end != '\n' || errno || n > INT64_MAX)
                return ch_client_set_error(c, -EBADMSG, "ClickHouse answered count() with \"%.40s\"", out);
        return (int64_t) n;
}

/* The samples go as one block, which ClickHouse writes whole or not at all: the marker protocol
 * rests on that. */
static int insert(struct ch_client *c, const struct ch_batch_table *t) {
        char sql[128];

        if (t->len == 0)
                return 0;
        snprintf(sql, sizeof sql, "INSERT INTO %s FORMAT TabSeparated", t->table);
        return ch_query(c, sql, t->body, t->len, streq(t->table, CH_TABLE_SAMPLES) ? CH_QUERY_ONE_BLOCK : 0,
                        NULL, NULL);
}

int ch_batch_send(struct ch_client *c, const struct ch_batch *b) {
        _cleanup_(ch_buf_done) struct ch_buf marker = {};
        const struct ch_batch_table *samples = NULL;
        int64_t n;
        int r;

        n = count_key(c, b, "batches");
        if (n < 0)
                return (int) n;
        if (n > 0)
                return 0;
        for (size_t i = 0; i < b->n_tables; i++) {
                if (strcmp(b->tables[i].table, CH_TABLE_SAMPLES) == 0) {
                        samples = &b->tables[i];
                        continue;
                }
                r = insert(c, &b->tables[i]);
                if (r < 0)
                        return r;
        }
        if (samples) {
                n = count_key(c, b, CH_TABLE_SAMPLES);
                if (n < 0)
                        return (int) n;
                if (n == 0) {
                        r = insert(c, samples);
                        if (r < 0)
                                return r;
                }
        }
        r = ch_buf_tsv(&marker, b->host);
        if (r >= 0)
                r = ch_buf_printf(&marker, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%lld\n",
                                  b->run, b->batch, b->rows, b->hits, (long long) time(NULL));
        if (r < 0)
                return r;
        r = insert(c,
                   &(const struct ch_batch_table) {
                           .table = (char *) "batches", .body = marker.data, .len = marker.len });
        return r < 0 ? r : 1;
}
