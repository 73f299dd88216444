/* The symbolizer. Frames are kept in one array and never move (indexes are stable), so stacks
 * can be tries of frame indexes. An address resolves to a chain of frames (the function and its
 * inlined callees), cached under (module, offset): one resolution per distinct address, after
 * which a sample's frame costs one hash lookup. Modules are keyed by build id when the record
 * gave one (a perf.data recorded with --buildid-mmap), else by path, device and inode (cppd's
 * own events, record.h), and once loaded by the build id in the file too: a library shared by
 * a thousand processes is loaded once, and two versions of one path (upgraded while running)
 * are two modules. Kernel symbols come
 * from /proc/kallsyms, read on first use, since libdw needs a vmlinux we rarely have. */
#include "symbolize.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "kallsyms.h"

/* The chain cache's key: the module index (at most 16 bits used) and a 48-bit offset. */
#define CHAIN_KEY(index, offset) ((uint64_t) (index) << 48 | ((offset) &0xffffffffffffULL))

struct symbolizer *symbolizer_new(void) {
        struct symbolizer *s = calloc(1, sizeof *s);

        if (!s)
                return NULL;
        s->lines = true;
        s->names = name_table_new();
        s->module_keys = name_table_new();
        s->chains = idmap_new();
        s->kernel_frames = idmap_new();
        if (!s->names || !s->module_keys || !s->chains || !s->kernel_frames)
                return symbolizer_free(s);
        return s;
}

struct symbolizer *symbolizer_free(struct symbolizer *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_modules; i++)
                module_free(s->modules[i]);
        free(s->modules);
        free(s->canonical);
        free(s->key_modules);
        free(s->frames);
        idmap_free(s->chains);
        idmap_free(s->kernel_frames);
        symtab_free(s->kernel);
        name_table_free(s->names);
        name_table_free(s->module_keys);
        free(s);
        return NULL;
}

/* Records that key ID names module INDEX; the ids come in order. Returns 0 or -ENOMEM. */
static int add_key(struct symbolizer *s, int64_t id, uint32_t index) {
        if ((size_t) id != s->n_keys)
                return -EINVAL;
        if (GROW(s->key_modules, s->cap_keys, s->n_keys + 1) < 0)
                return -ENOMEM;
        s->key_modules[s->n_keys++] = index;
        return 0;
}

int symbolizer_module(struct symbolizer *s, const char *path, const uint8_t *build_id, size_t build_id_len,
                      uint64_t dev, uint64_t ino, uint32_t *ret_index) {
        bool vdso = streq(path, "[vdso]");
        struct module *m;
        char key[4200];
        int64_t id;
        int n, r;

        if (vdso)
                n = snprintf(key, sizeof key, "[vdso]");
        else if (build_id_len > 0) {
                n = snprintf(key, sizeof key, "b:");
                for (size_t i = 0; i < build_id_len && i < 20; i++)
                        n += snprintf(key + n, sizeof key - n, "%02x", build_id[i]);
        } else
                n = snprintf(key, sizeof key, "p:%s\x1f%" PRIu64 "\x1f%" PRIu64, path, dev, ino);
        if (n < 0 || (size_t) n >= sizeof key)
                return -ENAMETOOLONG;

        id = name_table_intern(s->module_keys, key, n);
        if (id < 0)
                return id;
        if ((size_t) id < s->n_keys) {
                *ret_index = s->key_modules[id];
                return 0;
        }
        r = add_key(s, id, s->n_modules);
        if (r < 0)
                return r;
        if (s->n_modules >= 0xffff)
                return -E2BIG; /* the chain key has 16 bits for it */
        if (s->n_modules == s->cap_modules) {
                size_t cap = s->cap_modules, cap_canonical = s->cap_modules; /* they grow alike */

                if (GROW(s->modules, cap, s->n_modules + 1) < 0 ||
                    GROW(s->canonical, cap_canonical, s->n_modules + 1) < 0)
                        return -ENOMEM;
                s->cap_modules = cap;
        }
        m = module_new(vdso ? MODULE_VDSO : MODULE_ELF, path, build_id, build_id_len);
        if (!m)
                return -ENOMEM;
        s->canonical[s->n_modules] = s->n_modules;
        s->modules[s->n_modules++] = m;
        *ret_index = s->key_modules[id];
        return 0;
}

/* After module INDEX loaded: if another module has its build id (it was known by its path), INDEX
 * becomes that one's alias and lets its own copy go; else its build id becomes a key of INDEX,
 * so that MMAP2 records naming it by build id find it. Returns the index that stands for it. */
