/* cppctl down, up, functions and body: the four profile views (paper §4.3, §4.4, §5.2), one
 * function for all four, told apart by the kind the command table gives. One resource is read
 * as a tree index (mapped from the cache when the store is big and unfiltered); several
 * (-r A,B or --ratio A/B) are profiled each and joined by path into one table. */
#include "cppctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "profile-join.h"

/* -r A,B,... and --ratio A/B: the view of each resource, from its index, joined by path.
 *
 * Each index has a name table of its own, so each profile's names are moved into one table
 * shared by the columns (struct table: each column's header copied, with that table) before
 * the join. A row is shown where any column reaches the threshold, with its hits in every
 * column, however few. Function and body profiles hold a path per function: every one is
 * computed. A downward or upward profile holds at most a path per node of its index, and at
 * threshold 0 it may hold them all (a million distinct stacks: 14 million). Where the indexes
 * hold more nodes than profile_exact_nodes(), each column is computed at its own threshold, then
 * again with the rows' paths asked for (callpath_summarize()'s wanted paths): the rows are as
 * exact, and the paths shown nowhere are counted "at least" (the most one column omitted).
 * Else every column is computed at threshold 0, and every path not shown is counted once. */
#define NOT_LOOKED_UP (UINT32_MAX - 1) /* in struct table's to_column */

struct table {
        size_t n;
        struct view_data *views;
        struct sample_tree **headers; /* views[i]'s header, names in `names` */
        struct profile **profiles;
        struct name_table *names;
        uint32_t **to_shared; /* by a column's name id: the shared id, or NAME_NONE */
        uint32_t **to_column; /* by shared id: a column's, NAME_NONE, or NOT_LOOKED_UP */
        size_t *n_to_column;
};

static void table_done(struct table *t) {
        for (size_t i = 0; i < t->n; i++) {
                if (t->profiles)
                        profile_free(t->profiles[i]);
                if (t->headers)
                        free(t->headers[i]);
                if (t->to_shared)
                        free(t->to_shared[i]);
                if (t->to_column)
                        free(t->to_column[i]);
                view_data_done(&t->views[i]);
        }
        free(t->profiles);
        free(t->headers);
        free(t->to_shared);
        free(t->to_column);
        free(t->n_to_column);
        free(t->views);
        name_table_free(t->names);
}

/* Moves column C's profile into the shared names. Returns 0 or -ENOMEM. */
static int table_share(struct table *t, size_t c) {
        const struct sample_tree *h = t->views[c].index->header;
        struct profile *p = t->profiles[c];
        size_t n = name_table_size(h->names);

        if (!t->to_shared[c]) {
                t->to_shared[c] = malloc((n + 1) * sizeof *t->to_shared[c]);
                if (!t->to_shared[c])
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        t->to_shared[c][i] = NAME_NONE;
        }
        for (size_t i = 0; i < p->n_names; i++) {
                uint32_t *shared = &t->to_shared[c][p->names[i]];

                if (*shared == NAME_NONE) {
                        const char *name = name_table_get(h->names, p->names[i]);
                        int64_t id = name_table_intern(t->names, name, strlen(name));

                        if (id < 0)
                                return (int) id;
                        *shared = (uint32_t) id;
                }
                p->names[i] = *shared;
        }
        p->tree = t->headers[c];
        return 0;
}

/* Column C's view at MIN_HITS (WANTED: paths asked for, in its names), into t->profiles[c],
 * shared. A root the column has not is an empty profile. Returns 1 if the root is there, 0 if
 * not, or a negative errno. */
static int table_column(struct table *t, size_t c, enum profile_kind kind, const char *root,
                        uint64_t min_hits, const struct callpath_wanted *wanted) {
        const struct tree_index *x = t->views[c].index;
        int r;

        t->profiles[c] = profile_free(t->profiles[c]);
        r = wanted ? profile_paths_index(x, kind, root, min_hits, wanted, &t->profiles[c]) :
                     profile_compute_index(x, kind, root, min_hits, &t->profiles[c]);
        if (r == -ENOENT) {
                t->profiles[c] = profile_new(kind, x->header, NAME_NONE);
                return t->profiles[c] ? table_share(t, c) : -ENOMEM;
        }
        if (r < 0)
                return r;
        r = table_share(t, c);
        return r < 0 ? r : 1;
}

