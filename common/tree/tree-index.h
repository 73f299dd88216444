/* A sample tree laid out for the views that a threshold lets stop early: downward and upward
 * call path profiles, function and body profiles. Nodes are in preorder, so that a subtree is a
 * range and a node's next sibling lies just past its subtree; each node says whether its
 * subtree is "fresh" (no name in it also labels an ancestor), which tells the call path
 * algorithm it may leave a light subtree for later (callpath.c); each name lists its nodes, so a
 * root's occurrences are found without a walk. The layout is plain numbers, written to a file
 * as it is and mapped back, so a view of a big store reads only the nodes it visits. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "sample-tree.h"

/* In tree_index_node.size: no name of the subtree labels one of the node's ancestors. */
#define TREE_INDEX_FRESH (UINT32_C(1) << 31)
#define TREE_INDEX_SIZE_MASK (TREE_INDEX_FRESH - 1)
/* In tree_index.occ: the node has no children. Node numbers are below it (TREE_INDEX_MAX_NODES). */
#define TREE_INDEX_LEAF (UINT32_C(1) << 31)
/* Trees are at most this big, so that a size leaves the top bit free. */
#define TREE_INDEX_MAX_NODES TREE_INDEX_SIZE_MASK

struct tree_index_node {
        uint32_t name;   /* name id; NAME_NONE for the root */
        uint32_t size;   /* nodes in the subtree, itself included; | TREE_INDEX_FRESH */
        uint64_t weight; /* hits of samples at or below it */
};

/* What a cached index was built from: the store (its random id and its file), the generation of
 * its contents, the resource, and which tree. An index is used only where all of it matches. */
struct tree_index_key {
        char store_id[33];  /* store_state.uuid, hex */
        uint64_t dev, ino;  /* the store file */
        int64_t generation; /* store_state.generation */
        char token[17];     /* store_state.token, hex: a copy of the store that took
                                         * changes of the same shape has another */
        int64_t resource_id;
        bool inverted; /* the tree of stacks read leaf first (upward profiles) */
};

/* Where a stored stack's samples end in an index, for the filtered views that are laid out from
 * the index rather than from the store (tree_index_select()). A store's indexes hold one per
 * stack that its samples end on, by stack id. */
struct tree_index_stack {
        uint32_t stack;           /* the store's stack id */
        uint32_t node;            /* where its samples end in this index; TREE_INDEX_NO_NODE:
                                   * nowhere (an inverted index has no path for a stack of no hits
                                   * that others extend) */
        uint32_t down, down_end;  /* its node in the downward index, and the end of that node's
                                   * subtree there (the same index, for a downward one) */
        uint32_t frames, unknown; /* its labels, and how many of them are unknown */
};
#define TREE_INDEX_NO_NODE UINT32_MAX

struct tree_index {
        const struct tree_index_node *nodes; /* nodes[0] is the root */
        uint32_t n;                          /* nodes */
        uint32_t n_names;                    /* name ids are below it */
        uint32_t max_depth;                  /* of any node; the root's is 0 */
        bool inverted;                       /* of the tree of stacks read leaf first */
        const uint32_t *occ_start;           /* by name: its nodes are occ[occ_start[x]..occ_start[x + 1]) */
        const uint32_t *occ;                 /* every node but the root, grouped by name, in preorder;
                                         * | TREE_INDEX_LEAF for a node without children */
        const uint64_t *function_hits;       /* by name: hits of samples whose stack holds it */
        const uint64_t *body_hits;           /* by name: hits of samples whose stack ends in it */
        struct sample_tree *header;          /* names, total and header info; nodes: the root alone,
                                         * or the tree it was built from */
        bool own_header;
        const struct tree_index_stack *stacks; /* by stack id; none for an index of a loaded tree */
        uint32_t n_stacks;
        struct tree_index_stack *own_stacks; /* STACKS, where not mapped */
        void *map;                           /* a mapped file, or NULL */
        size_t map_size;
        void *memory; /* the arrays of a built index, one allocation */
};

