/* The SQLite source: a store file (common/store), read as the views read it, with the cache of
 * big trees' indexes (index-cache.c), which is keyed by the store file's identity. Where debug
 * info found now names frames the store holds as addresses, the trees are loaded through a namer
 * (source-names.c) that puts each chain where its frame was, and the cached indexes are not used
 * (they hold the store's names, and what can be named depends on this command's debug info).
 * Views read tree indexes laid out from the store's stacks (store_load_index()), cached or not,
 * never a loaded sample tree; a view filtered by its samples alone (--since, --unit, --pid...)
 * has its index laid out from the cached one of every sample (store_select_index()), which
 * reads the filter's rows and not the store's stacks. */
#include "source-internal.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include "index-cache.h"
#include "log.h"
#include "source-names.h"
#include "store-error.h"

struct source_sqlite {
        struct source source; /* first: a struct source * is one of these */
        struct store *store;
        const struct store_namer *namer; /* names frames stored as addresses; NULL: none to name */
};

static struct source_sqlite *of(struct source *s) {
        return (struct source_sqlite *) s;
}

static struct source *sqlite_close(struct source *s) {
        store_close(of(s)->store);
        free(s);
        return NULL;
}

static int sqlite_list_resources(struct source *s, char ***ret) {
        return store_list_resources(of(s)->store, ret);
}

static int sqlite_has_call_sites(struct source *s) {
        return store_has_call_sites(of(s)->store);
}

static int sqlite_load_tree(struct source *s, const struct store_filter *f, struct name_table *names,
                            struct sample_tree **ret) {
        struct store_filter named = *f;

        if (of(s)->namer)
                named.namer = of(s)->namer;
        return store_load_tree_shared(of(s)->store, &named, names, ret);
}

/* Whether F labels frames as the cached indexes do: by function, demangled, none hidden,
 * focused on or ignored. */
static bool labelled_as_cached(const struct store_filter *f) {
        return f->by == STORE_BY_FUNCTION && !f->fold_inline && !f->focus && !f->ignore && !f->hide &&
                !f->raw_names && !f->labels && !f->unit_roots;
}

/* Whether F selects every sample. */
static bool every_sample(const struct store_filter *f) {
        return f->run_id == 0 && !f->unit && f->pid == 0 && !f->no_idle && !f->comm && !f->exe && !f->host &&
                !f->has_since && !f->has_until;
}

/* The index of a tree filtered by samples alone, laid out from the cached index of every
 * sample (store_select_index()): the filter's rows are read, not the store's stacks. Upward,
 * where the inverted index lacks one of the filter's paths, the downward one is selected and
 * inverted. -EAGAIN where the cached indexes cannot tell it. */
static int select_index(struct source *s, const struct store_filter *f, bool inverted,
                        struct view_data *ret) {
        struct store_filter every = { .resource = f->resource, .by = STORE_BY_FUNCTION };
        _cleanup_(view_data_done) struct view_data all = {};
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        _cleanup_close_ int fd = -1, up_fd = -1;
        int r;

        r = index_cache_load(of(s)->store, &every, inverted, &all);
        if (r < 0)
                return r;
        fd = index_cache_scratch();
        r = store_select_index(of(s)->store, f, all.index, fd, &x);
        if (r == -EAGAIN && inverted) {
                view_data_done(&all);
                r = index_cache_load(of(s)->store, &every, false, &all);
                if (r >= 0)
                        r = store_select_index(of(s)->store, f, all.index, fd, &x);
                if (r >= 0) {
                        up_fd = index_cache_scratch();
                        r = tree_index_invert(take_ptr(&x), up_fd, &x);
                }
        }
        if (r < 0)
                return r;
        *ret = (struct view_data) { .index = take_ptr(&x) };
        return 0;
}

/* The index of a filtered tree, laid out from the store's stacks (store_load_index()), and for
 * upward views inverted from it (tree_index_invert()): no sample tree either way. */
