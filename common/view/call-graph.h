/* The call graph of a sample tree (gprof's and Racket's profile view): per function its total
 * (samples containing it, once each) and self (samples ending in it), and per caller -> callee
 * pair the samples in which the caller calls the callee directly, once each however often.
 *
 * For the caller/callee view each edge also carries Racket's times: a sample with K
 * occurrences of F charges each occurrence's caller -> F and F -> callee edges HITS/K, so that
 * F's callers (with the root, when F was outermost) add up to F's total, and so do its callees
 * (with the leaf, when F was innermost), recursion included: for A -> B -> B -> B -> A, the edge
 * A -> B gets 1/2 as seen from A (A's occurrences) and 1/3 as seen from B. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "sample-tree.h"

struct call_graph_node {
        uint32_t name;    /* in the tree's name table */
        uint64_t total;   /* hits of samples containing it (the function profile) */
        uint64_t self;    /* hits of samples ending in it (the body profile) */
        uint32_t depth;   /* the least depth it is at (1: outermost) */
        double root_time; /* Racket's times: hits as the outermost frame... */
        double leaf_time; /* ...and as the innermost, per occurrence */
};

struct call_graph_edge {
        uint32_t caller, callee; /* node indexes */
        uint64_t hits;           /* hits of samples with the call caller -> callee */
        double caller_time;      /* hits / occurrences of the caller, per occurrence */
        double callee_time;      /* hits / occurrences of the callee, per occurrence */
};

struct call_graph {
        const struct sample_tree *tree; /* borrowed: names and info */
        struct call_graph_node *nodes;  /* sorted by total, most first, then by depth, outermost first */
        size_t n_nodes;
        struct call_graph_edge *edges; /* sorted by hits, most first */
        size_t n_edges;
        uint64_t total; /* the tree's total */
};

/* Builds T's call graph. Returns 0 and sets *ret, or -ENOMEM. */
int call_graph_build(struct sample_tree *t, struct call_graph **ret);
/* The same graph from X, a tree index (tree-index.h), in one pass over its nodes in preorder,
 * holding the open path only (a mapped index is let go of as it is read), so that a graph of a
 * big store costs what it shows, not the store's tree. The graph borrows X's header. Returns 0
 * and sets *ret, -ENOMEM, or -EBADMSG for an index whose sizes or weights do not add up. */
struct tree_index;
int call_graph_build_index(const struct tree_index *x, struct call_graph **ret);

struct call_graph *call_graph_free(struct call_graph *g);
DEFINE_CLEANUP(struct call_graph *, call_graph_free);

/* The node of function NAME, or NULL. */
const struct call_graph_node *call_graph_find(const struct call_graph *g, uint32_t name);
