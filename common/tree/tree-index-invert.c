/* The index of the inverted tree (upward profiles), built from the downward tree's index without
 * a sample tree.
 *
 * sample_tree_invert() walks each stack that ends samples from its node to the root, looking up
 * a child of the inverted tree per frame; for a store of a million distinct stacks (14.6 M
 * nodes) the inverted tree, its map of children and the tree it came from held 2.8 GiB. Here the
 * same stacks are read leaf first off the downward index in one pass over its preorder, keeping
 * only the open path, into one array of names (counted in a first pass, so that it is allocated
 * once), and laid out by tree_index_from_paths(). Memory: the stacks (4 bytes a frame, 24 a
 * stack that ends samples) beside the index itself; the downward index, when mapped, is let go
 * of as it is read, and freed before the new one is laid out. */
#include "tree-index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Nodes read between two tree_index_trim()s of the downward index. */
#define TRIM_NODES 65536

/* A node of DOWN's open path, by depth. */
struct inv_open {
        uint32_t node;       /* in DOWN */
        uint32_t end;        /* past its subtree */
        uint64_t child_hits; /* the weights of its children so far */
};

struct inv_collect {
        const struct tree_index *down;
        struct inv_open *open; /* by depth, 1 and up */
        struct tree_index_path *paths;
        uint32_t *names;
        uint32_t *down_of;       /* by path: its node in DOWN */
        size_t n_paths, n_names; /* so far; counted only, when paths is NULL */
};

/* Ends the open node at depth D: its stack, read leaf first, is a path if samples end there or it
 * is a leaf (downward views show such paths with [0]). */
static int collect_close(struct inv_collect *c, uint32_t d) {
        const struct tree_index_node *n = &c->down->nodes[c->open[d].node];
        uint64_t self;

        if (c->open[d].child_hits > n->weight)
                return -EBADMSG;
        self = n->weight - c->open[d].child_hits;
        if (d > 1)
                c->open[d - 1].child_hits += n->weight;
        if (self == 0 && tree_index_size(c->down, c->open[d].node) > 1)
                return 0;
        if (c->paths) {
                c->paths[c->n_paths] = (struct tree_index_path) {
                        .at = c->n_names, .hits = self, .len = d, .id = c->n_paths
                };
                c->down_of[c->n_paths] = c->open[d].node;
                for (uint32_t k = d; k > 0; k--)
                        c->names[c->n_names + d - k] = c->down->nodes[c->open[k].node].name;
        }
        c->n_paths++;
        c->n_names += d;
        return 0;
}

/* One pass over DOWN's nodes in preorder: counts the paths and their names, or, with room for
 * them, writes them. */
