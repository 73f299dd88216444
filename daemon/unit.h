/* systemd units as cgroups: where the cgroup2 hierarchy is mounted, and which directory of it
 * holds a unit's processes, for per-unit sessions (PERF_FLAG_PID_CGROUP). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The cgroup2 mount: /sys/fs/cgroup on unified hosts, /sys/fs/cgroup/unified on hybrid ones.
 * Returns the path (static) or NULL if there is none. */
const char *unit_cgroup_root(void);

/* Whether NAME looks like a unit name: "nginx.service", "user@1000.service", "foo.scope". */
bool unit_name_valid(const char *name);

/* Finds the cgroup directory named NAME (a unit) under ROOT, breadth first and at most
 * UNIT_MAX_DEPTH levels down, and opens it. Returns the directory's fd (O_DIRECTORY) or -ENOENT
 * if no such unit runs, -EINVAL for a bad name, other negative errnos. Sets RET_PATH (of SIZE
 * bytes) to its path. */
#define UNIT_MAX_DEPTH 6
int unit_open_cgroup(const char *root, const char *name, char *ret_path, size_t size);
