/* The index of the inverted tree (upward profiles), built from the downward tree's index without
 * a sample tree.
 *
 * sample_tree_invert() walks each stack that ends samples from its node to the root, looking up
 * a child of the inverted tree per frame; for a store of a million distinct stacks (14.6 M
 * nodes) the inverted tree, its map of children and the tree it came from held 2.8 GiB. Here the
 * same stacks are read leaf first off the downward index in one pass over its preorder, keeping
 * only the open path, into one array of names. Sorted, paths that share a prefix lie together:
 * reading them in order, each path adds a node for each name past its common prefix with the
 * path before, and those nodes come in preorder, one per distinct prefix, as the map of children
 * made them. Weights, sizes, freshness, the function and body hits and the names' node lists are
 * those tree_index_build() makes, kept over the open path instead of per node. Memory: the
 * paths (4 bytes a frame, 24 a stack that ends samples) beside the index itself; the downward
 * index, when mapped, is let go of as it is read.
 *
 * Siblings come in the order of their name ids, not in the order sample_tree_invert() met them:
 * no view depends on it (profiles are sorted by hits, then names). */
#include "tree-index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Nodes read between two tree_index_trim()s of the downward index. */
#define TRIM_NODES 65536

struct inv_path {
        uint64_t at;   /* its names: names[at .. at + len), leaf first */
        uint64_t hits; /* of samples whose stack is this one */
        uint32_t len;
};

struct inv_open {
        uint32_t node;       /* node of the open path at this depth (collect: of DOWN) */
        uint32_t end;        /* collect: past its subtree */
        uint64_t child_hits; /* collect: the weights of its children so far */
        uint32_t repeat;     /* build: the least depth at which something below repeats */
        uint32_t saved_last; /* build: last[name] before this node */
        bool outermost;      /* build: no ancestor carries its name */
};

