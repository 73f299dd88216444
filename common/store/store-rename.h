/* Naming after the fact: the frames of a store that were stored as addresses ('prog+0x118d', an
 * unknown function of a module with its build id), and the rewrite that gives them the names
 * found later (store-rename.c). Part of the store's interface (store.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* A module some of whose frames that samples reach are stored as addresses. */
struct store_unnamed_module {
        int64_t id;
        char *path;         /* as mapped */
        char *build_id;     /* lowercase hex; "" when unknown */
        int64_t *frames;    /* the frames' ids... */
        int64_t *addresses; /* ...their addresses in the module (ELF addresses)... */
        bool *located;      /* ...and whether the frame row keeps it (recorded with --lines), or
                             * it was read from the name's "+0xoffset" (frames stored as
                             * functions, the default) */
        size_t n_frames;
};

/* Lists the modules with frames stored as addresses (an address kept, or "+0x" in the name), in
 * module id order, each with those frames: with REACHED_ONLY, only frames that the stacks of
 * samples reach (a read of the whole stack table), else every one (the function and frame
 * tables only: enough to tell whether some module can be named at all). Reads in one snapshot
 * (the caller's transaction, or its own). Returns the number of modules and sets *ret (free with
 * store_unnamed_modules_free(); NULL when none), or a negative errno. */
int store_unnamed_modules(struct store *s, bool reached_only, struct store_unnamed_module **ret);
void store_unnamed_modules_free(struct store_unnamed_module *m, size_t n);

/* One frame of the chain that replaces a frame stored as an address, outermost first: a
 * function, then those inlined into it, as the collector stores a chain found at record time. */
struct store_name {
        const char *function; /* the symbol's name, as a symbol table has it */
        const char *file;     /* source file; NULL: unknown */
        unsigned line;        /* 0: unknown */
        bool inlined;         /* inlined into the frame before it */
};

/* A namer for loaders that read frames stored as addresses and cannot write (the fleet store's):
 * NAME sets RET[0..n) (at most MAX) to the chain of ADDRESS in module (PATH, BUILD_ID), with
 * files and lines if LOCATED, its strings valid while the namer lives. Returns n, 0 when not
 * named, or a negative errno. */
struct store_namer {
        int (*name)(void *userdata, const char *path, const char *build_id, int64_t address, bool located,
                    struct store_name *ret, size_t max);
        void *userdata;
};

/* The address in an unknown function's NAME, "module+0xoffset" (symbolize.c's unknown_name()):
 * the offset, or -1 when the name has none. */
int64_t store_name_address(const char *name);

/* Frame FRAME_ID (at ADDRESS in module MODULE_ID) is CHAIN[0..n_chain). The named frames
 * keep ADDRESS and their source lines if LOCATED, else neither (frames stored as functions). */
struct store_rename {
        int64_t frame_id, module_id, address;
        bool located;
        const struct store_name *chain;
        size_t n_chain; /* 1 to 255 */
};

struct store_rename_stats {
        uint64_t frames;        /* frames renamed */
        uint64_t stacks_new;    /* stack rows added for them */
        uint64_t samples_moved; /* sample rows moved to the named stacks */
};

/* Rewrites what the samples of S read through the frames RENAMES[0..n) name: the named frames
 * are found or added (those added marked named_later), every stack through a renamed frame that
 * samples reach gets its named twin (the renamed frame replaced by its chain, found or added in
 * id order, so a parent's id stays below its children's), and the sample rows of the old stacks
 * are added to their twins' and deleted: no hit is lost or counted twice. Nothing is deleted but
 * those sample rows, so the ids a writer beside us (the daemon) caches stay valid; rows written
 * to the old stacks later are moved by the next call. Inside the caller's transaction. Returns 0
 * and fills *ret (may be NULL), or a negative errno (-EINVAL for a chain of no frame or of more
 * than 255). */
int store_rename_frames(struct store *s, const struct store_rename *renames, size_t n,
                        struct store_rename_stats *ret);
