/* Loading a filtered sample tree. The stored trie has one node per distinct (frame) stack
 * prefix; analysis wants a trie of labels: function names, or "name (file:line)" call sites, or
 * modules. Loading reads the frame and stack tables once into arrays indexed by id (ids are
 * dense and a parent's id is below its children's), labels each frame once (and matches the
 * --focus/--ignore/--hide expressions against the label once), sums the selected samples per
 * stack in SQL, and maps each stack node to a tree node through a memo, so every stored node is
 * translated at most once however many samples end below it. Hidden and folded inline frames
 * map to their parent's node; focus and ignore are flags carried down the memo. Labels show
 * C++ and Rust names demangled (unless the filter asks for the raw ones), so the filters match
 * what users read; each function is demangled once per load, whatever its frames.
 *
 * Runs that sampled one resource at different periods are merged by weighting each run's hits
 * by period / gcd_u64(periods), so the tree counts samples of gcd gticks; the header says so.
 *
 * With unit_roots, the samples come ordered by their process's unit, and each unit's stacks
 * hang below a node of its own under the root: the memo is cleared and based at that node when
 * the unit changes, so the frame and stack tables, most of a load's cost, are read once for all
 * the units (the daemon pushes a profile per unit every interval). */
#include "store.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "math-util.h"
#include "name-table.h"
#include "store-internal.h"

/* What each stored frame becomes in the tree: its label at the chosen granularity, and what the
 * filters say of it. */
struct frame_info {
        uint32_t label;     /* name id in the tree; NAME_NONE for a frame id not in use */
        uint32_t module;    /* index in the tree's modules; SAMPLE_TREE_NONE: unknown */
        bool unknown;       /* no symbol */
        bool skip;          /* hidden (--hide), or an inline frame being folded */
        bool focus, ignore; /* matches --focus, --ignore */
};

/* The stored trie, and its mapping onto the tree being built. */
struct stack_table {
        uint32_t *parent;        /* by stack id; 0 for outermost */
        uint32_t *frame;         /* by stack id: its frame id; 0 for an id not in use */
        uint32_t *node;          /* by stack id: the tree node, or SAMPLE_TREE_NONE until mapped */
        uint8_t *flags;          /* by stack id, once mapped: FOCUS and IGNORE seen on the stack */
        uint32_t *frames;        /* by stack id, once mapped: frames kept on the stack... */
        uint32_t *unknown;       /* ...and how many of them are unknown */
        size_t n;                /* max id + 1 */
        struct frame_info *info; /* by frame id */
        size_t n_frames;
};

enum {
        STACK_FOCUS = 1 << 0,
        STACK_IGNORE = 1 << 1,
};

static void stack_table_done(struct stack_table *t) {
        free(t->parent);
        free(t->frame);
        free(t->node);
        free(t->flags);
        free(t->frames);
        free(t->unknown);
        free(t->info);
}

/* Runs SQL, which selects the largest id of a table, and checks that arrays indexed by id can
 * hold it. Returns 0 and sets *ret, or a negative errno. */
static int max_id_of(struct store *s, const char *sql, int64_t *ret) {
        int r = store_query_int(s, sql, ret);

        if (r < 0)
                return r;
        return *ret < 0 || *ret > UINT32_MAX - 1 ? -EBADMSG : 0;
}

