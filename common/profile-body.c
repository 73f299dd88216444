/* The body profile (paper §5.2, "generalizes prof(1) to arbitrary resources"): for each
 * function, the hits of the samples whose stack ends in it. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_body(struct sample_tree *t, uint64_t min_hits, struct profile **ret) {
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_free_ uint64_t *hits = NULL;
        size_t n_names = name_table_size(t->names);
        int r;

        sample_tree_weigh(t);
        p = profile_new(PROFILE_BODY, t, NAME_NONE);
        hits = calloc(n_names + 1, sizeof *hits);
        if (!p || !hits)
                return -ENOMEM;
        p->min_hits = min_hits;
        for (size_t i = 1; i < t->n_nodes; i++)
                hits[t->nodes[i].name] += t->nodes[i].self;
        /* Like prof(1), only functions that were hit: a caller's body has no share to list. */
        for (uint32_t name = 0; name < n_names; name++) {
                if (hits[name] == 0)
                        continue;
                r = profile_add(p, &name, 1, hits[name]);
                if (r < 0)
                        return r;
        }
        profile_sort(p);
        *ret = take_ptr(&p);
        return 0;
}
