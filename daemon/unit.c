/* Unit cgroups. systemd names each unit's cgroup after the unit, below slices
 * (system.slice/nginx.service, user.slice/user-1000.slice/user@1000.service/app.slice/x.service),
 * so a unit is found by name with a breadth-first walk of the cgroup2 tree; no D-Bus, so this
 * works where systemd is not PID 1 too (the tests make such cgroups themselves). */
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "grow.h"

const char *unit_cgroup_root(void) {
        static const char *const candidates[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
        struct statfs fs;

        for (size_t i = 0; i < ELEMENTSOF(candidates); i++)
                if (statfs(candidates[i], &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC)
                        return candidates[i];
        return NULL;
}

bool unit_name_valid(const char *name) {
        static const char *const suffixes[] = { ".service", ".scope", ".slice", ".socket", ".mount" };
        size_t n = strlen(name);
        bool suffix = false;

        if (n == 0 || n > 255 || name[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
                      (name[i] >= '0' && name[i] <= '9') || strchr(":-_.@\\", name[i])))
                        return false;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
                suffix = suffix ||
                        (n > strlen(suffixes[i]) && streq(name + n - strlen(suffixes[i]), suffixes[i]));
        return suffix;
}

int unit_open_cgroup(const char *root, const char *name, char *ret_path, size_t size) {
        /* A queue of directories to look into, as paths, one level at a time. */
        _cleanup_free_ char **level = NULL, **next = NULL;
        size_t n_level = 1, n_next = 0, cap_next = 0;
        int r = -ENOENT;

        if (!unit_name_valid(name))
                return -EINVAL;
        level = malloc(sizeof *level);
        if (!level || !(level[0] = strdup(root)))
                return -ENOMEM;

        for (int depth = 0; depth < UNIT_MAX_DEPTH && n_level > 0 && r == -ENOENT; depth++) {
                for (size_t i = 0; i < n_level; i++) {
                        DIR *d = r == -ENOENT ? opendir(level[i]) : NULL;
                        struct dirent *de;

                        while (d && (de = readdir(d))) {
                                char path[4096];

                                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                                        continue;
                                if ((size_t) snprintf(path, sizeof path, "%s/%s", level[i], de->d_name) >=
                                    sizeof path)
                                        continue;
                                if (streq(de->d_name, name)) {
                                        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                                        r = fd < 0 ? -errno : fd;
                                        if (fd >= 0)
                                                snprintf(ret_path, size, "%s", path);
                                        break;
                                }
                                if (GROW(next, cap_next, n_next + 1) < 0)
                                        break;
                                if ((next[n_next] = strdup(path)))
                                        n_next++;
                        }
                        if (d)
                                closedir(d);
                        free(level[i]);
                }
                free(level);
                level = next;
                n_level = n_next;
                next = NULL;
                n_next = cap_next = 0;
        }
        for (size_t i = 0; i < n_level; i++)
                free(level[i]);
        return r;
}
