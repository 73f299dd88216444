/* Modules. Loading is lazy and happens once: the first address that needs the module opens
 * its file (through /proc/PID/root or map_files while the process lives, else by path, so the
 * samples of a process that already exited still symbolize), checks the build id against the
 * one the record gave, if any, and builds:
 *   - the PT_LOAD segments, to map a file offset to an ELF address;
 *   - a sorted symbol table of functions, from .symtab (the separate debug file's when the file
 *     is stripped, found on this machine only: debuginfo-find.c), MiniDebugInfo or .dynsym,
 *     since libdwfl's own lookup is a linear scan; untyped symbols in code count too, as in
 *     perf: assembly entry points such as ld.so's _start and _dl_start_user, which every
 *     program's first frames run through, are STT_NOTYPE labels;
 *   - an offline libdwfl session at bias 0 (ELF addresses), used for source lines and the
 *     DWARF scopes that reveal inline frames: a scope index per compilation unit, built at the
 *     unit's first address (scope-index.c), so that later addresses cost a search rather than a
 *     walk of the unit (the symbolizer caches each address's answer besides).
 * The vdso has no file: it is the same image in every process of this kernel, so our own copy
 * is put in a memfd and loaded like any ELF file. */
#include "module.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>

#include "debuginfo-find.h"
#include "idmap.h"
#include "plt.h"
#include "scope-index.h"

static void hex(const uint8_t *b, size_t n, char *out) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[b[i] >> 4];
                out[2 * i + 1] = digits[b[i] & 15];
        }
        out[2 * n] = '\0';
}

struct module *module_new(enum module_kind kind, const char *path, const uint8_t *build_id,
                          size_t build_id_len) {
        struct module *m = calloc(1, sizeof *m);

        if (!m)
                return NULL;
        m->kind = kind;
        m->fd = -1;
        m->path = strdup(path);
        if (!m->path)
                return module_free(m);
        if (build_id_len > 0 && build_id_len <= 20)
                hex(build_id, build_id_len, m->build_id);
        return m;
}

static void forget_scopes(struct module *m) {
        uint64_t key, value;
        size_t i = 0;

        while (m->cu_scopes && idmap_next(m->cu_scopes, &i, &key, &value))
                scope_index_free((struct scope_index *) (uintptr_t) value);
        m->cu_scopes = idmap_free(m->cu_scopes);
}

void module_unload(struct module *m) {
        forget_scopes(m); /* their DIEs point into the libdw session */
        if (m->dwfl)
                dwfl_end(m->dwfl);
        m->dwfl = NULL;
        m->dwmod = NULL;
        m->cfi = NULL;
        m->cfi_tried = false;
        m->images[0] = m->images[1] = NULL;
        if (m->fd >= 0)
                close(m->fd);
        m->fd = -1;
        m->symbols = symtab_free(m->symbols);
        free(m->segments);
        m->segments = NULL;
        m->n_segments = 0;
        m->loaded = false;
        m->load_error = 0;
}

struct module *module_free(struct module *m) {
        if (!m)
                return NULL;
        module_unload(m);
        free(m->path);
        free(m);
        return NULL;
}

/* The vdso of this process as a file: a memfd holding the image. Returns an fd or -errno. */
static int vdso_fd(void) {
        const ElfW(Ehdr) *eh = (const void *) getauxval(AT_SYSINFO_EHDR);
        const ElfW(Phdr) * ph;
        size_t size = 0;
        int fd;

        if (!eh)
                return -ENOENT;
        /* The image is its section headers' end, which lie after the loadable data. */
        size = eh->e_shoff + (size_t) eh->e_shnum * eh->e_shentsize;
        ph = (const void *) ((const uint8_t *) eh + eh->e_phoff);
        for (unsigned i = 0; i < eh->e_phnum; i++)
                if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > size)
                        size = ph[i].p_offset + ph[i].p_filesz;
        if (size == 0 || size > (1u << 20))
                return -EBADMSG;
        fd = memfd_create("vdso", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (write(fd, eh, size) != (ssize_t) size) {
                close(fd);
                return -EIO;
        }
        return fd;
}

