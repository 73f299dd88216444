/* Loading a filtered sample tree. The stored trie has one node per distinct (frame) stack
 * prefix; analysis wants a trie of labels: function names, or "name (file:line)" call sites, or
 * modules. Loading reads the frame and stack tables once into arrays indexed by id (ids are
 * dense and a parent's id is below its children's), labels each frame once (tree-load.c, which
 * ch-read.c's loads from the fleet store share: the labels, the filters, demangling once per
 * function), sums the selected samples per stack in SQL, and maps each stack node to a tree
 * node through a memo, so every stored node is translated at most once however many samples end
 * below it. Hidden and folded inline frames map to their parent's node; focus and ignore are
 * flags carried down the memo. Each (stack, period) row is added by tree_load_add(), weighted
 * by period / gcd_u64(periods).
 *
 * The stored trie has one node per (parent, frame), so where no two frames share a label and
 * none is skipped, every stored node is a tree node of its own: those are added without the
 * tree's map of children (sample_tree_add_child()), which over a million distinct stacks is a
 * third of a load's memory; the children of a node that two stored stacks may share (a label of
 * several frames above) are still found through the map.
 *
 * With unit_roots, the samples come ordered by their process's unit, and each unit's stacks
 * hang below a node of its own under the root: the memo is cleared and based at that node when
 * the unit changes, so the frame and stack tables, most of a load's cost, are read once for all
 * the units (the daemon pushes a profile per unit every interval). */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "big-array.h"
#include "grow.h"
#include "math-util.h"
#include "name-table.h"
#include "store-internal.h"
#include "store-rename.h"
#include "tree-index.h"
#include "tree-load.h"

/* The stored trie, and its mapping onto the tree being built. */
struct stack_table {
        uint32_t *parent;              /* by stack id; 0 for outermost */
        uint32_t *frame;               /* by stack id: its frame id; 0 for an id not in use */
        struct tree_load_stack *stack; /* by stack id: its node (SAMPLE_TREE_NONE until mapped)
                                        * and what its frames said */
        size_t n;                      /* max id + 1 */
        struct tree_load_label *info;  /* by frame id; label NAME_NONE for an id not in use */
        size_t n_frames;
        /* by frame id: its module's id + 1 if the frame was named later (frame.named_later), 0
         * if not or counted already; by module id: whether counted. For the header's "named
         * later: N frames from M modules", each distinct frame that a sample's stack reaches. */
        uint32_t *late_module;
        uint8_t *late_module_counted;
        size_t n_modules;
        /* frames stored as addresses that the filter's namer names now: by frame id, its chain's
         * labels in chain_labels from FIRST, N of them (0: none; chains NULL: no frame named) */
        const struct store_namer *namer;
        struct frame_chain {
                uint32_t first;
                uint8_t n;
        } * chains;
        struct tree_load_label *chain_labels;
        size_t n_chain_labels, cap_chain_labels;
};

static void stack_table_done(struct stack_table *t) {
        big_array_free(t->parent, t->n, sizeof *t->parent);
        big_array_free(t->frame, t->n, sizeof *t->frame);
        free(t->stack);
        free(t->info);
        free(t->late_module);
        free(t->late_module_counted);
        free(t->chains);
        free(t->chain_labels);
}

/* Runs SQL, which selects the largest id of a table, and checks that arrays indexed by id can
 * hold it. Returns 0 and sets *ret, or a negative errno. */
