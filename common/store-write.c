/* Adding rows. Stacks, frames, functions and modules are find-or-add: the writer keeps their
 * ids in hash maps, so a stack already seen costs one map lookup per frame and no SQL, and a new
 * one costs one INSERT per new node (and a SELECT when another run had added it). Samples
 * are UPSERTs that add to the (resource, bucket, thread, stack) row, which is how aggregation
 * across flushes works. Callers batch everything in one transaction. */
#include "store.h"

#include <errno.h>
#include <string.h>
#include <sys/utsname.h>

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
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", &st);
        if (r < 0)
                return r;
        if (uname(&u) < 0)
                return -errno;
        store_bind_text(st, 1, run->kind);
        store_bind_text(st, 2, run->command);
        store_bind_text(st, 3, run->source);
        store_bind_text(st, 4, u.nodename);
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
                       "INSERT INTO run_resource (run_id, resource_id, event, period) VALUES (?, ?, ?, ?)", &st);
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

int store_add_process(struct store *s, int64_t run_id, int64_t pid, const char *comm,
                      const char *exe, const char *unit, int64_t started, int64_t *ret_id) {
        sqlite3_stmt *st;
        int r;

        r = store_stmt(s, STMT_ADD_PROCESS,
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

        r = store_stmt(s, STMT_ADD_THREAD,
                       "INSERT INTO thread (process_id, tid, comm) VALUES (?, ?, ?)", &st);
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
                return -EBADMSG;        /* neither inserted nor found: a broken index */
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
        r = store_stmt(s, STMT_ADD_MODULE, "INSERT OR IGNORE INTO module (path, build_id) VALUES (?, ?)", &add);
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

int store_frame_id(struct store *s, int64_t function_id, int64_t address, const char *file,
                   unsigned line, bool inlined, int64_t *ret_id) {
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
                       "ifnull(file, '') = ifnull(?, '') AND ifnull(line, -1) = ? AND inlined = ?", &find);
        if (r < 0)
                return r;
        r = store_stmt(s, STMT_ADD_FRAME,
                       "INSERT OR IGNORE INTO frame (function_id, address, file, line, inlined) "
                       "VALUES (?, ?, ?, ?, ?)", &add);
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
                       "VALUES (?1, ?2, 1 + ifnull((SELECT depth FROM stack WHERE id = ?1), 0))", &add);
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
                      int64_t stack_id, uint64_t hits, uint64_t samples) {
        sqlite3_stmt *st;
        int r;

        if (hits > INT64_MAX || samples > INT64_MAX)
                return -ERANGE;
        r = store_stmt(s, STMT_ADD_SAMPLES,
                       "INSERT INTO sample (resource_id, bucket, thread_id, stack_id, hits, samples) "
                       "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                       "hits = hits + excluded.hits, samples = samples + excluded.samples", &st);
        if (r < 0)
                return r;
        sqlite3_bind_int64(st, 1, resource_id);
        sqlite3_bind_int64(st, 2, bucket);
        sqlite3_bind_int64(st, 3, thread_id);
        sqlite3_bind_int64(st, 4, stack_id);
        sqlite3_bind_int64(st, 5, (int64_t) hits);
        sqlite3_bind_int64(st, 6, (int64_t) samples);
        return store_step_done(s, st);
}