static const char *base_name(const char *path) {
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

void store_frame_label(enum store_granularity by, const char *name, const char *file, int64_t line,
                       int64_t address, const char *module, char *buf, size_t size) {
        switch (by) {
        case STORE_BY_LINE:
                if (file && line > 0)
                        snprintf(buf, size, "%s (%s:%lld)", name, base_name(file), (long long) line);
                else if (address >= 0)
                        snprintf(buf, size, "%s (+0x%llx)", name, (unsigned long long) address);
                else
                        snprintf(buf, size, "%s", name);
                return;
        case STORE_BY_MODULE:
                snprintf(buf, size, "%s", module ? base_name(module) : "[unknown]");
                return;
        case STORE_BY_FUNCTION:
        default:
                snprintf(buf, size, "%s", name);
                return;
        }
}

static bool matches(const regex_t *re, const char *s) {
        return re && regexec(re, s, 0, NULL, 0) == 0;
}

/* The names of functions as shown: demangled (demangle.c) unless the filter asks for the raw
 * ones, each function once however many frames (call sites, inline instances) it has. */
struct shown_names {
        struct name_table *names; /* demangled names */
        uint32_t *by_function;    /* function id -> id in names; NAME_NONE: not seen yet */
        size_t n;                 /* max function id + 1 */
};

static void shown_names_done(struct shown_names *sn) {
        sn->names = name_table_free(sn->names);
        sn->by_function = mfree(sn->by_function);
}

/* The name function FUNCTION_ID, stored as NAME, is shown under (NAME itself if it is not
 * mangled); NULL: no memory. */
static const char *shown_name(struct shown_names *sn, int64_t function_id, const char *name) {
        char buf[DEMANGLE_NAME_MAX * 2];
        size_t len;
        int64_t id;

        if (function_id <= 0 || (size_t) function_id >= sn->n)
                return name; /* not cached; the loader checks ids elsewhere */
        if (sn->by_function[function_id] != NAME_NONE)
                return name_table_get(sn->names, sn->by_function[function_id]);
        len = demangle(name, buf, sizeof buf);
        if (len == 0)
                return name; /* not mangled (C, most names): two compares each time, no copy */
        id = name_table_intern(sn->names, buf, len);
        if (id < 0)
                return NULL;
        sn->by_function[function_id] = id;
        return name_table_get(sn->names, id);
}

static int shown_names_init(struct store *s, const struct store_filter *f, struct shown_names *sn) {
        int64_t max_id = 0;
        int r;

        if (f->raw_names || f->by == STORE_BY_MODULE)
                return 0;
        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM function", &max_id);
        if (r < 0)
                return r;
        sn->n = max_id + 1;
        sn->names = name_table_new();
        sn->by_function = malloc(sn->n * sizeof *sn->by_function);
        if (!sn->names || !sn->by_function)
                return -ENOMEM;
        for (size_t i = 0; i < sn->n; i++)
                sn->by_function[i] = NAME_NONE;
        return 0;
}

/* Sets *RET to the tree's index of stored module MODULE_ID (PATH, BUILD_ID; 0: none, from a
 * folded import: SAMPLE_TREE_NONE), adding the module to the tree at its first frame; MODULES
 * maps module ids up to MAX_MODULE to the tree's indexes. The label's module is said only when
 * a sample's stack reaches the frame (stack_node()), so that frames the filter leaves out do not
 * weigh in the choice among a name's modules. Returns 0, -ENOMEM, or -EBADMSG for an id past
 * the max. */
static int frame_module(struct sample_tree *tree, int64_t module_id, int64_t max_module, uint32_t *modules,
                        const char *path, const char *build_id, uint32_t *ret) {
        *ret = SAMPLE_TREE_NONE;
        if (module_id == 0)
                return 0;
        if (module_id < 0 || module_id > max_module || !path)
                return -EBADMSG;
        if (modules[module_id] == SAMPLE_TREE_NONE) {
                int64_t i = sample_tree_add_module(tree, path, build_id);

                if (i < 0)
                        return (int) i;
                modules[module_id] = i;
        }
        *ret = modules[module_id];
        return 0;
}

static int load_frames(struct store *s, const struct store_filter *f, struct sample_tree *tree,
                       struct stack_table *t) {
        _cleanup_(shown_names_done) struct shown_names sn = {};
        _cleanup_free_ uint32_t *modules = NULL; /* module id -> index in the tree's modules */
        sqlite3_stmt *st = NULL;
        int64_t max_id = 0, max_module = 0;
        char label[8192];
        int rc, r;

        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM frame", &max_id);
        if (r < 0)
                return r;
        t->n_frames = max_id + 1;
        t->info = calloc(t->n_frames, sizeof *t->info);
        if (!t->info)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_frames; i++)
                t->info[i].label = NAME_NONE;
        r = shown_names_init(s, f, &sn);
        if (r < 0)
                return r;

        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM module", &max_module);
        if (r < 0)
                return r;
        modules = malloc((max_module + 1) * sizeof *modules);
        if (!modules)
                return -ENOMEM;
        for (int64_t i = 0; i <= max_module; i++)
                modules[i] = SAMPLE_TREE_NONE;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT fr.id, fn.name, fr.file, ifnull(fr.line, 0), ifnull(fr.address, -1), "
                                "fr.inlined, fn.unknown, m.path, fn.id, m.id, m.build_id "
                                "FROM frame AS fr JOIN function AS fn ON fn.id = fr.function_id "
                                "LEFT JOIN module AS m ON m.id = fn.module_id",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0), n;
                const char *raw = (const char *) sqlite3_column_text(st, 1), *name = raw;
                struct frame_info *fi;

                if (id <= 0 || id > max_id || !name) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                if (sn.names && !sqlite3_column_int(st, 6))
                        name = shown_name(&sn, sqlite3_column_int64(st, 8), name);
                if (!name) {
                        sqlite3_finalize(st);
                        return -ENOMEM;
                }
                store_frame_label(f->by, name, (const char *) sqlite3_column_text(st, 2),
                                  sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
                                  (const char *) sqlite3_column_text(st, 7), label, sizeof label);
                n = name_table_intern(tree->names, label, strlen(label));
                if (n < 0) {
                        sqlite3_finalize(st);
                        return n == -EINVAL ? -EBADMSG : (int) n;
                }
                fi = &t->info[id];
                fi->label = n;
                fi->unknown = sqlite3_column_int(st, 6) != 0;
                fi->skip = (f->fold_inline && sqlite3_column_int(st, 5)) || matches(f->hide, label);
                fi->focus = matches(f->focus, label);
                fi->ignore = matches(f->ignore, label);
                /* pprof keeps both names of a function: its Function.system_name */
                r = name != raw && f->by == STORE_BY_FUNCTION ? sample_tree_set_label_raw(tree, n, raw) : 0;
                if (r >= 0)
                        r = frame_module(tree, sqlite3_column_int64(st, 9), max_module, modules,
                                         (const char *) sqlite3_column_text(st, 7),
                                         (const char *) sqlite3_column_text(st, 10), &fi->module);
                if (r < 0) {
                        sqlite3_finalize(st);
                        return r;
                }
        }
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : store_errno(s, rc);
}

