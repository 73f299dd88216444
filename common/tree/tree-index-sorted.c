/* A tree index's nodes in the order the tree renderers draw them (the text and JSON trees, flame
 * and icicle graphs): preorder, each node's children heaviest first, ties by name, as
 * render_sorted_children() sorts a loaded tree's. The renderers draw from this walk whatever the
 * threshold, over an index mapped from the cache, laid out for the view, or built from a small
 * tree (tree_index_build()), so that a tree of millions of nodes is drawn in full without loading
 * it.
 *
 * A node's children are found by stepping over subtrees (the index is in preorder), its self hits
 * are its weight less its children's, and its children are pushed sorted, lightest first, so that
 * the heaviest is popped first; each child carries its offset, its parent's plus the weights of
 * the siblings drawn before it. A node whose subtree is entered is pushed again, marked, under
 * its children, so that LEAVE is called once they are done. Memory is the walk's stack: the
 * children not yet visited of each node on the path, however big the index; a mapped index is
 * let go of as the walk goes (tree_index_touch()), so the walk keeps a window of it mapped. */
#include "tree-index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define LEAVING (UINT32_C(1) << 31) /* in pending.depth: the node's subtree is done */

/* A node's weight and name are kept beside it, so that sorting siblings reads no node again: the
 * children of an inverted tree's root lie all over the index, and reading them again for the
 * sort's comparisons would map the whole file back. */
struct pending {
        uint32_t node;
        uint32_t depth;  /* the root's is 0; | LEAVING */
        uint64_t offset; /* hits drawn before it at its depth, under its parent */
        uint64_t weight;
        uint32_t name;
};

/* qsort() has no context argument in C11. */
static _Thread_local const struct tree_index *sorting;

/* Lightest first, ties by name descending: the reverse of the drawing order, for a stack. */
static int drawn_last_first(const void *a, const void *b) {
        const struct pending *x = a, *y = b;

        if (x->weight != y->weight)
                return x->weight < y->weight ? -1 : 1;
        return strcmp(sample_tree_name(sorting->header, y->name), sample_tree_name(sorting->header, x->name));
}

int tree_index_each_drawn(const struct tree_index *x,
                          int (*enter)(const struct tree_index *x, const struct tree_index_drawn *d,
                                       void *userdata),
                          int (*leave)(const struct tree_index *x, uint32_t node, uint32_t depth,
                                       void *userdata),
                          void *userdata) {
        _cleanup_free_ struct pending *stack = NULL;
        _cleanup_free_ uint32_t *path = NULL;
        struct tree_index_window window = {};
        size_t n = 0, cap = 0;
        int r;

        path = malloc(((size_t) x->max_depth + 1) * sizeof *path);
        if (!path || GROW(stack, cap, 1) < 0)
                return -ENOMEM;
        stack[n++] = (struct pending) { .node = 0 };
        while (n > 0) {
                struct pending p = stack[--n];
                uint32_t end, depth = p.depth & ~LEAVING;
                uint64_t below = 0, offset;
                struct tree_index_drawn d;
                size_t k = 0, first;

                if (p.depth & LEAVING) {
                        r = leave ? leave(x, p.node, depth, userdata) : 0;
                        if (r < 0)
                                return r;
                        continue;
                }
                tree_index_touch(x, &window, p.node);
                if (depth > 0)
                        path[depth - 1] = x->nodes[p.node].name;
                end = p.node + tree_index_size(x, p.node);
                /* the children, and the node's own weight less theirs */
                if (GROW(stack, cap, n + 1) < 0)
                        return -ENOMEM;
                stack[n] = (struct pending) { .node = p.node, .depth = depth | LEAVING };
                first = n + 1;
                for (uint32_t c = p.node + 1; c < end; c += tree_index_size(x, c), k++) {
                        uint32_t size = tree_index_size(x, c);

                        if (size == 0 || size > end - c || x->nodes[c].name >= x->n_names ||
                            depth >= x->max_depth)
                                return -EBADMSG;
                        tree_index_touch(x, &window, c);
                        if (GROW(stack, cap, first + k + 1) < 0)
                                return -ENOMEM;
                        stack[first + k] = (struct pending) {
                                .node = c,
                                .depth = depth + 1,
                                .weight = x->nodes[c].weight,
                                .name = x->nodes[c].name,
                        };
                        below += x->nodes[c].weight;
                }
                if (below > x->nodes[p.node].weight)
                        return -EBADMSG;
                d = (struct tree_index_drawn) {
                        .node = p.node,
                        .depth = depth,
                        .self = x->nodes[p.node].weight - below,
                        .offset = p.offset,
                        .path = path,
                };
                r = enter(x, &d, userdata);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue; /* the subtree is not drawn: no LEAVE either */
                sorting = x;
                qsort(stack + first, k, sizeof *stack, drawn_last_first);
                sorting = NULL;
                /* offsets in drawing order: from the top of the stack down */
                offset = p.offset;
                for (size_t i = first + k; i > first; i--) {
                        stack[i - 1].offset = offset;
                        offset += stack[i - 1].weight;
                }
                n = first + k;
        }
        return 0;
}
