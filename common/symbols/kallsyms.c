/* /proc/kallsyms. Lines are "ffffffff81000000 T _stext" or "... t name\t[module]". Only text
 * symbols matter for stacks. Sizes are unknown, so a symbol covers up to the next one. When
 * the kernel hides addresses from us every line reads 0: that is an error worth its own errno
 * (the caller advises CAP_SYSLOG or kptr_restrict), not an empty table. */
#include "kallsyms.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int kallsyms_load(FILE *f, struct name_table *names, struct symtab **ret) {
        _cleanup_(symtab_freep) struct symtab *t = symtab_new(names);
        _cleanup_free_ char *line = NULL;
        size_t cap = 0, n_lines = 0, n_zero = 0;
        ssize_t len;

        if (!t)
                return -ENOMEM;
        while ((len = getline(&line, &cap, f)) > 0) {
                char *end, *type, *name;
                uint64_t addr;
                size_t name_len;
                int r;

                n_lines++;
                errno = 0;
                addr = strtoull(line, &end, 16);
                /* At most 16 digits: an address past 64 bits is a corrupt line, not UINT64_MAX. */
                if (end == line || errno == ERANGE || *end != ' ' || !end[1] || end[2] != ' ')
                        return -EBADMSG;
                type = end + 1;
                name = end + 3;
                name_len = strcspn(name, " \t\n");
                if (name_len == 0)
                        return -EBADMSG;
                if (addr == 0) {
                        n_zero++;
                        continue;
                }
                if (!strchr("tTwW", *type))
                        continue;
                r = symtab_add(t, addr, 0, name, name_len, *type == 't');
                if (r < 0)
                        return r;
        }
        if (n_lines > 0 && n_zero == n_lines)
                return -EACCES;
        symtab_sort(t);
        *ret = take_ptr(&t);
        return 0;
}
