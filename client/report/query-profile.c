/* A profile as every view shows it: rendered in Q's format to Q's output, and, for a root in
 * no sample, the empty profile with the names that come close. */
#include "report.h"

#include <errno.h>

#include "log.h"
#include "strv.h"

int query_render_profile(const struct query_args *q, const struct profile *p) {
        FILE *out = query_output(q);

        if (!out)
                return EXIT_FAILURE_;
        return query_output_close(q, out, q->format->profile(out, p, q->threshold));
}

int query_missing_root(const struct query_args *q, enum profile_kind kind, struct sample_tree *t,
                       const struct tree_index *x) {
        _cleanup_(profile_freep) struct profile *empty = profile_new(kind, t, NAME_NONE);
        _cleanup_(strv_freep) char **similar = NULL;
        _cleanup_free_ char *list = NULL;
        int r;

        if (!empty) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        if (query_render_profile(q, empty) != EXIT_OK)
                return EXIT_FAILURE_;

        r = x ? profile_similar_roots_index(x, q->root, 5, &similar) :
                profile_similar_roots(t, q->root, 5, &similar);
        if (r > 0)
                list = strv_join(similar, ", ");
        if (list)
                log_error("'%s' appears in no sample of %s; functions with that in their name: %s", q->root,
                          q->resource, list);
        else
                log_error("'%s' appears in no sample of %s; 'cppctl functions' lists those that do", q->root,
                          q->resource);
        return EXIT_EMPTY;
}