static int load_stacks(struct store *s, const struct store_filter *f, struct sample_tree *tree,
                       struct stack_table *t) {
        sqlite3_stmt *st = NULL;
        int64_t max_id = 0;
        int rc, r;

        r = load_frames(s, f, tree, t);
        if (r < 0)
                return r;
        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM stack", &max_id);
        if (r < 0)
                return r;

        t->n = max_id + 1;
        t->parent = malloc(t->n * sizeof *t->parent);
        t->frame = calloc(t->n, sizeof *t->frame);
        t->node = malloc(t->n * sizeof *t->node);
        t->flags = calloc(t->n, sizeof *t->flags);
        t->frames = calloc(t->n, sizeof *t->frames);
        t->unknown = calloc(t->n, sizeof *t->unknown);
        if (!t->parent || !t->frame || !t->node || !t->flags || !t->frames || !t->unknown)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++)
                t->node[i] = SAMPLE_TREE_NONE;
        t->node[0] = SAMPLE_TREE_ROOT;

        rc = sqlite3_prepare_v2(s->db, "SELECT id, ifnull(parent_id, 0), frame_id FROM stack", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                int64_t parent = sqlite3_column_int64(st, 1);
                int64_t frame = sqlite3_column_int64(st, 2);

                /* A parent's id is below its child's: that is what makes the memo walk below
                 * terminate, so an edited store that breaks it is refused. */
                if (id <= 0 || id > max_id || parent < 0 || parent >= id || frame <= 0 ||
                    (size_t) frame >= t->n_frames || t->info[frame].label == NAME_NONE) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                t->parent[id] = parent;
                t->frame[id] = frame;
        }
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : store_errno(s, rc);
}

