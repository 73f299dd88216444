/* A tree index laid out from a list of stacks, without a sample tree: the builder behind
 * tree_index_invert() (the inverted tree's stacks, read off the downward index) and
 * store_load_index() (a store's stacks, read off its stack table).
 *
 * Sorted, stacks that share a prefix lie together: reading them in order, each adds a node for
 * each name past its common prefix with the stack before, and those nodes come in preorder, one
 * per distinct prefix, as a sample tree's map of children would make them (a stack given twice
 * is one node, its hits summed). Weights, sizes, freshness, the function and body hits and the
 * names' node lists are those tree_index_build() makes, kept over the open path instead of per
 * node: memory is the stacks (4 bytes a name, 24 a stack) and the index itself, where
 * tree_index_build() wants the tree and 28 bytes a node of scratch beside it. Laid out in a file
 * (tree_index_new_in()), the index is let go of as it is written: what it holds mapped is the
 * open path's nodes, the arrays by name and a window of the rest.
 *
 * Siblings come in the order of their name ids, not in the order a sample tree met them: no view
 * depends on it (profiles are sorted by hits, then names). */
#include "tree-index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Stacks laid out, and nodes listed by name, between two let_go()s of an index laid out in a
 * file: a few MiB of nodes. The list by name is written at one place per name, all over it, and
 * each tree_index_trim() brings a page per name back: it is let go of every 32 MiB of list (8 M
 * nodes). Every 1 M, as before, cost the million distinct stacks' layout 63,000 page faults (13
 * µs each on this VM: 1.2 s of 5.2) to hold 16 MiB less. */
#define TRIM_PATHS 8192
#define TRIM_NODES 65536
#define TRIM_LISTED (UINT32_C(1) << 23)

/* For an index laid out in a file: lets go of the pages of its nodes before END, which the
 * layout has passed (the nodes of the open path among them come back when touched). Its other
 * arrays, by name and the nodes' list by name, stay. */
static void let_go(const struct tree_index *x, const void *end) {
        uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
        size_t size = ((uintptr_t) end - (uintptr_t) x->map) / page * page;

        /* advice only: pages that stay mapped are written all the same */
        if (x->map && size > 0)
                (void) madvise(x->map, size, MADV_DONTNEED);
}

static _Thread_local const uint32_t *sorting;

/* Name ids in order, a stack before those it is a prefix of. */
static int path_cmp(const void *a, const void *b) {
        const struct tree_index_path *x = a, *y = b;
        const uint32_t *px = sorting + x->at, *py = sorting + y->at;

        for (uint32_t i = 0; i < x->len && i < y->len; i++)
                if (px[i] != py[i])
                        return px[i] < py[i] ? -1 : 1;
        return x->len < y->len ? -1 : x->len > y->len;
}

static uint32_t common_prefix(const uint32_t *names, const struct tree_index_path *a,
                              const struct tree_index_path *b) {
        uint32_t k = 0;

        while (k < a->len && k < b->len && names[a->at + k] == names[b->at + k])
                k++;
        return k;
}

/* A node of the open path, by depth. */
struct open_node {
        uint32_t node;
        uint32_t repeat;     /* the least depth at which something below repeats */
        uint32_t saved_last; /* last[name] before this node */
        bool outermost;      /* no ancestor carries its name */
};

struct build {
        struct tree_index *x;
        struct open_node *open; /* by depth, 1 and up */
        uint32_t *last;         /* by name: the depth of the nearest open node carrying it; 0: none */
        uint32_t *active;       /* by name: open nodes carrying it */
        uint32_t next;          /* nodes made so far */
};

