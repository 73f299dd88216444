/* Loading a filtered sample tree. The stored trie has one node per distinct (frame) stack
 * prefix; analysis wants a trie of function names. Loading reads the stack table once into
 * arrays indexed by id (ids are dense and a parent's id is below its children's), sums the
 * selected samples per stack in SQL, and maps each stack node to a function-tree node through a
 * memo, so every stored node is translated at most once however many samples end below it.
 *
 * Runs that sampled one resource at different periods are merged by weighting each run's hits
 * by period / gcd(periods), so the tree counts samples of gcd gticks; the header says so. */
#include "store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "name-table.h"
#include "store-internal.h"

static uint64_t gcd(uint64_t a, uint64_t b) {
        while (b) {
                uint64_t t = a % b;

                a = b;
                b = t;
        }
        return a;
}

struct stack_table {
        uint32_t *parent;       /* by stack id; 0 for outermost */
        uint32_t *name;         /* by stack id: the frame's function, as a name id of the tree */
        bool *unknown;          /* by stack id: the frame has no symbol */
        uint32_t *node;         /* by stack id: the tree node, or SAMPLE_TREE_NONE until mapped */
        size_t n;               /* max id + 1 */
};

static void stack_table_done(struct stack_table *t) {
        free(t->parent);
        free(t->name);
        free(t->unknown);
        free(t->node);
}

/* Runs SQL, which selects the largest id of a table, and checks that arrays indexed by id can
 * hold it. Returns 0 and sets *ret, or a negative errno. */
static int max_id_of(struct store *s, const char *sql, int64_t *ret) {
        int r = store_query_int(s, sql, ret);

        if (r < 0)
                return r;
        return *ret < 0 || *ret > UINT32_MAX - 1 ? -EBADMSG : 0;
}

static int load_functions(struct store *s, struct sample_tree *tree, uint32_t **ret_names,
                          bool **ret_unknown, size_t *ret_n) {
        _cleanup_free_ uint32_t *names = NULL;
        _cleanup_free_ bool *unknown = NULL;
        sqlite3_stmt *st = NULL;
        int64_t max_id = 0;
        int rc, r;

        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM function", &max_id);
        if (r < 0)
                return r;

        names = malloc((max_id + 1) * sizeof *names);
        unknown = calloc(max_id + 1, sizeof *unknown);
        if (!names || !unknown)
                return -ENOMEM;
        for (int64_t i = 0; i <= max_id; i++)
                names[i] = NAME_NONE;

        rc = sqlite3_prepare_v2(s->db, "SELECT id, name, unknown FROM function", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0), n;
                const char *name = (const char *) sqlite3_column_text(st, 1);

                if (id <= 0 || id > max_id || !name) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                n = name_table_intern(tree->names, name, strlen(name));
                if (n < 0) {
                        sqlite3_finalize(st);
                        return n == -EINVAL ? -EBADMSG : (int) n;
                }
                names[id] = n;
                unknown[id] = sqlite3_column_int(st, 2) != 0;
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);

        *ret_names = take_ptr(&names);
        *ret_unknown = take_ptr(&unknown);
        *ret_n = max_id + 1;
        return 0;
}

static int load_stacks(struct store *s, struct sample_tree *tree, struct stack_table *t) {
        _cleanup_free_ uint32_t *fn_names = NULL;
        _cleanup_free_ bool *fn_unknown = NULL;
        sqlite3_stmt *st = NULL;
        size_t n_functions = 0;
        int64_t max_id = 0;
        int rc, r;

        r = load_functions(s, tree, &fn_names, &fn_unknown, &n_functions);
        if (r < 0)
                return r;

        r = max_id_of(s, "SELECT ifnull(max(id), 0) FROM stack", &max_id);
        if (r < 0)
                return r;

        t->n = max_id + 1;
        t->parent = malloc(t->n * sizeof *t->parent);
        t->name = malloc(t->n * sizeof *t->name);
        t->unknown = calloc(t->n, sizeof *t->unknown);
        t->node = malloc(t->n * sizeof *t->node);
        if (!t->parent || !t->name || !t->unknown || !t->node)
                return -ENOMEM;
        for (size_t i = 0; i < t->n; i++) {
                t->name[i] = NAME_NONE;
                t->node[i] = SAMPLE_TREE_NONE;
        }
        t->node[0] = SAMPLE_TREE_ROOT;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT s.id, ifnull(s.parent_id, 0), fr.function_id "
                                "FROM stack AS s JOIN frame AS fr ON fr.id = s.frame_id", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                int64_t parent = sqlite3_column_int64(st, 1);
                int64_t fn = sqlite3_column_int64(st, 2);

                /* A parent's id is below its child's: that is what makes the memo walk below
                 * terminate, so an edited store that breaks it is refused. */
                if (id <= 0 || id > max_id || parent < 0 || parent >= id || fn <= 0 ||
                    (size_t) fn >= n_functions || fn_names[fn] == NAME_NONE) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                t->parent[id] = parent;
                t->name[id] = fn_names[fn];
                t->unknown[id] = fn_unknown[fn];
        }
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : store_errno(s, rc);
}

/* Maps stack ID to its tree node, mapping unmapped ancestors first. Returns the node or a
 * negative errno. */
