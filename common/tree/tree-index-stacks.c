/* The stacks of a tree index that samples end on, in the order sample_tree_each_stack() visits
 * the tree the index was built from: a depth-first walk with each node's children by name, so
 * that a format that writes stacks one a line (folded) writes the same bytes from the index as
 * from the tree, without the tree.
 *
 * A node's children are found by stepping over subtrees (the index is in preorder), its self hits
 * are its weight less its children's, and its children are pushed sorted by name, descending, so
 * that the first name is popped first. Memory is the walk's stack: the children not yet visited
 * of each node on the path, a few thousand entries, however big the index; a mapped index is let
 * go of as the walk goes (tree_index_touch()), so the walk keeps a window of it mapped. */
#include "tree-index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* A node's name is kept beside it, so that sorting siblings reads no node again (and maps back
 * the pages let go of: an inverted tree's root has thousands of children all over the index). */
struct pending {
        uint32_t node;
        uint32_t depth; /* the root's is 0 */
        uint32_t name;
};

/* qsort() has no context argument in C11. */
static _Thread_local const struct tree_index *sorting;

static int name_cmp_desc(const void *a, const void *b) {
        const struct pending *x = a, *y = b;

        return strcmp(sample_tree_name(sorting->header, y->name), sample_tree_name(sorting->header, x->name));
}

int tree_index_each_stack(const struct tree_index *x,
                          int (*fn)(const struct tree_index *x, const uint32_t *path, size_t depth,
                                    uint64_t self, void *userdata),
                          void *userdata) {
        _cleanup_free_ struct pending *stack = NULL;
        _cleanup_free_ uint32_t *path = NULL;
        struct tree_index_window window = {};
        size_t n = 0, cap = 0;
        int r;

        path = malloc(((size_t) x->max_depth + 1) * sizeof *path);
        if (!path || GROW(stack, cap, 1) < 0)
                return -ENOMEM;
        stack[n++] = (struct pending) { .node = 0, .depth = 0 };
        while (n > 0) {
                struct pending p = stack[--n];
                uint32_t end = p.node + tree_index_size(x, p.node);
                uint64_t below = 0;
                size_t k = 0;

                tree_index_touch(x, &window, p.node);
                if (p.depth > 0)
                        path[p.depth - 1] = x->nodes[p.node].name;
                for (uint32_t c = p.node + 1; c < end; c += tree_index_size(x, c), k++) {
                        uint32_t size = tree_index_size(x, c);

                        if (size == 0 || size > end - c || x->nodes[c].name >= x->n_names ||
                            p.depth >= x->max_depth)
                                return -EBADMSG;
                        tree_index_touch(x, &window, c);
                        if (GROW(stack, cap, n + k + 1) < 0)
                                return -ENOMEM;
                        stack[n + k] = (struct pending) { .node = c,
                                                          .depth = p.depth + 1,
                                                          .name = x->nodes[c].name };
                        below += x->nodes[c].weight;
                }
                if (below > x->nodes[p.node].weight)
                        return -EBADMSG;
                if (x->nodes[p.node].weight > below) {
                        r = fn(x, path, p.depth, x->nodes[p.node].weight - below, userdata);
                        if (r < 0)
                                return r;
                }
                sorting = x;
                qsort(stack + n, k, sizeof *stack, name_cmp_desc);
                sorting = NULL;
                n += k;
        }
        return 0;
}
