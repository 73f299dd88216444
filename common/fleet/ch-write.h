/* Batches for the fleet store: the rows of one time bucket of one run of a host's SQLite store,
 * as TabSeparated bodies per ClickHouse table, and their idempotent sending. A batch is plain
 * data (strings and lengths) so that a daemon can write it to a spool file, read it back after
 * a restart and send it then. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ch-client.h"
#include "cleanup.h"

struct store;

/* The tables a batch fills, in the order they are sent: stacks, runs and run_resources first
 * (duplicates are harmless: readers take one row per key), samples last, then the marker. */
#define CH_TABLE_STACKS "stacks"
#define CH_TABLE_RUNS "runs"
#define CH_TABLE_RUN_RESOURCES "run_resources"
#define CH_TABLE_SAMPLES "samples"

struct ch_batch_table {
        char *table; /* one of CH_TABLE_* */
        char *body;  /* TabSeparated rows, each ending in '\n', in the table's column order */
        size_t len;  /* bytes of body */
        uint64_t rows;
};

struct ch_batch {
        char *host;     /* the host the rows are shipped under */
        uint64_t run;   /* the run's id in the host's store */
        uint64_t batch; /* the time bucket's start, unix seconds: the batch's key with host, run */
        uint64_t rows;  /* sample rows, and their hits: what the marker records */
        uint64_t hits;
        struct ch_batch_table *tables;
        size_t n_tables;
};

/* Builds the batch of bucket BUCKET (unix seconds) of run RUN_ID of store S: the stacks its
 * samples use, the run, its resources and their losses, and its sample rows, under the run's
 * host or HOST_OVERRIDE (NULL: the run's). A bucket without samples gives a batch of no sample
 * rows (sending it records the run and the marker). Reads S in one snapshot. Returns 0 and
 * sets *ret (free with ch_batch_free()); -ENOENT if the run does not exist; -EBADMSG if the
 * store's rows do not hold together; -ENOMEM. */
int ch_batch_build(struct store *s, int64_t run_id, int64_t bucket, const char *host_override,
                   struct ch_batch **ret);

struct ch_batch *ch_batch_free(struct ch_batch *b);
DEFINE_CLEANUP(struct ch_batch *, ch_batch_free);

/* Appends a table's body to B (copying TABLE and BODY), for readers of a spool. Returns 0 or
 * -ENOMEM. */
int ch_batch_add_table(struct ch_batch *b, const char *table, const char *body, size_t len, uint64_t rows);

/* Sends B to C idempotently: if the marker row (host, run, batch) is in `batches`, nothing is
 * sent (returns 0); otherwise stacks, runs and run_resources are inserted, the samples only if
 * no sample row of the key is there yet (an earlier try whose outcome was unknown may have
 * landed them: one INSERT is one block into one partition, whole or not at all), then the
 * marker. Any failure leaves a state that sending again completes, counting every hit once.
 * Returns 1 when it sent, 0 when the batch was there already, or ch_query()'s errors (with
 * ch_client_error()). */
int ch_batch_send(struct ch_client *c, const struct ch_batch *b);

/* One (run, bucket) pair of a store. */
struct ch_bucket {
        int64_t run;
        int64_t bucket; /* unix seconds */
};

/* Lists the (run, bucket) pairs with samples in S, of run RUN_ID (0: every run), ordered by run
 * and bucket; runs without samples have none. Sets *ret (free()) and *ret_n. Returns 0 or a
 * negative errno. */
int ch_store_buckets(struct store *s, int64_t run_id, struct ch_bucket **ret, size_t *ret_n);

/* The stack hash of the fleet schema: 64-bit FNV-1a over each frame's fields, root first (see
 * ch-write.c), never UINT64_MAX (that is taken as UINT64_MAX - 1). Exposed for the tests. */
struct ch_frame {
        const char *function, *module, *build_id, *file; /* NULL: unknown, hashed as "" */
        uint32_t line;                                   /* 0: unknown */
        int64_t address;                                 /* -1: unknown */
        bool inlined, unknown;
};
uint64_t ch_stack_hash(const struct ch_frame *frames, size_t n);
