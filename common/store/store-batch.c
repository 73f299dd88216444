/* The stack trie and its samples written in bulk, for importers that walk millions of distinct
 * stacks in an order where they know which nodes are new (stack-sort.h). A statement costs SQLite
 * far more than the row it inserts (a node is 4 integers, a sample row 7), so rows are inserted
 * BATCH_STACKS or BATCH_SAMPLES a statement. For that, new nodes' ids are assigned here, the
 * largest id + 1 on, as SQLite does: the transaction's write lock (BEGIN IMMEDIATE) keeps them
 * ours, and nothing else adds stacks while a batch is open. The nodes are inserted without their
 * ids, so that SQLite draws each as the largest + 1 and appends the row at the end of the table
 * (where a given id costs a search of the table's B-tree for it first: 12% of a million-stack
 * import); the id it drew for the last row of each statement is checked against ours. A lookup
 * inserts the waiting nodes first, so that it sees them; the samples refer to nodes by id, which
 * SQLite does not check, so they wait on their own. */
#include "store-batch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-internal.h"

/* Rows that wait, and at most the rows a full statement inserts: fewer where the SQLite linked
 * allows fewer parameters (999 before 3.32). 200 and 128 a statement cost 8% more time than these
 * at a million distinct stacks. */
#define BATCH_STACKS 2000
#define BATCH_SAMPLES 1000

#define STACK_COLUMNS 3 /* parent_id, frame_id, depth: the id is SQLite's next */
#define SAMPLE_COLUMNS 7

/* What a batch sets aside until store_batch_finish(): the triggers
 * that bump the store's generation at every sample row (a statement each), bumped once instead.
 * Their SQL is kept as the store holds it and put back as it was, in the same transaction. (The
 * trie's unique index, built once after the import instead of kept row by row, was no faster and
 * took 770 MiB to sort 14.6 M nodes.) */
static const char *const set_aside[] = { "sample_inserted", "sample_updated" };
#define N_SET_ASIDE (sizeof set_aside / sizeof set_aside[0])

struct store_batch {
        struct store *s;
        char *set_aside_sql[N_SET_ASIDE]; /* NULL: not set aside */
        int64_t next_id;                  /* the id the next new node gets */
        size_t stacks_per_statement, samples_per_statement;
        int64_t stacks[BATCH_STACKS][STACK_COLUMNS]; /* ids next_id - n_stacks on */
        size_t n_stacks;
        int64_t samples[BATCH_SAMPLES][SAMPLE_COLUMNS];
        size_t n_samples;
};

/* Sets *ret to the SQL that made NAME (an index or trigger), as sqlite_master holds it. */
static int schema_sql(struct store *s, const char *name, char **ret) {
        sqlite3_stmt *st = NULL;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db, "SELECT sql FROM sqlite_master WHERE name = ? AND sql IS NOT NULL", -1,
                                &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        r = store_bind_text(st, 1, name);
        if (r < 0) {
                sqlite3_finalize(st);
                return r;
        }
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                *ret = strdup((const char *) sqlite3_column_text(st, 0));
                r = *ret ? 0 : -ENOMEM;
        } else
                r = rc == SQLITE_DONE ? -ENOENT : store_errno(s, rc);
        sqlite3_finalize(st);
        return r;
}

