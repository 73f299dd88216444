/* The data-source interface (source.h): the table of kinds of store, whose kind_of() is the one
 * place that tells a ClickHouse URL from a store file (a third kind is one more entry and one
 * more file), the default-store rule, and the dispatch to an open source's operations. */
#include "source.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "ch-client.h"
#include "source-internal.h"
#include "source-names.h"

const char *source_default_db(void) {
        const char *db = getenv("CPPD_DB");

        if (db)
                return db;
        return access(SOURCE_DEFAULT_DB, F_OK) < 0 && access(SOURCE_DAEMON_DB, F_OK) == 0 ? SOURCE_DAEMON_DB :
                                                                                            SOURCE_DEFAULT_DB;
}

/* A kind of store: how to tell its --db, and its constructor and checks. */
static const struct source_kind {
        bool (*is)(const char *db);
        int (*open)(const char *db, const char *credentials, unsigned flags, struct source **ret);
        int (*check)(const char *db, const char *credentials);
        int (*sql)(const char *db, const char *credentials, const char *sql, enum render_rows_format format,
                   FILE *out);
} kinds[] = {
        { ch_url_is, source_clickhouse_open, source_clickhouse_check, source_clickhouse_sql },
        { NULL, source_sqlite_open, source_sqlite_check, source_sqlite_sql }, /* any other --db: a file */
};

/* The kind of DB: the one place that asks. */
static const struct source_kind *kind_of(const char *db) {
        const struct source_kind *k = kinds;

        while (k->is && !k->is(db))
                k++;
        return k;
}

int source_open(const char *db, const char *credentials, unsigned flags, struct source **ret) {
        return kind_of(db)->open(db, credentials, flags, ret);
}

int source_check(const char *db, const char *credentials) {
        return kind_of(db)->check(db, credentials);
}

int source_sql(const char *db, const char *credentials, const char *sql, enum render_rows_format format,
               FILE *out) {
        return kind_of(db)->sql(db, credentials, sql, format, out);
}

struct source *source_close(struct source *s) {
        return s ? s->ops->close(s) : NULL;
}

int source_list_resources(struct source *s, char ***ret) {
        return s->ops->list_resources(s, ret);
}

int source_has_call_sites(struct source *s) {
        return s->ops->has_call_sites(s);
}

/* Puts what naming after the fact has to say (source-names.c) in T's header. */
static int add_names_note(struct sample_tree *t) {
        const char *note = source_names_note();

        return note && t ? sample_tree_set_names_note(t, note) : 0;
}

/* Puts how F's runs counted, what they could not, and their Python frames in T's header. */
static int add_collect_note(struct source *s, const struct store_filter *f, struct sample_tree *t) {
        _cleanup_free_ char *note = NULL;
        int r;

        if (!t || !s->ops->collect_note)
                return 0;
        r = s->ops->collect_note(s, f, &note);
        if (r >= 0)
                r = sample_tree_set_collect_note(t, note);
        if (r < 0 || !s->ops->python_note)
                return r;
        note = mfree(note);
        r = s->ops->python_note(s, f, &note);
        return r < 0 ? r : sample_tree_set_python_note(t, note);
}

int source_load_tree(struct source *s, const struct store_filter *f, struct name_table *names,
                     struct sample_tree **ret) {
        int r = s->ops->load_tree(s, f, names, ret);

        if (r >= 0)
                r = add_collect_note(s, f, *ret);
        return r < 0 ? r : add_names_note(*ret);
}

int source_load_index(struct source *s, const struct store_filter *f, bool inverted, struct view_data *ret) {
        int r;

        if (s->ops->load_index)
                r = s->ops->load_index(s, f, inverted, ret);
        else
                r = view_data_build(s, f, inverted, ret);
        if (r >= 0)
                r = add_collect_note(s, f, ret->index ? ret->index->header : NULL);
        return r < 0 ? r : add_names_note(ret->index ? ret->index->header : NULL);
}

int source_function_names(struct source *s, int (*each)(void *userdata, const char *name), void *userdata) {
        return s->ops->function_names(s, each, userdata);
}

int source_log_error(struct source *s, int r, const char *resource) {
        return s->ops->log_error(s, r, resource);
}
