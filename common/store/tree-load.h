/* The steps every loader of a sample tree from stored rows takes, whichever store holds them
 * (store-read.c: SQLite; common/fleet/ch-read.c: ClickHouse): a frame labelled, a stack extended
 * by a frame, a (stack, period) row of samples added (tree-load.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "name-table.h"
#include "sample-tree.h"
#include "store.h"

/* A stored frame, as either store holds it. */
struct tree_load_frame {
        const char *name;      /* its function's name as stored (mangled, for C++ and Rust) */
        uint32_t function;     /* its function's id below tree_load_init()'s N_FUNCTIONS, so
                                * that each function is demangled once; any other: each time */
        const char *file;      /* source file; NULL: unknown */
        int64_t line;          /* source line; 0: unknown */
        int64_t address;       /* offset of the call site; -1: unknown */
        const char *module;    /* path of its binary; NULL: unknown */
        uint32_t module_index; /* the binary in the tree's modules; SAMPLE_TREE_NONE: unknown */
        bool inlined;          /* an inline instance */
        bool unknown;          /* no symbol: NAME is "module+0xoffset" or the like */
};

/* What a frame becomes in the tree: its label at the filter's granularity, and what the
 * filters say of it. */
struct tree_load_label {
        uint32_t label;     /* name id in the tree */
        uint32_t module;    /* index in the tree's modules; SAMPLE_TREE_NONE: unknown */
        bool unknown;       /* no symbol */
        bool skip;          /* hidden (--hide), or an inline frame being folded */
        bool focus, ignore; /* matches --focus, --ignore */
        bool unique;        /* no other frame has the label, and none is skipped: below a node
                             * no other stored stack maps to, its node is new (the loader says) */
};

/* A stored stack as mapped onto the tree: its node, and what its frames said. */
struct tree_load_stack {
        uint32_t node;      /* tree node; SAMPLE_TREE_NONE: not mapped yet */
        uint32_t frames;    /* frames kept on the stack... */
        uint32_t unknown;   /* ...and how many of them are unknown */
        bool focus, ignore; /* some frame matches --focus, --ignore */
        bool shared;        /* another stored stack may map to the node: children are looked up */
};

/* A load under way: the filter, the tree, and what the steps remember across frames and rows. */
struct tree_load {
        const struct store_filter *f;
        struct sample_tree *tree;
        uint64_t g;                  /* gcd of the runs' periods: the tree counts samples of g gticks */
        uint64_t total;              /* gticks added so far, at most INT64_MAX */
        bool demangle;               /* the filter shows C++ and Rust names demangled */
        struct name_table *shown;    /* demangled names, of functions below n_functions */
        uint32_t *shown_by_function; /* function id -> id in shown; NAME_NONE: not seen yet */
        size_t n_functions;
};

/* Starts loading into TREE (borrowed) the samples filter F (borrowed) selects, with function ids
 * below N_FUNCTIONS (0: none are cached). G starts at 1; the caller sets it from the runs'
 * periods before adding samples. Returns 0 or -ENOMEM; tree_load_done() frees either way. */
int tree_load_init(struct tree_load *l, const struct store_filter *f, struct sample_tree *tree,
                   size_t n_functions);
void tree_load_done(struct tree_load *l);

/* Labels FRAME: its name demangled (unless the filter asks for raw names, labels modules or the
 * frame has no symbol), its label interned in the tree's names (with the stored name beside it,
 * for pprof, where it differs), the filters matched against the label. Each distinct frame is
 * labelled once. Returns 0 and fills *ret; -EBADMSG for a name holding a NUL; -ENOMEM. */
int tree_load_label(struct tree_load *l, const struct tree_load_frame *frame, struct tree_load_label *ret);

/* Labels the chain a namer gave FRAME, a frame stored as an address (ADDRESS in its module,
 * LOCATED if the store kept it): each of CHAIN[0..n) as a frame of FRAME's module, with its file
 * and line and the address if LOCATED, into RET[0..n). The loaders of the store and of the fleet
 * store push these where FRAME was. Returns 0 or tree_load_label()'s errors. */
struct store_name; /* store-rename.h */
int tree_load_label_chain(struct tree_load *l, const struct tree_load_frame *frame, bool located,
                          int64_t address, const struct store_name *chain, size_t n,
                          struct tree_load_label *ret);

/* Sets *ret to stack PARENT extended by the frame labelled LABEL (RET may be PARENT): a hidden
 * or folded frame maps to its parent's node. The label's module is said here, when a stack of
 * the samples reaches the frame, so that frames the filter leaves out do not weigh in the choice
 * among a name's modules. Returns 0 or a negative errno (sample_tree_child()'s). */
int tree_load_push(struct tree_load *l, const struct tree_load_stack *parent,
                   const struct tree_load_label *label, struct tree_load_stack *ret);

/* Adds a row of samples of stack S taken at PERIOD: HITS weighted by PERIOD / g, SAMPLES, the
 * sum of each sample's hits squared SQUARES, and the frames they carry. --focus keeps only stacks
 * through a match, --ignore drops them. Returns 1 if added, 0 if the filters drop it,
 * -EOVERFLOW if the hits add up past 2^63 (the caller says so). */
int tree_load_add(struct tree_load *l, const struct tree_load_stack *s, uint64_t period, uint64_t hits,
                  uint64_t samples, double squares);
