/* The function profile (paper §4.4, "body+descendants"): for each function, the hits of the
 * samples whose stack contains it anywhere, counted once per sample however often it recurs.
 * The tree index sums them as it is built (tree-index.c): a name counts at its outermost
 * occurrence on each stack. Every name that labels a node is listed, hit or not. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_function_index(const struct tree_index *x, uint64_t min_hits, struct profile **ret) {
        _cleanup_(profile_freep) struct profile *p = profile_new(PROFILE_FUNCTION, x->header, NAME_NONE);
        int r;

        if (!p)
                return -ENOMEM;
        p->min_hits = min_hits;
        for (uint32_t name = 0; name < x->n_names; name++) {
                if (x->occ_start[name + 1] == x->occ_start[name])
                        continue;
                r = profile_add(p, &name, 1, x->function_hits[name]);
                if (r < 0)
                        return r;
        }
        profile_sort(p);
        *ret = take_ptr(&p);
        return 0;
}

int profile_function(struct sample_tree *t, uint64_t min_hits, struct profile **ret) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        int r;

        r = tree_index_build(t, &x);
        if (r < 0)
                return r;
        return profile_function_index(x, min_hits, ret);
}
