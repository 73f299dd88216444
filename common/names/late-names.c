/* Names after the fact. For each module that holds frames stored as addresses, debug info is
 * looked for once, by the build id the store kept (a path alone may hold another version now,
 * so it never names anything by itself), in this order:
 *   1. the file at the module's path, if it still has that build id: its own symbols, or its
 *      debug file found on this machine as the collector finds them (debuginfo-find.c: the
 *      build-id directories of /usr/lib/debug and of each --debug-dir, .gnu_debuglink,
 *      MiniDebugInfo);
 *   2. ROOT/.build-id/xx/yyyy.debug under each of those roots, for a file that is gone;
 *   3. the debuginfod servers of $DEBUGINFOD_URLS, bounded (debuginfod-fetch.c); once a server
 *      error is seen (down, too slow), no further module asks, so a dead server costs one
 *      timeout per command, not one per module.
 * A source is taken when it names at least one of the module's addresses; a file of another
 * build id, or not ELF, is refused (and a debuginfod cache file so refused is removed, so that
 * the next command asks again rather than read it back). Each address then resolves to the
 * chain module_symbolize() gives at record time (the function, the functions inlined into it,
 * their source lines), so a frame named later reads as a frame named then. The cache of
 * modules lives as long as LN: one command (a diff opens two stores: each module is looked for
 * once), or the daemon's naming thread. */
#include "late-names.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>

#include "debuginfo-find.h"
#include "debuginfod-fetch.h"
#include "grow.h"
#include "module.h"
#include "name-table.h"
#include "store-rename.h"

int late_names_new(bool network, struct late_names **ret) {
        struct late_names *ln = calloc(1, sizeof *ln);

        if (!ln)
                return -ENOMEM;
        ln->network = network;
        ln->names = name_table_new();
        if (!ln->names) {
                free(ln);
                return -ENOMEM;
        }
        *ret = ln;
        return 0;
}

struct late_names *late_names_free(struct late_names *ln) {
        if (!ln)
                return NULL;
        for (size_t i = 0; i < ln->n_modules; i++) {
                free(ln->modules[i].path);
                free(ln->modules[i].build_id);
                module_free(ln->modules[i].module);
        }
        free(ln->modules);
        debuginfod_fetch_free(ln->fetch);
        name_table_free(ln->names);
        free(ln);
        return NULL;
}

/* The build id of the ELF file at PATH into HEX (41 bytes): 0, -ENOENT (no such regular
 * file), -EBADMSG (not ELF), -ENOKEY (no build id). Opened without blocking: a FIFO is refused. */
static int file_build_id(const char *path, char hex[static 41]) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        const uint8_t *id = NULL;
        struct stat st;
        Elf *elf;
        ssize_t n;

        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return -ENOENT;
        elf_version(EV_CURRENT);
        elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf || elf_kind(elf) != ELF_K_ELF) {
                elf_end(elf);
                return -EBADMSG;
        }
        n = dwelf_elf_gnu_build_id(elf, (const void **) &id);
        if (n > 0 && n <= 20)
                for (ssize_t i = 0; i < n; i++)
                        snprintf(hex + 2 * i, 3, "%02x", id[i]);
        elf_end(elf);
        return n > 0 && n <= 20 ? 0 : -ENOKEY;
}

/* BUILD_ID (hex) as bytes into OUT (20 bytes). Returns their number, 0 if not hex. */
static size_t id_bytes(const char *build_id, uint8_t out[static 20]) {
        size_t n = strlen(build_id);

        if (n == 0 || n % 2 || n > 40 || strspn(build_id, "0123456789abcdef") != n)
                return 0;
        for (size_t i = 0; i < n / 2; i++)
                sscanf(build_id + 2 * i, "%2hhx", &out[i]);
        return n / 2;
}

/* Whether module M names any of ADDRESSES[0..n): the first it names ends the probe (the
 * renames symbolize them all afterwards). */
static bool names_any(struct late_names *ln, struct module *m, const int64_t *addresses, size_t n) {
        struct module_location loc[MODULE_MAX_INLINE];

        for (size_t i = 0; i < n; i++)
                if (module_symbolize(m, (uint64_t) addresses[i], false, ln->names, loc) > 0)
                        return true;
        return false;
}

/* Tries FILE as LM's debug info: the file must have LM's build id and name some of ADDRESSES.
 * Returns 1 and sets lm->module, 0 if it names none, or a negative errno: -ENOENT, -EBADMSG (not
 * ELF, or without a build id), -ESTALE (another build id), -ENOMEM. */