/* Sets *ret to column C's name id for shared id NAME, or NAME_NONE where the column has none.
 * Returns 0 or -ENOMEM. */
static int table_to_column(struct table *t, size_t c, uint32_t name, uint32_t *ret) {
        const struct sample_tree *h = t->views[c].index->header;
        size_t n = name_table_size(t->names);

        if (name >= t->n_to_column[c]) {
                uint32_t *m = realloc(t->to_column[c], (n + 1) * sizeof *m);

                if (!m)
                        return -ENOMEM;
                for (size_t i = t->n_to_column[c]; i < n; i++)
                        m[i] = NOT_LOOKED_UP;
                t->to_column[c] = m;
                t->n_to_column[c] = n;
        }
        if (t->to_column[c][name] == NOT_LOOKED_UP)
                t->to_column[c][name] = name_table_find(h->names, name_table_get(t->names, name));
        *ret = t->to_column[c][name];
        return 0;
}

/* Asks every column for the paths that any column holds (the rows), in its names and order, and
 * computes each again at its MIN_HITS with them. The omitted: at least the most one column
 * omitted. Returns 0 or a negative errno. */
static int table_with_rows(struct table *t, enum profile_kind kind, const char *root,
                           const uint64_t *min_hits, size_t *ret_omitted) {
        _cleanup_free_ uint32_t *path = NULL;
        size_t max_len = 0, omitted = 0;
        int r = 0;

        for (size_t c = 0; c < t->n; c++)
                for (size_t i = 0; i < t->profiles[c]->n_entries; i++)
                        max_len = MAX(max_len, t->profiles[c]->entries[i].len);
        path = malloc((max_len + 1) * sizeof *path);
        if (!path)
                return -ENOMEM;
        for (size_t c = 0; c < t->n && r >= 0; c++) {
                struct callpath_wanted wanted = {};

                for (size_t o = 0; o < t->n && r >= 0; o++) {
                        const struct profile *p = t->profiles[o];

                        for (size_t i = 0; i < p->n_entries && r >= 0; i++) {
                                const struct profile_entry *e = &p->entries[i];
                                bool absent = false;

                                /* an upward path is shown caller first, asked for root first */
                                for (uint32_t k = 0; k < e->len && !absent && r >= 0; k++) {
                                        uint32_t name =
                                                profile_path(p, e)[kind == PROFILE_UP ? e->len - 1 - k : k];

                                        r = table_to_column(t, c, name, &path[k]);
                                        absent = path[k] == NAME_NONE;
                                }
                                if (r >= 0 && !absent)
                                        r = callpath_wanted_add(&wanted, path, e->len);
                        }
                }
                /* The other columns' rows hold no path that is not in this one's new profile
                 * or theirs (each holds its old rows): the union read by the next is the same. */
                if (r >= 0)
                        r = table_column(t, c, kind, root, min_hits[c], &wanted);
                if (r >= 0)
                        omitted = MAX(omitted, t->profiles[c]->n_omitted);
                callpath_wanted_done(&wanted);
        }
        *ret_omitted = omitted;
        return r < 0 ? r : 0;
}
static int table_command(struct query_args *q, enum profile_kind kind) {
        _cleanup_(table_done) struct table t = {};
        _cleanup_free_ uint64_t *min_hits = NULL;
        _cleanup_(profile_join_freep) struct profile_join *j = NULL;
        bool paths = kind == PROFILE_DOWN || kind == PROFILE_UP, by_rows = false;
        size_t found = 0, n_nodes = 0, omitted = 0;
        FILE *out;
        int r;

        r = query_load_indexes(q, kind == PROFILE_UP, &t.views, &t.n);
        if (r < 0)
                return exit_status(r);
        t.names = name_table_new();
        t.headers = calloc(t.n, sizeof *t.headers);
        t.profiles = calloc(t.n, sizeof *t.profiles);
        t.to_shared = calloc(t.n, sizeof *t.to_shared);
        t.to_column = calloc(t.n, sizeof *t.to_column);
        t.n_to_column = calloc(t.n, sizeof *t.n_to_column);
        min_hits = calloc(t.n, sizeof *min_hits);
        if (!t.names || !t.headers || !t.profiles || !t.to_shared || !t.to_column || !t.n_to_column ||
            !min_hits)
                return exit_status(log_error_errno(ENOMEM, "Out of memory"));
        for (size_t c = 0; c < t.n; c++)
                n_nodes += t.views[c].index->n;
        by_rows = paths && q->threshold > 0 && n_nodes > profile_exact_nodes();
        for (size_t c = 0; c < t.n; c++) {
                const struct sample_tree *h = t.views[c].index->header;

                /* the header's facts, the shared names; no tables by name id (no view reads them) */
                t.headers[c] = malloc(sizeof *t.headers[c]);
                if (!t.headers[c])
                        return exit_status(log_error_errno(ENOMEM, "Out of memory"));
                *t.headers[c] = (struct sample_tree) {
                        .names = t.names,
                        .total = h->total,
                        .weighed = h->weighed,
                        .info = h->info,
                };
                if (by_rows)
                        min_hits[c] = profile_min_hits(h->total, q->threshold);
                r = table_column(&t, c, kind, q->root, min_hits[c], NULL);
                if (r < 0)
                        return exit_status(log_error_errno(r, "Cannot compute the profile: %m"));
                found += r;
        }
        if (q->root && found == 0)
                return query_missing_root(q, kind, t.views[0].index->header, t.views[0].index);
        if (by_rows) {
                r = table_with_rows(&t, kind, q->root, min_hits, &omitted);
                if (r < 0)
                        return exit_status(log_error_errno(r, "Cannot compute the profile: %m"));
        }
        r = profile_join((const struct profile *const *) t.profiles, t.n, &j);
        if (r < 0)
                return exit_status(log_error_errno(r, "Cannot join the profiles: %m"));
        if (by_rows) {
                j->n_omitted = omitted;
                j->omitted_partial = true;
        }
        out = query_output(q);
        if (!out)
                return EXIT_FAILURE_;
        r = q->format->table(out, j, q->ratio, q->threshold);
        return query_output_close(q, out, r);
}

