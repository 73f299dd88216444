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

struct tree_index_stacks {
        const struct tree_index *x;
        struct pending *stack;
        size_t n, cap;
        uint32_t *path;
        struct tree_index_window window;
};

int tree_index_stacks_new(const struct tree_index *x, struct tree_index_stacks **ret) {
        struct tree_index_stacks *s = calloc(1, sizeof *s);

        if (!s)
                return -ENOMEM;
        s->x = x;
        s->path = malloc(((size_t) x->max_depth + 1) * sizeof *s->path);
        if (!s->path || GROW(s->stack, s->cap, 1) < 0) {
                tree_index_stacks_free(s);
                return -ENOMEM;
        }
        s->stack[s->n++] = (struct pending) { .node = 0, .depth = 0 };
        *ret = s;
        return 0;
}

struct tree_index_stacks *tree_index_stacks_free(struct tree_index_stacks *s) {
        if (s) {
                free(s->stack);
                free(s->path);
                free(s);
        }
        return NULL;
}

int tree_index_stacks_next(struct tree_index_stacks *s, const uint32_t **ret_path, size_t *ret_depth,
                           uint64_t *ret_self) {
        const struct tree_index *x = s->x;

        while (s->n > 0) {
                struct pending p = s->stack[--s->n];
                uint32_t end = p.node + tree_index_size(x, p.node);
                uint64_t below = 0;
                size_t k = 0, n = s->n;

                tree_index_touch(x, &s->window, p.node);
                if (p.depth > 0)
                        s->path[p.depth - 1] = x->nodes[p.node].name;
                for (uint32_t c = p.node + 1; c < end; c += tree_index_size(x, c), k++) {
                        uint32_t size = tree_index_size(x, c);

                        if (size == 0 || size > end - c || x->nodes[c].name >= x->n_names ||
                            p.depth >= x->max_depth)
                                return -EBADMSG;
                        tree_index_touch(x, &s->window, c);
                        if (GROW(s->stack, s->cap, n + k + 1) < 0)
                                return -ENOMEM;
                        s->stack[n + k] = (struct pending) { .node = c,
                                                             .depth = p.depth + 1,
                                                             .name = x->nodes[c].name };
                        below += x->nodes[c].weight;
                }
                if (below > x->nodes[p.node].weight)
                        return -EBADMSG;
                sorting = x;
                qsort(s->stack + n, k, sizeof *s->stack, name_cmp_desc);
                sorting = NULL;
                s->n = n + k;
                if (x->nodes[p.node].weight > below) {
                        *ret_path = s->path;
                        *ret_depth = p.depth;
                        *ret_self = x->nodes[p.node].weight - below;
                        return 1;
                }
        }
        return 0;
}

int tree_index_each_stack(const struct tree_index *x,
                          int (*fn)(const struct tree_index *x, const uint32_t *path, size_t depth,
                                    uint64_t self, void *userdata),
                          void *userdata) {
        _cleanup_(tree_index_stacks_freep) struct tree_index_stacks *s = NULL;
        const uint32_t *path;
        uint64_t self;
        size_t depth;
        int r;

        r = tree_index_stacks_new(x, &s);
        while (r >= 0 && (r = tree_index_stacks_next(s, &path, &depth, &self)) > 0)
                r = fn(x, path, depth, self, userdata);
        return r < 0 ? r : 0;
}
