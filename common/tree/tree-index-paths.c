/* A tree index laid out from a list of stacks, without a sample tree: the builder behind
 * tree_index_invert() (the inverted tree's stacks, read off the downward index) and
 * store_load_index() (a store's stacks, read off its stack table).
 *
 * Sorted, stacks that share a prefix lie together: reading them in order, each adds a node for
 * each name past its common prefix with the stack before, and those nodes come in preorder, one
 * per distinct prefix, as a sample tree's map of children would make them (a stack given twice
 * is one node, its hits summed), and are laid out over the open path (tree-index-layout.c):
 * memory is the stacks (4 bytes a name, 24 a stack) and the index itself, where
 * tree_index_build() wants the tree and 28 bytes a node of scratch beside it.
 *
 * Siblings come in the order of their name ids, not in the order a sample tree met them: no view
 * depends on it (profiles are sorted by hits, then names). */
#include "tree-index.h"

#include <errno.h>
#include <stdlib.h>

#include "tree-index-layout.h"

/* Stacks laid out between two let-gos of an index laid out in a file. */
#define TRIM_PATHS 8192

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

int tree_index_from_paths(struct sample_tree *header, const uint32_t *names, struct tree_index_path *paths,
                          size_t n_paths, uint32_t *node_of, int fd, struct tree_index **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *h = header;
        _cleanup_(layout_done) struct layout b = {};
        size_t n = 1, n_names = name_table_size(header->names);
        uint32_t max_len = 0, sp = 0;
        uint64_t *body_hits, total = 0;
        struct tree_index_node *nodes;
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

        r = layout_begin(&b, n, n_names, max_len, fd);
        if (r < 0)
                return r;
        nodes = (struct tree_index_node *) b.x->nodes;
        body_hits = (uint64_t *) b.x->body_hits;
        /* The sorted stacks, read as a preorder walk of the trie they spell. */
        for (size_t i = 0; i < n_paths; i++) {
                const struct tree_index_path *p = &paths[i];
                uint32_t k = i > 0 ? common_prefix(names, &paths[i - 1], p) : 0;

                if (i % TRIM_PATHS == 0)
                        layout_let_go(&b);
                for (; sp > k; sp--)
                        layout_close(&b, sp);
                for (; sp < p->len; sp++)
                        layout_open(&b, sp + 1, names[p->at + sp]);
                for (uint32_t d = 1; d <= p->len; d++)
                        nodes[b.open[d].node].weight += p->hits;
                if (p->len > 0)
                        body_hits[names[p->at + p->len - 1]] += p->hits;
                if (node_of)
                        node_of[p->id] = p->len > 0 ? b.open[p->len].node : 0;
                total += p->hits;
        }
        for (; sp > 0; sp--)
                layout_close(&b, sp);
        layout_end(&b, total, take_ptr(&h), ret);
        return 0;
}
