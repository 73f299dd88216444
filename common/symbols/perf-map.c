/* /tmp/perf-PID.map: one "START SIZE NAME" line per generated function, hexadecimal, appended
 * as code is generated, so the caller reads it again when a lookup misses and the file has
 * grown. Names are kept whole: JIT names contain spaces, '@' and ':'. */
#include "perf-map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read-line.h"

int perf_map_open(const char *path, FILE **ret) {
        _cleanup_close_ int fd = read_open(AT_FDCWD, path, READ_NOFOLLOW, NULL);
        FILE *f;

        if (fd < 0)
                return fd;
        f = fdopen(fd, "re");
        if (!f)
                return -ENOMEM;
        fd = -1; /* the stream's now */
        *ret = f;
        return 0;
}

int perf_map_load(FILE *f, struct name_table *names, struct symtab **ret) {
        _cleanup_(symtab_freep) struct symtab *t = symtab_new(names);
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        ssize_t len;

        if (!t)
                return -ENOMEM;
        /* Any process may write the file the daemon reads: a line is bounded as it is read. */
        while ((len = read_line(f, PERF_MAP_MAX_LINE, &line, &cap)) > 0) {
                char *end, *p;
                uint64_t start, size;
                int r;

                if (line[len - 1] == '\n')
                        line[--len] = '\0';
                if (len == 0)
                        continue;
                start = strtoull(line, &end, 16);
                if (end == line || *end != ' ')
                        return -EBADMSG;
                p = end + 1;
                size = strtoull(p, &end, 16);
                if (end == p || *end != ' ' || !end[1])
                        return -EBADMSG;
                p = end + 1;
                r = symtab_add(t, start, size, p, strlen(p), 0);
                if (r < 0)
                        return r == -EINVAL ? -EBADMSG : r;
        }
        if (len == -E2BIG)
                return -EBADMSG;
        if (len < 0)
                return len == -ENOMEM ? -ENOMEM : -EIO;
        symtab_sort(t);
        *ret = take_ptr(&t);
        return 0;
}