/* Reads the segments and checks the build id of ELF. Returns 0, -ESTALE, -EBADMSG, -ENOMEM. */
static int read_elf(struct module *m, Elf *elf) {
        const void *id = NULL;
        char id_hex[41] = "";
        GElf_Ehdr ehdr;
        size_t n_phdr;
        ssize_t n;

        if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr) || elf_getphdrnum(elf, &n_phdr) < 0)
                return -EBADMSG;
        n = dwelf_elf_gnu_build_id(elf, &id);
        if (n > 0 && n <= 20)
                hex(id, n, id_hex);
        if (m->build_id[0] && id_hex[0] && !streq(m->build_id, id_hex))
                return -ESTALE;
        if (!m->build_id[0])
                memcpy(m->build_id, id_hex, sizeof id_hex);

        m->is_dyn = ehdr.e_type == ET_DYN;
        m->segments = calloc(n_phdr ? n_phdr : 1, sizeof *m->segments);
        if (!m->segments)
                return -ENOMEM;
        for (size_t i = 0; i < n_phdr; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                m->segments[m->n_segments++] = (struct module_segment) {
                        .offset = ph.p_offset,
                        .vaddr = ph.p_vaddr,
                        .filesz = ph.p_filesz,
                        .memsz = ph.p_memsz,
                        .exec = ph.p_flags & PF_X,
                };
        }
        return m->n_segments > 0 ? 0 : -EBADMSG;
}

/* Whether ELF's image lies within one mapping of a file. libelf maps the files it opens, but
 * an image it builds in memory lives on the heap: the MiniDebugInfo symbol table that libdwfl
 * decompresses from .gnu_debugdata (RHEL's and Fedora's libraries, and those that PyTorch's
 * wheels bundle, carry one), or a file that could not be mapped. Giving back the pages of such an
 * image would zero malloc's own data around it. Reads /proc/self/maps: once per module load. */
static bool image_is_file_mapping(Elf *elf) {
        _cleanup_fclose_ FILE *f = NULL;
        char line[PATH_MAX + 128];
        size_t size = 0;
        char *image = elf_rawfile(elf, &size);
        uintptr_t at = (uintptr_t) image;

        if (!image || size == 0)
                return false;
        f = fopen("/proc/self/maps", "re");
        if (!f)
                return false;
        while (fgets(line, sizeof line, f)) {
                unsigned long start, end, inode;

                if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &start, &end, &inode) != 3)
                        continue;
                if (at >= start && at < end)
                        return inode != 0 && size <= end - at;
        }
        return false;
}

/* Whether an untyped symbol NAME of section SHNDX of ELF labels code: the section holds
 * instructions, and the name is not an assembler's local (.L) or mapping ($x, $d) symbol. */
static bool code_label(Elf *elf, GElf_Word shndx, const char *name) {
        GElf_Shdr shdr;

        if (!elf || shndx >= SHN_LORESERVE || name[0] == '$' || strncmp(name, ".L", 2) == 0)
                return false;
        return gelf_getshdr(elf_getscn(elf, shndx), &shdr) && (shdr.sh_flags & SHF_EXECINSTR);
}

static int read_symbols(struct module *m, struct name_table *names) {
        int n = dwfl_module_getsymtab(m->dwmod);
        Elf *seen[ELEMENTSOF(m->images)] = {}; /* the images asked about: one look at the maps each */
        Elf *main_elf;
        GElf_Addr main_bias;
        int r;

        m->symbols = symtab_new(names);
        if (!m->symbols)
                return -ENOMEM;
        for (int i = 1; i < n; i++) {
                GElf_Sym sym;
                GElf_Addr addr;
                GElf_Word shndx;
                Elf *elf;
                Dwarf_Addr bias;
                const char *name = dwfl_module_getsym_info(m->dwmod, i, &sym, &addr, &shndx, &elf, &bias);
                unsigned type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
                size_t len;

                if (!name || !*name || shndx == SHN_UNDEF || addr == 0)
                        continue;
                if (type != STT_FUNC && type != STT_GNU_IFUNC &&
                    !(type == STT_NOTYPE && code_label(elf, shndx, name)))
                        continue;
                if (elf && elf != seen[0] && elf != seen[1]) {
                        seen[seen[0] ? 1 : 0] = elf;
                        if (image_is_file_mapping(elf))
                                m->images[m->images[0] ? 1 : 0] = elf;
                }
                len = strcspn(name, "@"); /* versions: "qsort_r@@GLIBC_2.2.5" */
                if (len == 0)
                        continue;
                /* An alias that is a function names the address before a label does. */
                r = symtab_add(m->symbols, addr, sym.st_size, name, len,
                               (bind == STB_GLOBAL       ? 0 :
                                        bind == STB_WEAK ? 1 :
                                                           2) +
                                       (type == STT_NOTYPE ? 3 : 0));
                if (r < 0)
                        return r;
        }
        main_elf = dwfl_module_getelf(m->dwmod, &main_bias);
        r = plt_add_symbols(main_elf, main_bias, m->symbols);
        if (r < 0)
                return r;
        symtab_sort(m->symbols);
        module_release_pages(m); /* the symbol tables are ours now */
        return 0;
}

