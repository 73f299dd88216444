/* The body profile (paper §5.2, "generalizes prof(1) to arbitrary resources"): for each
 * function, the hits of the samples whose stack ends in it, summed as the tree index is built.
 * Like prof(1), only functions that were hit: a caller's body has no share to list. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_body_index(const struct tree_index *x, uint64_t min_hits, struct profile **ret) {
        _cleanup_(profile_freep) struct profile *p = profile_new(PROFILE_BODY, x->header, NAME_NONE);
        int r;

        if (!p)
                return -ENOMEM;
        p->min_hits = min_hits;
        for (uint32_t name = 0; name < x->n_names; name++) {
                if (x->body_hits[name] == 0)
                        continue;
                r = profile_add(p, &name, 1, x->body_hits[name]);
                if (r < 0)
                        return r;
        }
        profile_sort(p);
        *ret = take_ptr(&p);
        return 0;
}

int profile_body(struct sample_tree *t, uint64_t min_hits, struct profile **ret) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        int r;

        r = tree_index_build(t, &x);
        if (r < 0)
                return r;
        return profile_body_index(x, min_hits, ret);
}