static inline uint32_t tree_index_size(const struct tree_index *x, uint32_t node) {
        return x->nodes[node].size & TREE_INDEX_SIZE_MASK;
}

static inline bool tree_index_fresh(const struct tree_index *x, uint32_t node) {
        return x->nodes[node].size & TREE_INDEX_FRESH;
}

/* Lays out T (weighed here) as an index. T is borrowed as the header and must outlive the
 * index. Returns 0 and sets *ret, -ENOMEM, or -E2BIG past TREE_INDEX_MAX_NODES. */
int tree_index_build(struct sample_tree *t, struct tree_index **ret);

/* An index of N nodes and N_NAMES names with its arrays allocated, zeroed, in the layout
 * tree_index_write() writes, for builders (tree_index_build(), tree_index_invert()) to fill;
 * no header yet. NULL: no memory, or sizes past the limits. */
struct tree_index *tree_index_new(size_t n, size_t n_names);

/* As tree_index_new(), with the arrays laid out in the file FD (past what it holds already,
 * which they leave as it is; mapped shared; FD may be closed after) rather than in memory, so that a builder that lets go of what
 * it has written (tree_index_trim()) holds a window of a big index, not all of it: the pages wait
 * in the page cache, which may write them out. FD < 0, or a file whose blocks cannot be
 * reserved (a full disk): in memory. Returns 0 and sets *ret, -ENOMEM, -E2BIG past the limits,
 * or the negative errno of ftruncate() or mmap(). */
int tree_index_new_in(size_t n, size_t n_names, int fd, struct tree_index **ret);

/* A stack of names, for tree_index_from_paths(). */
struct tree_index_path {
        uint64_t at;   /* its names: NAMES[at .. at + len), outermost first */
        uint64_t hits; /* of the samples taken on it */
        uint32_t len;
        uint32_t id; /* the caller's number for it, below N_PATHS: where its node is told */
};

/* The index of the tree the N_PATHS stacks PATHS spell (their names in NAMES, ids of HEADER's
 * names), laid out from them sorted (tree-index-paths.c; PATHS is sorted in place): a node per
 * distinct prefix, as the sample tree of those stacks would have; in the file FD as
 * tree_index_new_in() says (let go of as it is laid out), or in memory for FD < 0. With NODE_OF
 * (N_PATHS long), each path's node is stored at NODE_OF[its id]. HEADER (its names, total and
 * info, over the root alone) is taken, whatever is returned. Returns 0 and sets *ret, -ENOMEM,
 * -E2BIG past TREE_INDEX_MAX_NODES, -EBADMSG for a name not in HEADER, or tree_index_new_in()'s
 * errors. */
int tree_index_from_paths(struct sample_tree *header, const uint32_t *names, struct tree_index_path *paths,
                          size_t n_paths, uint32_t *node_of, int fd, struct tree_index **ret);

/* Sets each of STACKS[0..n)'s down_end from its down, a node of DOWN, reading DOWN in the order
 * of its nodes. Returns 0, -ENOMEM, or -EBADMSG for a node not in DOWN. */
int tree_index_stack_ends(const struct tree_index *down, struct tree_index_stack *stacks, size_t n);

/* Gives X the stacks STACKS[0..n) (taken, whatever is returned; malloc()ed), every field set:
 * sorted by stack id, those of one id kept once. Returns 0, or -EBADMSG for a node not in X or a
 * stack id given at two places. */
int tree_index_set_stacks(struct tree_index *x, struct tree_index_stack *stacks, size_t n);

/* The samples of a filtered view that end on one stack of a store's index, for
 * tree_index_select(). */
struct tree_index_hit {
        uint32_t down, down_end, node; /* the stack's, as its tree_index_stack says */
        uint64_t hits;                 /* of the filter's samples on it (may be 0) */
};

