/* The downward call path profile (paper §4.3): every call path whose first function is the
 * root, with the hits of the samples whose stacks contain it, by the appendix's algorithm. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_down(struct sample_tree *t, const char *root, uint64_t min_hits, struct profile **ret) {
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_free_ bool *roots = NULL;
        uint32_t id;
        int r;

        r = profile_roots(t, root, &roots, &id);
        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        sample_tree_weigh(t);
        p = profile_new(PROFILE_DOWN, t, id);
        if (!p)
                return -ENOMEM;
        p->min_hits = min_hits;
        r = callpath_summarize(t, roots, false, p);
        if (r < 0)
                return r;
        if (p->n_entries + p->n_omitted == 0)
                return -ENOENT;         /* the name is known but labels no node of this tree */
        profile_sort(p);
        *ret = take_ptr(&p);
        return 0;
}
