/* The stack walk the tree formats share (sample_tree_each_stack()): each visit sorts a node's
 * children by name in place on the walk's own stack, so the whole walk allocates twice and output
 * follows names, not the order in which samples came. The renderers (client/) and the pushes to
 * fleet profilers (common/push/) both walk trees this way, so that the same tree gives the same
 * bytes wherever it is encoded. */
#include "sample-tree-walk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* qsort() has no context argument in C11. */
static _Thread_local const struct sample_tree *sorting;

/* Descending, so that the first name is pushed last and popped first. */
static int name_cmp_desc(const void *a, const void *b) {
        const struct sample_tree_node *x = &sorting->nodes[*(const uint32_t *) a];
        const struct sample_tree_node *y = &sorting->nodes[*(const uint32_t *) b];

        return strcmp(sample_tree_name(sorting, y->name), sample_tree_name(sorting, x->name));
}

int sample_tree_each_stack_below(const struct sample_tree *t, uint32_t top,
                                 int (*fn)(const struct sample_tree *t, uint32_t node, const uint32_t *path,
                                           size_t depth, void *userdata),
                                 void *userdata) {
        _cleanup_free_ uint32_t *stack = NULL, *path = NULL;
        uint32_t max_depth = 0, base = t->nodes[top].depth;
        size_t depth = 0;
        int r;

        for (size_t i = 0; i < t->n_nodes; i++)
                max_depth = MAX(max_depth, t->nodes[i].depth);
        stack = malloc(t->n_nodes * sizeof *stack); /* each node is pushed once */
        path = malloc((max_depth + 1) * sizeof *path);
        if (!stack || !path)
                return -ENOMEM;

        stack[depth++] = top;
        while (depth > 0) {
                uint32_t node = stack[--depth];
                const struct sample_tree_node *n = &t->nodes[node];
                size_t k = 0;

                /* Pre-order: path[0..depth-1) still holds this node's ancestors below TOP. */
                if (node != top)
                        path[n->depth - base - 1] = n->name;
                if (n->self > 0) {
                        r = fn(t, node, path, n->depth - base, userdata);
                        if (r < 0)
                                return r;
                }
                for (uint32_t c = n->first_child; c != SAMPLE_TREE_NONE; c = t->nodes[c].next_sibling)
                        stack[depth + k++] = c;
                sorting = t;
                qsort(stack + depth, k, sizeof *stack, name_cmp_desc);
                sorting = NULL;
                depth += k;
        }
        return 0;
}

int sample_tree_each_stack(const struct sample_tree *t,
                           int (*fn)(const struct sample_tree *t, uint32_t node, const uint32_t *path,
                                     size_t depth, void *userdata),
                           void *userdata) {
        return sample_tree_each_stack_below(t, SAMPLE_TREE_ROOT, fn, userdata);
}
