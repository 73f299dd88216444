/* The downward call path profile (paper §4.3): every call path whose first function is the
 * root, with the hits of the samples whose stacks contain it, by the appendix's algorithm
 * (callpath.c) on the tree's index. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_down_index(const struct tree_index *x, const char *root, uint64_t min_hits,
                       struct profile **ret) {
        return profile_paths_index(x, PROFILE_DOWN, root, min_hits, NULL, ret);
}

int profile_down(struct sample_tree *t, const char *root, uint64_t min_hits, struct profile **ret) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        int r;

        r = tree_index_build(t, &x);
        if (r < 0)
                return r;
        return profile_down_index(x, root, min_hits, ret);
}
