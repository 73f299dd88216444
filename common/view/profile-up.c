/* The upward call path profile (paper §4.3): every call path whose last function is the root.
 * The appendix gives only the downward algorithm and calls the rest "straightforward
 * extensions"; the extension here is exact symmetry: invert the sample tree (each stack read
 * leaf first), run the downward algorithm on it, and print each path reversed. So the
 * innermost occurrence of the root on a stack is where the summary starts, and recursion
 * between it and a caller is canonicalized at the occurrence nearest the root. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_up_index(const struct tree_index *inverted, const char *root, uint64_t min_hits,
                     struct profile **ret) {
        return profile_paths_index(inverted, PROFILE_UP, root, min_hits, NULL, ret);
}

int profile_up(struct sample_tree *t, const char *root, uint64_t min_hits, struct profile **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *inv = NULL;
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        _cleanup_(profile_freep) struct profile *p = NULL;
        int r;

        r = sample_tree_invert(t, &inv);
        if (r < 0)
                return r;
        r = tree_index_build(inv, &x);
        if (r < 0)
                return r;
        r = profile_up_index(x, root, min_hits, &p);
        if (r < 0)
                return r;
        p->tree = t; /* the inverted tree goes; T has the same names, total and header */
        *ret = take_ptr(&p);
        return 0;
}
