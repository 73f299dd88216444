/* The function profile (paper §4.4, "body+descendants"): for each function, the hits of the
 * samples whose stack contains it anywhere, counted once per sample however often it recurs.
 * One depth-first walk keeps, per name, how many of the current node's ancestors carry it; a
 * node adds its weight only when no ancestor does, i.e. at the outermost occurrence. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

int profile_function(struct sample_tree *t, uint64_t min_hits, struct profile **ret) {
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_free_ uint32_t *active = NULL, *stack = NULL;
        _cleanup_free_ uint64_t *hits = NULL;
        size_t n_names = name_table_size(t->names), depth = 0;
        int r;

        sample_tree_weigh(t);
        p = profile_new(PROFILE_FUNCTION, t, NAME_NONE);
        active = calloc(n_names + 1, sizeof *active);
        hits = calloc(n_names + 1, sizeof *hits);
        stack = malloc(2 * t->n_nodes * sizeof *stack);    /* each node: enter, leave */
        if (!p || !active || !hits || !stack)
                return -ENOMEM;
        p->min_hits = min_hits;

        /* Pre-order walk with an explicit stack; a node is pushed twice, the second time
         * (marked by the top bit) to leave it. Node ids fit in 31 bits: the tree's arrays would
         * not fit in memory otherwise. */
        for (uint32_t c = t->nodes[SAMPLE_TREE_ROOT].first_child; c != SAMPLE_TREE_NONE; c = t->nodes[c].next_sibling)
                stack[depth++] = c;
        while (depth > 0) {
                uint32_t node = stack[--depth];
                bool leaving = node & 0x80000000u;
                uint32_t name;

                node &= 0x7fffffffu;
                name = t->nodes[node].name;
                if (leaving) {
                        active[name]--;
                        continue;
                }
                if (active[name]++ == 0)
                        hits[name] += t->nodes[node].weight;
                stack[depth++] = node | 0x80000000u;
                for (uint32_t c = t->nodes[node].first_child; c != SAMPLE_TREE_NONE; c = t->nodes[c].next_sibling)
                        stack[depth++] = c;
        }

        /* The walk left every count at 0; reuse them to mark the names this tree has (a
         * shared name table may hold others). */
        for (size_t i = 1; i < t->n_nodes; i++)
                active[t->nodes[i].name] = 1;
        for (uint32_t name = 0; name < n_names; name++) {
                if (!active[name])
                        continue;
                r = profile_add(p, &name, 1, hits[name]);
                if (r < 0)
                        return r;
        }
        profile_sort(p);
        *ret = take_ptr(&p);
        return 0;
}
