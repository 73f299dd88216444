/* What a kind of source implements (source-sqlite.c, source-clickhouse.c): the operations
 * source.c dispatches to, the kind's struct starting with struct source. Only source/ sees
 * this. */
#pragma once

#include "source.h"

struct source_ops {
        struct source *(*close)(struct source *s);
        int (*list_resources)(struct source *s, char ***ret);
        int (*has_call_sites)(struct source *s);
        int (*load_tree)(struct source *s, const struct store_filter *f, struct name_table *names,
                         struct sample_tree **ret);
        /* NULL: the index is built from the tree (view_data_build()) */
        int (*load_index)(struct source *s, const struct store_filter *f, bool inverted,
                          struct view_data *ret);
        int (*function_names)(struct source *s, int (*each)(void *userdata, const char *name),
                              void *userdata);
        int (*log_error)(struct source *s, int r, const char *resource);
        /* how F's runs counted, and what they could not, for the header (store_collect_note()); NULL: the
         * source does not keep it */
        int (*collect_note)(struct source *s, const struct store_filter *f, char **ret);
        /* what F's runs' Python frames were, for the header (store_python_note()); NULL: the source
         * does not keep it */
        int (*python_note)(struct source *s, const struct store_filter *f, char **ret);
};

struct source {
        const struct source_ops *ops;
        const char *db;
};

/* Each kind's constructor, check and SQL, as source_open(), source_check() and source_sql()
 * describe them (a store file has no credentials: it ignores them). */
int source_sqlite_open(const char *db, const char *credentials, unsigned flags, struct source **ret);
int source_sqlite_check(const char *db, const char *credentials);
int source_sqlite_sql(const char *db, const char *credentials, const char *sql,
                      enum render_rows_format format, FILE *out);
int source_clickhouse_open(const char *db, const char *credentials, unsigned flags, struct source **ret);
int source_clickhouse_check(const char *db, const char *credentials);
int source_clickhouse_sql(const char *url, const char *credentials, const char *sql,
                          enum render_rows_format format, FILE *out);

/* Builds the index of the tree F selects from S's tree, as source_load_index() without a cache
 * (view-data.c). */
int view_data_build(struct source *s, const struct store_filter *f, bool inverted, struct view_data *ret);
