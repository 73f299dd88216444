/* Naming after the fact. A frame stored as an address is a row of frame whose function is
 * unknown ('prog+0x118d', function.unknown = 1) at an address of a module known by path and
 * build id; the debug info that names it may be found long after (cppctl symbolize, a view's
 * named copy, the daemon's naming thread). Names found then are written as the collector would
 * have written them: a chain of frames (the function, then those inlined into it) where the one
 * frame was, which changes the stacks through it, so the stack trie is extended, never edited:
 *
 *   - the stacks that samples reach are read into arrays indexed by id (ids are dense, a parent's
 *     below its children's, as store-read.c loads them), and walked in id order: a stack whose
 *     frame is renamed, or whose parent got a twin, gets a twin of its own, built through
 *     store_stack_id() from its parent's twin and the chain, so new rows come after their
 *     parents;
 *   - each sample row of a stack with a twin is added to the twin's row (an UPSERT, as flushes
 *     add) and deleted, in one INSERT ... SELECT and one DELETE over a temporary map.
 * No other row is deleted or changed: the old stacks, frames and functions stay (retention
 * removes them once no sample needs them), so the ids a writer beside us caches (the daemon's)
 * stay valid, and a sample it adds to an old stack later is moved by the next rename. The work
 * is a read of the stack table plus one row per new stack: a store renamed twice finds its twins
 * by key and moves only what came since. */
#include "store-rename.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idmap.h"
#include "store-internal.h"

/* The stacks that samples reach: by stack id, its parent (0: outermost) and frame (0: no such
 * id), and whether a sample's stack passes through it. */
struct trie {
        uint32_t *parent, *frame;
        uint8_t *reached;
        size_t n; /* max id + 1 */
};

static void trie_done(struct trie *t) {
        free(t->parent);
        free(t->frame);
        free(t->reached);
}

static int trie_load(struct store *s, struct trie *t) {
        sqlite3_stmt *st = NULL;
        int64_t max_id;
        int rc, r;

        r = store_query_int(s, "SELECT ifnull(max(id), 0) FROM stack", &max_id);
        if (r < 0)
                return r;
        if (max_id < 0 || max_id > UINT32_MAX - 1)
                return -EBADMSG;
        t->n = (size_t) max_id + 1;
        t->parent = calloc(t->n, sizeof *t->parent);
        t->frame = calloc(t->n, sizeof *t->frame);
        t->reached = calloc(t->n, sizeof *t->reached);
        if (!t->parent || !t->frame || !t->reached)
                return -ENOMEM;

        rc = sqlite3_prepare_v2(s->db, "SELECT id, ifnull(parent_id, 0), frame_id FROM stack", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0), parent = sqlite3_column_int64(st, 1);
                int64_t frame = sqlite3_column_int64(st, 2);

                if (id <= 0 || id > max_id || parent < 0 || parent >= id || frame <= 0 ||
                    frame > UINT32_MAX) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                t->parent[id] = (uint32_t) parent;
                t->frame[id] = (uint32_t) frame;
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);

        rc = sqlite3_prepare_v2(s->db, "SELECT DISTINCT stack_id FROM sample", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);

                if (id <= 0 || (size_t) id >= t->n || t->frame[id] == 0) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                /* up to the root or to a stack already reached: each id once */
                for (uint32_t i = (uint32_t) id; i != 0 && !t->reached[i]; i = t->parent[i]) {
                        if (t->frame[i] == 0) {
                                sqlite3_finalize(st);
                                return -EBADMSG;
                        }
                        t->reached[i] = 1;
                }
        }
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : store_errno(s, rc);
}

void store_unnamed_modules_free(struct store_unnamed_module *m, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(m[i].path);
                free(m[i].build_id);
                free(m[i].frames);
                free(m[i].addresses);
                free(m[i].located);
        }
        free(m);
}

/* Appends frame ID at ADDRESS (LOCATED: kept in its row) to M. Returns 0 or -ENOMEM. */
static int module_add_frame(struct store_unnamed_module *m, size_t *cap, int64_t id, int64_t address,
                            bool located) {
        size_t cap_addresses = *cap, cap_located = *cap;

        if (GROW(m->frames, *cap, m->n_frames + 1) < 0 ||
            GROW(m->addresses, cap_addresses, m->n_frames + 1) < 0 ||
            GROW(m->located, cap_located, m->n_frames + 1) < 0)
                return -ENOMEM;
        m->frames[m->n_frames] = id;
        m->addresses[m->n_frames] = address;
        m->located[m->n_frames++] = located;
        return 0;
}

int64_t store_name_address(const char *name) {
        const char *plus = name ? strrchr(name, '+') : NULL;
        uint64_t v = 0;
        int n = 0;

        if (!plus || strncmp(plus, "+0x", 3) != 0 || sscanf(plus + 3, "%" SCNx64 "%n", &v, &n) != 1 ||
            plus[3 + n] != '\0' || v > INT64_MAX)
                return -1;
        return (int64_t) v;
}