static int max_id_of(struct store *s, const char *sql, int64_t *ret) {
        int r = store_query_int(s, sql, ret);

        if (r < 0)
                return r;
        return *ret < 0 || *ret > UINT32_MAX - 1 ? -EBADMSG : 0;
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

/* The most frames one frame stored as an address becomes (module.h's MODULE_MAX_INLINE). */
#define MAX_CHAIN 16

/* Names frame ID, stored as an address (FR, of the module MODULE_ID with BUILD_ID), through
 * T's namer, as the fleet store's loader does (ch-read.c): its chain is labelled into
 * chain_labels and pushed where the frame was (stack_of()); the store is read, not written, so
 * a view over a big store costs no copy of it. Counted as named later, as a stored name is.
 * Returns 0 (not named too) or a negative errno. */
static int name_frame(struct tree_load *l, struct stack_table *t, const struct tree_load_frame *fr,
                      const char *build_id, int64_t module_id, int64_t id) {
        struct store_name chain[MAX_CHAIN];
        bool located = fr->address >= 0;
        int64_t address = located ? fr->address : store_name_address(fr->name);
        int n, r;

        if (!fr->unknown || !fr->module || !build_id || !build_id[0] || address < 0)
                return 0;
        n = t->namer->name(t->namer->userdata, fr->module, build_id, address, located, chain, MAX_CHAIN);
        if (n <= 0)
                return n;
        if (!t->chains) {
                t->chains = calloc(t->n_frames, sizeof *t->chains);
                if (!t->chains)
                        return -ENOMEM;
        }
        if (GROW(t->chain_labels, t->cap_chain_labels, t->n_chain_labels + (size_t) n) < 0)
                return -ENOMEM;
        r = tree_load_label_chain(l, fr, located, address, chain, (size_t) n,
                                  &t->chain_labels[t->n_chain_labels]);
        if (r < 0)
                return r;
        t->chains[id] = (struct frame_chain) { .first = (uint32_t) t->n_chain_labels, .n = (uint8_t) n };
        t->n_chain_labels += (size_t) n;
        t->late_module[id] = (uint32_t) module_id + 1;
        return 0;
}

static int load_frames(struct store *s, struct tree_load *l, struct stack_table *t) {
        _cleanup_free_ uint32_t *modules = NULL; /* module id -> index in the tree's modules */
        sqlite3_stmt *st = NULL;
        int64_t max_id = 0, max_module = 0;
        int rc, r;

        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM frame", &max_id);
        if (r < 0)
                return r;
        t->n_frames = max_id + 1;
        t->info = calloc(t->n_frames, sizeof *t->info);
        t->late_module = calloc(t->n_frames, sizeof *t->late_module);
        if (!t->info || !t->late_module)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_frames; i++)
                t->info[i].label = NAME_NONE;

        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM module", &max_module);
        if (r < 0)
                return r;
        modules = malloc((max_module + 1) * sizeof *modules);
        t->n_modules = max_module + 1;
        t->late_module_counted = calloc(t->n_modules, 1);
        if (!modules || !t->late_module_counted)
                return -ENOMEM;
        for (int64_t i = 0; i <= max_module; i++)
                modules[i] = SAMPLE_TREE_NONE;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT fr.id, fn.name, fr.file, ifnull(fr.line, 0), ifnull(fr.address, -1), "
                                "fr.inlined, fn.unknown, m.path, fn.id, m.id, m.build_id, fr.named_later "
                                "FROM frame AS fr JOIN function AS fn ON fn.id = fr.function_id "
                                "LEFT JOIN module AS m ON m.id = fn.module_id",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0), function = sqlite3_column_int64(st, 8);
                struct tree_load_frame fr = {
                        .name = (const char *) sqlite3_column_text(st, 1),
                        /* an id of no function (an edited store): demangled, not cached */
                        .function = function > 0 && function < UINT32_MAX ? (uint32_t) function : UINT32_MAX,
                        .file = (const char *) sqlite3_column_text(st, 2),
                        .line = sqlite3_column_int64(st, 3),
                        .address = sqlite3_column_int64(st, 4),
                        .module = (const char *) sqlite3_column_text(st, 7),
                        .inlined = sqlite3_column_int(st, 5) != 0,
                        .unknown = sqlite3_column_int(st, 6) != 0,
                };

                if (id <= 0 || id > max_id || !fr.name) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                if (sqlite3_column_int(st, 11) && sqlite3_column_int64(st, 9) > 0 &&
                    sqlite3_column_int64(st, 9) <= max_module)
                        t->late_module[id] = (uint32_t) sqlite3_column_int64(st, 9) + 1;
                r = frame_module(l->tree, sqlite3_column_int64(st, 9), max_module, modules, fr.module,
                                 (const char *) sqlite3_column_text(st, 10), &fr.module_index);
                if (r >= 0)
                        r = tree_load_label(l, &fr, &t->info[id]);
                if (r >= 0 && t->namer && sqlite3_column_int64(st, 9) > 0 &&
                    sqlite3_column_int64(st, 9) <= max_module)
                        r = name_frame(l, t, &fr, (const char *) sqlite3_column_text(st, 10),
                                       sqlite3_column_int64(st, 9), id);
                if (r < 0) {
                        sqlite3_finalize(st);
                        return r;
                }
        }
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : store_errno(s, rc);
}

