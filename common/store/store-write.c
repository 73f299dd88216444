/* Adding rows. Stacks, frames, functions and modules are find-or-add: the writer keeps their
 * ids in hash maps, so a stack already seen costs one map lookup per frame and no SQL, and a new
 * one costs one INSERT per new node (and a SELECT when another run had added it). Samples
 * are UPSERTs that add to the (resource, bucket, thread, stack) row, which is how aggregation
 * across flushes works. Callers batch everything in one transaction.
 *
 * Merging another store (store_merge()) is bulk SQL over ATTACH in one transaction: the
 * dictionary tables (resource, module, function, frame) are INSERT OR IGNOREd by their unique
 * keys and mapped old id -> new id in temporary tables; runs, processes and threads never
 * coincide across stores, so they are copied with their ids shifted past the store's largest;
 * samples are copied through the maps. Only the stack trie is walked in C, in id order, through
 * store_stack_id(): a node's new parent must exist before it, which one INSERT ... SELECT cannot
 * promise. Every copy is counted against its source table, so rows of a damaged store that join
 * nothing are refused rather than dropped. */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "store-internal.h"

#ifndef CPPD_VERSION
#define CPPD_VERSION "unknown"
#endif

/* Ids are handed to callers as 32-bit keys; the store refuses to grow past that. */
static int check_id(int64_t id) {
        return id > 0 && id <= UINT32_MAX ? 0 : -E2BIG;
}

/* Runs an INSERT and sets *ret to the new row's id. (Not RETURNING, which makes SQLite build an
 * ephemeral table per statement.) */
static int insert(struct store *s, sqlite3_stmt *st, int64_t *ret) {
        int r = store_step_done(s, st);

        if (r < 0)
                return r;
        *ret = sqlite3_last_insert_rowid(s->db);
        return check_id(*ret);
}

