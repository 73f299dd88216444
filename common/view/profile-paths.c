/* The downward and upward views of an index, one function for both: the roots the name stands
 * for, the appendix's algorithm (callpath.c) from them, the paths sorted. An upward view runs
 * the same on the inverted tree's index and reverses each path. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_paths_index(const struct tree_index *x, enum profile_kind kind, const char *root,
                        uint64_t min_hits, const struct callpath_wanted *wanted, struct profile **ret) {
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_free_ bool *roots = NULL;
        uint32_t id;
        int r;

        if (kind != PROFILE_DOWN && kind != PROFILE_UP)
                return -EINVAL;
        r = profile_roots_index(x, root, &roots, &id);
        if (r <= 0)
                return r < 0 ? r : -ENOENT;
        p = profile_new(kind, x->header, id);
        if (!p)
                return -ENOMEM;
        p->min_hits = min_hits;
        r = callpath_summarize(x, roots, min_hits, wanted, kind == PROFILE_UP, p);
        if (r < 0)
                return r;
        profile_sort(p);
        *ret = take_ptr(&p);
        return 0;
}