/* Sets aside what set_aside[] names (store_batch_finish() puts it back; a rollback does too). */
static int set_aside_all(struct store_batch *b) {
        char sql[128];
        int r;

        for (size_t i = 0; i < N_SET_ASIDE; i++) {
                r = schema_sql(b->s, set_aside[i], &b->set_aside_sql[i]);
                if (r < 0)
                        return r;
                snprintf(sql, sizeof sql, "DROP TRIGGER %s", set_aside[i]);
                r = store_exec(b->s, sql);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The rows of COLUMNS values a statement may insert: at most MAX, within SQLite's limit. */
static size_t per_statement(struct store *s, size_t max, size_t columns) {
        const int limit = sqlite3_limit(s->db, SQLITE_LIMIT_VARIABLE_NUMBER, -1);
        const size_t n = limit > 0 ? (size_t) limit / columns : 1;

        return n < max ? (n ?: 1) : max;
}

int store_batch_new(struct store *s, struct store_batch **ret) {
        struct store_batch *b;
        int64_t max;
        int r;

        r = store_query_int(s, "SELECT ifnull(max(id), 0) FROM stack", &max);
        if (r < 0)
                return r;
        b = calloc(1, sizeof *b);
        if (!b)
                return -ENOMEM;
        b->s = s;
        b->next_id = max + 1;
        b->stacks_per_statement = per_statement(s, BATCH_STACKS, STACK_COLUMNS);
        b->samples_per_statement = per_statement(s, BATCH_SAMPLES, SAMPLE_COLUMNS);
        r = set_aside_all(b);
        if (r < 0) {
                store_batch_free(b);
                return r;
        }
        *ret = b;
        return 0;
}

struct store_batch *store_batch_free(struct store_batch *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < N_SET_ASIDE; i++)
                free(b->set_aside_sql[i]);
        free(b);
        return NULL;
}

/* The INSERT of N rows ("(?,?,...)" each) after HEAD and before TAIL, prepared once as ID. */
static int statement(struct store *s, enum store_stmt id, const char *head, size_t n, size_t columns,
                     const char *tail, sqlite3_stmt **ret) {
        _cleanup_free_ char *sql = NULL;
        size_t len = strlen(head), size = len + n * (2 * columns + 2) + strlen(tail) + 1;

        if (s->stmts[id])
                return store_stmt(s, id, NULL, ret);
        sql = malloc(size);
        if (!sql)
                return -ENOMEM;
        memcpy(sql, head, len);
        for (size_t i = 0; i < n; i++) {
                sql[len++] = i ? ',' : ' ';
                sql[len++] = '(';
                for (size_t c = 0; c < columns; c++) {
                        sql[len++] = '?';
                        sql[len++] = c + 1 < columns ? ',' : ')';
                }
        }
        strcpy(sql + len, tail);
        return store_stmt(s, id, sql, ret);
}

/* Inserts ROWS[0..n) of COLUMNS values each, N rows a statement (FULL) or one (ONE); a stack's
 * parent 0 is bound as NULL (an outermost frame). For stacks, LAST_ID is the id the last row
 * must get. */
static int insert_rows(struct store *s, const int64_t *rows, size_t n, size_t per_statement, size_t columns,
                       enum store_stmt full, enum store_stmt one, const char *head, const char *tail,
                       bool stacks, int64_t last_id) {
        size_t done = 0;
        int r;

        while (done < n) {
                size_t k = n - done >= per_statement ? per_statement : 1;
                sqlite3_stmt *st;

                r = statement(s, k == 1 ? one : full, head, k, columns, tail, &st);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < k * columns; i++) {
                        const int64_t v = rows[done * columns + i];

                        if (!(stacks && i % columns == 0 && v == 0))
                                sqlite3_bind_int64(st, i + 1, v);
                }
                r = store_step_done(s, st);
                if (r < 0)
                        return r;
                done += k;
                /* Another id than ours would tie the rows waiting, and the samples, to the
                 * wrong nodes: a store that changed under the write lock is not written on. */
                if (stacks && sqlite3_last_insert_rowid(s->db) != last_id - (int64_t) (n - done))
                        return -EIO;
        }
        return 0;
}

/* OR FAIL: a row is checked before it is written, so a failure leaves nothing half-done, and
 * SQLite keeps no undo journal per statement. */
