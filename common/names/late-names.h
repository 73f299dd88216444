/* Names after the fact: for the frames a store holds as addresses ('prog+0x118d'), the debug
 * info found now, wherever it lives (late-names.c), and the names it gives, written into the
 * store (store-rename.c) by `cppctl symbolize`, by `cppctl sql` into a copy, by the daemon off its
 * sampling path. Never on a collector's sampling path: a debuginfod fetch takes as long as the
 * server does, up to the bounds of debuginfod-fetch.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "store-rename.h"
#include "store.h"

/* Where a module's names came from, or could not. */
enum late_names_source {
        LATE_NAMES_FILE,       /* the file at its path, of its build id, with local debug info */
        LATE_NAMES_DEBUG_DIR,  /* ROOT/.build-id/ of /usr/lib/debug or a --debug-dir */
        LATE_NAMES_DEBUGINFOD, /* a debuginfod server */
        LATE_NAMES_NONE,
};

/* One module, found once per late_names (for a command, or the daemon's life). */
struct late_names_module {
        char *path;     /* as the store has it */
        char *build_id; /* lowercase hex; "" when unknown */
        /* 0: found, from SOURCE; else why not: -ENOKEY no build id, -ENOENT no debug info found
         * anywhere asked, -ESTALE only files of another build id (the path holds another version
         * now, or a server sent another module's file), -EBADMSG a file found was not ELF,
         * -EDQUOT not asked: the cache's fetch bounds were spent, or a
         * debuginfod_fetch_debuginfo() error */
        int error;
        enum late_names_source source;
        bool path_replaced; /* the file at the path has another build id */
        bool server_error;  /* ERROR is the servers' (down, slow, too big): see debuginfod_fetch_strerror() */
        bool asked_servers; /* a debuginfod server was asked */
        int http_status;    /* the HTTP error a server answered (-EREMOTEIO), e.g. 500; 0: none */
        bool reported;      /* the caller said it (one warning per module) */
        struct module *module; /* loaded, when found */
};

struct late_names {
        struct name_table *names; /* functions and files of the loaded modules */
        struct late_names_module *modules;
        size_t n_modules, cap_modules;
        struct debuginfod_fetch *fetch; /* NULL: no server named, or not allowed */
        bool fetch_tried;
        bool network;       /* may ask debuginfod servers ($DEBUGINFOD_URLS) */
        const bool *cancel; /* when set and true, a fetch under way stops (the daemon's stop) */
        /* bounds over the cache's life (0: none): fetches asked, and bytes of debug files got;
         * past them modules are not asked for (-EDQUOT) */
        uint64_t max_fetches, max_fetch_bytes;
        uint64_t fetches, fetch_bytes;
        int servers_down; /* a server error seen: no module asks again */
};

/* Makes an empty cache. NETWORK: modules not found on this machine are asked of the servers of
 * $DEBUGINFOD_URLS. Returns 0 and sets *ret, or -ENOMEM. */
int late_names_new(bool network, struct late_names **ret);
struct late_names *late_names_free(struct late_names *ln);
DEFINE_CLEANUP(struct late_names *, late_names_free);

/* What late_names_apply() found. */
struct late_names_stats {
        uint64_t frames;                    /* frames stored as addresses that samples reach */
        uint64_t frames_named;              /* of which named now */
        uint64_t modules;                   /* modules they lie in */
        uint64_t modules_named;             /* of which some frame was named */
        uint64_t modules_missing;           /* of which no debug info was found (ln's modules say why) */
        uint64_t stacks_new, samples_moved; /* what the write did (WRITE) */
};

/* Finds names for the frames of S stored as addresses that samples reach, finding each module's
 * debug info once per LN. With WRITE (S open for writing), writes them into S in one
 * transaction (store_rename_frames()); else writes nothing (how much a write would name). Returns
 * 0 and fills *ret, or a negative errno (S as it was). Modules not found are in LN's modules
 * with their reasons, for the caller to report once each. */
int late_names_apply(struct late_names *ln, struct store *s, bool write, struct late_names_stats *ret);

/* For a loader with no store to write (the fleet store's): the chain of ADDRESS in module (PATH,
 * BUILD_ID), found now, into RET[0..n) (at most MAX), with files and lines if LOCATED, its strings
 * valid while LN lives. A module is looked for once, at its first address, which its debug info
 * must name. Returns n, 0 when not named, or -ENOMEM. A store_namer's operation (userdata: LN). */
int late_names_name(void *ln, const char *path, const char *build_id, int64_t address, bool located,
                    struct store_name *ret, size_t max);

/* Words for why module M was not found ("no build id in the store", "not on any debuginfod
 * server", ...): a string constant. */
const char *late_names_strerror(const struct late_names_module *m);

/* " (HTTP 500)" for a module a server answered with an HTTP error, in BUF (SIZE bytes); "" if
 * none. Returns BUF. */
const char *late_names_http(const struct late_names_module *m, char *buf, size_t size);
