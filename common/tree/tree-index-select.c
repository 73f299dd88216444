/* Filtered views laid out from a store's index, not from the store's stacks.
 *
 * A view filtered by its samples alone (a time range, a unit, a process...) has the tree of the
 * stacks those samples end on: each such stack's path is a path of the index of every sample,
 * so its tree is the index's nodes on those paths, with other weights. Laying it out from the
 * store read the whole stack table, labelled every sampled stack and sorted them (3-6 s over a
 * million distinct stacks, whatever the filter kept); the index of every sample is kept in the
 * cache with each stored stack's node in it (struct tree_index_stack, by stack id), so the view
 * reads its samples' rows, finds each stack's node, and walks the index once in preorder:
 * each subtree that no hit lies in is stepped over whole (a node's next sibling lies past its
 * subtree), each other node is laid out again over the open path (tree-index-layout.c), its
 * weight the hits in its subtree. The kept nodes are in the index's order, which is the order
 * the stacks' layout sorts them in (name ids, a path before its extensions), and a node's
 * freshness and function hits are computed again over the new tree: the same index, byte for
 * byte, as the filter's stacks laid out (tests/unit/test-store.c checks it).
 *
 * The inverted tree (upward views) is done the same way over the inverted index: a stack's
 * samples end there at the node of its path read leaf first, and tree_index_invert() makes such
 * a path for each downward node that samples end on or that is a leaf; in the filter's
 * downward tree a node is a leaf where no other hit lies below it, which the stack's downward
 * node and the end of its subtree there tell. */
#include "tree-index.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>

#include "tree-index-layout.h"

/* Nodes a walk passes between two notes of where it is (tree_index_touch()): well within
 * TREE_INDEX_NEAR, so that its ranges stay whole. */
#define TOUCH_EVERY 4096

/* A stack by its downward node, for tree_index_stack_ends(). */
struct down_of {
        uint32_t down, at;
};

static int by_down(const void *a, const void *b) {
        const struct down_of *x = a, *y = b;

        return x->down < y->down ? -1 : x->down > y->down;
}

static int by_stack(const void *a, const void *b) {
        const struct tree_index_stack *x = a, *y = b;

        return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int tree_index_stack_ends(const struct tree_index *down, struct tree_index_stack *stacks, size_t n) {
        _cleanup_free_ struct down_of *order = NULL;
        struct tree_index_window w = {};

        /* read in the order of the nodes, the stacks left in theirs (their ids, from a layout) */
        order = malloc((n ? n : 1) * sizeof *order);
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                order[i] = (struct down_of) { .down = stacks[i].down, .at = i };
        if (n > 0)
                qsort(order, n, sizeof *order, by_down);
        for (size_t i = 0; i < n; i++) {
                uint32_t d = order[i].down;

                if (d >= down->n || tree_index_size(down, d) > down->n - d) {
                        tree_index_let_go(down, &w);
                        return -EBADMSG;
                }
                tree_index_touch(down, &w, d);
                stacks[order[i].at].down_end = d + tree_index_size(down, d);
        }
        tree_index_let_go(down, &w);
        return 0;
}

int tree_index_set_stacks(struct tree_index *x, struct tree_index_stack *stacks, size_t n) {
        _cleanup_free_ struct tree_index_stack *taken = stacks;
        bool sorted = true;
        size_t k = 0;

        for (size_t i = 1; i < n && sorted; i++)
                sorted = stacks[i - 1].stack <= stacks[i].stack;
        if (!sorted)
                qsort(stacks, n, sizeof *stacks, by_stack);
        for (size_t i = 0; i < n; i++) {
                const struct tree_index_stack *s = &stacks[i];

                if (s->node != TREE_INDEX_NO_NODE && s->node >= x->n)
                        return -EBADMSG;
                if (k > 0 && stacks[k - 1].stack == s->stack) {
                        /* one stack, rows of several periods: one path */
                        if (stacks[k - 1].node != s->node || stacks[k - 1].down != s->down)
                                return -EBADMSG;
                        continue;
                }
                stacks[k++] = *s;
        }
        if (k >= UINT32_MAX)
                return -E2BIG;
        free(x->own_stacks);
        x->own_stacks = take_ptr(&taken);
        x->stacks = x->own_stacks;
        x->n_stacks = k;
        return 0;
}

static int hit_by_down(const void *a, const void *b) {
        const struct tree_index_hit *x = a, *y = b;

        return x->down < y->down ? -1 : x->down > y->down;
}

static int hit_by_node(const void *a, const void *b) {
        const struct tree_index_hit *x = a, *y = b;

        return x->node < y->node ? -1 : x->node > y->node;
}

/* Sorts HITS[0..n) by the member BY orders, summing those of one node into one. Returns how
 * many are left. */
static size_t merge_hits(struct tree_index_hit *hits, size_t n, int (*by)(const void *, const void *)) {
        size_t k = 0;

        if (n > 0)
                qsort(hits, n, sizeof *hits, by);
        for (size_t i = 0; i < n; i++)
                if (k > 0 && by(&hits[k - 1], &hits[i]) == 0)
                        hits[k - 1].hits += hits[i].hits;
                else
                        hits[k++] = hits[i];
        return k;
}

/* The paths of the inverted tree that HITS (merged by downward node) make, as
 * tree_index_invert() reads the filter's downward tree: a downward node is a path where samples
 * end on it or nothing below it is hit. Returns how many are left, or -EAGAIN for one the
 * inverted index has no path for. */
static ssize_t inverted_paths(struct tree_index_hit *hits, size_t n) {
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                bool leaf = i + 1 == n || hits[i + 1].down >= hits[i].down_end;

                /* the downward root (samples without a frame) is no path: its hits are in the
                 * header's total alone */
                if (hits[i].down == 0 || (hits[i].hits == 0 && !leaf))
                        continue;
                if (hits[i].node == TREE_INDEX_NO_NODE)
                        return -EAGAIN;
                hits[k++] = hits[i];
        }
        return (ssize_t) k;
}