static int unnamed_modules(struct store *s, bool reached_only, struct store_unnamed_module **ret) {
        _cleanup_(trie_done) struct trie t = {};
        _cleanup_free_ uint8_t *frame_reached = NULL;
        struct store_unnamed_module *modules = NULL;
        size_t n = 0, cap = 0, cap_frames = 0;
        sqlite3_stmt *st = NULL;
        int64_t max_frame;
        int rc, r;

        r = store_query_int(s, "SELECT ifnull(max(id), 0) FROM frame", &max_frame);
        if (r < 0)
                return r;
        if (max_frame < 0 || max_frame > UINT32_MAX - 1)
                return -EBADMSG;
        frame_reached = calloc((size_t) max_frame + 1, 1);
        if (!frame_reached)
                return -ENOMEM;
        if (reached_only) {
                r = trie_load(s, &t);
                if (r < 0)
                        return r;
                for (size_t i = 1; i < t.n; i++)
                        if (t.reached[i] && t.frame[i] <= max_frame)
                                frame_reached[t.frame[i]] = 1;
        } else
                memset(frame_reached, 1, (size_t) max_frame + 1);

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT m.id, m.path, m.build_id, fr.id, ifnull(fr.address, -1), f.name "
                                "FROM frame AS fr JOIN function AS f ON f.id = fr.function_id "
                                "JOIN module AS m ON m.id = f.module_id "
                                "WHERE f.unknown = 1 ORDER BY m.id, fr.id",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t module = sqlite3_column_int64(st, 0), frame = sqlite3_column_int64(st, 3);
                int64_t address = sqlite3_column_int64(st, 4);
                const char *path = (const char *) sqlite3_column_text(st, 1);
                const char *build_id = (const char *) sqlite3_column_text(st, 2);
                bool located = address >= 0;

                if (!located)
                        address = store_name_address((const char *) sqlite3_column_text(st, 5));
                if (frame <= 0 || frame > max_frame || !frame_reached[frame] || address < 0)
                        continue;
                if (n == 0 || modules[n - 1].id != module) {
                        r = GROW(modules, cap, n + 1);
                        if (r < 0)
                                break;
                        modules[n] = (struct store_unnamed_module) {
                                .id = module,
                                .path = strdup(path ?: ""),
                                .build_id = strdup(build_id ?: ""),
                        };
                        n++;
                        cap_frames = 0;
                        if (!modules[n - 1].path || !modules[n - 1].build_id) {
                                r = -ENOMEM;
                                break;
                        }
                }
                r = module_add_frame(&modules[n - 1], &cap_frames, frame, address, located);
                if (r < 0)
                        break;
        }
        sqlite3_finalize(st);
        if (r >= 0 && rc != SQLITE_DONE)
                r = store_errno(s, rc);
        if (r < 0) {
                store_unnamed_modules_free(modules, n);
                return r;
        }
        *ret = modules;
        return (int) n;
}

/* As store_load_tree_shared(): one snapshot for the several statements, unless the caller's. */
int store_unnamed_modules(struct store *s, bool reached_only, struct store_unnamed_module **ret) {
        bool own =
                sqlite3_get_autocommit(s->db) && sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
        int r = unnamed_modules(s, reached_only, ret);

        if (own)
                (void) sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
        return r;
}

/* The named frames of each rename: CHAIN_FRAMES[first[i] .. first[i] + n_chain). */
struct named {
        int64_t *chain_frames;
        size_t *first;
        struct idmap *by_frame; /* renamed frame id -> index in the renames */
};

static void named_done(struct named *n) {
        free(n->chain_frames);
        free(n->first);
        idmap_free(n->by_frame);
}

/* Finds or adds the frames of every chain into *RET. */
static int add_named_frames(struct store *s, const struct store_rename *renames, size_t n,
                            struct named *ret) {
        size_t total = 0, k = 0;
        uint64_t *slot;
        int r;

        for (size_t i = 0; i < n; i++) {
                if (renames[i].n_chain == 0 || renames[i].n_chain > 255)
                        return -EINVAL;
                total += renames[i].n_chain;
        }
        ret->chain_frames = malloc((total ? total : 1) * sizeof *ret->chain_frames);
        ret->first = malloc((n ? n : 1) * sizeof *ret->first);
        ret->by_frame = idmap_new();
        if (!ret->chain_frames || !ret->first || !ret->by_frame)
                return -ENOMEM;

        for (size_t i = 0; i < n; i++) {
                const struct store_rename *x = &renames[i];

                ret->first[i] = k;
                if (idmap_put(ret->by_frame, (uint64_t) x->frame_id, i, &slot) < 0)
                        return -ENOMEM;
                for (size_t j = 0; j < x->n_chain; j++) {
                        const struct store_name *name = &x->chain[j];
                        int64_t function, frame;

                        r = store_function_id(s, name->function, x->module_id, false, &function);
                        if (r >= 0)
                                r = store_frame_id(s, function, x->located ? x->address : -1,
                                                   x->located ? name->file : NULL,
                                                   x->located ? name->line : 0, name->inlined, &frame);
                        if (r < 0)
                                return r;
                        ret->chain_frames[k++] = frame;
                }
        }
        return 0;
}

