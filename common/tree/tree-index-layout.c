/* A tree index laid out node by node in preorder, for builders that come to the nodes in that
 * order (tree-index-layout.h). Weights, sizes, freshness, the function hits and the names' node
 * lists are those tree_index_build() makes, kept over the open path instead of per node; the
 * body hits and the weights are the builder's. Laid out in a file (tree_index_new_in()), the
 * index is let go of as it is written: what it holds mapped is the open path's nodes, the arrays
 * by name and a window of the rest. */
#include "tree-index-layout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Nodes listed by name between two let-gos of an index laid out in a file: a few MiB of nodes.
 * The list by name is written at one place per name, all over it, and each tree_index_trim()
 * brings a page per name back: it is let go of every 32 MiB of list (8 M nodes). Every 1 M, as
 * before, cost the million distinct stacks' layout 63,000 page faults (13 µs each on this VM:
 * 1.2 s of 5.2) to hold 16 MiB less. */
#define TRIM_NODES 65536
#define TRIM_LISTED (UINT32_C(1) << 23)

/* For an index laid out in a file: lets go of the pages of its nodes before END. Its other
 * arrays, by name and the nodes' list by name, stay. */
static void let_go(const struct tree_index *x, const void *end) {
        uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
        size_t size = ((uintptr_t) end - (uintptr_t) x->map) / page * page;

        /* advice only: pages that stay mapped are written all the same */
        if (x->map && size > 0)
                (void) madvise(x->map, size, MADV_DONTNEED);
}

int layout_begin(struct layout *b, size_t n, size_t n_names, uint32_t max_depth, int fd) {
        int r;

        *b = (struct layout) { .next = 1 };
        r = tree_index_new_in(n, n_names, fd, &b->x);
        if (r < 0)
                return r;
        b->open = calloc((size_t) max_depth + 1, sizeof *b->open);
        b->last = calloc(n_names + 1, sizeof *b->last);
        b->active = calloc(n_names + 1, sizeof *b->active);
        if (!b->open || !b->last || !b->active)
                return -ENOMEM;
        b->x->max_depth = max_depth;
        return 0;
}

void layout_done(struct layout *b) {
        b->x = tree_index_free(b->x);
        free(b->open);
        free(b->last);
        free(b->active);
        *b = (struct layout) {};
}

void layout_close(struct layout *b, uint32_t d) {
        struct tree_index_node *nodes = (struct tree_index_node *) b->x->nodes;
        struct layout_open *o = &b->open[d];
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

void layout_open(struct layout *b, uint32_t d, uint32_t name) {
        struct tree_index_node *nodes = (struct tree_index_node *) b->x->nodes;
        uint32_t i = b->next++;

        nodes[i] = (struct tree_index_node) { .name = name, .size = 1 };
        b->open[d] = (struct layout_open) {
                .node = i,
                .repeat = b->last[name] > 0 ? b->last[name] : UINT32_MAX,
                .saved_last = b->last[name],
                .outermost = b->active[name]++ == 0,
        };
        b->last[name] = d;
        ((uint32_t *) b->x->occ_start)[name + 1]++;
}

void layout_let_go(struct layout *b) {
        let_go(b->x, &b->x->nodes[b->next]);
}

void layout_end(struct layout *b, uint64_t total, struct sample_tree *header, struct tree_index **ret) {
        struct tree_index *x = b->x;
        uint32_t *occ_start = (uint32_t *) x->occ_start, *occ = (uint32_t *) x->occ, *fill = b->last;

        ((struct tree_index_node *) x->nodes)[0] =
                (struct tree_index_node) { .name = NAME_NONE, .size = x->n, .weight = total };
        /* Each name's nodes, in preorder: a counting sort, as tree_index_build() makes it; LAST,
         * which every close has set back to 0, is the fill pointers. */
        for (size_t name = 0; name < x->n_names; name++)
                occ_start[name + 1] += occ_start[name];
        memcpy(fill, occ_start, (x->n_names + 1) * sizeof *fill);
        for (size_t i = 1; i < x->n; i++) {
                if (i % TRIM_LISTED == 0)
                        tree_index_trim(x);
                else if (i % TRIM_NODES == 0)
                        let_go(x, &x->nodes[i]);
                occ[fill[x->nodes[i].name]++] = i | (tree_index_size(x, i) == 1 ? TREE_INDEX_LEAF : 0);
        }
        /* The lists' last pages, one or more per name (a large folio each): a walk of the index
         * after this would hold them all, hundreds of MiB, until it passed them. */
        tree_index_trim(x);
        x->header = header;
        x->own_header = true;
        *ret = take_ptr(&b->x);
}