/* One walk of X in preorder over the nodes whose subtree holds one of HITS[0..n) (sorted by
 * node): with B NULL, counts them into *n_nodes and their greatest depth into *max_depth; else
 * lays them out into B, with their weights. Returns 0 or -EBADMSG. */
static int walk(const struct tree_index *x, const struct tree_index_hit *hits, size_t n, struct layout *b,
                uint32_t *end, size_t *n_nodes, uint32_t *max_depth) {
        struct tree_index_node *out = b ? (struct tree_index_node *) b->x->nodes : NULL;
        struct tree_index_window w = {};
        uint32_t sp = 0, i = 1, touch = 0;
        size_t j = 0, kept = 1;

        *max_depth = 0;
        end[0] = x->n;
        while (j < n && hits[j].node == 0) /* samples without a frame: the root's */
                j++;
        while (i < x->n && j < n) {
                uint32_t size = tree_index_size(x, i);

                for (; sp > 0 && end[sp] <= i; sp--)
                        if (b) {
                                layout_close(b, sp);
                                if (sp > 1)
                                        out[b->open[sp - 1].node].weight += out[b->open[sp].node].weight;
                        }
                /* the walk only goes forward: a node now and then marks the range it read */
                if (i >= touch) {
                        tree_index_touch(x, &w, i);
                        touch = i + TOUCH_EVERY;
                }
                if (size == 0 || size > end[sp] - i || sp >= x->max_depth || x->nodes[i].name >= x->n_names)
                        goto bad;
                if (hits[j].node >= i + size) {
                        i += size; /* nothing hit below: stepped over */
                        continue;
                }
                end[++sp] = i + size;
                kept++;
                *max_depth = MAX(*max_depth, sp);
                if (b) {
                        if (kept % 65536 == 0)
                                layout_let_go(b);
                        layout_open(b, sp, x->nodes[i].name);
                        if (hits[j].node == i) {
                                out[b->open[sp].node].weight = hits[j].hits;
                                ((uint64_t *) b->x->body_hits)[x->nodes[i].name] += hits[j].hits;
                        }
                }
                if (hits[j].node == i)
                        j++;
                i++;
        }
        if (j < n) /* a hit past the nodes, or on one stepped over */
                goto bad;
        for (; sp > 0; sp--)
                if (b) {
                        layout_close(b, sp);
                        if (sp > 1)
                                out[b->open[sp - 1].node].weight += out[b->open[sp].node].weight;
                }
        tree_index_let_go(x, &w);
        *n_nodes = kept;
        return 0;
bad:
        tree_index_let_go(x, &w);
        return -EBADMSG;
}

int tree_index_select(const struct tree_index *x, struct sample_tree *header, struct tree_index_hit *hits,
                      size_t n, int fd, struct tree_index **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *h = header;
        _cleanup_(layout_done) struct layout b = {};
        _cleanup_free_ uint32_t *end = NULL;
        uint32_t max_depth, depth;
        uint64_t total = 0;
        size_t n_nodes, count;
        ssize_t k;
        int r;

        if (x->n_names != name_table_size(header->names))
                return -EBADMSG;
        /* Downward, a stack's node is its downward node; inverted, each stack at one downward
         * node is at the same node too. */
        n = merge_hits(hits, n, hit_by_down);
        if (x->inverted) {
                k = inverted_paths(hits, n);
                if (k < 0)
                        return (int) k;
                n = merge_hits(hits, (size_t) k, hit_by_node);
        }
        for (size_t i = 0; i < n; i++)
                total += hits[i].hits;

        end = malloc(((size_t) x->max_depth + 1) * sizeof *end);
        if (!end)
                return -ENOMEM;
        r = walk(x, hits, n, NULL, end, &n_nodes, &max_depth);
        if (r < 0)
                return r;
        r = layout_begin(&b, n_nodes, x->n_names, max_depth, fd);
        if (r < 0)
                return r;
        r = walk(x, hits, n, &b, end, &count, &depth);
        if (r < 0)
                return r;
        layout_end(&b, total, take_ptr(&h), ret);
        return 0;
}
