/* The one mapping from a profile kind to the function that computes it, of a sample tree or of
 * a tree index, for every caller that holds a kind (the views, top, diff, the SQL functions). */
#include "profile.h"

#include <errno.h>

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
