/* The sample tree (paper §5.3): a trie of stacks, root first, each node labelled with a
 * function name and holding the hits of samples whose stack ends there (self) and, once
 * sample_tree_weigh() has run, the hits at or below it (weight). Every profile is computed from
 * it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "name-table.h"

#define SAMPLE_TREE_NONE UINT32_MAX
#define SAMPLE_TREE_ROOT 0u /* the unnamed node above every stack's outermost frame */

struct sample_tree_node {
        uint32_t name;        /* id in the tree's name table; NAME_NONE for the root */
        uint32_t parent;      /* SAMPLE_TREE_NONE for the root */
        uint32_t first_child; /* SAMPLE_TREE_NONE if a leaf */
        uint32_t next_sibling;
        uint32_t depth;  /* 0 for the root, 1 for outermost frames */
        uint64_t self;   /* hits of samples whose stack ends here */
        uint64_t weight; /* hits of samples at or below here (paper §5.3) */
};

/* What the header of every profile states about the samples behind the tree. */
struct sample_tree_info {
        char *resource;               /* e.g. "cpu-time" */
        char *unit;                   /* what one gtick is, e.g. "1 ms of CPU time" */
        uint64_t period;              /* gticks per sample; 0 if runs with several were merged */
        uint64_t samples;             /* raw samples (a sample may carry several hits) */
        double hits_squared;          /* the sum of each sample's hits squared; 0: unknown */
        uint64_t lost;                /* samples the kernel dropped (PERF_RECORD_LOST) */
        bool periods_fixed;           /* some run sampled at fixed periods: may alias */
        bool periods_random;          /* every run drew its intervals at random */
        uint64_t thinned;             /* the most a run thinned under load (1 in N); 0, 1: never */
        uint64_t frames;              /* frames in all samples, weighted by hits */
        uint64_t frames_unsymbolized; /* of which no symbol was found */
        /* distinct stored frames that samples reach which were named after the fact (stored as
         * addresses, named from debug info found later: cppctl symbolize), and their modules */
        uint64_t frames_named_later, modules_named_later;
        /* why some frames stay addresses that a user would not guess (a module's path holding
         * another build now), for the header; NULL: nothing to say */
        char *names_note;
        /* what the runs could not count (alloc-*: processes not measured), for the header; NULL:
         * nothing to say */
        char *collect_note;
        /* the runs' Python frames: in how many samples, cut, unreadable; NULL: none */
        char *python_note;
};

/* A binary whose code labels lie in, for exports that name binaries (pprof's Mapping rows). */
struct sample_tree_module {
        char *path;     /* as mapped: /usr/lib/.../libc.so.6, [vdso] */
        char *build_id; /* lowercase hex; "" when unknown */
};

struct sample_tree {
        struct name_table *names;
        bool own_names;
        struct sample_tree_node *nodes; /* nodes[0] is the root; a parent's id < its children's */
        size_t n_nodes, cap;
        struct idmap *children; /* idmap_pair(parent, name) -> node id; NULL once shrunk */
        uint64_t total;         /* hits of all samples: the denominator of fractions */
        bool weighed;
        struct sample_tree_info info;
        struct sample_tree_module *modules; /* where the store knows them; none otherwise */
        size_t n_modules, cap_modules;
        uint32_t *label_module; /* by name id, below n_label_module: index in modules,
                                         * or SAMPLE_TREE_NONE */
        size_t n_label_module;
        struct name_table *raw_names; /* the stored names of labels shown demangled */
        uint32_t *label_raw;          /* by name id, below n_label_raw: id in raw_names, or
                                         * NAME_NONE: the label is the stored name */
        size_t n_label_raw;
};

/* Allocates an empty tree with only the root. NAMES, if not NULL, is shared and must outlive
 * the tree; if NULL the tree makes and owns its own table. NULL: no memory. */
struct sample_tree *sample_tree_new(struct name_table *names);
struct sample_tree *sample_tree_free(struct sample_tree *t);
DEFINE_CLEANUP(struct sample_tree *, sample_tree_free);

/* Returns PARENT's child labelled NAME, creating it if needed, or -ENOMEM, or -E2BIG past
 * SAMPLE_TREE_MAX_NODES. */
int64_t sample_tree_child(struct sample_tree *t, uint32_t parent, uint32_t name);