static uint32_t unify(struct symbolizer *s, uint32_t index) {
        struct module *m = s->modules[index];
        char key[64];
        int64_t id;

        if (m->kind != MODULE_ELF || !m->build_id[0])
                return index;
        snprintf(key, sizeof key, "b:%s", m->build_id);
        id = name_table_intern(s->module_keys, key, strlen(key));
        if (id < 0)
                return index; /* no memory: two copies, no harm */
        if ((size_t) id == s->n_keys) {
                (void) add_key(s, id, index); /* no memory: later MMAP2s make a second copy */
                return index;
        }
        if (s->key_modules[id] == index)
                return index;
        s->canonical[index] = s->key_modules[id];
        module_unload(m);
        return s->canonical[index];
}

int symbolizer_load(struct symbolizer *s, uint32_t index, pid_t pid, uint64_t start, uint64_t end) {
        struct module *m = s->modules[s->canonical[index]];
        char by_map[128], by_root[4200];
        const char *candidates[4];
        size_t n = 0;
        int r;

        m->last_used = ++s->clock;
        if (m->loaded)
                return m->load_error;
        if (pid > 0) {
                snprintf(by_map, sizeof by_map, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int) pid, start,
                         end);
                candidates[n++] = by_map;
                if ((size_t) snprintf(by_root, sizeof by_root, "/proc/%d/root%s", (int) pid, m->path) <
                    sizeof by_root)
                        candidates[n++] = by_root;
        }
        candidates[n++] = m->path;
        candidates[n] = NULL;
        r = module_load(m, candidates, s->names);
        if (r < 0)
                return r;
        index = unify(s, s->canonical[index]);
        return s->modules[index]->loaded ? s->modules[index]->load_error :
                                           symbolizer_load(s, index, pid, start, end);
}

static int add_frame(struct symbolizer *s, const struct frame *f) {
        if (s->n_frames >= UINT32_MAX >> 8)
                return -E2BIG;
        if (GROW(s->frames, s->cap_frames, s->n_frames + 1) < 0)
                return -ENOMEM;
        s->frames[s->n_frames] = *f;
        return s->n_frames++;
}

static int64_t intern(struct symbolizer *s, const char *name) {
        return name_table_intern(s->names, name, strlen(name));
}

/* "libc.so.6+0x2a3f0": the file's base name and the offset. */
static int64_t unknown_name(struct symbolizer *s, const char *path, uint64_t offset) {
        const char *base = strrchr(path, '/');
        char buf[512];

        snprintf(buf, sizeof buf, "%s+0x%" PRIx64, base ? base + 1 : path, offset);
        return intern(s, buf);
}

int symbolizer_resolve(struct symbolizer *s, uint32_t index, uint64_t offset, uint32_t *ret_first,
                       uint32_t *ret_n) {
        struct module_location loc[MODULE_MAX_INLINE];
        struct module *m;
        uint64_t *slot, vaddr = offset;
        int64_t first = -1, name;
        int n = 0, r;

        index = s->canonical[index];
        m = s->modules[index];
        s->lookups++;
        slot = idmap_get(s->chains, CHAIN_KEY(index, offset));
        if (slot) {
                *ret_first = *slot >> 8;
                *ret_n = *slot & 0xff;
                return 0;
        }
        s->misses++;
        m->last_used = ++s->clock;

        if (m->load_error == 0 && m->n_segments > 0 && module_offset_to_vaddr(m, offset, &vaddr) == 0) {
                n = module_symbolize(m, vaddr, s->lines, s->names, loc);
                if (n < 0)
                        return n;
        }
        for (int i = 0; i < n; i++) {
                r = add_frame(s,
                              &(struct frame) {
                                      .function = loc[i].function,
                                      .file = loc[i].file,
                                      .line = loc[i].line,
                                      .module = index,
                                      .address = vaddr,
                                      .inlined = loc[i].inlined,
                              });
                if (r < 0)
                        return r;
                if (first < 0)
                        first = r;
        }
        if (n == 0) {
                name = unknown_name(s, m->path, vaddr);
                if (name < 0)
                        return name;
                first = add_frame(s,
                                  &(struct frame) {
                                          .function = name,
                                          .file = NAME_NONE,
                                          .module = index,
                                          .address = vaddr,
                                          .unknown = true,
                                  });
                if (first < 0)
                        return first;
                n = 1;
        }
        if (idmap_put(s->chains, CHAIN_KEY(index, offset), (uint64_t) first << 8 | n, &slot) < 0)
                return -ENOMEM;
        *ret_first = first;
        *ret_n = n;
        return 0;
}