/* Marks the frames whose label no other frame has, unless a frame is skipped (--hide, folded
 * inline frames), which maps two stored stacks to one node. Returns 1 when every frame is
 * marked, 0 when some are not, or -ENOMEM. */
static int mark_unique(struct sample_tree *tree, struct stack_table *t) {
        _cleanup_free_ uint8_t *uses = calloc(name_table_size(tree->names) + 1, 1);
        bool skip = false, all = true;

        if (!uses)
                return -ENOMEM;
        skip = t->chains != NULL; /* a chain's labels are shared with any frame's: none is unique */
        for (size_t i = 0; i < t->n_frames; i++)
                if (t->info[i].label != NAME_NONE) {
                        skip |= t->info[i].skip;
                        if (uses[t->info[i].label] < 2)
                                uses[t->info[i].label]++;
                }
        for (size_t i = 0; i < t->n_frames; i++)
                if (t->info[i].label != NAME_NONE) {
                        t->info[i].unique = !skip && uses[t->info[i].label] == 1;
                        all &= t->info[i].unique;
                }
        return all;
}

/* Reads the frame and stack tables into T; with MEMO, the memo of each stack's tree node too
 * (store_load_index() walks every stack from its id instead). */
static int load_stacks(struct store *s, struct tree_load *l, struct stack_table *t, bool memo) {
        sqlite3_stmt *st = NULL;
        int64_t max_id = 0;
        int rc, r;

        r = load_frames(s, l, t);
        if (r < 0)
                return r;
        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM stack", &max_id);
        if (r < 0)
                return r;

        t->n = max_id + 1;
        /* in huge pages: 17.6 M ids over a million distinct stacks, walked at random after */
        t->parent = big_array_new(t->n, sizeof *t->parent);
        t->frame = big_array_new(t->n, sizeof *t->frame);
        if (!t->parent || !t->frame)
                return -ENOMEM;
        if (memo) {
                t->stack = malloc(t->n * sizeof *t->stack);
                if (!t->stack)
                        return -ENOMEM;
                for (size_t i = 0; i < t->n; i++)
                        t->stack[i] = (struct tree_load_stack) { .node = SAMPLE_TREE_NONE };
                t->stack[0].node = SAMPLE_TREE_ROOT;
        }

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
 * or inline folding maps to its parent's node). Returns the mapped stack or NULL, with *ret_error
 * set to a negative errno. */
static const struct tree_load_stack *stack_of(struct tree_load *l, struct stack_table *t, uint32_t id,
                                              uint32_t *scratch, int *ret_error) {
        size_t n = 0;

        *ret_error = -EBADMSG;
        if (id == 0 || id >= t->n || t->frame[id] == 0)
                return NULL;
        for (uint32_t i = id; t->stack[i].node == SAMPLE_TREE_NONE; i = t->parent[i]) {
                if (t->frame[i] == 0)
                        return NULL;
                scratch[n++] = i; /* depth is bounded by id, as parents have lower ids */
        }
        while (n > 0) {
                uint32_t i = scratch[--n], late = t->late_module[t->frame[i]];

                if (late) {
                        l->tree->info.frames_named_later++;
                        if (!t->late_module_counted[late - 1]) {
                                t->late_module_counted[late - 1] = 1;
                                l->tree->info.modules_named_later++;
                        }
                        t->late_module[t->frame[i]] = 0; /* counted */
                }
                if (t->chains && t->chains[t->frame[i]].n) {
                        const struct frame_chain *c = &t->chains[t->frame[i]];

                        t->stack[i] = t->stack[t->parent[i]];
                        *ret_error = 0;
                        for (uint32_t j = 0; j < c->n && *ret_error >= 0; j++)
                                *ret_error = tree_load_push(l, &t->stack[i], &t->chain_labels[c->first + j],
                                                            &t->stack[i]);
                } else
                        *ret_error = tree_load_push(l, &t->stack[t->parent[i]], &t->info[t->frame[i]],
                                                    &t->stack[i]);
                if (*ret_error < 0)
                        return NULL;
        }
        return &t->stack[id];
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

/* Binds SAMPLE_FROM_WHERE's parameters: RESOURCE_ID's samples that F selects. */
static void bind_filter(sqlite3_stmt *st, int64_t resource_id, const struct store_filter *f) {
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
}

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
                t->stack[i].node = SAMPLE_TREE_NONE;
        t->stack[0].node = node;
        *current = label;
        return 0;
}

static int load_tree(struct store *s, const struct store_filter *f, struct name_table *names,
                     struct sample_tree **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *tree = NULL;
        _cleanup_(stack_table_done) struct stack_table t = {};
        _cleanup_(tree_load_done) struct tree_load l = {};
        _cleanup_free_ uint32_t *scratch = NULL;
        _cleanup_free_ char *unit = NULL;
        sqlite3_stmt *st = NULL;
        int64_t resource_id = 0, unit_label = -1, max_function = 0;
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
        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM function", &max_function);
        if (r < 0)
                return r;
        r = tree_load_init(&l, f, tree, max_function + 1);
        if (r < 0)
                return r;
        r = load_header(s, f, resource_id, tree, &l.g);
        if (r < 0)
                return r;
        t.namer = f->namer;
        r = load_stacks(s, &l, &t, true);
        if (r < 0)
                return r;
        scratch = malloc(t.n * sizeof *scratch);
        if (!scratch)
                return -ENOMEM;
        r = mark_unique(tree, &t);
        if (r >= 0)
                r = sample_tree_reserve(tree, t.n, r == 0); /* the map only for frames not unique */
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
        bind_filter(st, resource_id, f);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                int64_t hits = sqlite3_column_int64(st, 1), samples = sqlite3_column_int64(st, 2);
                int64_t period = sqlite3_column_int64(st, 3);
                const struct tree_load_stack *stack;

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
                stack = stack_of(&l, &t, id, scratch, &r);
                if (stack)
                        r = tree_load_add(&l, stack, period, hits, samples, sqlite3_column_double(st, 4));
                if (r < 0) {
                        sqlite3_finalize(st);
                        if (r == -EOVERFLOW)
                                snprintf(s->error, sizeof s->error, "the hits of %s add up to more than 2^63",
                                         f->resource);
                        return r;
                }
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
        sample_tree_shrink(tree);
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

/* The labels of the stacks an index is laid out from, 4 bytes a frame (98 MB over a million
 * stacks): in memory, or, given a file, in the file mapped shared, let go of as they are
 * written, so that they do not meet the stack table in memory; the sort brings them back once
 * the stack table is gone. The index is then laid out in the same file, past them. */
struct labels {
        uint32_t *a;
        size_t n, cap;
        int fd;          /* the file; -1: in memory */
        size_t n_let_go; /* labels before this one are let go of */
};

/* The least room of labels in a file: 64 KiB, a few doublings for a small store. */
#define LABELS_MIN (UINT64_C(16) << 10)

static void labels_done(struct labels *b) {
        if (b->fd >= 0 && b->a)
                munmap(b->a, b->cap * sizeof *b->a);
        else
                free(b->a);
        b->a = NULL;
}

/* Makes room for NEED labels. A file that cannot grow (a full disk) hands its labels to memory.
 * Returns 0 or -ENOMEM. */
static int labels_grow(struct labels *b, size_t need) {
        size_t cap;
        void *p;

        if (need <= b->cap)
                return 0;
        if (b->fd < 0)
                return GROW(b->a, b->cap, need);
        cap = MAX(need, MAX(b->cap * 2, (size_t) LABELS_MIN));
        if (cap > SIZE_MAX / 8)
                return -ENOMEM;
        /* blocks reserved, so that no page written later finds the disk full (SIGBUS) */
        if (posix_fallocate(b->fd, 0, (off_t) (cap * sizeof *b->a)) == 0) {
                p = b->a ? mremap(b->a, b->cap * sizeof *b->a, cap * sizeof *b->a, MREMAP_MAYMOVE) :
                           mmap(NULL, cap * sizeof *b->a, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
                if (p != MAP_FAILED) {
                        b->a = p;
                        b->cap = cap;
                        return 0;
                }
        }
        p = malloc(cap * sizeof *b->a);
        if (!p)
                return -ENOMEM;
        if (b->a)
                memcpy(p, b->a, b->n * sizeof *b->a);
        labels_done(b);
        b->a = p;
        b->cap = cap;
        b->fd = -1;
        return 0;
}

/* Lets go of the pages of labels written so far (they are final; the page cache keeps them). */
static void labels_let_go(struct labels *b) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE), size = b->n * sizeof *b->a / page * page;

        /* advice only: pages that stay mapped are read all the same */
        if (b->fd >= 0 && size > 0)
                (void) madvise(b->a, size, MADV_DONTNEED);
}

/* The frames of stack ID read root first, as labels into B (from B->n on, grown as needed), and what they say into *ret: tree_load_push()'s steps without a tree. A frame seen
 * for the first time that was named later is counted in L's header, as stack_of() counts it.
 * Returns 0 or -EBADMSG, -ENOMEM. */
static int stack_path(struct tree_load *l, struct stack_table *t, uint32_t id, struct labels *b,
                      uint32_t **scratch, size_t *cap_scratch, struct tree_load_stack *ret) {
        struct tree_load_stack st = { .node = SAMPLE_TREE_ROOT };
        size_t n = 0;

        if (id == 0 || id >= t->n || t->frame[id] == 0)
                return -EBADMSG;
        for (uint32_t i = id; i != 0; i = t->parent[i]) {
                if (t->frame[i] == 0)
                        return -EBADMSG;
                if (GROW(*scratch, *cap_scratch, n + 1) < 0)
                        return -ENOMEM;
                (*scratch)[n++] = i; /* depth is bounded by id, as parents have lower ids */
        }
        while (n > 0) {
                uint32_t i = (*scratch)[--n], frame = t->frame[i], late = t->late_module[frame];
                const struct tree_load_label *labels = &t->info[frame];
                size_t k = 1;

                if (late) {
                        l->tree->info.frames_named_later++;
                        if (!t->late_module_counted[late - 1]) {
                                t->late_module_counted[late - 1] = 1;
                                l->tree->info.modules_named_later++;
                        }
                        t->late_module[frame] = 0; /* counted */
                }
                if (t->chains && t->chains[frame].n) {
                        labels = &t->chain_labels[t->chains[frame].first];
                        k = t->chains[frame].n;
                }
                for (size_t j = 0; j < k; j++) {
                        /* the binary each label lies in, as tree_load_push() notes it (pprof's
                         * mappings): the header's, whatever the label becomes */
                        if (labels[j].module != SAMPLE_TREE_NONE &&
                            sample_tree_set_label_module(l->tree, labels[j].label, labels[j].module) < 0)
                                return -ENOMEM;
                        st.focus |= labels[j].focus;
                        st.ignore |= labels[j].ignore;
                        if (labels[j].skip)
                                continue;
                        if (labels_grow(b, b->n + 1) < 0)
                                return -ENOMEM;
                        b->a[b->n++] = labels[j].label;
                        st.frames++;
                        st.unknown += labels[j].unknown;
                }
        }
        *ret = st;
        return 0;
}

/* A new header of resource NAME (what one of its gticks is), over the root alone, into *ret, and
 * the resource's id into *ret_id. Returns 0, -ENOENT for no such resource, -ENOMEM, or the
 * store's error. */
static int resource_header(struct store *s, const char *name, int64_t *ret_id, struct sample_tree **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *header = NULL;
        _cleanup_free_ char *unit = NULL;
        sqlite3_stmt *st = NULL;
        int64_t id = 0;
        int rc;

        rc = sqlite3_prepare_v2(s->db, "SELECT id, unit FROM resource WHERE name = ?", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        store_bind_text(st, 1, name);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                id = sqlite3_column_int64(st, 0);
                unit = strdup((const char *) sqlite3_column_text(st, 1) ?: "");
        }
        sqlite3_finalize(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        if (rc != SQLITE_ROW)
                return store_errno(s, rc);
        if (!unit)
                return -ENOMEM;
        header = sample_tree_new(NULL);
        if (!header || sample_tree_set_resource(header, name, unit) < 0)
                return -ENOMEM;
        *ret_id = id;
        *ret = take_ptr(&header);
        return 0;
}

/* store_load_index() within its read transaction. */
static int load_index(struct store *s, const struct store_filter *f, int fd, struct tree_index **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *header = NULL;
        _cleanup_(stack_table_done) struct stack_table t = {};
        _cleanup_(tree_load_done) struct tree_load l = {};
        _cleanup_free_ struct tree_index_path *paths = NULL;
        _cleanup_free_ struct tree_index_stack *stacks = NULL;
        _cleanup_(labels_done) struct labels names = { .fd = fd };
        _cleanup_free_ uint32_t *scratch = NULL, *node_of = NULL;
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        size_t n_paths = 0, cap_paths = 0, cap_stacks = 0, cap_scratch = 0;
        sqlite3_stmt *st = NULL;
        int64_t resource_id = 0, max_function = 0;
        int rc, r;

        if (f->unit_roots)
                return -EOPNOTSUPP;
        /* The header: the labels, the modules and what the samples say, over the root alone;
         * every row's hits go to the root, so that it weighs the total. */
        r = resource_header(s, f->resource, &resource_id, &header);
        if (r < 0)
                return r;
        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM function", &max_function);
        if (r < 0)
                return r;
        r = tree_load_init(&l, f, header, max_function + 1);
        if (r < 0)
                return r;
        r = load_header(s, f, resource_id, header, &l.g);
        if (r < 0)
                return r;
        t.namer = f->namer;
        r = load_stacks(s, &l, &t, false);
        if (r < 0)
                return r;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT s.stack_id, sum(s.hits), sum(s.samples), rr.period, " SAMPLE_SQUARES
                                " " SAMPLE_FROM_WHERE "GROUP BY s.stack_id, rr.period",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        bind_filter(st, resource_id, f);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                int64_t hits = sqlite3_column_int64(st, 1), samples = sqlite3_column_int64(st, 2);
                int64_t period = sqlite3_column_int64(st, 3);
                struct tree_load_stack stack;
                size_t at = names.n;

                if (id <= 0 || (size_t) id >= t.n || hits < 0 || samples < 0 || period <= 0)
                        r = -EBADMSG;
                else
                        r = stack_path(&l, &t, id, &names, &scratch, &cap_scratch, &stack);
                if (r >= 0)
                        r = tree_load_add(&l, &stack, period, hits, samples, sqlite3_column_double(st, 4));
                /* A stack the filters drop is still a path of the tree, of no hits, as the tree's
                 * loader makes its nodes before it adds the samples. */
                if (r >= 0 &&
                    (GROW(paths, cap_paths, n_paths + 1) < 0 || GROW(stacks, cap_stacks, n_paths + 1) < 0 ||
                     n_paths >= UINT32_MAX))
                        r = -ENOMEM;
                if (r < 0) {
                        sqlite3_finalize(st);
                        if (r == -EOVERFLOW)
                                snprintf(s->error, sizeof s->error, "the hits of %s add up to more than 2^63",
                                         f->resource);
                        return r;
                }
                /* where its node will be, for views filtered by samples (store_select_index()) */
                stacks[n_paths] = (struct tree_index_stack) {
                        .stack = (uint32_t) id,
                        .frames = stack.frames,
                        .unknown = stack.unknown,
                };
                paths[n_paths] = (struct tree_index_path) {
                        .at = at,
                        .hits = r > 0 ? hits * (period / l.g) : 0,
                        .len = names.n - at,
                        .id = n_paths,
                };
                n_paths++;
                if (n_paths % 8192 == 0)
                        labels_let_go(&names);
        }
        sqlite3_finalize(st);
        if (rc == SQLITE_ERROR && strstr(sqlite3_errmsg(s->db), "integer overflow")) {
                snprintf(s->error, sizeof s->error, "the hits of %s add up to more than 2^63", f->resource);
                return -EOVERFLOW;
        }
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);

        /* The stored trie is no longer needed: let it go before the index is laid out. */
        stack_table_done(&t);
        t = (struct stack_table) {};
        scratch = mfree(scratch);
        sample_tree_weigh(header);
        node_of = malloc((n_paths ? n_paths : 1) * sizeof *node_of);
        if (!node_of)
                return -ENOMEM;
        r = tree_index_from_paths(take_ptr(&header), names.a, paths, n_paths, node_of, fd, &x);
        if (r < 0)
                return r;
        paths = mfree(paths);
        labels_done(&names);
        for (size_t i = 0; i < n_paths; i++)
                stacks[i].node = stacks[i].down = node_of[i];
        r = tree_index_stack_ends(x, stacks, n_paths);
        if (r >= 0)
                r = tree_index_set_stacks(x, take_ptr(&stacks), n_paths);
        if (r < 0)
                return r;
        *ret = take_ptr(&x);
        return 0;
}

