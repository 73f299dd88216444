/* JIT symbol maps, /tmp/perf-PID.map: written by JITs (V8, the JVM with perf-map-agent, LuaJIT,
 * Python 3.12's perf trampoline) so profilers can name their generated code. */
#pragma once

#include <stdio.h>

#include "symtab.h"

/* The longest line: a JIT's longest names are a few KiB of C++ or Java signature. */
#define PERF_MAP_MAX_LINE (64u * 1024)

/* Opens the map at PATH to read as read_open() does, so that what any process may put at a
 * /tmp/perf-PID.map, a FIFO, a device or a symbolic link, is refused at once rather than waited
 * on or followed: 0 and *ret (fclose()), or read_open()'s errors, -ENOMEM. */
int perf_map_open(const char *path, FILE **ret);

/* Reads "START SIZE NAME" lines (hex start and size, the name to the end of the line) from F
 * into a new sorted table. Returns 0 and sets *ret, -EBADMSG for a malformed line or one longer than PERF_MAP_MAX_LINE, -EIO, -ENOMEM. */
int perf_map_load(FILE *f, struct name_table *names, struct symtab **ret);
