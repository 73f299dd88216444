/* The symbolizer: turns addresses into frames (a function, its module, the address within the
 * module, a source location, and whether it was inlined), each resolved once and cached. It
 * owns the modules (ELF files, the vdso), the kernel's symbols and the names of everything. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"
#include "idmap.h"
#include "module.h"
#include "name-table.h"
#include "symtab.h"

#define SYMBOLIZER_NO_MODULE UINT32_MAX

/* Pseudo-module indexes for frames that are not in an ELF module. */
enum {
        SYMBOLIZER_KERNEL = UINT32_MAX - 1, /* [kernel.kallsyms] */
        SYMBOLIZER_JIT = UINT32_MAX - 2,    /* /tmp/perf-PID.map */
        SYMBOLIZER_PYTHON = UINT32_MAX - 3, /* a Python function: its module is its file */
};

struct frame {
        uint32_t function; /* name id */
        uint32_t file;     /* name id; NAME_NONE if unknown */
        uint32_t line;     /* 0 if unknown */
        uint32_t module;   /* module index, a pseudo-module, or SYMBOLIZER_NO_MODULE */
        uint64_t address;  /* within the module: ELF address, or file offset if unloaded */
        bool inlined;      /* inlined into the frame before it (its caller) */
        bool unknown;      /* no symbol: the name is "module+0xoffset" */
        bool kernel;
        int64_t store_id; /* the collector's cache of the store's frame id; 0: none */
};

struct symbolizer {
        struct name_table *names;       /* functions, files */
        struct name_table *module_keys; /* "b:BUILD_ID", "p:PATH DEV INO" or "[vdso]" */
        uint32_t *key_modules;          /* by key id: the module's index */
        size_t n_keys, cap_keys;
        struct module **modules; /* by index */
        uint32_t *canonical;     /* by index: itself, or the module with the same contents */
        size_t n_modules, cap_modules;
        struct frame *frames;
        size_t n_frames, cap_frames;
        struct idmap *chains;        /* (module, address) -> first frame << 8 | count */
        struct idmap *kernel_frames; /* kernel address -> frame */
        struct symtab *kernel;
        int kernel_error; /* why kernel symbols are missing, 0 if loaded */
        bool kernel_tried;
        bool lines;               /* find the source lines of frames (true once new) */
        uint64_t lookups, misses; /* for statistics */
        uint64_t clock;           /* ticks at each module load or lookup miss, for LRU */
};

struct symbolizer *symbolizer_new(void);
struct symbolizer *symbolizer_free(struct symbolizer *s);
DEFINE_CLEANUP(struct symbolizer *, symbolizer_free);

/* Finds or adds the module mapped from PATH. The key is the build id when known (BUILD_ID_LEN >
 * 0), else the path with DEV and INO. "[vdso]" is the vdso. Returns 0 and sets *ret_index. A
 * module known by its path first (a process found in /proc) and by its build id later (MMAP2)
 * is one module once loaded: the later index is an alias of the first (symbolizer_canonical()). */
int symbolizer_module(struct symbolizer *s, const char *path, const uint8_t *build_id, size_t build_id_len,
                      uint64_t dev, uint64_t ino, uint32_t *ret_index);

/* The index that stands for module INDEX: itself, or the module with the same contents. */
static inline uint32_t symbolizer_canonical(const struct symbolizer *s, uint32_t index) {
        return s->canonical[index];
}

static inline struct module *symbolizer_get_module(const struct symbolizer *s, uint32_t index) {
        return s->modules[s->canonical[index]];
}

/* Loads module INDEX if not yet, opening its file through process PID's view of the file
 * system while PID lives (mapped at START..END: /proc/PID/map_files finds deleted files),
 * then by path. Returns module_load()'s result. */
int symbolizer_load(struct symbolizer *s, uint32_t index, pid_t pid, uint64_t start, uint64_t end);

/* Resolves file offset OFFSET of module INDEX (loaded or not) to its frames, outermost first:
 * sets *ret_first and *ret_n (1 to MODULE_MAX_INLINE) to a run of s->frames. Cached. Returns 0
 * or -ENOMEM. An address without a symbol gets one frame named "module+0xoffset". */
int symbolizer_resolve(struct symbolizer *s, uint32_t index, uint64_t offset, uint32_t *ret_first,
                       uint32_t *ret_n);

/* A kernel address's frame, from /proc/kallsyms (read on first use). Returns the frame index,
 * or -ENOMEM. Without kernel symbols the frame is "[kernel.kallsyms]+0xaddr", unknown. */
int64_t symbolizer_kernel(struct symbolizer *s, uint64_t addr);

/* The frame of JIT function NAME, from a perf map. Returns the frame index or -ENOMEM. */
int64_t symbolizer_jit(struct symbolizer *s, const char *name);

/* The frame of Python function QUALNAME of FILE at LINE (0: unknown). Returns the frame index or
 * -ENOMEM. */
int64_t symbolizer_python(struct symbolizer *s, const char *qualname, const char *file, uint32_t line);

/* Forgets every frame (indexes become invalid: the caller holds none) and, beyond MAX_LOADED,
 * unloads the modules used least recently, returning how many (their CFI is gone). Bounds
 * memory in a long-running collector. */
void symbolizer_forget_frames(struct symbolizer *s);
size_t symbolizer_trim_modules(struct symbolizer *s, size_t max_loaded);

/* module_release_pages() of every loaded module. */
void symbolizer_release_pages(struct symbolizer *s);

/* A frame with a made-up NAME: "[unknown]", "syscall:read". UNKNOWN marks it unsymbolized. */
int64_t symbolizer_synthetic(struct symbolizer *s, const char *name, bool unknown);
