/* Names found after the fact for the frames the hosts stored as addresses ('prog+0x118d'), kept
 * in the fleet store's `names` table by `cppctl symbolize --db clickhouse://...`, so that views
 * over the fleet read them instead of looking for debug info again. The table is optional: made
 * by the first symbolize, read when it is there; the schema's version does not change with it,
 * so hosts and clients of any version keep writing and reading the other tables. Rows are only
 * ever added; a key named twice (two symbolize runs at once) holds the same chain. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "ch-client.h"
#include "cleanup.h"
#include "store-rename.h"

/* Makes the table if it is missing. Returns 0 or ch_query()'s errors. */
int ch_names_create(struct ch_client *c);

/* 1 if the table is there, 0 if not, or ch_query()'s errors. */
int ch_names_exists(struct ch_client *c);

/* The names kept for some build ids, in memory: (build id, address) -> chain. */
struct ch_names;
struct ch_names *ch_names_free(struct ch_names *n);
DEFINE_CLEANUP(struct ch_names *, ch_names_free);

/* Reads the kept names of the build ids BUILD_IDS_SQL selects (a SELECT of one String column;
 * GLOBAL IN, so that over Distributed tables the set is made once, over every shard).
 * Returns 0 and sets *ret; -EBADMSG for rows that do not parse or a chain out of order; or
 * ch_query()'s errors. */
int ch_names_load(struct ch_client *c, const char *build_ids_sql, struct ch_names **ret);

/* The kept chain of ADDRESS in the module of BUILD_ID into RET[0..n) (at most MAX; the outermost
 * first, as store_name chains are), its strings valid while N lives. Returns n, or 0 if none is
 * kept. */
int ch_names_find(const struct ch_names *n, const char *build_id, int64_t address, struct store_name *ret,
                  size_t max);

/* What ch_names_symbolize() did. */
struct ch_names_stats {
        uint64_t frames;        /* distinct frames stored as addresses, not named before */
        uint64_t frames_named;  /* of which NAMER named now (and written) */
        uint64_t frames_before; /* distinct frames stored as addresses that the table names already */
        uint64_t modules;       /* modules of FRAMES */
        uint64_t modules_named; /* of which NAMER named some frame */
};

/* Names the frames the fleet's stacks hold as addresses and the table does not name yet, through
 * NAMER (asked with files and lines), and adds their chains to the table (made if missing). The
 * candidates are read whole before NAMER is asked (it may fetch over the network for minutes:
 * no ClickHouse answer waits on it). Returns 0 and fills *ret; ch_query()'s errors, -EBADMSG,
 * -ENOMEM, or NAMER's errors. */
int ch_names_symbolize(struct ch_client *c, const struct store_namer *namer, struct ch_names_stats *ret);