/* Marks the frames added since the store's largest frame id was AFTER as named later: they are
 * ours, as the caller's transaction holds the write lock. */
static int mark_named_later(struct store *s, int64_t after) {
        sqlite3_stmt *st;
        int rc;

        rc = sqlite3_prepare_v2(s->db, "UPDATE frame SET named_later = 1 WHERE id > ? AND named_later = 0",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, after);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : store_errno(s, rc);
}

/* Builds the twin of every stack through a renamed frame that samples reach, into TWIN (by
 * stack id; 0: none) and the temporary map rename_stack. */
static int add_twins(struct store *s, const struct trie *t, const struct named *named, uint32_t *twin,
                     const struct store_rename *renames, struct store_rename_stats *stats) {
        sqlite3_stmt *st = NULL;
        int64_t stacks_before, stacks_after;
        int rc, r;

        r = store_query_int(s, "SELECT count(*) FROM stack", &stacks_before);
        if (r < 0)
                return r;
        r = store_exec(
                s,
                "CREATE TEMP TABLE IF NOT EXISTS rename_stack (old INTEGER PRIMARY KEY, new INTEGER NOT NULL); "
                "DELETE FROM temp.rename_stack");
        if (r < 0)
                return r;
        rc = sqlite3_prepare_v2(s->db, "INSERT INTO temp.rename_stack (old, new) VALUES (?, ?)", -1, &st,
                                NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);

        for (size_t id = 1; id < t->n && r >= 0; id++) {
                uint64_t *which = t->reached[id] ? idmap_get(named->by_frame, t->frame[id]) : NULL;
                uint32_t parent = t->parent[id];
                int64_t at;

                if (!t->reached[id] || (!which && !twin[parent]))
                        continue;
                at = twin[parent] ? twin[parent] : parent;
                if (which) {
                        const struct store_rename *x = &renames[*which];

                        for (size_t j = 0; j < x->n_chain && r >= 0; j++)
                                r = store_stack_id(s, at, named->chain_frames[named->first[*which] + j], &at);
                } else
                        r = store_stack_id(s, at, t->frame[id], &at);
                if (r < 0)
                        break;
                twin[id] = (uint32_t) at;
                sqlite3_reset(st);
                sqlite3_bind_int64(st, 1, (int64_t) id);
                sqlite3_bind_int64(st, 2, at);
                rc = sqlite3_step(st);
                if (rc != SQLITE_DONE)
                        r = store_errno(s, rc);
        }
        sqlite3_finalize(st);
        if (r < 0)
                return r;
        r = store_query_int(s, "SELECT count(*) FROM stack", &stacks_after);
        if (r < 0)
                return r;
        stats->stacks_new = (uint64_t) (stacks_after - stacks_before);
        return 0;
}

int store_rename_frames(struct store *s, const struct store_rename *renames, size_t n,
                        struct store_rename_stats *ret) {
        _cleanup_(trie_done) struct trie t = {};
        _cleanup_(named_done) struct named named = {};
        _cleanup_free_ uint32_t *twin = NULL;
        struct store_rename_stats stats = { .frames = n };
        int64_t max_frame;
        int r;

        if (n == 0) {
                if (ret)
                        *ret = stats;
                return 0;
        }
        r = store_query_int(s, "SELECT ifnull(max(id), 0) FROM frame", &max_frame);
        if (r < 0)
                return r;
        r = add_named_frames(s, renames, n, &named);
        if (r < 0)
                return r;
        r = mark_named_later(s, max_frame);
        if (r < 0)
                return r;
        r = trie_load(s, &t);
        if (r < 0)
                return r;
        twin = calloc(t.n, sizeof *twin);
        if (!twin)
                return -ENOMEM;
        r = add_twins(s, &t, &named, twin, renames, &stats);
        if (r < 0)
                return r;

        /* Samples: added to their twins' rows as a flush adds (the sum of squares saturates as
         * store_add_samples() has it), then deleted. "WHERE true": SQLite's rule for an UPSERT
         * after a SELECT. */
        r = store_exec(
                s,
                "INSERT INTO sample (resource_id, bucket, thread_id, stack_id, hits, samples, hits_squared) "
                "SELECT s.resource_id, s.bucket, s.thread_id, m.new, s.hits, s.samples, s.hits_squared "
                "FROM sample AS s JOIN temp.rename_stack AS m ON m.old = s.stack_id WHERE true "
                "ON CONFLICT DO UPDATE SET hits = hits + excluded.hits, "
                "samples = samples + excluded.samples, "
                "hits_squared = min(hits_squared + excluded.hits_squared, 9223372036854775807)");
        if (r < 0)
                return r;
        r = store_exec(s, "DELETE FROM sample WHERE stack_id IN (SELECT old FROM temp.rename_stack)");
        if (r < 0)
                return r;
        stats.samples_moved = (uint64_t) sqlite3_changes(s->db);
        r = store_exec(s, "DROP TABLE temp.rename_stack");
        if (r < 0)
                return r;
        if (ret)
                *ret = stats;
        return 0;
}
