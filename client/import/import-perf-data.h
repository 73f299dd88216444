/* cppctl import of perf.data files (import-perf-data.c). */
#pragma once

#include <stdbool.h>

/* Imports the perf.data at PATH into store DB, as one run; KERNEL keeps kernel frames; LINES
 * keeps call sites, not functions; HOST overrides the recording's host name. Returns an exit
 * status. */
int import_perf_data(const char *path, const char *db, bool kernel, bool lines, const char *host);