void module_release_pages(struct module *m) {
        long page = sysconf(_SC_PAGESIZE);

        for (size_t i = 0; i < ELEMENTSOF(m->images); i++) {
                GElf_Ehdr ehdr;
                size_t size = 0;
                char *image;
                uintptr_t start;

                /* Relocatable objects are relocated in place by libdwfl; ours are never such. */
                if (!m->images[i] || !gelf_getehdr(m->images[i], &ehdr) ||
                    (ehdr.e_type != ET_DYN && ehdr.e_type != ET_EXEC))
                        continue;
                image = elf_rawfile(m->images[i], &size);
                if (!image || size == 0)
                        continue;
                start = (uintptr_t) image & ~(uintptr_t) (page - 1);
                (void) madvise((void *) start, size + ((uintptr_t) image - start), MADV_DONTNEED);
        }
}

static int load_fd(struct module *m, int fd, struct name_table *names) {
        Elf *elf;
        int r;

        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf)
                return -EBADMSG;
        r = read_elf(m, elf);
        elf_end(elf);
        if (r < 0) {
                free(m->segments);
                m->segments = NULL;
                m->n_segments = 0;
                return r;
        }

        m->dwfl = dwfl_begin(&debuginfo_find_callbacks);
        if (!m->dwfl)
                return -ENOMEM;
        dwfl_report_begin(m->dwfl);
        r = dup(fd);
        if (r < 0)
                return -errno;
        m->dwmod = dwfl_report_elf(m->dwfl, m->path, m->path, r, 0, false); /* consumes the dup */
        dwfl_report_end(m->dwfl, NULL, NULL);
        if (!m->dwmod)
                return -EBADMSG;
        return read_symbols(m, names);
}

int module_load(struct module *m, const char *const *candidates, struct name_table *names) {
        int r = -ENOENT;

        if (m->loaded)
                return m->load_error;
        m->loaded = true;
        elf_version(EV_CURRENT);

        if (m->kind == MODULE_VDSO) {
                int fd = vdso_fd();

                if (fd < 0)
                        return m->load_error = fd;
                r = load_fd(m, fd, names);
                if (r < 0) {
                        close(fd);
                        return m->load_error = r;
                }
                m->fd = fd;
                return m->load_error = 0;
        }

        for (const char *const *c = candidates; c && *c; c++) {
                int fd = open(*c, O_RDONLY | O_CLOEXEC), q;

                if (fd < 0)
                        continue;
                q = load_fd(m, fd, names);
                if (q == 0) {
                        m->fd = fd;
                        return m->load_error = 0;
                }
                close(fd);
                if (m->dwfl) {
                        dwfl_end(m->dwfl);
                        m->dwfl = NULL;
                        m->dwmod = NULL;
                }
                /* Remember the most telling failure: a replaced binary over a missing one. */
                if (r == -ENOENT || q == -ESTALE)
                        r = q;
        }
        return m->load_error = r;
}

Dwarf_CFI *module_cfi(struct module *m) {
        Dwarf_Addr bias;

        if (!m->cfi_tried && m->dwmod) {
                m->cfi_tried = true;
                /* The session is at bias 0: the CFI's addresses are ELF addresses. */
                m->cfi = dwfl_module_eh_cfi(m->dwmod, &bias);
        }
        return m->cfi;
}

int module_offset_to_vaddr(const struct module *m, uint64_t offset, uint64_t *ret) {
        for (size_t i = 0; i < m->n_segments; i++) {
                const struct module_segment *s = &m->segments[i];
                /* A mapping starts on a page boundary: the bytes before p_offset in its first
                 * page belong to it too. */
                uint64_t first = s->offset & ~(uint64_t) 0xfff;

                if (offset >= first && offset < s->offset + MAX(s->filesz, s->memsz)) {
                        *ret = offset - s->offset + s->vaddr;
                        return 0;
                }
        }
        return -ENOENT;
}

int module_bias(const struct module *m, uint64_t start, uint64_t pgoff, uint64_t *ret) {
        uint64_t vaddr;
        int r;

        r = module_offset_to_vaddr(m, pgoff, &vaddr);
        if (r < 0)
                return r;
        *ret = start - vaddr;
        return 0;
}

/* The name of an inlined subroutine or function DIE, through DW_AT_abstract_origin and
 * DW_AT_specification; the linkage name is preferred, as symbol tables use it. */
static const char *die_name(Dwarf_Die *die) {
        Dwarf_Attribute a;
        const char *s;

        if ((dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
             dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a)) &&
            (s = dwarf_formstring(&a)))
                return s;
        if (dwarf_attr_integrate(die, DW_AT_name, &a) && (s = dwarf_formstring(&a)))
                return s;
        return NULL;
}