/* Maps stack ID to its tree node, mapping unmapped ancestors first (a frame skipped by --hide
 * or inline folding maps to its parent's node). Returns the node or a negative errno. */
static int64_t stack_node(struct sample_tree *tree, struct stack_table *t, uint32_t id, uint32_t *scratch) {
        size_t n = 0;

        if (id == 0 || id >= t->n || t->frame[id] == 0)
                return -EBADMSG;
        for (uint32_t i = id; t->node[i] == SAMPLE_TREE_NONE; i = t->parent[i]) {
                if (t->frame[i] == 0)
                        return -EBADMSG;
                scratch[n++] = i; /* depth is bounded by id, as parents have lower ids */
        }
        while (n > 0) {
                uint32_t i = scratch[--n], p = t->parent[i];
                const struct frame_info *fi = &t->info[t->frame[i]];
                int64_t node = t->node[p];

                if (fi->module != SAMPLE_TREE_NONE) {
                        int r = sample_tree_set_label_module(tree, fi->label, fi->module);

                        if (r < 0)
                                return r;
                }
                t->flags[i] = t->flags[p] | (fi->focus ? STACK_FOCUS : 0) | (fi->ignore ? STACK_IGNORE : 0);
                t->frames[i] = t->frames[p] + !fi->skip;
                t->unknown[i] = t->unknown[p] + (!fi->skip && fi->unknown);
                if (!fi->skip) {
                        node = sample_tree_child(tree, node, fi->label);
                        if (node < 0)
                                return node;
                }
                t->node[i] = node;
        }
        return t->node[id];
}

static int load_header(struct store *s, const struct store_filter *f, int64_t resource_id,
                       struct sample_tree *tree, uint64_t *ret_gcd) {
        sqlite3_stmt *st = NULL;
        uint64_t g = 0, lost = 0, n_runs = 0, random_runs = 0;
        int rc;

        /* Every run that sampled the resource (in the filter): periods and losses. */
        rc = sqlite3_prepare_v2(s->db,
                                "SELECT rr.period, rr.lost, rr.sampling, rr.thinned FROM run_resource AS rr "
                                "WHERE rr.resource_id = ?1 AND (?2 = 0 OR rr.run_id = ?2) "
                                "AND (?3 IS NULL OR rr.run_id IN (SELECT id FROM run WHERE host = ?3))",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, resource_id);
        sqlite3_bind_int64(st, 2, f->run_id);
        store_bind_text(st, 3, f->host);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t period = sqlite3_column_int64(st, 0), l = sqlite3_column_int64(st, 1);
                const char *sampling = (const char *) sqlite3_column_text(st, 2);

                if (period <= 0 || l < 0) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                g = gcd_u64(g, period);
                lost += l;
                /* One run of fixed periods makes the whole profile suspect of aliasing; it is
                 * "at random" only when every run was. */
                if (sampling && streq(sampling, "fixed"))
                        tree->info.periods_fixed = true;
                random_runs += sampling && streq(sampling, "random");
                n_runs++;
                if (sqlite3_column_int64(st, 3) > (int64_t) tree->info.thinned)
                        tree->info.thinned = (uint64_t) sqlite3_column_int64(st, 3);
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);
        tree->info.period = g;
        tree->info.lost = lost;
        tree->info.periods_random = n_runs > 0 && random_runs == n_runs;
        *ret_gcd = g ? g : 1;
        return 0;
}

int store_load_tree(struct store *s, const struct store_filter *f, struct sample_tree **ret) {
        return store_load_tree_shared(s, f, NULL, ret);
}

/* The samples of a load: its parameters are bound by number in load_tree(). */
#define SAMPLE_FROM_WHERE \
        "FROM sample AS s " \
        "JOIN thread AS t ON t.id = s.thread_id " \
        "JOIN process AS p ON p.id = t.process_id " \
        "JOIN run_resource AS rr ON rr.run_id = p.run_id AND rr.resource_id = s.resource_id " \
        "WHERE s.resource_id = ?1 AND (?2 = 0 OR p.run_id = ?2) " \
        "AND (?3 IS NULL OR p.unit = ?3) AND (?4 = 0 OR p.pid = ?4) " \
        "AND (?5 IS NULL OR p.comm = ?5 OR t.comm = ?5) " \
        "AND (?6 IS NULL OR p.exe = ?6 OR substr(p.exe, -length(?6) - 1) = '/' || ?6) " \
        "AND (?7 IS NULL OR s.bucket >= ?7) AND (?8 IS NULL OR s.bucket < ?8) " \
        "AND (?9 IS NULL OR p.run_id IN (SELECT id FROM run WHERE host = ?9)) " \
        "AND (?10 = 0 OR p.pid != 0) "