/* Adds a child NAME below PARENT, which the caller knows PARENT does not have, without the map
 * of children: a loader that knows which of its nodes no other can merge with spares the map
 * (half a big tree's memory) for them. Until sample_tree_shrink(), sample_tree_child() must
 * never be asked for (PARENT, NAME): it would not find it. Returns the node id, or -ENOMEM /
 * -E2BIG. */
int64_t sample_tree_add_child(struct sample_tree *t, uint32_t parent, uint32_t name);

/* Makes room for N nodes in all (the store's stacks bound a tree loaded from it), and in the map
 * of children too if MAPPED, so that building the tree grows no array or map. Returns 0 or
 * -ENOMEM. */
int sample_tree_reserve(struct sample_tree *t, size_t n, bool mapped);

/* Frees what only adding nodes uses: the map of children (half a big tree's memory) and the
 * room past the last node. For a tree that is complete; a later sample_tree_child() or
 * sample_tree_reserve() makes the map again. */
void sample_tree_shrink(struct sample_tree *t);

/* Adds HITS to the node at the end of the root-first stack NAMES[0..n) (the root itself if
 * n == 0). Returns the node id, or -ENOMEM / -E2BIG. */
int64_t sample_tree_add(struct sample_tree *t, const uint32_t *names, size_t n, uint64_t hits);

/* Adds HITS to NODE's self count. */
void sample_tree_add_hits(struct sample_tree *t, uint32_t node, uint64_t hits);

/* Computes every node's weight and the total; profiles call it, idempotent. */
void sample_tree_weigh(struct sample_tree *t);

/* Builds the inverted (callee -> caller) tree: each stack inserted leaf first, so that an
 * upward profile is a downward profile of this tree (appendix, "symmetric"). The result shares
 * T's name table and must not outlive T; its header info is T's. Returns 0 and sets *ret, or
 * -ENOMEM. */
int sample_tree_invert(struct sample_tree *t, struct sample_tree **ret);

/* Fills *ret with the names of NODE's stack, root first; RET must hold NODE's depth entries.
 * Returns the depth. */
size_t sample_tree_stack(const struct sample_tree *t, uint32_t node, uint32_t *ret);

/* Sets the header's note on names (copied; NULL: none). Returns 0 or -ENOMEM. */
int sample_tree_set_names_note(struct sample_tree *t, const char *note);

/* Sets the header's note on what the runs could not count (copied; NULL: none). Returns 0 or
 * -ENOMEM. */
int sample_tree_set_collect_note(struct sample_tree *t, const char *note);
/* And on their Python frames. */
int sample_tree_set_python_note(struct sample_tree *t, const char *note);

/* Sets the strings of the tree's info (copies them). Returns 0 or -ENOMEM. */
int sample_tree_set_resource(struct sample_tree *t, const char *resource, const char *unit);

/* Adds module PATH with BUILD_ID (NULL: unknown; both copied). Returns its index, or -ENOMEM,
 * or -E2BIG past UINT32_MAX - 1 modules. */
int64_t sample_tree_add_module(struct sample_tree *t, const char *path, const char *build_id);

/* Says that label NAME's code lies in MODULE (an index sample_tree_add_module() gave). Of the
 * modules said of one name (a name in two binaries: "main" of two programs), the one first by
 * path, then build id, stays: a choice by content, so that trees of the same samples agree
 * whatever order their loader met the frames in (a store, its merge, the fleet store). Returns
 * 0 or -ENOMEM. */
int sample_tree_set_label_module(struct sample_tree *t, uint32_t name, uint32_t module);

/* The module of label NAME, or NULL when unknown. */
const struct sample_tree_module *sample_tree_label_module(const struct sample_tree *t, uint32_t name);

/* Says that label NAME, a demangled name, is stored as RAW (copied; the first said stays), for
 * exports that keep both (pprof's Function.system_name). Returns 0 or -ENOMEM. */
int sample_tree_set_label_raw(struct sample_tree *t, uint32_t name, const char *raw);

/* The stored name of label NAME, or NULL when it is the label itself. */
const char *sample_tree_label_raw(const struct sample_tree *t, uint32_t name);

static inline const char *sample_tree_name(const struct sample_tree *t, uint32_t name) {
        return name == NAME_NONE ? "" : name_table_get(t->names, name);
}