int store_add_run(struct store *s, const struct store_run *run, int64_t *ret_id) {
        struct utsname u;
        sqlite3_stmt *st;
        int r;

        r = store_stmt(s, STMT_ADD_RUN,
                       "INSERT INTO run (kind, command, source, host, kernel, cppd_version, unwind, started) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       &st);
        if (r < 0)
                return r;
        if (uname(&u) < 0)
                return -errno;
        store_bind_text(st, 1, run->kind);
        store_bind_text(st, 2, run->command);
        store_bind_text(st, 3, run->source);
        store_bind_text(st, 4, run->host ?: u.nodename);
        store_bind_text(st, 5, u.release);
        store_bind_text(st, 6, CPPD_VERSION);
        store_bind_text(st, 7, run->unwind);
        sqlite3_bind_int64(st, 8, run->started);
        return insert(s, st, ret_id);
}

int store_end_run(struct store *s, int64_t run_id, int64_t ended) {
        sqlite3_stmt *st;
        int r;

        r = store_stmt(s, STMT_END_RUN, "UPDATE run SET ended = ? WHERE id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, ended);
        sqlite3_bind_int64(st, 2, run_id);
        return store_step_done(s, st);
}

static int resource_id(struct store *s, const char *name, const char *unit, int64_t *ret) {
        sqlite3_stmt *st;
        int r;

        r = store_stmt(s, STMT_FIND_RESOURCE, "SELECT id FROM resource WHERE name = ?", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, name);
        r = store_step_id(s, st, ret);
        if (r != 0)
                return r < 0 ? r : 0;

        r = store_stmt(s, STMT_ADD_RESOURCE, "INSERT INTO resource (name, unit) VALUES (?, ?)", &st);
        if (r < 0)
                return r;
        store_bind_text(st, 1, name);
        store_bind_text(st, 2, unit);
        return insert(s, st, ret);
}

int store_add_run_resource(struct store *s, int64_t run_id, const char *name, const char *unit,
                           const char *event, uint64_t period, int64_t *ret_id) {
        sqlite3_stmt *st;
        int64_t id, old_period;
        int r;

        r = resource_id(s, name, unit, &id);
        if (r < 0)
                return r;
        r = store_stmt(s, STMT_FIND_RUN_RESOURCE,
                       "SELECT period FROM run_resource WHERE run_id = ? AND resource_id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, id);
        r = store_step_id(s, st, &old_period);
        if (r < 0)
                return r;
        if (r > 0) {
                if ((uint64_t) old_period != period)
                        return -EEXIST;
                *ret_id = id;
                return 0;
        }
        r = store_stmt(s, STMT_ADD_RUN_RESOURCE,
                       "INSERT INTO run_resource (run_id, resource_id, event, period) VALUES (?, ?, ?, ?)",
                       &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, id);
        store_bind_text(st, 3, event);
        sqlite3_bind_int64(st, 4, (int64_t) period);
        r = store_step_done(s, st);
        if (r < 0)
                return r;
        *ret_id = id;
        return 0;
}

int store_add_lost(struct store *s, int64_t run_id, int64_t resource_id, uint64_t n) {
        sqlite3_stmt *st;
        int r;

        r = store_stmt(s, STMT_ADD_LOST,
                       "UPDATE run_resource SET lost = lost + ? WHERE run_id = ? AND resource_id = ?", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, (int64_t) n);
        sqlite3_bind_int64(st, 2, run_id);
        sqlite3_bind_int64(st, 3, resource_id);
        return store_step_done(s, st);
}

int store_set_sampling(struct store *s, int64_t run_id, int64_t resource_id, bool random, uint64_t thinned) {
        sqlite3_stmt *st;
        int r;

        r = store_stmt(s, STMT_SET_SAMPLING,
                       "UPDATE run_resource SET sampling = ?, thinned = max(thinned, ?) "
                       "WHERE run_id = ? AND resource_id = ?",
                       &st);
        if (r < 0)
                return r;
        sqlite3_bind_text(st, 1, random ? "random" : "fixed", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (int64_t) (thinned ? thinned : 1));
        sqlite3_bind_int64(st, 3, run_id);
        sqlite3_bind_int64(st, 4, resource_id);
        return store_step_done(s, st);
}

int store_add_process(struct store *s, int64_t run_id, int64_t pid, const char *comm, const char *exe,
                      const char *unit, int64_t started, int64_t *ret_id) {
        sqlite3_stmt *st;
        int r;

        r = store_stmt(
                s, STMT_ADD_PROCESS,
                "INSERT INTO process (run_id, pid, comm, exe, unit, started) VALUES (?, ?, ?, ?, ?, ?)", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, run_id);
        if (pid >= 0)
                sqlite3_bind_int64(st, 2, pid);
        store_bind_text(st, 3, comm);
        store_bind_text(st, 4, exe);
        store_bind_text(st, 5, unit);
        if (started > 0)
                sqlite3_bind_int64(st, 6, started);
        return insert(s, st, ret_id);
}

int store_add_thread(struct store *s, int64_t process_id, int64_t tid, const char *comm, int64_t *ret_id) {
        sqlite3_stmt *st;
        int r;

        r = store_stmt(s, STMT_ADD_THREAD, "INSERT INTO thread (process_id, tid, comm) VALUES (?, ?, ?)",
                       &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, process_id);
        if (tid >= 0)
                sqlite3_bind_int64(st, 2, tid);
        store_bind_text(st, 3, comm);
        return insert(s, st, ret_id);
}

/* The find-or-add pattern for rows missing from our caches: ADD (an INSERT OR IGNORE) first,
 * as most such rows are new; if it changed nothing, the row was there already (written by an
 * earlier run or another writer) and FIND looks it up. */
static int find_or_add(struct store *s, sqlite3_stmt *find, sqlite3_stmt *add, int64_t *ret) {
        int r = store_step_done(s, add);

        if (r < 0)
                return r;
        if (sqlite3_changes(s->db) > 0) {
                *ret = sqlite3_last_insert_rowid(s->db);
                return check_id(*ret);
        }
        r = store_step_id(s, find, ret);
        if (r < 0)
                return r;
        if (r == 0)
                return -EBADMSG; /* neither inserted nor found: a broken index */
        return check_id(*ret);
}

int store_module_id(struct store *s, const char *path, const char *build_id, int64_t *ret_id) {
        char key[8192];
        sqlite3_stmt *find, *add;
        uint64_t *slot;
        int64_t k;
        int r;

        build_id = build_id ?: "";
        if ((size_t) snprintf(key, sizeof key, "%s\x1f%s", path, build_id) >= sizeof key)
                return -ENAMETOOLONG;
        k = name_table_intern(s->keys, key, strlen(key));
        if (k < 0)
                return k;
        slot = idmap_get(s->modules, k);
        if (slot) {
                *ret_id = *slot;
                return 0;
        }
        r = store_stmt(s, STMT_FIND_MODULE, "SELECT id FROM module WHERE path = ? AND build_id = ?", &find);
        if (r < 0)
                return r;
        r = store_stmt(s, STMT_ADD_MODULE, "INSERT OR IGNORE INTO module (path, build_id) VALUES (?, ?)",
                       &add);
        if (r < 0)
                return r;
        store_bind_text(find, 1, path);
        store_bind_text(find, 2, build_id);
        store_bind_text(add, 1, path);
        store_bind_text(add, 2, build_id);
        r = find_or_add(s, find, add, ret_id);
        if (r < 0)
                return r;
        return idmap_put(s->modules, k, *ret_id, &slot) < 0 ? -ENOMEM : 0;
}

int store_function_id(struct store *s, const char *name, int64_t module_id, bool unknown, int64_t *ret_id) {
        sqlite3_stmt *find, *add;
        uint64_t *slot, key;
        int64_t k;
        int r;

        k = name_table_intern(s->keys, name, strlen(name));
        if (k < 0)
                return k;
        key = idmap_pair(k, module_id);
        slot = idmap_get(s->functions, key);
        if (slot) {
                *ret_id = *slot;
                return 0;
        }
        r = store_stmt(s, STMT_FIND_FUNCTION,
                       "SELECT id FROM function WHERE name = ? AND ifnull(module_id, 0) = ?", &find);
        if (r < 0)
                return r;
        r = store_stmt(s, STMT_ADD_FUNCTION,
                       "INSERT OR IGNORE INTO function (name, module_id, unknown) VALUES (?, ?, ?)", &add);
        if (r < 0)
                return r;
        store_bind_text(find, 1, name);
        sqlite3_bind_int64(find, 2, module_id);
        store_bind_text(add, 1, name);
        if (module_id > 0)
                sqlite3_bind_int64(add, 2, module_id);
        sqlite3_bind_int(add, 3, unknown);
        r = find_or_add(s, find, add, ret_id);
        if (r < 0)
                return r;
        return idmap_put(s->functions, key, *ret_id, &slot) < 0 ? -ENOMEM : 0;
}

int store_frame_id(struct store *s, int64_t function_id, int64_t address, const char *file, unsigned line,
                   bool inlined, int64_t *ret_id) {
        bool plain = address < 0 && !file && line == 0 && !inlined;
        sqlite3_stmt *find, *add;
        uint64_t *slot;
        int r;

        /* Frames with a location are cached by the collector, which knows their addresses;
         * here only the plain ones (one per function) are. */
        if (plain && (slot = idmap_get(s->frames, function_id))) {
                *ret_id = *slot;
                return 0;
        }
        r = store_stmt(s, STMT_FIND_FRAME,
                       "SELECT id FROM frame WHERE function_id = ? AND ifnull(address, -1) = ? AND "
                       "ifnull(file, '') = ifnull(?, '') AND ifnull(line, -1) = ? AND inlined = ?",
                       &find);
        if (r < 0)
                return r;
        r = store_stmt(s, STMT_ADD_FRAME,
                       "INSERT OR IGNORE INTO frame (function_id, address, file, line, inlined) "
                       "VALUES (?, ?, ?, ?, ?)",
                       &add);
        if (r < 0)
                return r;
        sqlite3_bind_int64(find, 1, function_id);
        sqlite3_bind_int64(find, 2, address < 0 ? -1 : address);
        store_bind_text(find, 3, file);
        sqlite3_bind_int64(find, 4, line > 0 ? (int64_t) line : -1);
        sqlite3_bind_int(find, 5, inlined);
        sqlite3_bind_int64(add, 1, function_id);
        if (address >= 0)
                sqlite3_bind_int64(add, 2, address);
        store_bind_text(add, 3, file);
        if (line > 0)
                sqlite3_bind_int64(add, 4, line);
        sqlite3_bind_int(add, 5, inlined);
        r = find_or_add(s, find, add, ret_id);
        if (r < 0 || !plain)
                return r;
        return idmap_put(s->frames, function_id, *ret_id, &slot) < 0 ? -ENOMEM : 0;
}

int store_stack_id(struct store *s, int64_t parent_id, int64_t frame_id, int64_t *ret_id) {
        uint64_t key = idmap_pair(parent_id, frame_id), *slot;
        sqlite3_stmt *find, *add;
        int r;

        slot = idmap_get(s->stacks, key);
        if (slot) {
                *ret_id = *slot;
                return 0;
        }
        r = store_stmt(s, STMT_FIND_STACK,
                       "SELECT id FROM stack WHERE ifnull(parent_id, 0) = ? AND frame_id = ?", &find);
        if (r < 0)
                return r;
        r = store_stmt(s, STMT_ADD_STACK,
                       "INSERT OR IGNORE INTO stack (parent_id, frame_id, depth) "
                       "VALUES (?1, ?2, 1 + ifnull((SELECT depth FROM stack WHERE id = ?1), 0))",
                       &add);
        if (r < 0)
                return r;
        sqlite3_bind_int64(find, 1, parent_id);
        sqlite3_bind_int64(find, 2, frame_id);
        if (parent_id > 0)
                sqlite3_bind_int64(add, 1, parent_id);
        sqlite3_bind_int64(add, 2, frame_id);
        r = find_or_add(s, find, add, ret_id);
        if (r < 0)
                return r;
        return idmap_put(s->stacks, key, *ret_id, &slot) < 0 ? -ENOMEM : 0;
}

int store_add_samples(struct store *s, int64_t resource_id, int64_t bucket, int64_t thread_id,
                      int64_t stack_id, uint64_t hits, uint64_t samples, uint64_t hits_squared) {
        sqlite3_stmt *st;
        int r;

        if (hits > INT64_MAX || samples > INT64_MAX || hits_squared > INT64_MAX)
                return -ERANGE;
        r = store_stmt(
                s, STMT_ADD_SAMPLES,
                "INSERT INTO sample (resource_id, bucket, thread_id, stack_id, hits, samples, hits_squared) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                "hits = hits + excluded.hits, samples = samples + excluded.samples, "
                "hits_squared = min(hits_squared + excluded.hits_squared, 9223372036854775807)",
                &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, resource_id);
        sqlite3_bind_int64(st, 2, bucket);
        sqlite3_bind_int64(st, 3, thread_id);
        sqlite3_bind_int64(st, 4, stack_id);
        sqlite3_bind_int64(st, 5, (int64_t) hits);
        sqlite3_bind_int64(st, 6, (int64_t) samples);
        sqlite3_bind_int64(st, 7, (int64_t) hits_squared);
        return store_step_done(s, st);
}

/* The attached store being merged, and the offsets that shift its run, process and thread ids
 * past the target's. */
#define MERGE_SRC "merge_src"

struct merge {
        struct store *s;
        int64_t off[3];    /* run, process, thread: bound as ?1, ?2, ?3 */
        int64_t duplicate; /* a source run the target has already; 0: none */
};

/* The temporary maps, old id -> new id, of the tables found by content. */
static const char *const merge_maps[] = {
        "merge_resource", "merge_module", "merge_function", "merge_frame", "merge_stack",
};

/* Runs SQL (one statement) with ?1..?3 bound to M's offsets where it uses them. Returns the rows
 * it changed, or a negative errno. */
static int64_t merge_exec(struct merge *m, const char *sql) {
        sqlite3_stmt *st;
        int rc, r;

        rc = sqlite3_prepare_v2(m->s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(m->s, rc);
        for (int i = 1; i <= sqlite3_bind_parameter_count(st) && i <= 3; i++)
                sqlite3_bind_int64(st, i, m->off[i - 1]);
        r = store_step_done(m->s, st);
        sqlite3_finalize(st);
        return r < 0 ? r : sqlite3_changes64(m->s->db);
}

/* Runs SQL that copies rows of the source's TABLE and checks that it copied them all: fewer means
 * rows that refer to nothing. Returns the rows copied, or a negative errno. */
static int64_t merge_copy(struct merge *m, const char *sql, const char *table) {
        int64_t n, want;
        char count[128];
        int r;

        n = merge_exec(m, sql);
        if (n < 0)
                return n;
        snprintf(count, sizeof count, "SELECT count(*) FROM " MERGE_SRC ".%s", table);
        r = store_query_int(m->s, count, &want);
        if (r < 0)
                return r;
        if (n != want) {
                snprintf(m->s->error, sizeof m->s->error,
                         "%lld of the %lld rows of %s refer to rows that are missing", (long long) (want - n),
                         (long long) want, table);
                return -EBADMSG;
        }
        return n;
}

/* Checks the ids of the source's TABLE (run, process or thread) and sets *ret to the offset that
 * puts them past the target's: new id = old id + offset, within 32 bits. */
static int merge_offset(struct merge *m, const char *table, int64_t *ret) {
        char sql[256];
        int64_t max_main, min_src, max_src;
        int r;

        snprintf(sql, sizeof sql, "SELECT ifnull(max(id), 0) FROM main.%s", table);
        r = store_query_int(m->s, sql, &max_main);
        if (r < 0)
                return r;
        snprintf(sql, sizeof sql, "SELECT ifnull(min(id), 1) FROM " MERGE_SRC ".%s", table);
        r = store_query_int(m->s, sql, &min_src);
        if (r < 0)
                return r;
        snprintf(sql, sizeof sql, "SELECT ifnull(max(id), 0) FROM " MERGE_SRC ".%s", table);
        r = store_query_int(m->s, sql, &max_src);
        if (r < 0)
                return r;
        if (min_src < 1) {
                snprintf(m->s->error, sizeof m->s->error, "%s id %lld", table, (long long) min_src);
                return -EBADMSG;
        }
        if (max_src > (int64_t) UINT32_MAX - max_main)
                return -E2BIG;
        *ret = max_main;
        return 0;
}

/* The id of a run of the source that the target already has, 0 if none, or a negative errno. */
static int64_t merge_find_duplicate(struct merge *m) {
        int64_t id;
        int r;

        r = store_query_int(m->s,
                            "SELECT r.id FROM " MERGE_SRC
                            ".run AS r WHERE EXISTS (SELECT 1 FROM main.run AS o "
                            "WHERE o.host IS r.host AND o.kind IS r.kind AND o.started IS r.started "
                            "AND o.command IS r.command AND o.source IS r.source AND o.kernel IS r.kernel "
                            "AND o.cppd_version IS r.cppd_version AND o.unwind IS r.unwind) "
                            "ORDER BY r.id LIMIT 1",
                            &id);
        return r < 0 ? r : id;
}

/* Loads the map TABLE (old id -> new id) into *ret, an array indexed by old id of MAX_ID + 1
 * entries, 0 where unmapped. */
static int merge_load_map(struct merge *m, const char *table, int64_t max_id, int64_t **ret) {
        _cleanup_free_ int64_t *map = calloc(max_id + 1, sizeof *map);
        sqlite3_stmt *st;
        char sql[128];
        int rc;

        if (!map)
                return -ENOMEM;
        snprintf(sql, sizeof sql, "SELECT old, new FROM temp.%s", table);
        rc = sqlite3_prepare_v2(m->s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(m->s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t old = sqlite3_column_int64(st, 0);

                if (old < 1 || old > max_id)
                        break;
                map[old] = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        if (rc == SQLITE_ROW)
                return -EBADMSG;
        if (rc != SQLITE_DONE)
                return store_errno(m->s, rc);
        *ret = take_ptr(&map);
        return 0;
}

/* Marks in *ret (indexed by stack id, MAX_STACK + 1 entries) the stacks samples end at. */
static int merge_sampled(struct merge *m, int64_t max_stack, bool **ret) {
        _cleanup_free_ bool *sampled = calloc(max_stack + 1, sizeof *sampled);
        sqlite3_stmt *st;
        int rc;

        if (!sampled)
                return -ENOMEM;
        rc = sqlite3_prepare_v2(m->s->db, "SELECT DISTINCT stack_id FROM " MERGE_SRC ".sample", -1, &st,
                                NULL);
        if (rc != SQLITE_OK)
                return store_errno(m->s, rc);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);

                /* One out of range joins nothing, and the copy of samples says so. */
                if (id >= 1 && id <= max_stack)
                        sampled[id] = true;
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return store_errno(m->s, rc);
        *ret = take_ptr(&sampled);
        return 0;
}

/* The trie, in id order so that a parent is mapped before its children: each node found or
 * added by content under its new parent. The map of the nodes samples end at is written to
 * temp.merge_stack for the copy of samples (inner nodes, most of the trie, need no row). */
static int merge_stacks(struct merge *m) {
        _cleanup_free_ int64_t *frames = NULL, *stacks = NULL;
        _cleanup_free_ bool *sampled = NULL;
        sqlite3_stmt *st = NULL, *put = NULL;
        int64_t max_frame, max_stack;
        int rc, r;

        r = store_query_int(m->s, "SELECT ifnull(max(id), 0) FROM " MERGE_SRC ".frame", &max_frame);
        if (r >= 0)
                r = store_query_int(m->s, "SELECT ifnull(max(id), 0) FROM " MERGE_SRC ".stack", &max_stack);
        if (r < 0)
                return r;
        if (max_frame < 0 || max_frame > UINT32_MAX || max_stack < 0 || max_stack > UINT32_MAX)
                return -EBADMSG;
        r = merge_load_map(m, "merge_frame", max_frame, &frames);
        if (r >= 0)
                r = merge_sampled(m, max_stack, &sampled);
        if (r < 0)
                return r;
        stacks = calloc(max_stack + 1, sizeof *stacks);
        if (!stacks)
                return -ENOMEM;

        rc = sqlite3_prepare_v2(m->s->db,
                                "SELECT id, ifnull(parent_id, 0), frame_id FROM " MERGE_SRC ".stack "
                                "ORDER BY id",
                                -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_prepare_v2(m->s->db, "INSERT INTO temp.merge_stack (old, new) VALUES (?, ?)", -1,
                                        &put, NULL);
        if (rc != SQLITE_OK) {
                r = store_errno(m->s, rc);
                goto finish;
        }
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                int64_t parent = sqlite3_column_int64(st, 1);
                int64_t frame = sqlite3_column_int64(st, 2);

                /* A parent's id is below its child's (store-read.c relies on it too). */
                if (id < 1 || id > max_stack || parent < 0 || parent >= id ||
                    (parent > 0 && stacks[parent] == 0) || frame < 1 || frame > max_frame ||
                    frames[frame] == 0) {
                        snprintf(m->s->error, sizeof m->s->error,
                                 "stack %lld: parent %lld or frame %lld missing", (long long) id,
                                 (long long) parent, (long long) frame);
                        r = -EBADMSG;
                        goto finish;
                }
                r = store_stack_id(m->s, parent > 0 ? stacks[parent] : 0, frames[frame], &stacks[id]);
                if (r < 0)
                        goto finish;
                if (!sampled[id])
                        continue;
                sqlite3_bind_int64(put, 1, id);
                sqlite3_bind_int64(put, 2, stacks[id]);
                r = store_step_done(m->s, put);
                if (r < 0)
                        goto finish;
        }
        r = rc == SQLITE_DONE ? 0 : store_errno(m->s, rc);
finish:
        sqlite3_finalize(st);
        sqlite3_finalize(put);
        return r;
}

/* The copy, inside the transaction; the caller rolls back on failure. */
static int merge_rows(struct merge *m, struct store_merge_stats *stats) {
        /* Dictionaries: added where missing, then mapped by the same unique keys. */
        static const char *const adds[] = {
                "INSERT OR IGNORE INTO main.resource (name, unit) SELECT name, unit FROM " MERGE_SRC
                ".resource "
                "ORDER BY id",
                "INSERT OR IGNORE INTO main.module (path, build_id) SELECT path, build_id FROM " MERGE_SRC
                ".module "
                "ORDER BY id",
        };
        /* Each with the source table it must map in full, or NULL. */
        static const struct {
                const char *sql, *table;
        } dictionaries[] = {
                { "INSERT INTO temp.merge_resource SELECT s.id, o.id FROM " MERGE_SRC ".resource AS s "
                  "JOIN main.resource AS o ON o.name = s.name",
                  "resource" },
                { "INSERT INTO temp.merge_module SELECT s.id, o.id FROM " MERGE_SRC ".module AS s "
                  "JOIN main.module AS o ON o.path = s.path AND o.build_id = s.build_id",
                  "module" },
                { "INSERT OR IGNORE INTO main.function (name, module_id, unknown) "
                  "SELECT s.name, mm.new, s.unknown FROM " MERGE_SRC ".function AS s "
                  "LEFT JOIN temp.merge_module AS mm ON mm.old = s.module_id "
                  "WHERE s.module_id IS NULL OR mm.new IS NOT NULL ORDER BY s.id",
                  NULL },
                { "INSERT INTO temp.merge_function SELECT s.id, o.id FROM " MERGE_SRC ".function AS s "
                  "LEFT JOIN temp.merge_module AS mm ON mm.old = s.module_id "
                  "JOIN main.function AS o ON o.name = s.name AND ifnull(o.module_id, 0) = ifnull(mm.new, 0) "
                  "WHERE s.module_id IS NULL OR mm.new IS NOT NULL",
                  "function" },
                { "INSERT OR IGNORE INTO main.frame (function_id, address, file, line, inlined, named_later) "
                  "SELECT mf.new, s.address, s.file, s.line, s.inlined, s.named_later FROM " MERGE_SRC
                  ".frame AS s "
                  "JOIN temp.merge_function AS mf ON mf.old = s.function_id ORDER BY s.id",
                  NULL },
                { "INSERT INTO temp.merge_frame SELECT s.id, o.id FROM " MERGE_SRC ".frame AS s "
                  "JOIN temp.merge_function AS mf ON mf.old = s.function_id "
                  "JOIN main.frame AS o ON o.function_id = mf.new AND ifnull(o.address, -1) = ifnull(s.address, -1) "
                  "AND ifnull(o.file, '') = ifnull(s.file, '') AND ifnull(o.line, -1) = ifnull(s.line, -1) "
                  "AND o.inlined = s.inlined",
                  "frame" },
        };
        /* Runs, processes and threads: new rows, ids shifted by ?1, ?2, ?3. */
        static const struct {
                const char *sql, *table;
        } copies[] = {
                { "INSERT INTO main.run (id, kind, command, source, host, kernel, cppd_version, unwind, started, ended) "
                  "SELECT id + ?1, kind, command, source, host, kernel, cppd_version, unwind, started, ended "
                  "FROM " MERGE_SRC ".run ORDER BY id",
                  "run" },
                { "INSERT INTO main.run_resource (run_id, resource_id, event, period, lost, sampling, thinned, "
                  "uncounted, uncounted_note, python_samples, python_cut, python_unreadable) "
                  "SELECT s.run_id + ?1, mr.new, s.event, s.period, s.lost, s.sampling, s.thinned, s.uncounted, "
                  "s.uncounted_note, s.python_samples, s.python_cut, s.python_unreadable FROM " MERGE_SRC
                  ".run_resource AS s "
                  "JOIN " MERGE_SRC
                  ".run AS r ON r.id = s.run_id JOIN temp.merge_resource AS mr ON mr.old = s.resource_id",
                  "run_resource" },
                { "INSERT INTO main.process (id, run_id, pid, comm, exe, unit, started, ended) "
                  "SELECT s.id + ?2, s.run_id + ?1, s.pid, s.comm, s.exe, s.unit, s.started, s.ended "
                  "FROM " MERGE_SRC ".process AS s JOIN " MERGE_SRC
                  ".run AS r ON r.id = s.run_id ORDER BY s.id",
                  "process" },
                { "INSERT INTO main.thread (id, process_id, tid, comm) "
                  "SELECT s.id + ?3, s.process_id + ?2, s.tid, s.comm FROM " MERGE_SRC ".thread AS s "
                  "JOIN " MERGE_SRC ".process AS p ON p.id = s.process_id ORDER BY s.id",
                  "thread" },
        };
        int64_t n, stacks_before, stacks_after;
        char sql[128];
        int r;

        n = merge_find_duplicate(m);
        if (n < 0)
                return n;
        if (n > 0) {
                m->duplicate = n;
                return -EEXIST;
        }
        r = merge_offset(m, "run", &m->off[0]);
        if (r >= 0)
                r = merge_offset(m, "process", &m->off[1]);
        if (r >= 0)
                r = merge_offset(m, "thread", &m->off[2]);
        if (r < 0)
                return r;

        for (size_t i = 0; i < ELEMENTSOF(merge_maps); i++) {
                snprintf(sql, sizeof sql,
                         "CREATE TEMP TABLE %s (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)",
                         merge_maps[i]);
                n = merge_exec(m, sql);
                if (n < 0)
                        return n;
        }
        for (size_t i = 0; i < ELEMENTSOF(adds); i++) {
                n = merge_exec(m, adds[i]);
                if (n < 0)
                        return n;
        }
        for (size_t i = 0; i < ELEMENTSOF(dictionaries); i++) {
                n = dictionaries[i].table ? merge_copy(m, dictionaries[i].sql, dictionaries[i].table) :
                                            merge_exec(m, dictionaries[i].sql);
                if (n < 0)
                        return n;
        }
        r = store_query_int(m->s, "SELECT count(*) FROM main.stack", &stacks_before);
        if (r < 0)
                return r;
        r = merge_stacks(m);
        if (r < 0)
                return r;
        r = store_query_int(m->s, "SELECT count(*) FROM main.stack", &stacks_after);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(copies); i++) {
                n = merge_copy(m, copies[i].sql, copies[i].table);
                if (n < 0)
                        return n;
                if (i == 0)
                        stats->runs = n;
        }
        /* Thread ids are new, so no sample row can meet one already there. */
        n = merge_copy(m,
                       "INSERT INTO main.sample (resource_id, bucket, thread_id, stack_id, hits, samples, "
                       "hits_squared) "
                       "SELECT mr.new, s.bucket, s.thread_id + ?3, ms.new, s.hits, s.samples, s.hits_squared "
                       "FROM " MERGE_SRC ".sample AS s JOIN " MERGE_SRC ".thread AS t ON t.id = s.thread_id "
                       "JOIN temp.merge_resource AS mr ON mr.old = s.resource_id "
                       "JOIN temp.merge_stack AS ms ON ms.old = s.stack_id",
                       "sample");
        if (n < 0)
                return n;
        stats->samples = n;
        stats->stacks_new = stacks_after - stacks_before;

        for (size_t i = 0; i < ELEMENTSOF(merge_maps); i++) {
                snprintf(sql, sizeof sql, "DROP TABLE temp.%s", merge_maps[i]);
                n = merge_exec(m, sql);
                if (n < 0)
                        return n;
        }
        return 0;
}

/* Checks that the attached file is a store of our schema version, and intact. */
static int merge_check_source(struct store *s) {
        sqlite3_stmt *st;
        int64_t app, version;
        int rc, r;

        r = store_query_int(s, "PRAGMA " MERGE_SRC ".application_id", &app);
        if (r >= 0)
                r = store_query_int(s, "PRAGMA " MERGE_SRC ".user_version", &version);
        if (r < 0)
                return r;
        if (app != STORE_APPLICATION_ID) {
                snprintf(s->error, sizeof s->error, "the file is not a cppd store");
                return -EBADMSG;
        }
        if (version != s->version) {
                snprintf(s->error, sizeof s->error, "schema version %lld, not %u", (long long) version,
                         s->version);
                return version > s->version ? -EPROTONOSUPPORT : -EPROTO;
        }
        /* A damaged page may read as plausible rows: look at every page's structure first. */
        rc = sqlite3_prepare_v2(s->db, "PRAGMA " MERGE_SRC ".quick_check(1)", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && strcmp((const char *) sqlite3_column_text(st, 0) ?: "", "ok") != 0) {
                const char *problem = (const char *) sqlite3_column_text(st, 0), *nl = strrchr(problem, '\n');

                /* "*** in database merge_src ***\nOn tree page 3 cell 1: ...": the name is ours. */
                snprintf(s->error, sizeof s->error, "%s", nl ? nl + 1 : problem);
                sqlite3_finalize(st);
                return -EBADMSG;
        }
        sqlite3_finalize(st);
        return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : store_errno(s, rc);
}

int store_resource_gticks(struct store *s, const char *name, uint64_t *ret) {
        sqlite3_stmt *st = NULL;
        double total = 0;
        int rc;

        rc = sqlite3_prepare_v2(
                s->db,
                "SELECT total(CAST(s.hits AS REAL) * rr.period) FROM sample AS s "
                "JOIN thread AS t ON t.id = s.thread_id "
                "JOIN process AS p ON p.id = t.process_id "
                "JOIN run_resource AS rr ON rr.run_id = p.run_id AND rr.resource_id = s.resource_id "
                "WHERE s.resource_id = (SELECT id FROM resource WHERE name = ?)",
                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        store_bind_text(st, 1, name);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                total = sqlite3_column_double(st, 0);
        sqlite3_finalize(st);
        if (rc != SQLITE_ROW)
                return store_errno(s, rc);
        *ret = total >= 18446744073709551616.0 ? UINT64_MAX : total > 0 ? (uint64_t) total : 0;
        return 0;
}

/* After a merge's rows are in: whether any resource of S now holds more than STORE_MAX_GTICKS.
 * Returns 0, -EOVERFLOW with the resource named in s->error, or another negative errno. */
static int merge_check_bound(struct store *s) {
        sqlite3_stmt *st = NULL;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(s->db, "SELECT name FROM resource", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *name = (const char *) sqlite3_column_text(st, 0) ?: "";
                uint64_t gticks;

                r = store_resource_gticks(s, name, &gticks);
                if (r == 0 && gticks > STORE_MAX_GTICKS) {
                        snprintf(s->error, sizeof s->error, "%s", name);
                        r = -EOVERFLOW;
                }
        }
        sqlite3_finalize(st);
        if (r == 0 && rc != SQLITE_DONE)
                r = store_errno(s, rc);
        return r;
}

/* ATTACHes NAME (a file name or a URI) as MERGE_SRC. Returns 0 or a negative errno. */
static int merge_attach(struct store *s, const char *name) {
        sqlite3_stmt *st;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db, "ATTACH DATABASE ? AS " MERGE_SRC, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        store_bind_text(st, 1, name);
        r = store_step_done(s, st);
        sqlite3_finalize(st);
        return r;
}

int store_merge(struct store *s, const char *path, struct store_merge_stats *ret, int64_t *ret_run) {
        _cleanup_free_ char *plain = store_plain_path(path), *uri = NULL;
        struct store_merge_stats stats = {};
        struct merge m = { .s = s };
        int rc, r;

        if (s->mode != STORE_WRITE || s->in_transaction)
                return -EROFS;
        if (!plain)
                return -ENOMEM;
        /* ATTACH cannot run inside a transaction: attach, then begin. */
        r = merge_attach(s, plain);
        if (r >= 0) {
                rc = sqlite3_exec(s->db, "SELECT 1 FROM " MERGE_SRC ".sqlite_schema LIMIT 1", NULL, NULL,
                                  NULL);
                r = store_errno(s, rc);
                if (r < 0)
                        sqlite3_exec(s->db, "DETACH DATABASE " MERGE_SRC, NULL, NULL, NULL);
        }
        /* A store we may read but not write beside (as store_sqlite_open_read() finds): with
         * nothing in its write-ahead log, attach the file itself, immutable. */
        if ((r == -EROFS || r == -EACCES || r == -ENOENT) && access(path, R_OK) == 0 &&
            !store_wal_has_frames(path) && !store_journal_is_hot(path)) {
                uri = store_immutable_uri(path);
                if (!uri)
                        return -ENOMEM;
                r = merge_attach(s, uri);
        }
        if (r < 0)
                return r;

        r = merge_check_source(s);
        if (r >= 0)
                r = store_begin(s);
        if (r >= 0) {
                r = merge_rows(&m, &stats);
                /* A constraint the copy broke means source rows that do not hold together. */
                if (r == -EINVAL || (r == -EEXIST && m.duplicate == 0))
                        r = -EBADMSG;
                if (r >= 0)
                        r = merge_check_bound(s);
                if (r >= 0)
                        r = store_commit(s);
                else
                        store_rollback(s);
        }
        sqlite3_exec(s->db, "DETACH DATABASE " MERGE_SRC, NULL, NULL, NULL);
        if (r == -EEXIST && ret_run)
                *ret_run = m.duplicate;
        if (r < 0)
                return r;
        if (ret)
                *ret = stats;
        return 0;
}