/* The sum of squared hits of a group of sample rows: a row that does not know its own (0) counts
 * each of its samples as hits / samples. */
#define SAMPLE_SQUARES \
        "total(CASE WHEN s.hits_squared > 0 THEN s.hits_squared ELSE s.hits * s.hits / max(s.samples, 1) END)"

/* With unit_roots: when the rows reach another unit, bases the memo at UNIT's node under the
 * root, forgetting the stacks mapped for the unit before. *CURRENT is the unit's label id. */
static int enter_unit(struct sample_tree *tree, struct stack_table *t, const char *unit, int64_t *current) {
        int64_t label = name_table_intern(tree->names, unit, strlen(unit)), node;

        if (label < 0)
                return (int) label;
        if (label == *current)
                return 0;
        node = sample_tree_child(tree, SAMPLE_TREE_ROOT, label);
        if (node < 0)
                return (int) node;
        for (size_t i = 1; i < t->n; i++)
                t->node[i] = SAMPLE_TREE_NONE;
        t->node[0] = node;
        *current = label;
        return 0;
}

static int load_tree(struct store *s, const struct store_filter *f, struct name_table *names,
                     struct sample_tree **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *tree = NULL;
        _cleanup_(stack_table_done) struct stack_table t = {};
        _cleanup_free_ uint32_t *scratch = NULL;
        _cleanup_free_ char *unit = NULL;
        sqlite3_stmt *st = NULL;
        int64_t resource_id = 0, unit_label = -1;
        uint64_t g = 1, total = 0;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db, "SELECT id, unit FROM resource WHERE name = ?", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        store_bind_text(st, 1, f->resource);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                resource_id = sqlite3_column_int64(st, 0);
                unit = strdup((const char *) sqlite3_column_text(st, 1) ?: "");
        }
        sqlite3_finalize(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return store_errno(s, rc);
        if (!unit)
                return -ENOMEM;

        tree = sample_tree_new(names);
        if (!tree)
                return -ENOMEM;
        r = sample_tree_set_resource(tree, f->resource, unit);
        if (r < 0)
                return r;
        r = load_header(s, f, resource_id, tree, &g);
        if (r < 0)
                return r;
        r = load_stacks(s, f, tree, &t);
        if (r < 0)
                return r;
        scratch = malloc(t.n * sizeof *scratch);
        if (!scratch)
                return -ENOMEM;
        r = sample_tree_reserve(tree, t.n);
        if (r < 0)
                return r;

        rc = sqlite3_prepare_v2(
                s->db,
                f->unit_roots ? "SELECT s.stack_id, sum(s.hits), sum(s.samples), rr.period, " SAMPLE_SQUARES
                                ", ifnull(p.unit, '') " SAMPLE_FROM_WHERE
                                "GROUP BY p.unit, s.stack_id, rr.period ORDER BY p.unit" :
                                "SELECT s.stack_id, sum(s.hits), sum(s.samples), rr.period, " SAMPLE_SQUARES
                                " " SAMPLE_FROM_WHERE "GROUP BY s.stack_id, rr.period",
                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, resource_id);
        sqlite3_bind_int64(st, 2, f->run_id);
        store_bind_text(st, 3, f->unit);
        sqlite3_bind_int64(st, 4, f->pid);
        store_bind_text(st, 5, f->comm);
        store_bind_text(st, 6, f->exe);
        if (f->has_since)
                sqlite3_bind_int64(st, 7, f->since);
        if (f->has_until)
                sqlite3_bind_int64(st, 8, f->until);
        store_bind_text(st, 9, f->host);
        sqlite3_bind_int(st, 10, f->no_idle);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                int64_t hits = sqlite3_column_int64(st, 1), samples = sqlite3_column_int64(st, 2);
                int64_t period = sqlite3_column_int64(st, 3);
                uint64_t w;
                int64_t node;

                if (f->unit_roots) {
                        r = enter_unit(tree, &t, (const char *) sqlite3_column_text(st, 5) ?: "",
                                       &unit_label);
                        if (r < 0) {
                                sqlite3_finalize(st);
                                return r;
                        }
                }

                if (id <= 0 || (size_t) id >= t.n || hits < 0 || samples < 0 || period <= 0) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                node = stack_node(tree, &t, id, scratch);
                if (node < 0) {
                        sqlite3_finalize(st);
                        return node;
                }
                /* pprof's filters: --focus keeps the stacks through a match, --ignore drops them. */
                if ((f->focus && !(t.flags[id] & STACK_FOCUS)) || (t.flags[id] & STACK_IGNORE))
                        continue;
                /* Writers keep a resource's gticks within STORE_MAX_GTICKS; a store written past
                 * that (by hand, or by an older cppd) is refused here rather than summed with a
                 * wrap. Frame counts only weigh the header's share: they saturate. */
                if (__builtin_mul_overflow((uint64_t) hits, (uint64_t) period / g, &w) ||
                    __builtin_add_overflow(total, w, &total) || total > INT64_MAX) {
                        sqlite3_finalize(st);
                        snprintf(s->error, sizeof s->error, "the hits of %s add up to more than 2^63",
                                 f->resource);
                        return -EOVERFLOW;
                }
                sample_tree_add_hits(tree, node, w);
                tree->info.samples += samples;
                /* In the tree's hits, which are the run's times period / g. */
                tree->info.hits_squared +=
                        sqlite3_column_double(st, 4) * (double) (period / g) * (double) (period / g);
                tree->info.frames = saturating_add(tree->info.frames, saturating_mul(t.frames[id], w));
                tree->info.frames_unsymbolized =
                        saturating_add(tree->info.frames_unsymbolized, saturating_mul(t.unknown[id], w));
        }
        sqlite3_finalize(st);
        /* SQLite's sum() stops at a 64-bit overflow rather than wrap: the same bound, passed. */
        if (rc == SQLITE_ERROR && strstr(sqlite3_errmsg(s->db), "integer overflow")) {
                snprintf(s->error, sizeof s->error, "the hits of %s add up to more than 2^63", f->resource);
                return -EOVERFLOW;
        }
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);

        sample_tree_weigh(tree);
        *ret = take_ptr(&tree);
        return 0;
}

