/* Names for the PLT's stubs: `qsort@plt`, as perf and objdump print them. A call into another
 * module goes through a stub of the caller's that jumps through the GOT; no symbol covers the
 * stubs, so without these names their samples read as addresses. */
#pragma once

#include <gelf.h>

#include "symtab.h"

/* Adds to T a symbol "NAME@plt" over each stub of ELF's .plt, .plt.sec and .plt.got that jumps
 * through a GOT slot a relocation names (JUMP_SLOT in .rela.plt, GLOB_DAT in .rela.dyn), at its
 * ELF address plus BIAS. x86-64 only (the stubs are decoded: `jmp *disp(%rip)`); other machines
 * and files without the sections add nothing. Returns how many were added, or -ENOMEM. */
int plt_add_symbols(Elf *elf, GElf_Addr bias, struct symtab *t);