struct inv_collect {
        const struct tree_index *down;
        struct inv_open *open; /* by depth, 1 and up */
        struct inv_path *paths;
        uint32_t *names;
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
                c->paths[c->n_paths] = (struct inv_path) { .at = c->n_names, .hits = self, .len = d };
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

static _Thread_local const uint32_t *sorting;

/* Name ids in order, a path before those it is a prefix of. */
static int path_cmp(const void *a, const void *b) {
        const struct inv_path *x = a, *y = b;
        const uint32_t *px = sorting + x->at, *py = sorting + y->at;

        for (uint32_t i = 0; i < x->len && i < y->len; i++)
                if (px[i] != py[i])
                        return px[i] < py[i] ? -1 : 1;
        return x->len < y->len ? -1 : x->len > y->len;
}

static uint32_t common_prefix(const uint32_t *names, const struct inv_path *a, const struct inv_path *b) {
        uint32_t k = 0;

        while (k < a->len && k < b->len && names[a->at + k] == names[b->at + k])
                k++;
        return k;
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

struct inv_build {
        struct tree_index *x;
        struct inv_open *open; /* by depth, 1 and up */
        uint32_t *last;        /* by name: the depth of the nearest open node carrying it; 0: none */
        uint32_t *active;      /* by name: open nodes carrying it */
        uint32_t next;         /* nodes made so far */
};

/* Ends the open node at depth D, as tree_index_build()'s backward pass ends each node. */
static void build_close(struct inv_build *b, uint32_t d) {
        struct tree_index_node *nodes = (struct tree_index_node *) b->x->nodes;
        struct inv_open *o = &b->open[d];
        struct tree_index_node *n = &nodes[o->node];

        n->size = b->next - o->node;
        if (o->repeat == UINT32_MAX || o->repeat >= d)
                n->size |= TREE_INDEX_FRESH;
        if (d > 1)
                b->open[d - 1].repeat = MIN(b->open[d - 1].repeat, o->repeat);
        if (o->outermost)
                ((uint64_t *) b->x->function_hits)[n->name] += n->weight;
        b->last[n->name] = o->saved_last;
        b->active[n->name]--;
}

/* Opens a node named NAME at depth D below the open path. */
static void build_open(struct inv_build *b, uint32_t d, uint32_t name) {
        struct tree_index_node *nodes = (struct tree_index_node *) b->x->nodes;
        uint32_t i = b->next++;

        nodes[i] = (struct tree_index_node) { .name = name, .size = 1 };
        b->open[d] = (struct inv_open) {
                .node = i,
                .repeat = b->last[name] > 0 ? b->last[name] : UINT32_MAX,
                .saved_last = b->last[name],
                .outermost = b->active[name]++ == 0,
        };
        b->last[name] = d;
        ((uint32_t *) b->x->occ_start)[name + 1]++;
}

int tree_index_invert(const struct tree_index *down, struct tree_index **ret) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        _cleanup_free_ struct inv_open *open = NULL;
        _cleanup_free_ struct inv_path *paths = NULL;
        _cleanup_free_ uint32_t *names = NULL, *last = NULL, *active = NULL, *fill = NULL;
        struct inv_collect c = { .down = down };
        struct inv_build b = {};
        size_t n = 1, n_names = down->n_names;
        uint32_t max_len = 0;
        int r;

        open = calloc((size_t) down->max_depth + 2, sizeof *open);
        if (!open)
                return -ENOMEM;
        c.open = open;
        r = collect(&c);
        if (r < 0)
                return r;
        paths = malloc((c.n_paths ? c.n_paths : 1) * sizeof *paths);
        names = malloc((c.n_names ? c.n_names : 1) * sizeof *names);
        if (!paths || !names)
                return -ENOMEM;
        c.paths = paths;
        c.names = names;
        r = collect(&c);
        if (r < 0)
                return r;
        tree_index_trim(down);

        sorting = names;
        qsort(paths, c.n_paths, sizeof *paths, path_cmp);
        sorting = NULL;
        for (size_t i = 0; i < c.n_paths; i++) {
                n += paths[i].len - (i > 0 ? common_prefix(names, &paths[i - 1], &paths[i]) : 0);
                max_len = MAX(max_len, paths[i].len);
        }
        if (n > TREE_INDEX_MAX_NODES)
                return -E2BIG;

        x = tree_index_new(n, n_names);
        last = calloc(n_names + 1, sizeof *last);
        active = calloc(n_names + 1, sizeof *active);
        fill = malloc((n_names + 1) * sizeof *fill);
        if (!x || !last || !active || !fill)
                return -ENOMEM;
        x->header = header_of(down);
        if (!x->header)
                return -ENOMEM;
        x->own_header = true;
        x->max_depth = max_len;
        b = (struct inv_build) { .x = x, .open = open, .last = last, .active = active, .next = 1 };

        /* The sorted paths, read as a preorder walk of the trie they spell. */
        {
                struct tree_index_node *nodes = (struct tree_index_node *) x->nodes;
                uint64_t *body_hits = (uint64_t *) x->body_hits, total = 0;
                uint32_t sp = 0;

                for (size_t i = 0; i < c.n_paths; i++) {
                        const struct inv_path *p = &paths[i];
                        uint32_t k = i > 0 ? common_prefix(names, &paths[i - 1], p) : 0;

                        for (; sp > k; sp--)
                                build_close(&b, sp);
                        for (; sp < p->len; sp++)
                                build_open(&b, sp + 1, names[p->at + sp]);
                        for (uint32_t d = 1; d <= p->len; d++)
                                nodes[open[d].node].weight += p->hits;
                        body_hits[names[p->at + p->len - 1]] += p->hits;
                        total += p->hits;
                }
                for (; sp > 0; sp--)
                        build_close(&b, sp);
                nodes[0] = (struct tree_index_node) { .name = NAME_NONE, .size = n, .weight = total };
        }

        /* Each name's nodes, in preorder: a counting sort, as tree_index_build() makes it. */
        {
                uint32_t *occ_start = (uint32_t *) x->occ_start, *occ = (uint32_t *) x->occ;

                for (size_t name = 0; name < n_names; name++)
                        occ_start[name + 1] += occ_start[name];
                memcpy(fill, occ_start, (n_names + 1) * sizeof *fill);
                for (size_t i = 1; i < n; i++)
                        occ[fill[x->nodes[i].name]++] =
                                i | (tree_index_size(x, i) == 1 ? TREE_INDEX_LEAF : 0);
        }
        *ret = take_ptr(&x);
        return 0;
}
