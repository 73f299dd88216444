/* The layout of a tree index node by node in preorder, over the open path, for the builders that
 * know their nodes in that order: tree_index_from_paths() (sorted stacks) and tree_index_select()
 * (another index's nodes). Internal to common/tree. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "tree-index.h"

/* A node of the open path, by depth. */
struct layout_open {
        uint32_t node;
        uint32_t repeat;     /* the least depth at which something below repeats */
        uint32_t saved_last; /* last[name] before this node */
        bool outermost;      /* no ancestor carries its name */
};

struct layout {
        struct tree_index *x;
        struct layout_open *open; /* by depth, 1 and up */
        uint32_t *last;           /* by name: the depth of the nearest open node carrying it; 0: none */
        uint32_t *active;         /* by name: open nodes carrying it */
        uint32_t next;            /* nodes made so far */
};

/* Starts an index of N nodes (the root included) over N_NAMES names, at most MAX_DEPTH deep, in
 * the file FD or in memory (tree_index_new_in()). Returns 0, -ENOMEM, -E2BIG, or
 * tree_index_new_in()'s errors; layout_done() frees either way. */
int layout_begin(struct layout *b, size_t n, size_t n_names, uint32_t max_depth, int fd);
void layout_done(struct layout *b);

/* Opens the next node, named NAME, at depth D (1 and up) below the open path. */
void layout_open(struct layout *b, uint32_t d, uint32_t name);

/* Ends the open node at depth D, its weight final: its size, freshness and function hits. */
void layout_close(struct layout *b, uint32_t d);

/* Lets go of the pages of the nodes laid out so far, in a file (they are final but for the open
 * path's, which come back when touched). */
void layout_let_go(struct layout *b);

/* Ends the layout once every node is closed: the root (weighing TOTAL), the names' lists of
 * nodes; takes HEADER and hands the index to *ret. */
void layout_end(struct layout *b, uint64_t total, struct sample_tree *header, struct tree_index **ret);
