/* Debug files fetched from debuginfod servers (libdebuginfod), by build id, with every fetch
 * bounded in time and bytes. Only for code off the sampling path: views, `cppctl symbolize`, the
 * end of a recording, the daemon's naming thread. The collector's own lookups stay on this
 * machine (debuginfo-find.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cleanup.h"

/* Bounds of one fetch, set in the environment where the user has not set them (libdebuginfod
 * reads them there): seconds without progress, seconds in all, and bytes of a debug file. The
 * progress callback enforces the last two itself too, so that a server that sends a body of no
 * announced length, or redirects in a loop, is cut off all the same. */
#define DEBUGINFOD_FETCH_TIMEOUT_S 10
#define DEBUGINFOD_FETCH_MAXTIME_S 60
#define DEBUGINFOD_FETCH_MAXSIZE (UINT64_C(2) << 30)

struct debuginfod_fetch;

/* Makes a client for the servers $DEBUGINFOD_URLS names (its cache: $DEBUGINFOD_CACHE_PATH,
 * else libdebuginfod's default). Returns 0 and sets *ret; -ENOENT when no server is named
 * (*ret untouched: nothing to fetch from); -ENOMEM. */
int debuginfod_fetch_new(struct debuginfod_fetch **ret);
struct debuginfod_fetch *debuginfod_fetch_free(struct debuginfod_fetch *f);
DEFINE_CLEANUP(struct debuginfod_fetch *, debuginfod_fetch_free);

/* Fetches the debug file of BUILD_ID (lowercase hex) into the cache. Returns 0 and sets *ret to
 * its path (malloc'd); or -ENOENT (no server has it), -ETIMEDOUT or -ETIME (too slow: the
 * bounds above), -EFBIG (larger than the bound), -ECONNREFUSED, -EHOSTUNREACH and the like (server down or
 * unreachable), -EREMOTEIO (an HTTP error other than 404: debuginfod_fetch_http_status() says
 * which), -EINVAL (not a build id), another negative errno from libdebuginfod. The file is
 * the server's word only: the caller checks that it is an ELF file of that build id. */
int debuginfod_fetch_debuginfo(struct debuginfod_fetch *f, const char *build_id, char **ret);

/* The HTTP status behind the last -EREMOTEIO, e.g. 500; 0 otherwise. */
int debuginfod_fetch_http_status(const struct debuginfod_fetch *f);

/* Sets the bounds' defaults in the environment where unset (as debuginfod_fetch_new() does), for a
 * program that makes clients in threads: call it before them. Returns 0 or -ENOMEM. */
int debuginfod_fetch_setup_env(void);

/* Makes a fetch under way stop at its next progress report once *CANCEL (read atomically; NULL:
 * never) is true: it then fails with -ECANCELED. */
void debuginfod_fetch_set_cancel(struct debuginfod_fetch *f, const bool *cancel);

/* Whether error R of debuginfod_fetch_debuginfo() says the servers are down or too slow (not
 * that a file is missing): a caller stops asking them for further modules. */
int debuginfod_fetch_server_error(int r);

/* Words for error R of debuginfod_fetch_debuginfo(): "not on any server", "server down", ... */
const char *debuginfod_fetch_strerror(int r);
