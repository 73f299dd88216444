/* Where the symbolizer's libdwfl sessions find a module's separate debug file: on this machine
 * only, never through debuginfod, whatever the environment says. */
#pragma once

#include <elfutils/libdwfl.h>

/* The callbacks of module.c's offline sessions, which report each module with the file already
 * open: debug files are looked for in the build-id directories of /usr/lib/debug and by the
 * module's .gnu_debuglink (beside the file, in its .debug/ directory, under /usr/lib/debug by its
 * directory); MiniDebugInfo is read from the module itself by libdwfl. No network client is
 * made, no socket opened, and no lookup waits on anything but the local file system. */
extern const Dwfl_Callbacks debuginfo_find_callbacks;

/* Adds directory DIR (made absolute) to the roots searched after /usr/lib/debug: its .build-id/
 * directory, and the module's directory below it for .gnu_debuglink, for every session made
 * after. For the whole process; not thread-safe (called while parsing a command line). Returns
 * 0, -ENOENT, -ENOTDIR, -EINVAL (a ':' in the path), -ENOMEM. */
int debuginfo_find_add_root(const char *dir);

/* The roots searched, ':'-separated, /usr/lib/debug first. */
const char *debuginfo_find_roots(void);