/* The index of the tree that only the samples HITS[0..n) (sorted here, in place) would make,
 * laid out from X, the store's index of every sample (downward, or inverted), without the
 * store's stacks (tree-index-select.c): the nodes of X on the paths that they reach, in X's
 * order, with their weights summed again and freshness, names' lists and function and body
 * hits as tree_index_from_paths() makes them, so that it is the index that laying out the
 * filter's stacks would make, the same bytes. Inverted, a stack is a path where it has hits or
 * nothing the filter reaches extends it downward, as tree_index_invert() reads them. HEADER
 * (the filter's total and info over the root alone, X's names) is taken; laid out in the file
 * FD or in memory as tree_index_from_paths() is. Returns 0 and sets *ret, -ENOMEM, -EBADMSG for
 * an X whose sizes do not add up or a hit outside it, -EAGAIN where X has no path for a stack
 * that the filter's tree would have (to be laid out from the store), or tree_index_new_in()'s
 * errors. */
int tree_index_select(const struct tree_index *x, struct sample_tree *header, struct tree_index_hit *hits,
                      size_t n, int fd, struct tree_index **ret);

/* The index of the inverted tree of DOWN (the tree of stacks read leaf first, as
 * sample_tree_invert() makes it, for upward profiles), built from DOWN's nodes without any
 * sample tree: each stack that ends samples (or a leaf) read leaf first, and laid out by
 * tree_index_from_paths() (tree-index-invert.c). DOWN's stored stacks are placed at their paths'
 * nodes. DOWN is taken, and freed once its stacks are read, before the new index is laid out,
 * whatever is returned; the index and its header are its own; laid out in the file FD, or in
 * memory for FD < 0 (tree_index_from_paths()). Returns 0
 * and sets *ret, -ENOMEM, -E2BIG past TREE_INDEX_MAX_NODES, -EBADMSG for a DOWN whose sizes do not
 * add up, or tree_index_new_in()'s errors. */
int tree_index_invert(struct tree_index *down, int fd, struct tree_index **ret);

/* The sample tree of X's nodes at or above MIN_FRACTION of the total and their children, those
 * below cut to leaves of the same weight (tree-index-prune.c): what a renderer that stops at
 * that threshold draws, in a tree of that size. Its names are X's header's (shared: X must
 * outlive it), its header info a copy. Returns 0 and sets *ret, -ENOMEM, or -EBADMSG. */
int tree_index_prune(const struct tree_index *x, double min_fraction, struct sample_tree **ret);

/* Calls FN for each stack of X that samples end on (its SELF hits above 0), root first as
 * PATH[0..depth) of name ids (the root itself, depth 0, where samples had no frame), in the
 * order sample_tree_each_stack() visits the tree X was built from: depth first, children by
 * name (tree-index-stacks.c). Stops at FN's negative return. Returns 0, FN's error, -ENOMEM, or
 * -EBADMSG for an index whose sizes or weights do not add up. */
int tree_index_each_stack(const struct tree_index *x,
                          int (*fn)(const struct tree_index *x, const uint32_t *path, size_t depth,
                                    uint64_t self, void *userdata),
                          void *userdata);

/* The stacks tree_index_each_stack() visits, one at a time, for a caller that walks several
 * indexes side by side (a merge of their stacks, which come in the same order of names: pprof's
 * Profile of several resources). tree_index_stacks_next() returns 1 and sets *RET_PATH (valid
 * until the next call), *RET_DEPTH and *RET_SELF to the next stack, 0 past the last, -ENOMEM, or
 * -EBADMSG as tree_index_each_stack() does. X must outlive the walk. */
struct tree_index_stacks;
int tree_index_stacks_new(const struct tree_index *x, struct tree_index_stacks **ret);
int tree_index_stacks_next(struct tree_index_stacks *s, const uint32_t **ret_path, size_t *ret_depth,
                           uint64_t *ret_self);
struct tree_index_stacks *tree_index_stacks_free(struct tree_index_stacks *s);
DEFINE_CLEANUP(struct tree_index_stacks *, tree_index_stacks_free);