static int intern(struct name_table *names, const char *s, uint32_t *ret) {
        int64_t id = s ? name_table_intern(names, s, strlen(s)) : NAME_NONE;

        if (id < 0)
                return id;
        *ret = id;
        return 0;
}

/* The file of DW_AT_call_file of DIE, a file index of its CU. */
static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die, unsigned *ret_line) {
        Dwarf_Attribute a;
        Dwarf_Files *files;
        Dwarf_Word idx, line;
        size_t n;

        *ret_line = 0;
        if (dwarf_attr(die, DW_AT_call_line, &a) && dwarf_formudata(&a, &line) == 0)
                *ret_line = line;
        if (!dwarf_attr(die, DW_AT_call_file, &a) || dwarf_formudata(&a, &idx) != 0 ||
            dwarf_getsrcfiles(cu, &files, &n) != 0 || idx >= n)
                return NULL;
        return dwarf_filesrc(files, idx, NULL, NULL);
}

/* The scope index of CU, built on its first address. Returns 0 and sets *ret (NULL: CU has no
 * offset libdw can tell), or -ENOMEM. */
static int cu_scopes(struct module *m, Dwarf_Die *cu, const struct scope_index **ret) {
        Dwarf_Off off = dwarf_dieoffset(cu);
        struct scope_index *x;
        uint64_t *slot;
        int r;

        *ret = NULL;
        if (off == (Dwarf_Off) -1)
                return 0;
        if (!m->cu_scopes && !(m->cu_scopes = idmap_new()))
                return -ENOMEM;
        slot = idmap_get(m->cu_scopes, off);
        if (slot) {
                *ret = (const struct scope_index *) (uintptr_t) *slot;
                return 0;
        }
        r = scope_index_build(cu, &x);
        if (r < 0)
                return r;
        r = idmap_put(m->cu_scopes, off, (uintptr_t) x, &slot);
        if (r < 0) {
                scope_index_free(x);
                return r;
        }
        *ret = x;
        return 0;
}

int module_symbolize(struct module *m, uint64_t vaddr, bool lines, struct name_table *names,
                     struct module_location ret[static MODULE_MAX_INLINE]) {
        const struct symtab_entry *sym = m->symbols ? symtab_lookup(m->symbols, vaddr) : NULL;
        Dwarf_Die *inlined[MODULE_MAX_INLINE], *scopes[MODULE_MAX_INLINE], *cu = NULL;
        const char *file = NULL, *outer = NULL;
        size_t n_inlined = 0, n_scopes = 0, n = 0;
        const struct scope_index *x;
        Dwarf_Addr bias = 0;
        Dwfl_Line *line;
        int lineno = 0, r;

        if (!m->dwmod)
                return 0;
        memset(ret, 0, MODULE_MAX_INLINE * sizeof *ret);
        /* Lines cost libdw's decoded line table of every CU met (tens of MiB for libc's). */
        line = lines ? dwfl_module_getsrc(m->dwmod, vaddr) : NULL;
        if (line)
                file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);

        cu = dwfl_module_addrdie(m->dwmod, vaddr, &bias);
        if (cu) {
                r = cu_scopes(m, cu, &x);
                if (r < 0)
                        return r;
                if (x)
                        n_scopes = scope_index_lookup(x, vaddr - bias, scopes, MODULE_MAX_INLINE);
        }
        /* scopes[0] is innermost. Inlined subroutines nest inside the function's subprogram. */
        for (size_t i = 0; i < n_scopes; i++) {
                if (dwarf_tag(scopes[i]) == DW_TAG_inlined_subroutine)
                        inlined[n_inlined++] = scopes[i];
                else
                        outer = die_name(scopes[i]);
        }
        if (sym)
                outer = name_table_get(names, sym->name);
        if (!outer)
                return 0;

        /* Outermost first: the function, at the call of the first inlined level... */
        r = intern(names, outer, &ret[n].function);
        for (size_t i = n_inlined; r >= 0 && i > 0; i--) {
                unsigned call_line = 0;
                const char *cf = lines ? call_file(cu, inlined[i - 1], &call_line) : NULL;

                r = intern(names, cf, &ret[n].file);
                ret[n].line = call_line;
                n++;
                if (r >= 0)
                        r = intern(names, die_name(inlined[i - 1]) ?: "[inlined]", &ret[n].function);
                ret[n].inlined = true;
        }
        /* ...and the innermost level at the instruction's own line. */
        if (r >= 0)
                r = intern(names, file, &ret[n].file);
        ret[n].line = lineno > 0 ? (uint32_t) lineno : 0;
        n++;
        return r < 0 ? r : (int) n;
}
