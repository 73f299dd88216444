/* The sample tree of the paths an index's view shows at a threshold: every node whose weight is at
 * least MIN_FRACTION of the total, and each child of those (or of the root) that is not, cut to a
 * leaf that keeps its weight as self. That tree weighs the same at every node it has, its nodes'
 * children are those of the whole tree above the threshold, and a renderer that stops below the
 * threshold (the text tree: a line per node above it, a count of the subtrees below) draws from
 * it what it draws from the whole tree, while it holds a few thousand nodes, not millions.
 *
 * The index is read from the root down, a node's children found by stepping over subtrees, so
 * only nodes above the threshold and their children are read; a mapped index is let go of now
 * and then (tree_index_trim()). */
#include "tree-index.h"

#include <errno.h>
#include <stdlib.h>

#include "grow.h"

/* Nodes read between two tree_index_trim()s: each may map up to 2 MiB of the file around it (a
 * large folio of the page cache), see callpath.c. */
#define TRIM_NODES 16

struct prune_item {
        uint32_t node;   /* in the index */
        uint32_t parent; /* in the tree */
};

/* Copies what the header of X says into T. Returns 0 or -ENOMEM. */
static int copy_info(struct sample_tree *t, const struct sample_tree *h) {
        if (sample_tree_set_resource(t, h->info.resource, h->info.unit) < 0 ||
            sample_tree_set_names_note(t, h->info.names_note) < 0)
                return -ENOMEM;
        t->info.period = h->info.period;
        t->info.samples = h->info.samples;
        t->info.hits_squared = h->info.hits_squared;
        t->info.lost = h->info.lost;
        t->info.periods_fixed = h->info.periods_fixed;
        t->info.periods_random = h->info.periods_random;
        t->info.thinned = h->info.thinned;
        t->info.frames = h->info.frames;
        t->info.frames_unsymbolized = h->info.frames_unsymbolized;
        t->info.frames_named_later = h->info.frames_named_later;
        t->info.modules_named_later = h->info.modules_named_later;
        return 0;
}

int tree_index_prune(const struct tree_index *x, double min_fraction, struct sample_tree **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = sample_tree_new(x->header->names);
        _cleanup_free_ struct prune_item *stack = NULL;
        size_t n = 0, cap = 0, reads = 0;
        uint64_t total = x->nodes[0].weight;
        int r;

        if (!t)
                return -ENOMEM;
        r = copy_info(t, x->header);
        if (r < 0)
                return r;
        if (GROW(stack, cap, 1) < 0)
                return -ENOMEM;
        stack[n++] = (struct prune_item) { .node = 0, .parent = SAMPLE_TREE_NONE };
        while (n > 0) {
                struct prune_item it = stack[--n];
                uint32_t end = it.node + tree_index_size(x, it.node), node = SAMPLE_TREE_ROOT;
                uint64_t weight = x->nodes[it.node].weight, below = 0;
                int64_t c;

                /* read again when popped: counted, as the root of an inverted tree has thousands
                 * of children below the threshold, each in a page of its own */
                if (++reads % TRIM_NODES == 0)
                        tree_index_trim(x);

                if (it.node > 0) {
                        c = sample_tree_add_child(t, it.parent, x->nodes[it.node].name);
                        if (c < 0)
                                return (int) c;
                        node = c;
                }
                /* As the renderers test it: a node below the threshold is cut to a leaf. */
                if (it.node > 0 && total > 0 && (double) weight / (double) total < min_fraction) {
                        sample_tree_add_hits(t, node, weight);
                        continue;
                }
                for (uint32_t k = it.node + 1; k < end;) {
                        uint32_t size = tree_index_size(x, k);

                        if (size == 0 || size > end - k || x->nodes[k].name >= x->n_names)
                                return -EBADMSG;
                        if (++reads % TRIM_NODES == 0)
                                tree_index_trim(x);
                        if (GROW(stack, cap, n + 1) < 0)
                                return -ENOMEM;
                        stack[n++] = (struct prune_item) { .node = k, .parent = node };
                        below += x->nodes[k].weight;
                        k += size;
                }
                if (below > weight)
                        return -EBADMSG;
                sample_tree_add_hits(t, node, weight - below);
        }
        sample_tree_weigh(t);
        *ret = take_ptr(&t);
        return 0;
}