/* Ends the open node at depth D, as tree_index_build()'s backward pass ends each node. */
static void build_close(struct build *b, uint32_t d) {
        struct tree_index_node *nodes = (struct tree_index_node *) b->x->nodes;
        struct open_node *o = &b->open[d];
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
static void build_open(struct build *b, uint32_t d, uint32_t name) {
        struct tree_index_node *nodes = (struct tree_index_node *) b->x->nodes;
        uint32_t i = b->next++;

        nodes[i] = (struct tree_index_node) { .name = name, .size = 1 };
        b->open[d] = (struct open_node) {
                .node = i,
                .repeat = b->last[name] > 0 ? b->last[name] : UINT32_MAX,
                .saved_last = b->last[name],
                .outermost = b->active[name]++ == 0,
        };
        b->last[name] = d;
        ((uint32_t *) b->x->occ_start)[name + 1]++;
}

int tree_index_from_paths(struct sample_tree *header, const uint32_t *names, struct tree_index_path *paths,
                          size_t n_paths, int fd, struct tree_index **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *h = header;
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        _cleanup_free_ struct open_node *open = NULL;
        _cleanup_free_ uint32_t *last = NULL, *active = NULL, *fill = NULL;
        size_t n = 1, n_names = name_table_size(header->names);
        uint32_t max_len = 0;
        struct build b;
        int r;

        for (size_t i = 0; i < n_paths; i++)
                for (uint32_t k = 0; k < paths[i].len; k++)
                        if (names[paths[i].at + k] >= n_names)
                                return -EBADMSG;
        sorting = names;
        if (n_paths > 0) /* PATHS may be NULL then, which qsort() must not get */
                qsort(paths, n_paths, sizeof *paths, path_cmp);
        sorting = NULL;
        for (size_t i = 0; i < n_paths; i++) {
                n += paths[i].len - (i > 0 ? common_prefix(names, &paths[i - 1], &paths[i]) : 0);
                max_len = MAX(max_len, paths[i].len);
                if (n > TREE_INDEX_MAX_NODES)
                        return -E2BIG;
        }

        r = tree_index_new_in(n, n_names, fd, &x);
        if (r < 0)
                return r;
        open = calloc((size_t) max_len + 1, sizeof *open);
        last = calloc(n_names + 1, sizeof *last);
        active = calloc(n_names + 1, sizeof *active);
        fill = malloc((n_names + 1) * sizeof *fill);
        if (!open || !last || !active || !fill)
                return -ENOMEM;
        x->max_depth = max_len;
        b = (struct build) { .x = x, .open = open, .last = last, .active = active, .next = 1 };

        /* The sorted stacks, read as a preorder walk of the trie they spell. */
        {
                struct tree_index_node *nodes = (struct tree_index_node *) x->nodes;
                uint64_t *body_hits = (uint64_t *) x->body_hits, total = 0;
                uint32_t sp = 0;

                for (size_t i = 0; i < n_paths; i++) {
                        const struct tree_index_path *p = &paths[i];
                        uint32_t k = i > 0 ? common_prefix(names, &paths[i - 1], p) : 0;

                        if (i % TRIM_PATHS == 0)
                                let_go(x, &nodes[b.next]);
                        for (; sp > k; sp--)
                                build_close(&b, sp);
                        for (; sp < p->len; sp++)
                                build_open(&b, sp + 1, names[p->at + sp]);
                        for (uint32_t d = 1; d <= p->len; d++)
                                nodes[open[d].node].weight += p->hits;
                        if (p->len > 0)
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
                for (size_t i = 1; i < n; i++) {
                        if (i % TRIM_LISTED == 0)
                                tree_index_trim(x);
                        else if (i % TRIM_NODES == 0)
                                let_go(x, &x->nodes[i]);
                        occ[fill[x->nodes[i].name]++] =
                                i | (tree_index_size(x, i) == 1 ? TREE_INDEX_LEAF : 0);
                }
        }
        /* The lists' last pages, one or more per name (a large folio each): a walk of the index
         * after this would hold them all, hundreds of MiB, until it passed them. */
        tree_index_trim(x);
        x->header = take_ptr(&h);
        x->own_header = true;
        *ret = take_ptr(&x);
        return 0;
}