static int try_file(struct late_names *ln, struct late_names_module *lm, const char *file,
                    const int64_t *addresses, size_t n) {
        _cleanup_(module_freep) struct module *m = NULL;
        const char *candidates[] = { file, NULL };
        uint8_t id[20];
        size_t id_len = id_bytes(lm->build_id, id);
        char found[41] = "";
        int r;

        r = file_build_id(file, found);
        if (r == -ENOKEY)
                return -EBADMSG; /* an ELF file without a build id is no debug file of one */
        if (r < 0)
                return r;
        if (!streq(found, lm->build_id))
                return -ESTALE;
        m = module_new(MODULE_ELF, lm->path, id, id_len);
        if (!m)
                return -ENOMEM;
        r = module_load(m, candidates, ln->names);
        if (r < 0)
                return r;
        if (!names_any(ln, m, addresses, n))
                return 0;
        lm->module = take_ptr(&m);
        return 1;
}

/* Step 2: ROOT/.build-id/xx/yyyy.debug under each debug root. */
static int try_roots(struct late_names *ln, struct late_names_module *lm, const int64_t *addresses,
                     size_t n) {
        const char *roots = debuginfo_find_roots();
        int r = -ENOENT;

        for (const char *root = roots, *end; *root; root = *end ? end + 1 : end) {
                char path[4096];
                int q, len;

                end = root + strcspn(root, ":");
                len = snprintf(path, sizeof path, "%.*s/.build-id/%.2s/%s.debug", (int) (end - root), root,
                               lm->build_id, lm->build_id + 2);
                if (len < 0 || (size_t) len >= sizeof path)
                        continue;
                q = try_file(ln, lm, path, addresses, n);
                if (q > 0 || q == -ENOMEM)
                        return q;
                if (q == -ESTALE || q == -EBADMSG)
                        r = q; /* says more than "not found" */
        }
        return r;
}

/* Step 3: the debuginfod servers. */
static int try_servers(struct late_names *ln, struct late_names_module *lm, const int64_t *addresses,
                       size_t n) {
        _cleanup_free_ char *file = NULL;
        struct stat st;
        int r;

        if (!ln->network)
                return -ENOENT;
        if (!ln->fetch_tried) {
                ln->fetch_tried = true;
                r = debuginfod_fetch_new(&ln->fetch);
                if (r < 0 && r != -ENOENT)
                        return r;
                if (ln->fetch)
                        debuginfod_fetch_set_cancel(ln->fetch, ln->cancel);
        }
        if (!ln->fetch)
                return -ENOENT;
        if (ln->servers_down < 0) {
                lm->server_error = true;
                return ln->servers_down;
        }
        if ((ln->max_fetches && ln->fetches >= ln->max_fetches) ||
            (ln->max_fetch_bytes && ln->fetch_bytes >= ln->max_fetch_bytes))
                return -EDQUOT;
        lm->asked_servers = true;
        ln->fetches++;
        r = debuginfod_fetch_debuginfo(ln->fetch, lm->build_id, &file);
        if (r < 0) {
                lm->http_status = debuginfod_fetch_http_status(ln->fetch);
                if (debuginfod_fetch_server_error(r) || r == -EFBIG || r == -EREMOTEIO) {
                        lm->server_error = true;
                        if (r != -EFBIG)
                                ln->servers_down = r;
                }
                return r;
        }
        if (stat(file, &st) == 0)
                ln->fetch_bytes += (uint64_t) st.st_size;
        r = try_file(ln, lm, file, addresses, n);
        if (r == -ESTALE || r == -EBADMSG)
                (void) unlink(file); /* the server's bad answer: not kept for the next command */
        if (r == 0)
                r = -ENOENT; /* a debug file that names nothing there */
        return r;
}

/* Looks for LM's debug info, for ADDRESSES. Sets lm->module or lm->error. Returns 0, or -ENOMEM. */
static int find_module(struct late_names *ln, struct late_names_module *lm, const int64_t *addresses,
                       size_t n) {
        uint8_t id[20];
        int r;

        lm->source = LATE_NAMES_NONE;
        if (id_bytes(lm->build_id, id) == 0) {
                lm->error = -ENOKEY;
                return 0;
        }
        r = lm->path[0] == '/' ? try_file(ln, lm, lm->path, addresses, n) : -ENOENT;
        if (r == -ENOMEM)
                return r;
        if (r > 0) {
                lm->source = LATE_NAMES_FILE;
                return lm->error = 0;
        }
        lm->path_replaced = r == -ESTALE || r == -EBADMSG;
        r = try_roots(ln, lm, addresses, n);
        if (r == -ENOMEM)
                return r;
        if (r > 0) {
                lm->source = LATE_NAMES_DEBUG_DIR;
                return lm->error = 0;
        }
        r = try_servers(ln, lm, addresses, n);
        if (r == -ENOMEM)
                return r;
        if (r > 0) {
                lm->source = LATE_NAMES_DEBUGINFOD;
                return lm->error = 0;
        }
        /* A replaced file says more than "not found" when nothing else was found. */
        lm->error = r == -ENOENT && lm->path_replaced ? -ESTALE : r;
        return 0;
}