static int build_index(struct source *s, const struct store_filter *f, bool inverted, struct view_data *ret) {
        _cleanup_(tree_index_freep) struct tree_index *down = NULL;
        _cleanup_close_ int fd = -1, up_fd = -1;
        struct store_filter named = *f;
        int r;

        if (of(s)->namer)
                named.namer = of(s)->namer;
        /* each laid out in a file of its own, so that a window of it is in memory at a time */
        fd = index_cache_scratch();
        r = store_load_index(of(s)->store, &named, fd, &down);
        if (r >= 0 && inverted) {
                up_fd = index_cache_scratch();
                r = tree_index_invert(take_ptr(&down), up_fd, &down);
        }
        if (r < 0)
                return r;
        *ret = (struct view_data) { .index = take_ptr(&down) };
        return 0;
}

static int sqlite_load_index(struct source *s, const struct store_filter *f, bool inverted,
                             struct view_data *ret) {
        int r;

        if (of(s)->namer || !labelled_as_cached(f))
                return build_index(s, f, inverted, ret);
        if (every_sample(f))
                return index_cache_load(of(s)->store, f, inverted, ret);
        /* without a cache, the index of every sample would be built for this view alone */
        if (!index_cache_usable(of(s)->store, f))
                return build_index(s, f, inverted, ret);
        r = select_index(s, f, inverted, ret);
        return r == -EAGAIN ? build_index(s, f, inverted, ret) : r;
}

/* There is no store call for the names: they are read from its function table directly, as
 * the views open a store (read-only, immutable where a -shm cannot be made). */
static int sqlite_function_names(struct source *s, int (*each)(void *userdata, const char *name),
                                 void *userdata) {
        sqlite3 *c = NULL;
        sqlite3_stmt *st = NULL;
        int r = 0;

        if (store_sqlite_open_read(s->db, 0, &c) != SQLITE_OK ||
            sqlite3_prepare_v2(c, "SELECT DISTINCT name FROM function ORDER BY name", -1, &st, NULL) !=
                    SQLITE_OK)
                r = -EIO;
        while (r >= 0 && sqlite3_step(st) == SQLITE_ROW) {
                const char *raw = (const char *) sqlite3_column_text(st, 0);

                if (raw)
                        r = each(userdata, raw);
        }
        sqlite3_finalize(st);
        sqlite3_close(c);
        return r;
}

static int sqlite_log_error(struct source *s, int r, const char *resource) {
        return log_store_error(r, s->db, of(s)->store);
}

static int sqlite_collect_note(struct source *s, const struct store_filter *f, char **ret) {
        return store_collect_note(of(s)->store, f, ret);
}

static int sqlite_python_note(struct source *s, const struct store_filter *f, char **ret) {
        return store_python_note(of(s)->store, f, ret);
}

static const struct source_ops sqlite_ops = {
        .close = sqlite_close,
        .list_resources = sqlite_list_resources,
        .has_call_sites = sqlite_has_call_sites,
        .load_tree = sqlite_load_tree,
        .load_index = sqlite_load_index,
        .function_names = sqlite_function_names,
        .log_error = sqlite_log_error,
        .collect_note = sqlite_collect_note,
        .python_note = sqlite_python_note,
};

int source_sqlite_open(const char *db, const char *credentials, unsigned flags, struct source **ret) {
        _cleanup_(store_closep) struct store *store = NULL;
        const struct store_namer *namer = NULL;
        struct source_sqlite *s;
        int r;

        r = store_open(db, STORE_READ, &store);
        if (r < 0)
                return flags & SOURCE_QUIET ? r : log_store_error(r, db, store);
        /* a failure was said, and the store is read as it is */
        if (!(flags & SOURCE_QUIET))
                (void) source_names_namer(db, store, &namer);
        s = malloc(sizeof *s);
        if (!s)
                return flags & SOURCE_QUIET ? -ENOMEM : log_error_errno(ENOMEM, "Out of memory");
        *s = (struct source_sqlite) {
                .source = { .ops = &sqlite_ops, .db = db },
                .store = take_ptr(&store),
                .namer = namer,
        };
        *ret = &s->source;
        return 0;
}

int source_sqlite_check(const char *db, const char *credentials) {
        if (access(db, R_OK) < 0)
                return log_error_errno(errno, "%s: %m (make a store with 'cppctl record' or 'cppctl import')",
                                       db);
        return 0;
}
