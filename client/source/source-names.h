/* Naming after the fact for the stores the reports read (late-names.h): a store file with
 * frames stored as addresses that debug info found now can name is read through a namer (every
 * view, export, diff, the shell) or a named copy (`cppctl sql`), so that all see the names, with
 * their inline chains and lines, as `cppctl symbolize` would write them. One cache of modules
 * per process: each module's debug info is looked for once per command (or shell session). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "late-names.h"

/* Adds --debug-dir DIR to where debug files are looked for (their .build-id/ directories, and
 * the modules' directories below them for .gnu_debuglink). Returns 0 or a negative errno, after
 * saying why. */
int source_names_add_debug_dir(const char *dir);

/* Whether views name frames after the fact: true unless turned off ($CPPD_NO_LATE_NAMES=1, for
 * the tests of stores as recorded; source_names_disable()). */
bool source_names_enabled(void);

/* Turns naming after the fact off for this process (cppctl top, which reads every second). */
void source_names_disable(void);

/* The process's cache of modules, made on first use with debuginfod servers allowed. Returns 0
 * and sets *ret (borrowed), or -ENOMEM. */
int source_names_cache(struct late_names **ret);

/* Warns once per module of LN that was not found, with why, when the user asked for debug info
 * from somewhere (--debug-dir, $DEBUGINFOD_URLS). */
void source_names_report(struct late_names *ln);

/* A named copy of a store of this size or more says how to stop copying it (cppctl symbolize). */
#define SOURCE_NAMES_HINT_BYTES (UINT64_C(64) << 20)

/* If debug info found now names frames that the store at DB (open as S, read-only) holds as
 * addresses: sets *ret to a namer over the process's cache (late_names_name()) for the loads of
 * its trees (store_filter.namer), valid while the process runs; NULL when nothing is named.
 * Returns 0, or a negative errno after saying why (*ret NULL: the store is read as it is). */
int source_names_namer(const char *db, struct store *s, const struct store_namer **ret);

/* For `cppctl sql`, which reads the tables: if debug info found now names frames that the store
 * at DB (open as S, read-only) holds as addresses: copies the store to a temporary file, writes the names into the copy and sets *ret
 * to its path (malloc'd; the caller removes it with source_names_remove_copy()). Sets *ret to
 * NULL when nothing is named (read DB as it is). Returns 0, or a negative errno after saying
 * why (the caller then reads DB as it is). */
int source_names_copy(const char *db, struct store *s, char **ret);

/* What a header says of names after the fact in this command, when a user would not guess it:
 * the modules whose path now holds another build, their frames left as addresses. NULL: nothing.
 * Valid until the next call. */
const char *source_names_note(void);

/* Removes the copy at PATH with its -wal and -shm files. */
void source_names_remove_copy(const char *path);
