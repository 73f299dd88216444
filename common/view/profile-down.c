/* The downward call path profile (paper §4.3): every call path whose first function is the
 * root, with the hits of the samples whose stacks contain it, by the appendix's algorithm
 * (callpath.c) on the tree's index. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_down_index(const struct tree_index *x, const char *root, uint64_t min_hits,
                       struct profile **ret) {
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_free_ bool *roots = NULL;
        uint32_t id;
        int r;

        r = profile_roots_index(x, root, &roots, &id);
        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        p = profile_new(PROFILE_DOWN, x->header, id);
        if (!p)
                return -ENOMEM;
        p->min_hits = min_hits;
        r = callpath_summarize(x, roots, min_hits, false, p);
        if (r < 0)
                return r;
        profile_sort(p);
        *ret = take_ptr(&p);
        return 0;
}

int profile_down(struct sample_tree *t, const char *root, uint64_t min_hits, struct profile **ret) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        int r;

        r = tree_index_build(t, &x);
        if (r < 0)
                return r;
        return profile_down_index(x, root, min_hits, ret);
}
