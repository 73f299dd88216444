/* Where the reports read samples: one interface over the data sources, a SQLite store file
 * (source-sqlite.c) or a ClickHouse fleet store named by a clickhouse:// URL
 * (source-clickhouse.c). A verb opens a source from --db and asks it for resources, trees,
 * indexes and function names without knowing which kind it holds; source_open() is the one
 * place that tells them apart, so a third kind of store is one more file here. */
#pragma once

#include <stdbool.h>

#include "cleanup.h"
#include "name-table.h"
#include "render.h"
#include "sample-tree.h"
#include "store.h"
#include "tree-index.h"

/* The default store when neither --db nor $CPPD_DB names one; reports fall back to the
 * daemon's when there is none here. */
#define SOURCE_DEFAULT_DB "cppd.db"
#define SOURCE_DAEMON_DB "/var/lib/cppd/cppd.db"

/* The store to read when no --db names one: $CPPD_DB, else ./cppd.db when there is one (cppctl
 * record's default), else the daemon's store when there is one, else ./cppd.db (for the error
 * to name). The one default-store rule of the reports. */
const char *source_default_db(void);

struct source;

enum {
        SOURCE_QUIET = 1 << 0, /* log nothing (what is wrong is said by whoever reads it next) */
};

/* Opens DB (a store file or a clickhouse:// URL, kept by pointer: it must outlive the source)
 * for reading, with CREDENTIALS (a file, may be NULL: $CPPD_CLICKHOUSE_CREDENTIALS) for a URL.
 * Returns 0 and sets *ret, which the caller frees with source_close(); or a negative errno,
 * logged in words a user can act on unless FLAGS has SOURCE_QUIET. */
int source_open(const char *db, const char *credentials, unsigned flags, struct source **ret);
struct source *source_close(struct source *s);
DEFINE_CLEANUP(struct source *, source_close);

/* Checks, before a session over DB starts, that it can be read (a URL: that the fleet store
 * answers with its schema; a file: that it is readable), without opening it for long. Returns 0
 * or a negative errno after logging. */
int source_check(const char *db, const char *credentials);

/* The resources that have samples, sorted, as a strv in *ret. Returns how many, or a negative
 * errno (not logged: source_log_error() says it). */
int source_list_resources(struct source *s, char ***ret);

/* Whether the store keeps call sites (recorded with --lines): 1 yes, 0 no, or a negative errno. */
int source_has_call_sites(struct source *s);

/* The sample tree filter F selects, its labels interned in NAMES (may be NULL: a table of its
 * own) so that trees of two sources compare by name id. Returns 0 and sets *ret, or a negative
 * errno (not logged). */
int source_load_tree(struct source *s, const struct store_filter *f, struct name_table *names,
                     struct sample_tree **ret);

/* What a view reads: a tree index, and the tree it was built from when it was not mapped from a
 * cache (its header; NULL for an inverted tree's index, whose header is its own). */
struct view_data {
        struct sample_tree *tree;
        struct tree_index *index;
};
void view_data_done(struct view_data *v);

/* The index of the tree F selects (of its inverted tree, for upward views): mapped from a
 * cache where the source keeps one (index-cache.c), else built from the tree loaded. Returns 0
 * and sets *ret, or a negative errno (not logged). */
int source_load_index(struct source *s, const struct store_filter *f, bool inverted, struct view_data *ret);

/* Calls EACH with every function name the store holds, as stored (not demangled), until EACH
 * returns < 0. Returns 0 or a negative errno (not logged: the names are a convenience). */
int source_function_names(struct source *s, int (*each)(void *userdata, const char *name), void *userdata);

/* Runs SQL over DB (with CREDENTIALS, may be NULL, for a URL), read-only, writing each answer to
 * OUT in FORMAT as its rows come (render-rows.c): over a store file (sql-sqlite.c) every
 * statement separated by ';', with the call path functions of sql-ext.c; over a fleet store
 * (sql-clickhouse.c) one statement, sent with readonly=1. Returns 0; -EROFS after saying that a
 * statement was refused (one that writes, or a FORMAT clause); or another negative errno after
 * logging. */
int source_sql(const char *db, const char *credentials, const char *sql, enum render_rows_format format,
               FILE *out);

/* Reports a failure R to read S, in words a user can act on; RESOURCE (may be NULL) is the one
 * asked for. Returns R. */
int source_log_error(struct source *s, int r, const char *resource);
