/* Names for the PLT's stubs (plt.h).
 *
 * On x86-64 each stub jumps through its GOT slot: `jmp *disp32(%rip)` (ff 25), after an
 * endbr64 and a bnd prefix in .plt.sec. The slot's address is the stub's next instruction plus
 * disp32, and the relocation that fills the slot names the function. Decoding the jump, rather
 * than counting entries in the relocations' order, holds for every layout the linkers write
 * (lazy .plt, .plt.sec with IBT, .plt.got for -z now) and leaves the first entry, whose jump goes
 * to the dynamic linker, unnamed. */
#include "plt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "grow.h"

#define STUB_SIZE 16
#define JMP_RIP_SIZE 6 /* ff 25 disp32 */

struct slot {
        GElf_Addr got; /* the GOT slot's ELF address */
        const char *name;
};

static int slot_cmp(const void *a, const void *b) {
        const struct slot *x = a, *y = b;

        return x->got < y->got ? -1 : x->got > y->got;
}

/* Appends the GOT slots that relocation section SCN fills with a named symbol's address. */
static int read_slots(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, struct slot **slots, size_t *n,
                      size_t *cap) {
        Elf_Scn *symscn = elf_getscn(elf, shdr->sh_link);
        Elf_Data *data = elf_getdata(scn, NULL), *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
        GElf_Shdr symshdr;

        if (!data || !syms || !gelf_getshdr(symscn, &symshdr) || shdr->sh_entsize == 0)
                return 0;
        for (size_t i = 0; i < shdr->sh_size / shdr->sh_entsize; i++) {
                GElf_Rela rela;
                GElf_Sym sym;
                unsigned type;
                const char *name;

                if (!gelf_getrela(data, (int) i, &rela))
                        break;
                type = GELF_R_TYPE(rela.r_info);
                if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
                    GELF_R_SYM(rela.r_info) == 0 || !gelf_getsym(syms, (int) GELF_R_SYM(rela.r_info), &sym))
                        continue;
                name = elf_strptr(elf, symshdr.sh_link, sym.st_name);
                if (!name || !*name)
                        continue;
                if (GROW(*slots, *cap, *n + 1) < 0)
                        return -ENOMEM;
                (*slots)[(*n)++] = (struct slot) { .got = rela.r_offset, .name = name };
        }
        return 0;
}

/* Adds the stubs of section SCN (ELF address ADDR) whose jumps go through a slot of SLOTS. */
static int add_stubs(Elf_Scn *scn, const GElf_Shdr *shdr, GElf_Addr bias, const struct slot *slots, size_t n,
                     struct symtab *t) {
        Elf_Data *data = elf_getdata(scn, NULL);
        size_t size = shdr->sh_entsize >= 8 && shdr->sh_entsize <= STUB_SIZE ? shdr->sh_entsize : STUB_SIZE;
        int added = 0;

        if (!data || !data->d_buf || shdr->sh_type != SHT_PROGBITS)
                return 0;
        for (size_t at = 0; at + size <= data->d_size; at += size) {
                const uint8_t *stub = (const uint8_t *) data->d_buf + at;

                for (size_t i = 0; i + JMP_RIP_SIZE <= size; i++) {
                        struct slot key, *s;
                        char name[256];
                        int32_t disp;
                        int len, r;

                        if (stub[i] != 0xff || stub[i + 1] != 0x25)
                                continue;
                        memcpy(&disp, stub + i + 2, sizeof disp);
                        key.got = shdr->sh_addr + at + i + JMP_RIP_SIZE + (GElf_Addr) (int64_t) disp;
                        s = bsearch(&key, slots, n, sizeof *slots, slot_cmp);
                        if (!s)
                                break;
                        len = snprintf(name, sizeof name, "%s@plt", s->name);
                        if (len <= 0 || (size_t) len >= sizeof name)
                                break;
                        /* Below any real symbol at the same address (ranks 0-5 in module.c). */
                        r = symtab_add(t, shdr->sh_addr + at + bias, size, name, (size_t) len, 6);
                        if (r == -ENOMEM)
                                return r;
                        added += r == 0;
                        break;
                }
        }
        return added;
}

int plt_add_symbols(Elf *elf, GElf_Addr bias, struct symtab *t) {
        _cleanup_free_ struct slot *slots = NULL;
        size_t n = 0, cap = 0, shstrndx;
        GElf_Ehdr ehdr;
        int added = 0, r;

        if (!elf || !gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64 ||
            elf_getshdrstrndx(elf, &shstrndx) < 0)
                return 0;
        for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
                GElf_Shdr shdr;

                if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_RELA) {
                        r = read_slots(elf, scn, &shdr, &slots, &n, &cap);
                        if (r < 0)
                                return r;
                }
        }
        if (n == 0)
                return 0;
        qsort(slots, n, sizeof *slots, slot_cmp);
        for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
                GElf_Shdr shdr;
                const char *name;

                if (!gelf_getshdr(scn, &shdr) || !(shdr.sh_flags & SHF_EXECINSTR))
                        continue;
                name = elf_strptr(elf, shstrndx, shdr.sh_name);
                if (!name ||
                    (strcmp(name, ".plt") != 0 && strcmp(name, ".plt.sec") != 0 &&
                     strcmp(name, ".plt.got") != 0))
                        continue;
                r = add_stubs(scn, &shdr, bias, slots, n, t);
                if (r < 0)
                        return r;
                added += r;
        }
        return added;
}
