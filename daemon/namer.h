/* The daemon's naming thread (namer.c): with [symbols] debuginfod set, the frames the collector
 * stored as addresses are named from those servers, off the sampling path, and written into the
 * store (late-names.c). */
#pragma once

#include <stdint.h>

#include "cleanup.h"

/* Between passes, and how long a module not found is remembered as such (a server back up, a
 * debug package installed since: asked again after). */
#define NAMER_INTERVAL_SEC 60
#define NAMER_FORGET_SEC 3600
/* Fetches, and bytes of debug files, per NAMER_FORGET_SEC: a host running thousands of stripped
 * binaries fetches a few each hour rather than all at once. */
#define NAMER_MAX_FETCHES 256
#define NAMER_MAX_FETCH_BYTES (UINT64_C(4) << 30)

struct namer;

/* What the passes did, for status. */
struct namer_stats {
        uint64_t passes, frames_named, modules_missing;
        int last_error; /* of the last pass: 0, or a negative errno */
};

/* Starts the thread over the store at STORE_PATH (its own connection), asking the servers of
 * URLS (as $DEBUGINFOD_URLS, which is set here for libdebuginfod: call before other threads
 * read the environment). Returns 0 and sets *ret; -ENOMEM; an errno of pthread_create(). */
int namer_new(const char *store_path, const char *urls, struct namer **ret);

/* Asks for a pass now (the collector stored new frames). */
void namer_wake(struct namer *n);

void namer_get_stats(struct namer *n, struct namer_stats *ret);

/* Stops the thread, a fetch under way cut off at its next progress report, and frees. */
struct namer *namer_free(struct namer *n);
DEFINE_CLEANUP(struct namer *, namer_free);