/* The stack STACK's place in ALL (its stacks sorted by id), looked for from *HINT on first, as
 * a filter's rows come in order of stack within each bucket and thread. NULL: none. */
static const struct tree_index_stack *stack_place(const struct tree_index *all, uint32_t stack,
                                                  size_t *hint) {
        const struct tree_index_stack *a = all->stacks;
        size_t lo = 0, hi = all->n_stacks, step = 1;

        /* galloping from the hint: a few steps for the next stack of a run */
        if (*hint < hi && a[*hint].stack <= stack) {
                lo = *hint;
                while (lo + step < hi && a[lo + step].stack <= stack) {
                        lo += step;
                        step *= 2;
                }
                hi = MIN(hi, lo + step + 1);
        }
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (a[mid].stack < stack)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == all->n_stacks || a[lo].stack != stack)
                return NULL;
        *hint = lo;
        return &a[lo];
}

/* store_select_index() within its read transaction. */
static int select_index(struct store *s, const struct store_filter *f, const struct tree_index *all, int fd,
                        struct tree_index **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *header = NULL;
        _cleanup_free_ struct tree_index_hit *reached = NULL;
        struct sample_tree_info *info;
        size_t n = 0, cap = 0, hint = 0;
        uint64_t g = 1, total = 0;
        int64_t resource_id = 0;
        sqlite3_stmt *st = NULL;
        int rc, r;

        /* The header counts each frame named later that the filter's stacks reach, which the
         * index does not tell. */
        if (all->n_stacks == 0 || all->header->info.frames_named_later > 0)
                return -EAGAIN;
        r = resource_header(s, f->resource, &resource_id, &header);
        if (r < 0)
                return r;
        /* the index's names, under the same ids */
        for (uint32_t i = 0; i < all->n_names; i++) {
                const char *name = name_table_get(all->header->names, i);

                if (name_table_intern(header->names, name, strlen(name)) != (int64_t) i)
                        return -ENOMEM;
        }
        r = load_header(s, f, resource_id, header, &g);
        if (r < 0)
                return r;
        info = &header->info;

        /* Row by row, not grouped by stack in SQL: the sort of a GROUP BY over a million rows is
         * a second, the rows alone a fifth of that; the index merges them by node. */
        rc = sqlite3_prepare_v2(s->db,
                                "SELECT s.stack_id, s.hits, s.samples, rr.period, "
                                "CASE WHEN s.hits_squared > 0 THEN s.hits_squared "
                                "ELSE s.hits * s.hits / max(s.samples, 1) END " SAMPLE_FROM_WHERE,
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        bind_filter(st, resource_id, f);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0), hits = sqlite3_column_int64(st, 1);
                int64_t samples = sqlite3_column_int64(st, 2), period = sqlite3_column_int64(st, 3);
                const struct tree_index_stack *place = NULL;
                double f_period;
                uint64_t w;

                r = 0;
                if (id <= 0 || id > UINT32_MAX || hits < 0 || samples < 0 || period <= 0)
                        r = -EBADMSG;
                else if (!(place = stack_place(all, (uint32_t) id, &hint)))
                        r = -EAGAIN; /* a stack the index does not hold: laid out from the store */
                /* tree_load_add()'s sums, a row at a time */
                else if (__builtin_mul_overflow((uint64_t) hits, (uint64_t) period / g, &w) ||
                         __builtin_add_overflow(total, w, &total) || total > INT64_MAX) {
                        snprintf(s->error, sizeof s->error, "the hits of %s add up to more than 2^63",
                                 f->resource);
                        r = -EOVERFLOW;
                } else if (GROW(reached, cap, n + 1) < 0)
                        r = -ENOMEM;
                if (r < 0) {
                        sqlite3_finalize(st);
                        return r;
                }
                f_period = (double) ((uint64_t) period / g);
                info->samples = saturating_add(info->samples, (uint64_t) samples);
                info->hits_squared += sqlite3_column_double(st, 4) * f_period * f_period;
                info->frames = saturating_add(info->frames, saturating_mul(place->frames, w));
                info->frames_unsymbolized =
                        saturating_add(info->frames_unsymbolized, saturating_mul(place->unknown, w));
                reached[n++] = (struct tree_index_hit) {
                        .down = place->down,
                        .down_end = place->down_end,
                        .node = place->node,
                        .hits = w,
                };
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);
        sample_tree_add_hits(header, SAMPLE_TREE_ROOT, total);
        sample_tree_weigh(header);
        return tree_index_select(all, take_ptr(&header), reached, n, fd, ret);
}

int store_select_index(struct store *s, const struct store_filter *f, const struct tree_index *all, int fd,
                       struct tree_index **ret) {
        bool own =
                sqlite3_get_autocommit(s->db) && sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
        int r = select_index(s, f, all, fd, ret);

        if (own)
                (void) sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
        return r;
}

int store_load_index(struct store *s, const struct store_filter *f, int fd, struct tree_index **ret) {
        bool own =
                sqlite3_get_autocommit(s->db) && sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
        int r = load_index(s, f, fd, ret);

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
