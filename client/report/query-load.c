/* Loading for the reports: Q's store opened through the source interface (source/source.h), a
 * resource picked (the one named, the store's only one, or cpu-time), and its tree, index, or
 * trees of several resources loaded, with a missing store, resource or sample reported the same
 * way for every view, diff, export and the shell, whatever kind of store it is. */
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "strv.h"

static int pick_resource(struct query_args *q, struct source *src) {
        _cleanup_(strv_freep) char **names = NULL;
        _cleanup_free_ char *list = NULL;
        int n;

        n = source_list_resources(src, &names);
        if (n < 0)
                return source_log_error(src, n, q->resource);
        if (n == 0)
                return log_error_errno(ENOENT, "%s holds no samples yet", q->db);
        list = strv_join(names, ", ");
        if (!list)
                return log_error_errno(ENOMEM, "Out of memory");

        if (q->resource) {
                for (int i = 0; i < n; i++)
                        if (streq(names[i], q->resource))
                                return 0;
                return log_error_errno(ENOENT, "%s has no samples of resource '%s'; it has: %s", q->db,
                                       q->resource, list);
        }
        if (n == 1) {
                free(q->resource_owned);
                q->resource = q->resource_owned = strdup(names[0]);
                return q->resource ? 0 : log_error_errno(ENOMEM, "Out of memory");
        }
        for (int i = 0; i < n; i++)
                if (streq(names[i], "cpu-time")) {
                        q->resource = "cpu-time";
                        return 0;
                }
        return log_error_errno(EINVAL, "%s holds several resources (%s): choose one with --resource", q->db,
                               list);
}

int query_load(struct query_args *q, struct sample_tree **ret) {
        return query_load_shared(q, NULL, ret);
}

/* Opens Q's store for reading into *ret and fills *ret_filter with Q's filter and resource (the
 * store's only one when Q names none). Errors are logged. */
static int open_store(struct query_args *q, struct source **ret, struct store_filter *ret_filter) {
        _cleanup_(source_closep) struct source *src = NULL;
        int r;

        r = source_open(q->db, q->credentials, 0, &src);
        if (r < 0)
                return r;
        r = pick_resource(q, src);
        if (r < 0)
                return r;
        if (q->filter.by == STORE_BY_LINE && source_has_call_sites(src) == 0)
                log_notice(
                        "%s keeps its frames as functions, so --by line shows functions; record with --lines "
                        "(cppd: [store] granularity = line) to keep call sites",
                        q->db);
        *ret_filter = q->filter;
        ret_filter->resource = q->resource;
        *ret = take_ptr(&src);
        return 0;
}

int query_load_shared(struct query_args *q, struct name_table *names, struct sample_tree **ret) {
        _cleanup_(source_closep) struct source *src = NULL;
        struct store_filter f;
        int r;

        r = open_store(q, &src, &f);
        if (r < 0)
                return r;
        r = source_load_tree(src, &f, names, ret);
        if (r < 0)
                return source_log_error(src, r, q->resource);
        if ((*ret)->total == 0) {
                *ret = sample_tree_free(*ret);
                log_error("no samples of %s in %s match the filters", q->resource, q->db);
                return -ENODATA;
        }
        return 0;
}

int query_load_index(struct query_args *q, bool inverted, struct view_data *ret) {
        _cleanup_(source_closep) struct source *src = NULL;
        _cleanup_(view_data_done) struct view_data v = {};
        struct store_filter f;
        int r;

        r = open_store(q, &src, &f);
        if (r < 0)
                return r;
        r = source_load_index(src, &f, inverted, &v);
        if (r < 0)
                return source_log_error(src, r, q->resource);
        if (v.index->header->total == 0) {
                log_error("no samples of %s in %s match the filters", q->resource, q->db);
                return -ENODATA;
        }
        *ret = v;
        v = (struct view_data) {};
        return 0;
}

int query_load_many(struct query_args *q, struct name_table **ret_names, struct sample_tree ***ret_trees,
                    size_t *ret_n) {
        _cleanup_(source_closep) struct source *src = NULL;
        _cleanup_(name_table_freep) struct name_table *names = name_table_new();
        size_t n = q->resources ? strv_length(q->resources) : 1;
        _cleanup_free_ struct sample_tree **trees = calloc(n, sizeof *trees);
        uint64_t total = 0;
        int r;

        if (!names || !trees)
                return log_error_errno(ENOMEM, "Out of memory");
        r = source_open(q->db, q->credentials, 0, &src);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                struct store_filter f = q->filter;

                q->resource = q->resources ? q->resources[i] : q->resource;
                r = pick_resource(q, src);
                if (r >= 0) {
                        f.resource = q->resource;
                        r = source_load_tree(src, &f, names, &trees[i]);
                        if (r < 0)
                                r = source_log_error(src, r, q->resource);
                }
                if (r < 0) {
                        for (size_t k = 0; k < i; k++)
                                sample_tree_free(trees[k]);
                        return r;
                }
                total += trees[i]->total;
        }
        q->resource = q->resources ? q->resources[0] : q->resource;
        if (total == 0) {
                for (size_t k = 0; k < n; k++)
                        sample_tree_free(trees[k]);
                log_error("no samples of %s in %s match the filters",
                          q->resources ? "these resources" : q->resource, q->db);
                return -ENODATA;
        }
        *ret_names = take_ptr(&names);
        *ret_trees = take_ptr(&trees);
        *ret_n = n;
        return 0;
}

int query_load_indexes(struct query_args *q, bool inverted, struct view_data **ret, size_t *ret_n) {
        _cleanup_(source_closep) struct source *src = NULL;
        size_t n = q->resources ? strv_length(q->resources) : 1;
        _cleanup_free_ struct view_data *v = calloc(n, sizeof *v);
        uint64_t total = 0;
        int r;

        if (!v)
                return log_error_errno(ENOMEM, "Out of memory");
        r = source_open(q->db, q->credentials, 0, &src);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                struct store_filter f = q->filter;

                q->resource = q->resources ? q->resources[i] : q->resource;
                r = pick_resource(q, src);
                if (r >= 0) {
                        f.resource = q->resource;
                        r = source_load_index(src, &f, inverted, &v[i]);
                        if (r < 0)
                                r = source_log_error(src, r, q->resource);
                }
                if (r < 0) {
                        for (size_t k = 0; k < i; k++)
                                view_data_done(&v[k]);
                        return r;
                }
                total += v[i].index->header->total;
        }
        q->resource = q->resources ? q->resources[0] : q->resource;
        if (total == 0) {
                for (size_t k = 0; k < n; k++)
                        view_data_done(&v[k]);
                log_error("no samples of %s in %s match the filters",
                          q->resources ? "these resources" : q->resource, q->db);
                return -ENODATA;
        }
        *ret = take_ptr(&v);
        *ret_n = n;
        return 0;
}