static int flush_stacks(struct store_batch *b) {
        int r = insert_rows(b->s, &b->stacks[0][0], b->n_stacks, b->stacks_per_statement, STACK_COLUMNS,
                            STMT_ADD_NEW_STACKS, STMT_ADD_NEW_STACK,
                            "INSERT OR FAIL INTO stack (parent_id, frame_id, depth) VALUES", "", true,
                            b->next_id - 1);

        if (r >= 0)
                b->n_stacks = 0;
        return r;
}

static int flush_samples(struct store_batch *b) {
        int r = insert_rows(
                b->s, &b->samples[0][0], b->n_samples, b->samples_per_statement, SAMPLE_COLUMNS,
                STMT_ADD_SAMPLES_BATCH, STMT_ADD_SAMPLES_ONE,
                "INSERT INTO sample (resource_id, bucket, thread_id, stack_id, hits, samples, hits_squared) VALUES",
                " ON CONFLICT DO UPDATE SET hits = hits + excluded.hits, samples = samples + excluded.samples, "
                "hits_squared = min(hits_squared + excluded.hits_squared, 9223372036854775807)",
                false, 0);

        if (r >= 0)
                b->n_samples = 0;
        return r;
}

int store_batch_flush(struct store_batch *b) {
        int r = flush_stacks(b);

        return r < 0 ? r : flush_samples(b);
}

int store_batch_finish(struct store_batch *b) {
        int r;

        r = store_batch_flush(b);
        if (r < 0)
                return r;
        for (size_t i = 0; i < N_SET_ASIDE; i++) {
                if (!b->set_aside_sql[i])
                        continue;
                r = store_exec(b->s, b->set_aside_sql[i]);
                if (r < 0)
                        return r;
                free(b->set_aside_sql[i]);
                b->set_aside_sql[i] = NULL;
        }
        /* The rows the triggers did not see count as one change. */
        return store_exec(b->s, "UPDATE store_state SET generation = generation + 1");
}

int store_batch_find_stack(struct store_batch *b, int64_t parent_id, int64_t frame_id, int64_t *ret_id) {
        sqlite3_stmt *st;
        int r;

        r = flush_stacks(b);
        if (r < 0)
                return r;
        r = store_stmt(b->s, STMT_FIND_STACK,
                       "SELECT id FROM stack WHERE ifnull(parent_id, 0) = ? AND frame_id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, parent_id);
        sqlite3_bind_int64(st, 2, frame_id);
        r = store_step_id(b->s, st, ret_id);
        if (r <= 0)
                return r;
        return *ret_id > 0 && *ret_id <= UINT32_MAX ? 1 : -E2BIG;
}

int store_batch_add_stack(struct store_batch *b, int64_t parent_id, int64_t frame_id, unsigned depth,
                          int64_t *ret_id) {
        int r;

        if (b->next_id > UINT32_MAX)
                return -E2BIG; /* ids are handed out as 32-bit keys (store.h) */
        if (b->n_stacks == BATCH_STACKS) {
                r = flush_stacks(b);
                if (r < 0)
                        return r;
        }
        memcpy(b->stacks[b->n_stacks++], (int64_t[STACK_COLUMNS]) { parent_id, frame_id, depth },
               sizeof b->stacks[0]);
        *ret_id = b->next_id++;
        return 0;
}

int store_batch_add_samples(struct store_batch *b, int64_t resource_id, int64_t bucket, int64_t thread_id,
                            int64_t stack_id, uint64_t hits, uint64_t samples, uint64_t hits_squared) {
        int r;

        if (hits > INT64_MAX || samples > INT64_MAX || hits_squared > INT64_MAX)
                return -ERANGE;
        if (b->n_samples == BATCH_SAMPLES) {
                r = flush_samples(b);
                if (r < 0)
                        return r;
        }
        memcpy(b->samples[b->n_samples++],
               (int64_t[SAMPLE_COLUMNS]) { resource_id, bucket, thread_id, stack_id, (int64_t) hits,
                                           (int64_t) samples, (int64_t) hits_squared },
               sizeof b->samples[0]);
        return 0;
}