static int collect(struct inv_collect *c) {
        const struct tree_index *down = c->down;
        uint32_t sp = 0;
        int r;

        c->n_paths = c->n_names = 0;
        for (uint32_t i = 1; i < down->n; i++) {
                uint32_t size = tree_index_size(down, i);

                if (i % TRIM_NODES == 0)
                        tree_index_trim(down);
                for (; sp > 0 && c->open[sp].end <= i; sp--) {
                        r = collect_close(c, sp);
                        if (r < 0)
                                return r;
                }
                if (sp >= down->max_depth || size == 0 || size > (sp > 0 ? c->open[sp].end : down->n) - i ||
                    down->nodes[i].name >= down->n_names)
                        return -EBADMSG;
                c->open[++sp] = (struct inv_open) { .node = i, .end = i + size };
        }
        for (; sp > 0; sp--) {
                r = collect_close(c, sp);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The header: DOWN's names (same ids), and what DOWN's header states, over the root alone. */
static struct sample_tree *header_of(const struct tree_index *down) {
        const struct sample_tree *d = down->header;
        _cleanup_(sample_tree_freep) struct sample_tree *t = sample_tree_new(NULL);

        if (!t)
                return NULL;
        for (uint32_t i = 0; i < down->n_names; i++) {
                const char *name = name_table_get(d->names, i);

                if (name_table_intern(t->names, name, strlen(name)) != (int64_t) i)
                        return NULL;
        }
        if (sample_tree_set_resource(t, d->info.resource, d->info.unit) < 0 ||
            sample_tree_set_names_note(t, d->info.names_note) < 0)
                return NULL;
        t->info.period = d->info.period;
        t->info.samples = d->info.samples;
        t->info.hits_squared = d->info.hits_squared;
        t->info.lost = d->info.lost;
        t->info.periods_fixed = d->info.periods_fixed;
        t->info.periods_random = d->info.periods_random;
        t->info.thinned = d->info.thinned;
        t->info.frames = d->info.frames;
        t->info.frames_unsymbolized = d->info.frames_unsymbolized;
        t->info.frames_named_later = d->info.frames_named_later;
        t->info.modules_named_later = d->info.modules_named_later;
        t->nodes[SAMPLE_TREE_ROOT].self = d->total;
        t->nodes[SAMPLE_TREE_ROOT].weight = d->total;
        t->total = d->total;
        t->weighed = true;
        return take_ptr(&t);
}

/* A path of the inverted tree: the downward node it was read from, and its node. */
struct inv_place {
        uint32_t down, node;
};

static int place_cmp(const void *a, const void *b) {
        const struct inv_place *x = a, *y = b;

        return x->down < y->down ? -1 : x->down > y->down;
}

static int stack_down_cmp(const void *a, const void *b) {
        const struct tree_index_stack *x = a, *y = b;

        return x->down < y->down ? -1 : x->down > y->down;
}

/* Gives UP the stacks of the downward index it was inverted from, STACKS[0..n) (taken), each
 * at the node of its downward node's path: N_PATHS paths, read from DOWN_OF[id] and laid out at
 * NODE_OF[id]. A downward node that is no path (no hits, and nodes below it) is at none. */
static int place_stacks(struct tree_index *up, struct tree_index_stack *stacks, size_t n,
                        const uint32_t *down_of, const uint32_t *node_of, size_t n_paths) {
        _cleanup_free_ struct tree_index_stack *taken = stacks;
        _cleanup_free_ struct inv_place *places = NULL;
        size_t k = 0;

        places = malloc((n_paths ? n_paths : 1) * sizeof *places);
        if (!places)
                return -ENOMEM;
        for (size_t i = 0; i < n_paths; i++)
                places[i] = (struct inv_place) { .down = down_of[i], .node = node_of[i] };
        if (n_paths > 0)
                qsort(places, n_paths, sizeof *places, place_cmp);
        if (n > 0)
                qsort(stacks, n, sizeof *stacks, stack_down_cmp);
        for (size_t i = 0; i < n; i++) {
                while (k < n_paths && places[k].down < stacks[i].down)
                        k++;
                stacks[i].node =
                        k < n_paths && places[k].down == stacks[i].down ? places[k].node : TREE_INDEX_NO_NODE;
        }
        return tree_index_set_stacks(up, take_ptr(&taken), n);
}

int tree_index_invert(struct tree_index *taken, int fd, struct tree_index **ret) {
        _cleanup_(tree_index_freep) struct tree_index *down = taken, *up = NULL;
        _cleanup_free_ struct inv_open *open = NULL;
        _cleanup_free_ struct tree_index_path *paths = NULL;
        _cleanup_free_ uint32_t *names = NULL, *down_of = NULL, *node_of = NULL;
        _cleanup_free_ struct tree_index_stack *stacks = NULL;
        struct inv_collect c = { .down = down };
        struct sample_tree *header;
        size_t n_stacks = down->n_stacks;
        int r;

        open = calloc((size_t) down->max_depth + 2, sizeof *open);
        if (!open)
                return -ENOMEM;
        c.open = open;
        r = collect(&c);
        if (r < 0)
                return r;
        if (c.n_paths >= UINT32_MAX)
                return -E2BIG;
        paths = malloc((c.n_paths ? c.n_paths : 1) * sizeof *paths);
        names = malloc((c.n_names ? c.n_names : 1) * sizeof *names);
        down_of = malloc((c.n_paths ? c.n_paths : 1) * sizeof *down_of);
        node_of = malloc((c.n_paths ? c.n_paths : 1) * sizeof *node_of);
        stacks = malloc((n_stacks ? n_stacks : 1) * sizeof *stacks);
        if (!paths || !names || !down_of || !node_of || !stacks)
                return -ENOMEM;
        c.paths = paths;
        c.names = names;
        c.down_of = down_of;
        r = collect(&c);
        if (r < 0)
                return r;
        header = header_of(down);
        if (!header)
                return -ENOMEM;
        if (n_stacks > 0)
                memcpy(stacks, down->stacks, n_stacks * sizeof *stacks);
        down = tree_index_free(down); /* before the new index takes its room */
        r = tree_index_from_paths(header, names, paths, c.n_paths, node_of, fd, &up);
        if (r < 0)
                return r;
        up->inverted = true;
        paths = mfree(paths);
        names = mfree(names);
        if (n_stacks > 0) {
                r = place_stacks(up, take_ptr(&stacks), n_stacks, down_of, node_of, c.n_paths);
                if (r < 0)
                        return r;
        }
        *ret = take_ptr(&up);
        return 0;
}