/* The cache's entry for module (PATH, BUILD_ID), found now if new. Returns it, or NULL: no memory. */
static struct late_names_module *module_of(struct late_names *ln, const struct store_unnamed_module *u) {
        struct late_names_module *lm;

        for (size_t i = 0; i < ln->n_modules; i++) {
                lm = &ln->modules[i];
                /* by build id; without one, each path is its own entry (never found) */
                if (u->build_id[0] ? streq(lm->build_id, u->build_id) :
                                     !lm->build_id[0] && streq(lm->path, u->path))
                        return lm;
        }
        if (GROW(ln->modules, ln->cap_modules, ln->n_modules + 1) < 0)
                return NULL;
        lm = &ln->modules[ln->n_modules];
        *lm = (struct late_names_module) { .path = strdup(u->path), .build_id = strdup(u->build_id) };
        if (!lm->path || !lm->build_id) {
                free(lm->path);
                free(lm->build_id);
                return NULL;
        }
        ln->n_modules++;
        if (find_module(ln, lm, u->addresses, u->n_frames) < 0)
                return NULL;
        return lm;
}

/* The renames of the store's unnamed frames, their chains one after the other in CHAINS, rename
 * I's from FIRST[I] (a million frames of one module take tens of MiB, not one chain's room each). */
struct renames {
        struct store_rename *r;
        size_t *first;
        struct store_name *chains;
        size_t n, cap, cap_first, n_chains, cap_chains;
};

static void renames_done(struct renames *x) {
        free(x->r);
        free(x->first);
        free(x->chains);
}

/* Adds the renames of U's frames that LM's module names. Returns how many, or -ENOMEM. */
static int add_renames(struct late_names *ln, struct late_names_module *lm,
                       const struct store_unnamed_module *u, struct renames *x) {
        int named = 0;

        for (size_t i = 0; i < u->n_frames; i++) {
                struct module_location loc[MODULE_MAX_INLINE];
                struct store_name *chain;
                int n = module_symbolize(lm->module, (uint64_t) u->addresses[i], u->located[i], ln->names,
                                         loc);

                if (n < 0)
                        return n;
                if (n == 0)
                        continue;
                if (GROW(x->r, x->cap, x->n + 1) < 0 || GROW(x->first, x->cap_first, x->n + 1) < 0 ||
                    GROW(x->chains, x->cap_chains, x->n_chains + (size_t) n) < 0)
                        return -ENOMEM;
                x->first[x->n] = x->n_chains;
                chain = &x->chains[x->n_chains];
                x->n_chains += (size_t) n;
                for (int j = 0; j < n; j++)
                        chain[j] = (struct store_name) {
                                .function = name_table_get(ln->names, loc[j].function),
                                .file = loc[j].file != NAME_NONE ? name_table_get(ln->names, loc[j].file) :
                                                                   NULL,
                                .line = loc[j].line,
                                .inlined = loc[j].inlined,
                        };
                x->r[x->n++] = (struct store_rename) {
                        .frame_id = u->frames[i],
                        .module_id = u->id,
                        .address = u->addresses[i],
                        .located = u->located[i],
                        .n_chain = (size_t) n,
                };
                named++;
        }
        return named;
}

/* Looks for the debug info of the modules of U[0..n) that are files, into STATS (modules,
 * frames, modules_missing). Returns how many were found, or -ENOMEM. */
static int find_modules(struct late_names *ln, const struct store_unnamed_module *u, int n,
                        struct late_names_stats *stats) {
        int found = 0;

        for (int i = 0; i < n; i++) {
                struct late_names_module *lm;

                /* [kernel.kallsyms], [vdso], [jit]: not files a debug file is looked for */
                if (u[i].path[0] == '[')
                        continue;
                stats->modules++;
                stats->frames += u[i].n_frames;
                lm = module_of(ln, &u[i]);
                if (!lm)
                        return -ENOMEM;
                if (lm->module)
                        found++;
                else
                        stats->modules_missing++;
        }
        return found;
}

