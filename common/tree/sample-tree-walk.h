/* Walking a sample tree's stacks in a fixed order (sample-tree-walk.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "sample-tree.h"

/* Calls FN for every node of T with self hits (the root too, at DEPTH 0, if samples ended there),
 * in stack order: a pre-order walk with children sorted by name, so that a stack comes before
 * its extensions and the order does not depend on the order samples came in. PATH holds the
 * stack's DEPTH name ids, root first, valid during the call. Returns 0, -ENOMEM, or the first
 * negative value FN returns, which stops the walk. */
int sample_tree_each_stack(const struct sample_tree *t,
                           int (*fn)(const struct sample_tree *t, uint32_t node, const uint32_t *path,
                                     size_t depth, void *userdata),
                           void *userdata);

/* As sample_tree_each_stack(), over the subtree below node TOP: PATH and DEPTH are relative to
 * it (TOP itself is not in PATH; its own self hits come at DEPTH 0). */
int sample_tree_each_stack_below(const struct sample_tree *t, uint32_t top,
                                 int (*fn)(const struct sample_tree *t, uint32_t node, const uint32_t *path,
                                           size_t depth, void *userdata),
                                 void *userdata);
