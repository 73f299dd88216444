/* cppctl down, up, functions and body: the four profile views (paper §4.3, §4.4, §5.2), one
 * function for all four, told apart by the kind the command table gives. One resource is read
 * as a tree index (mapped from the cache when the store is big and unfiltered); several
 * (-r A,B or --ratio A/B) are profiled each and joined by path into one table. */
#include "cppctl.h"

#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "profile-join.h"

/* -r A,B,... and --ratio A/B: the view of each resource, joined by path. */
static int table_command(struct query_args *q, enum profile_kind kind) {
        _cleanup_(name_table_freep) struct name_table *names = NULL;
        _cleanup_free_ struct sample_tree **trees = NULL;
        _cleanup_free_ struct profile **profiles = NULL;
        _cleanup_(profile_join_freep) struct profile_join *j = NULL;
        size_t n = 0, found = 0;
        FILE *out;
        int r;

        r = query_load_many(q, &names, &trees, &n);
        if (r < 0)
                return exit_status(r);
        profiles = calloc(n, sizeof *profiles);
        if (!profiles) {
                r = log_error_errno(ENOMEM, "Out of memory");
                goto finish;
        }
        for (size_t i = 0; i < n; i++) {
                r = profile_compute(trees[i], kind, q->root, 0, &profiles[i]);
                if (r == -ENOENT) {
                        profiles[i] = profile_new(kind, trees[i], NAME_NONE);
                        r = profiles[i] ? 0 : -ENOMEM;
                } else if (r >= 0)
                        found++;
                if (r < 0) {
                        log_error_errno(r, "Cannot compute the profile: %m");
                        goto finish;
                }
        }
        if (q->root && found == 0) {
                r = query_missing_root(q, kind, trees[0], NULL);
                goto finish;
        }
        r = profile_join((const struct profile *const *) profiles, n, &j);
        if (r < 0) {
                log_error_errno(r, "Cannot join the profiles: %m");
                goto finish;
        }
        out = query_output(q);
        if (!out) {
                r = -EIO;
                goto finish;
        }
        r = q->format->table(out, j, q->ratio, q->threshold);
        r = query_output_close(q, out, r) == EXIT_OK ? 0 : -EIO;
finish:
        j = profile_join_free(j);
        for (size_t i = 0; i < n; i++) {
                if (profiles)
                        profile_free(profiles[i]);
                sample_tree_free(trees[i]);
        }
        return r > 0 ? r : exit_status(r);
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