int cmd_view(int argc, char **argv, const struct verb *verb) {
        enum profile_kind kind = verb->kind;
        const char *name = verb->name;
        bool rooted = kind == PROFILE_DOWN || kind == PROFILE_UP;
        _cleanup_(view_data_done) struct view_data v = {};
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_(query_args_done) struct query_args q = {};
        const struct sample_tree *header;
        int r;

        r = query_args_parse(&q, argc, argv, name, verb->usage,
                             (rooted ? QUERY_NEEDS_ROOT : 0) | QUERY_MANY_RESOURCES);
        if (r <= 0)
                return exit_status(r);
        r = query_check_format(&q, name, RENDER_PROFILE);
        if (r < 0)
                return exit_status(r);
        if (q.resources && q.resources[1])
                return table_command(&q, kind);
        r = query_load_index(&q, kind == PROFILE_UP, &v);
        if (r < 0)
                return exit_status(r);

        header = v.index->header;
        r = profile_compute_index(v.index, kind, q.root, profile_min_hits(header->total, q.threshold), &p);
        if (r == -ENOENT && rooted)
                return query_missing_root(&q, kind, v.index->header, v.index);
        if (r < 0) {
                log_error_errno(r, "Cannot compute the profile: %m");
                return EXIT_FAILURE_;
        }
        return query_render_profile(&q, p);
}
