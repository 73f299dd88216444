/* A module: one ELF file (executable, library, the vdso) as mapped into processes, with what
 * symbolizing and unwinding need from it: its build id, its loadable segments (to turn a file
 * offset into an ELF address), a sorted symbol table, and libdw for lines and inline frames. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <elfutils/libdwfl.h>

#include "cleanup.h"
#include "name-table.h"
#include "symtab.h"

/* Inline levels kept for one address; deeper nests keep their outermost levels. */
#define MODULE_MAX_INLINE 16

enum module_kind {
        MODULE_ELF,
        MODULE_VDSO,
};

struct module_segment {
        uint64_t offset, vaddr, filesz, memsz; /* a PT_LOAD */
        bool exec;
};

struct module {
        enum module_kind kind;
        char *path;        /* as mapped, e.g. /usr/lib/x86_64-linux-gnu/libc.so.6 */
        char build_id[41]; /* lowercase hex; "" while unknown */
        bool loaded;       /* module_load() ran (successfully or not) */
        int load_error;    /* its result, 0 or a negative errno */
        int fd;            /* the file that was opened; -1 if none */
        Dwfl *dwfl;        /* offline: addresses are ELF addresses */
        Dwfl_Module *dwmod;
        Dwarf_CFI *cfi; /* .eh_frame, for unwinding; see module_cfi() */
        bool cfi_tried;
        Elf *images[2]; /* libdwfl's mappings of the file and its debug file, to release */
        struct module_segment *segments;
        size_t n_segments;
        bool is_dyn; /* ET_DYN: loaded at a bias */
        struct symtab *symbols;
        struct idmap *cu_scopes; /* CU DIE offset -> struct scope_index *, built on first use */
        int64_t store_id;        /* the collector's cache of the store's module id */
        uint64_t last_used;      /* the symbolizer's clock at its last load or lookup */
};

/* Allocates an unloaded module for PATH with build id BUILD_ID (BUILD_ID_LEN bytes, 0 if
 * unknown). NULL: no memory. */
struct module *module_new(enum module_kind kind, const char *path, const uint8_t *build_id,
                          size_t build_id_len);
struct module *module_free(struct module *m);
DEFINE_CLEANUP(struct module *, module_free);

/* Opens the module's file, trying each of CANDIDATES (paths; NULL-terminated) in turn and
 * keeping the first whose build id matches the known one (any, if none is known), reads its
 * segments and symbols (interned in NAMES) and prepares libdw. Runs once; later calls return
 * the first result: 0, -ENOENT (no candidate opened), -ESTALE (only files with another build
 * id: the binary was replaced), -EBADMSG (not ELF), -ENOMEM. */
int module_load(struct module *m, const char *const *candidates, struct name_table *names);

/* Frees what module_load() built (file, libdw session, symbols), so that the next use loads
 * the module again. */
void module_unload(struct module *m);

/* Gives back the pages of the module's mapped files that are resident (the symbol tables read at
 * load, debug sections read since): they are read again from the page cache when used. The
 * files are mapped read-only and never written, so nothing is lost. */
void module_release_pages(struct module *m);

/* The module's call frame information from .eh_frame (libdwfl's, valid while the module stays
 * loaded), read on first use; NULL if it has none or is not loaded. */
Dwarf_CFI *module_cfi(struct module *m);

/* Translates a file offset in the module to its ELF address (what symbols use). Returns 0 or
 * -ENOENT if no loadable segment holds it. The module must be loaded. */
int module_offset_to_vaddr(const struct module *m, uint64_t offset, uint64_t *ret);

/* The load bias of the module when its file offset PGOFF is mapped at START: the value to add
 * to ELF addresses to get run-time addresses. Returns 0 or -ENOENT. */
int module_bias(const struct module *m, uint64_t start, uint64_t pgoff, uint64_t *ret);

struct module_location {
        uint32_t function; /* name id */
        uint32_t file;     /* name id, NAME_NONE if unknown */
        uint32_t line;     /* 0 if unknown */
        bool inlined;      /* inlined into the location before it */
};

/* Symbolizes ELF address VADDR: fills RET[0..n) outermost first (a function, then the
 * functions inlined into it down to the one holding the instruction), each with the source
 * location of the instruction or of the call to the next if LINES (else none). Returns n, 0 if
 * no symbol or DWARF function covers VADDR. Names are interned in NAMES; a negative errno on no
 * memory. */
int module_symbolize(struct module *m, uint64_t vaddr, bool lines, struct name_table *names,
                     struct module_location ret[static MODULE_MAX_INLINE]);