static int64_t stack_node(struct sample_tree *tree, struct stack_table *t, uint32_t id, uint32_t *scratch) {
        size_t n = 0;
        int64_t node;

        if (id == 0 || id >= t->n || t->name[id] == NAME_NONE)
                return -EBADMSG;
        for (uint32_t i = id; t->node[i] == SAMPLE_TREE_NONE; i = t->parent[i]) {
                if (t->name[i] == NAME_NONE)
                        return -EBADMSG;
                scratch[n++] = i;       /* depth is bounded by id, as parents have lower ids */
        }
        node = n ? t->node[t->parent[scratch[n - 1]]] : t->node[id];
        while (n > 0) {
                uint32_t i = scratch[--n];

                node = sample_tree_child(tree, node, t->name[i]);
                if (node < 0)
                        return node;
                t->node[i] = node;
        }
        return node;
}

/* Counts the frames of the stack at tree node NODE and how many of those are unknown. */
static void count_frames(const struct stack_table *t, uint32_t id, uint64_t *frames, uint64_t *unknown) {
        for (; id != 0; id = t->parent[id]) {
                (*frames)++;
                *unknown += t->unknown[id];
        }
}

static int load_header(struct store *s, const struct store_filter *f, int64_t resource_id,
                       struct sample_tree *tree, uint64_t *ret_gcd) {
        sqlite3_stmt *st = NULL;
        uint64_t g = 0, lost = 0;
        int rc;

        /* Every run that sampled the resource (in the filter): periods and losses. */
        rc = sqlite3_prepare_v2(s->db,
                                "SELECT rr.period, rr.lost FROM run_resource AS rr "
                                "WHERE rr.resource_id = ?1 AND (?2 = 0 OR rr.run_id = ?2)", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, resource_id);
        sqlite3_bind_int64(st, 2, f->run_id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t period = sqlite3_column_int64(st, 0), l = sqlite3_column_int64(st, 1);

                if (period <= 0 || l < 0) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                g = gcd(g, period);
                lost += l;
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);
        tree->info.period = g;
        tree->info.lost = lost;
        *ret_gcd = g ? g : 1;
        return 0;
}

int store_load_tree(struct store *s, const struct store_filter *f, struct sample_tree **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *tree = NULL;
        _cleanup_(stack_table_done) struct stack_table t = {};
        _cleanup_free_ uint32_t *scratch = NULL;
        _cleanup_free_ char *unit = NULL;
        sqlite3_stmt *st = NULL;
        int64_t resource_id = 0;
        uint64_t g = 1;
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

        tree = sample_tree_new(NULL);
        if (!tree)
                return -ENOMEM;
        r = sample_tree_set_resource(tree, f->resource, unit);
        if (r < 0)
                return r;
        r = load_header(s, f, resource_id, tree, &g);
        if (r < 0)
                return r;
        r = load_stacks(s, tree, &t);
        if (r < 0)
                return r;
        scratch = malloc(t.n * sizeof *scratch);
        if (!scratch)
                return -ENOMEM;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT s.stack_id, sum(s.hits), sum(s.samples), rr.period "
                                "FROM sample AS s "
                                "JOIN thread AS t ON t.id = s.thread_id "
                                "JOIN process AS p ON p.id = t.process_id "
                                "JOIN run_resource AS rr ON rr.run_id = p.run_id AND rr.resource_id = s.resource_id "
                                "WHERE s.resource_id = ?1 AND (?2 = 0 OR p.run_id = ?2) "
                                "AND (?3 IS NULL OR p.unit = ?3) AND (?4 = 0 OR p.pid = ?4) "
                                "AND (?5 IS NULL OR p.comm = ?5 OR t.comm = ?5) "
                                "AND (?6 IS NULL OR p.exe = ?6 OR substr(p.exe, -length(?6) - 1) = '/' || ?6) "
                                "AND (?7 = 0 OR s.bucket >= ?7) AND (?8 = 0 OR s.bucket < ?8) "
                                "GROUP BY s.stack_id, rr.period", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, resource_id);
        sqlite3_bind_int64(st, 2, f->run_id);
        store_bind_text(st, 3, f->unit);
        sqlite3_bind_int64(st, 4, f->pid);
        store_bind_text(st, 5, f->comm);
        store_bind_text(st, 6, f->exe);
        sqlite3_bind_int64(st, 7, f->since);
        sqlite3_bind_int64(st, 8, f->until);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                int64_t hits = sqlite3_column_int64(st, 1), samples = sqlite3_column_int64(st, 2);
                int64_t period = sqlite3_column_int64(st, 3);
                uint64_t frames = 0, unknown = 0, w;
                int64_t node;

                if (id <= 0 || (size_t) id >= t.n || hits < 0 || samples < 0 || period <= 0) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                node = stack_node(tree, &t, id, scratch);
                if (node < 0) {
                        sqlite3_finalize(st);
                        return node;
                }
                w = (uint64_t) hits * ((uint64_t) period / g);
                sample_tree_add_hits(tree, node, w);
                tree->info.samples += samples;
                count_frames(&t, id, &frames, &unknown);
                tree->info.frames += frames * w;
                tree->info.frames_unsymbolized += unknown * w;
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);

        sample_tree_weigh(tree);
        *ret = take_ptr(&tree);
        return 0;
}

int store_list_resources(struct store *s, char ***ret) {
        _cleanup_(strv_freep) char **names = NULL;
        sqlite3_stmt *st = NULL;
        int rc, n = 0;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT name FROM resource WHERE id IN (SELECT DISTINCT resource_id FROM sample) "
                                "ORDER BY name", -1, &st, NULL);
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