/* The tree is read from five tables in as many statements: one read transaction makes them one
 * snapshot, else a writer committing in between (the daemon's flush) leaves samples that name
 * stacks past those read, and a live store looks damaged. Inside a caller's transaction or
 * statement (an SQL function) the snapshot is already the caller's. */
int store_load_tree_shared(struct store *s, const struct store_filter *f, struct name_table *names,
                           struct sample_tree **ret) {
        bool own =
                sqlite3_get_autocommit(s->db) && sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
        int r = load_tree(s, f, names, ret);

        if (own)
                (void) sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
        return r;
}

int store_list_resources(struct store *s, char ***ret) {
        _cleanup_(strv_freep) char **names = NULL;
        sqlite3_stmt *st = NULL;
        int rc, n = 0;

        rc = sqlite3_prepare_v2(s->db,
                                /* EXISTS: one probe of sample's primary key per resource, not a scan */
                                "SELECT name FROM resource AS r "
                                "WHERE EXISTS (SELECT 1 FROM sample AS s WHERE s.resource_id = r.id) "
                                "ORDER BY name",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (strv_extend(&names, (const char *) sqlite3_column_text(st, 0) ?: "") < 0) {
                        sqlite3_finalize(st);
                        return -ENOMEM;
                }
                n++;
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);
        if (!names) {
                names = calloc(1, sizeof *names);
                if (!names)
                        return -ENOMEM;
        }
        *ret = take_ptr(&names);
        return n;
}
