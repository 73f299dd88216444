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
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_free_ bool *roots = NULL;
        uint32_t id;
        int r;

        r = profile_roots_index(inverted, root, &roots, &id);
        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        p = profile_new(PROFILE_UP, inverted->header, id);
        if (!p)
                return -ENOMEM;
        p->min_hits = min_hits;
        r = callpath_summarize(inverted, roots, min_hits, true, p);
        if (r < 0)
                return r;
        profile_sort(p);
        *ret = take_ptr(&p);
        return 0;
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