int late_names_apply(struct late_names *ln, struct store *s, bool write, struct late_names_stats *ret) {
        _cleanup_(renames_done) struct renames x = {};
        struct store_unnamed_module *u = NULL;
        struct late_names_stats stats = {};
        struct store_rename_stats written = {};
        int n, r = 0;

        /* First every frame stored as an address, from the function and frame tables: where no
         * module's debug info is found (most stores, most of the time), that is all it costs. */
        n = store_unnamed_modules(s, false, &u);
        if (n < 0)
                return n;
        r = find_modules(ln, u, n, &stats);
        store_unnamed_modules_free(u, (size_t) n);
        u = NULL;
        if (r <= 0) {
                if (r == 0)
                        *ret = stats;
                return r;
        }
        /* Then those that samples reach, which a rename rewrites. */
        stats = (struct late_names_stats) {};
        r = 0;
        n = store_unnamed_modules(s, true, &u);
        if (n < 0)
                return n;
        for (int i = 0; i < n && r >= 0; i++) {
                struct late_names_module *lm;

                /* [kernel.kallsyms], [vdso], [jit]: not files a debug file is looked for */
                if (u[i].path[0] == '[')
                        continue;
                stats.modules++;
                stats.frames += u[i].n_frames;
                lm = module_of(ln, &u[i]);
                if (!lm) {
                        r = -ENOMEM;
                        break;
                }
                if (!lm->module) {
                        stats.modules_missing++;
                        continue;
                }
                r = add_renames(ln, lm, &u[i], &x);
                if (r > 0) {
                        stats.frames_named += (uint64_t) r;
                        stats.modules_named++;
                }
        }
        /* the chains move no more: point the renames at them */
        for (size_t i = 0; r >= 0 && i < x.n; i++)
                x.r[i].chain = &x.chains[x.first[i]];
        if (r >= 0 && write && x.n > 0) {
                r = store_begin(s);
                if (r >= 0)
                        r = store_rename_frames(s, x.r, x.n, &written);
                if (r >= 0)
                        r = store_commit(s);
                else
                        store_rollback(s);
                stats.stacks_new = written.stacks_new;
                stats.samples_moved = written.samples_moved;
        }
        store_unnamed_modules_free(u, (size_t) n);
        if (r < 0)
                return r;
        *ret = stats;
        return 0;
}

const char *late_names_strerror(const struct late_names_module *m) {
        if (m->server_error)
                return debuginfod_fetch_strerror(m->error);
        switch (m->error) {
        case 0:
                return "found";
        case -ENOKEY:
                return "no build id in the store, and a path alone may hold another version";
        case -ENOENT:
                return m->asked_servers ?
                        "no debug info on this machine, and not on any debuginfod server" :
                        "no debug info on this machine (/usr/lib/debug, --debug-dir), and no "
                        "debuginfod server asked (DEBUGINFOD_URLS)";
        case -ESTALE:
                return m->path_replaced ? "the file at its path now has another build id, and no debug "
                                          "info of the recorded one was found" :
                                          "the debug file found has another build id";
        case -EBADMSG:
                return "the debug file found is not a valid ELF file with a build id";
        case -EDQUOT:
                return "not asked of the debuginfod servers: the bounds on fetches were reached";
        default:
                return debuginfod_fetch_strerror(m->error);
        }
}

const char *late_names_http(const struct late_names_module *m, char *buf, size_t size) {
        if (m->http_status)
                snprintf(buf, size, " (HTTP %d)", m->http_status);
        else if (size > 0)
                buf[0] = '\0';
        return buf;
}

int late_names_name(void *userdata, const char *path, const char *build_id, int64_t address, bool located,
                    struct store_name *ret, size_t max) {
        struct late_names *ln = userdata;
        struct module_location loc[MODULE_MAX_INLINE];
        int64_t addresses[1] = { address };
        struct store_unnamed_module u = {
                .path = (char *) path,
                .build_id = (char *) build_id,
                .addresses = addresses,
                .n_frames = 1,
        };
        struct late_names_module *lm;
        int n;

        if (path[0] == '[' || address < 0)
                return 0;
        lm = module_of(ln, &u);
        if (!lm)
                return -ENOMEM;
        if (!lm->module)
                return 0;
        n = module_symbolize(lm->module, (uint64_t) address, located, ln->names, loc);
        if (n <= 0)
                return n;
        if ((size_t) n > max)
                n = (int) max; /* the outermost levels, as module_symbolize() keeps them */
        for (int j = 0; j < n; j++)
                ret[j] = (struct store_name) {
                        .function = name_table_get(ln->names, loc[j].function),
                        .file = loc[j].file != NAME_NONE ? name_table_get(ln->names, loc[j].file) : NULL,
                        .line = loc[j].line,
                        .inlined = loc[j].inlined,
                };
        return n;
}
