/* Kernel symbols from /proc/kallsyms: libdw cannot symbolize the kernel without a vmlinux,
 * which hosts rarely have. */
#pragma once

#include <stdio.h>

#include "symtab.h"

/* Reads text symbols (types t, T, w, W) from F, in /proc/kallsyms format ("ADDR TYPE NAME
 * [MODULE]"), into a new sorted table whose names go into NAMES. Returns 0 and sets *ret;
 * -EACCES when every address reads 0 (kptr_restrict, or no CAP_SYSLOG); -EBADMSG for a line
 * that does not parse; -ENOMEM. */
int kallsyms_load(FILE *f, struct name_table *names, struct symtab **ret);