int64_t symbolizer_kernel(struct symbolizer *s, uint64_t addr) {
        const struct symtab_entry *e = NULL;
        uint64_t *slot;
        int64_t name, f;
        char buf[64];

        slot = idmap_get(s->kernel_frames, addr);
        if (slot)
                return *slot;
        if (!s->kernel_tried) {
                _cleanup_fclose_ FILE *k = fopen("/proc/kallsyms", "re");

                s->kernel_tried = true;
                s->kernel_error = k ? kallsyms_load(k, s->names, &s->kernel) : -errno;
        }
        if (s->kernel)
                e = symtab_lookup(s->kernel, addr);
        if (e)
                name = e->name;
        else {
                snprintf(buf, sizeof buf, "[kernel.kallsyms]+0x%" PRIx64, addr);
                name = intern(s, buf);
        }
        if (name < 0)
                return name;
        f = add_frame(s,
                      &(struct frame) {
                              .function = name,
                              .file = NAME_NONE,
                              .module = SYMBOLIZER_KERNEL,
                              .address = addr,
                              .unknown = !e,
                              .kernel = true,
                      });
        if (f < 0)
                return f;
        if (idmap_put(s->kernel_frames, addr, f, &slot) < 0)
                return -ENOMEM;
        return f;
}

/* One frame per name for frames outside ELF modules, cached under a module index that no
 * module can have (symbolizer_module() stops below 0xffff). */
static int64_t named_frame(struct symbolizer *s, const char *name, uint32_t module, bool unknown) {
        int64_t id = intern(s, name), f;
        uint64_t key, *slot;

        if (id < 0)
                return id;
        key = CHAIN_KEY(module == SYMBOLIZER_JIT ? 0xfffe : 0xffff, id);
        slot = idmap_get(s->chains, key);
        if (slot)
                return *slot >> 8;
        f = add_frame(s,
                      &(struct frame) {
                              .function = id,
                              .file = NAME_NONE,
                              .module = module,
                              .unknown = unknown,
                      });
        if (f < 0)
                return f;
        if (idmap_put(s->chains, key, (uint64_t) f << 8 | 1, &slot) < 0)
                return -ENOMEM;
        return f;
}

int64_t symbolizer_python(struct symbolizer *s, const char *qualname, const char *file, uint32_t line) {
        char key[4200];
        int64_t id, function, file_id, f;
        uint64_t *slot;

        /* One frame per (file, function, line): the key names all three. */
        snprintf(key, sizeof key, "%s\n%s\n%" PRIu32, file, qualname, line);
        id = intern(s, key);
        if (id < 0)
                return id;
        slot = idmap_get(s->chains, CHAIN_KEY(0xfffd, id));
        if (slot)
                return *slot >> 8;
        function = intern(s, qualname);
        if (function < 0)
                return function;
        file_id = intern(s, file);
        if (file_id < 0)
                return file_id;
        f = add_frame(s,
                      &(struct frame) {
                              .function = (uint32_t) function,
                              .file = (uint32_t) file_id,
                              .line = line,
                              .module = SYMBOLIZER_PYTHON,
                              .address = line,
                      });
        if (f < 0)
                return f;
        if (idmap_put(s->chains, CHAIN_KEY(0xfffd, id), (uint64_t) f << 8 | 1, &slot) < 0)
                return -ENOMEM;
        return f;
}

int64_t symbolizer_jit(struct symbolizer *s, const char *name) {
        return named_frame(s, name, SYMBOLIZER_JIT, false);
}

int64_t symbolizer_synthetic(struct symbolizer *s, const char *name, bool unknown) {
        return named_frame(s, name, SYMBOLIZER_NO_MODULE, unknown);
}

void symbolizer_forget_frames(struct symbolizer *s) {
        s->n_frames = 0;
        idmap_clear(s->chains);
        idmap_clear(s->kernel_frames);
}

static _Thread_local struct module *const *lru_modules;

static int lru_cmp(const void *a, const void *b) {
        uint64_t x = lru_modules[*(const uint32_t *) a]->last_used,
                 y = lru_modules[*(const uint32_t *) b]->last_used;

        return x < y ? -1 : x > y;
}

size_t symbolizer_trim_modules(struct symbolizer *s, size_t max_loaded) {
        _cleanup_free_ uint32_t *loaded = malloc(s->n_modules * sizeof *loaded);
        size_t n = 0;

        if (!loaded)
                return 0;
        for (size_t i = 0; i < s->n_modules; i++)
                if (s->modules[i]->loaded && s->modules[i]->load_error == 0)
                        loaded[n++] = i;
        if (n <= max_loaded)
                return 0;
        lru_modules = s->modules;
        qsort(loaded, n, sizeof *loaded, lru_cmp);
        lru_modules = NULL;
        for (size_t i = 0; i < n - max_loaded; i++)
                module_unload(s->modules[loaded[i]]);
        return n - max_loaded;
}

void symbolizer_release_pages(struct symbolizer *s) {
        for (size_t i = 0; i < s->n_modules; i++)
                if (s->modules[i]->loaded && s->modules[i]->load_error == 0)
                        module_release_pages(s->modules[i]);
}