/* A node as tree_index_each_drawn() draws it: its number in the index, its depth (the root's is
 * 0), its self hits (its weight less its children's), its offset (the weights of the nodes drawn
 * before it under its parent, plus its parent's offset: where a flame graph puts it), and PATH,
 * its names root first, PATH[0..depth), valid during the call. */
struct tree_index_drawn {
        uint32_t node, depth;
        uint64_t self, offset;
        const uint32_t *path;
};

/* Calls ENTER for each node of X, the root first, in the order the tree renderers draw them
 * (tree-index-sorted.c): preorder, each node's children heaviest first, ties by name. ENTER
 * returns 0 to walk the node's subtree, which LEAVE (if not NULL) then closes, with the node's
 * number and depth; 1 to skip it (no LEAVE); a negative errno to stop. Returns 0, ENTER's or
 * LEAVE's error, -ENOMEM, or -EBADMSG for an index whose sizes or weights do not add up. */
int tree_index_each_drawn(const struct tree_index *x,
                          int (*enter)(const struct tree_index *x, const struct tree_index_drawn *d,
                                       void *userdata),
                          int (*leave)(const struct tree_index *x, uint32_t node, uint32_t depth,
                                       void *userdata),
                          void *userdata);

/* Writes X to FD (a new file) under KEY. Returns 0 or a negative errno (-ENOSPC...). */
int tree_index_write(const struct tree_index *x, const struct tree_index_key *key, int fd);

/* Maps the index in file FD and checks it was written under KEY. Returns 0 and sets *ret;
 * -ESTALE for another key (the store changed since), -EBADMSG for a file that does not add up
 * (its checksum, over every byte, and its sizes are checked; what a node says is checked where
 * it is used), -ENOMEM. */
int tree_index_open(int fd, const struct tree_index_key *key, struct tree_index **ret);

/* The checksum of an index file's SIZE bytes at DATA (a multiple of 8 long, 8-byte aligned), with
 * its checksum field read as 0: what tree_index_write() stores and tree_index_open() checks.
 * tree_index_seal() stores it into such a buffer, for tests and the fuzz target. */
uint64_t tree_index_checksum(const void *data, size_t size);
void tree_index_seal(void *data, size_t size);

/* Lets go of the pages of a mapped index that a walk has passed (they stay in the page cache,
 * and come back on the next read): a walk over scattered nodes of a big index calls it now and
 * then, so that its memory stays its own. Does nothing to a built index, nor to a mapped one of
 * TREE_INDEX_TRIM_MIN bytes or less, which may stay mapped whole. */
#define TREE_INDEX_TRIM_MIN (32u << 20)
void tree_index_trim(const struct tree_index *x);

/* The nodes a walk has read since it last let go of them, as a few ranges: a walk that reads a
 * mapped index nearly in order, with jumps (a node's children lie past each other's subtrees),
 * notes each node it reads (tree_index_touch()), and the pages of those ranges, with the 2 MiB
 * around each (what a read may map: a large folio of the page cache), are let go of when there
 * are TREE_INDEX_RANGES of them or they span TREE_INDEX_WINDOW_NODES. tree_index_trim() lets go
 * of the whole file, which costs the kernel a walk over all of it: done every few dozen nodes
 * over a 300 MB index, more than the walk itself. Start it zeroed. */
#define TREE_INDEX_RANGES 16
#define TREE_INDEX_NEAR 65536           /* nodes: a read this close to a range extends it */
#define TREE_INDEX_WINDOW_NODES 1048576 /* 20 MiB of nodes */
struct tree_index_window {
        uint32_t lo[TREE_INDEX_RANGES], hi[TREE_INDEX_RANGES];
        size_t n;
        uint64_t span; /* nodes, over the ranges */
};
void tree_index_touch(const struct tree_index *x, struct tree_index_window *w, uint32_t node);
void tree_index_let_go(const struct tree_index *x, struct tree_index_window *w);

struct tree_index *tree_index_free(struct tree_index *x);
DEFINE_CLEANUP(struct tree_index *, tree_index_free);
