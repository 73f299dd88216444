/* The one mapping from a profile kind to the function that computes it, of a sample tree or of
 * a tree index, for every caller that holds a kind (the views, top, diff, the SQL functions);
 * and a view's heaviest entries of a big index, for the callers that show a few. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_compute(struct sample_tree *t, enum profile_kind kind, const char *root, uint64_t min_hits,
                    struct profile **ret) {
        switch (kind) {
        case PROFILE_DOWN:
                return profile_down(t, root, min_hits, ret);
        case PROFILE_UP:
                return profile_up(t, root, min_hits, ret);
        case PROFILE_FUNCTION:
                return profile_function(t, min_hits, ret);
        case PROFILE_BODY:
                return profile_body(t, min_hits, ret);
        }
        return -EINVAL;
}

int profile_compute_index(const struct tree_index *x, enum profile_kind kind, const char *root,
                          uint64_t min_hits, struct profile **ret) {
        switch (kind) {
        case PROFILE_DOWN:
                return profile_down_index(x, root, min_hits, ret);
        case PROFILE_UP:
                return profile_up_index(x, root, min_hits, ret);
        case PROFILE_FUNCTION:
                return profile_function_index(x, min_hits, ret);
        case PROFILE_BODY:
                return profile_body_index(x, min_hits, ret);
        }
        return -EINVAL;
}

size_t profile_exact_nodes(void) {
        const char *s = getenv("CPPD_EXACT_NODES");

        return s ? strtoull(s, NULL, 10) : PROFILE_EXACT_NODES;
}

int profile_heaviest_index(const struct tree_index *x, enum profile_kind kind, const char *root, size_t k,
                           struct profile **ret) {
        uint64_t min_hits = x->header->total;
        int r;

        if (x->n <= profile_exact_nodes())
                return profile_compute_index(x, kind, root, 0, ret);
        /* Halving: the last pass costs what the answer does, the earlier ones less in all. */
        for (;;) {
                _cleanup_(profile_freep) struct profile *p = NULL;

                min_hits /= 2;
                r = profile_compute_index(x, kind, root, min_hits, &p);
                if (r < 0)
                        return r;
                if (profile_n_paths(p) >= k || min_hits == 0) {
                        *ret = take_ptr(&p);
                        return 0;
                }
        }
}
