/* The store: round trips, filters, merging runs of different periods, refusal of files that
 * are not stores (left untouched), newer schemas, rollback, readers beside a writer, a new
 * store's schema equal to a migrated one's, and tree indexes laid out from the stored stacks
 * equal to those of the loaded tree, under every kind of filter. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <regex.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"
#include "store-internal.h"
#include "store-migrations.h"
#include "store.h"
#include "tap.h"
#include "tree-index.h"

static char dir[] = "/tmp/test-store-XXXXXX";

static char *path(const char *name) {
        static char buf[4][256];
        static int i;

        i = (i + 1) % 4;
        snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
        return buf[i];
}

/* Adds the stack "names" (';'-separated) with HITS to a run's thread. */
static int add_stack(struct store *s, int64_t resource, int64_t thread, const char *names, uint64_t hits) {
        char copy[256], *save = NULL;
        int64_t parent = 0, fn, frame;

        snprintf(copy, sizeof copy, "%s", names);
        for (char *n = strtok_r(copy, ";", &save); n; n = strtok_r(NULL, ";", &save)) {
                if (store_function_id(s, n, 0, strncmp(n, "[", 1) == 0, &fn) < 0 ||
                    store_frame_id(s, fn, -1, NULL, 0, false, &frame) < 0 ||
                    store_stack_id(s, parent, frame, &parent) < 0)
                        return -1;
        }
        return store_add_samples(s, resource, 60, thread, parent, hits, hits, hits);
}

static int add_run(struct store *s, const char *resource, uint64_t period, int64_t *ret_run,
                   int64_t *ret_resource, int64_t *ret_thread) {
        int64_t process;

        if (store_add_run(s, &(struct store_run) { .kind = "import", .started = 1 }, ret_run) < 0 ||
            store_add_run_resource(s, *ret_run, resource, "1 thing", NULL, period, ret_resource) < 0 ||
            store_add_process(s, *ret_run, -1, "test", NULL, NULL, 1, &process) < 0 ||
            store_add_thread(s, process, -1, NULL, ret_thread) < 0)
                return -1;
        return 0;
}

static int64_t down_hits(struct sample_tree *t, const char *root, const char *path_text) {
        _cleanup_(profile_freep) struct profile *p = NULL;

        if (profile_down(t, root, 0, &p) < 0)
                return -2;
        return profile_hits(p, path_text);
}

static void test_round_trip(void) {
        _cleanup_(store_closep) struct store *s = NULL, *r = NULL;
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        _cleanup_(strv_freep) char **names = NULL;
        int64_t run1, run2, res1, res2, thr1, thr2;

        ok(store_open(path("a.db"), STORE_WRITE, &s) == 0, "a new store opens for writing");
        is_int(store_version(s), store_migrations[n_store_migrations - 1].version,
               "at the latest schema version");
        ok(store_begin(s) == 0, "begin");
        ok(add_run(s, "cpu-time", 10, &run1, &res1, &thr1) == 0, "run 1: cpu-time every 10");
        ok(add_stack(s, res1, thr1, "main;f;g", 3) == 0 && add_stack(s, res1, thr1, "main;f", 2) == 0 &&
                   add_stack(s, res1, thr1, "main;[libc.so.6+0x10]", 1) == 0,
           "run 1: three stacks");
        ok(add_stack(s, res1, thr1, "main;f;g", 4) == 0, "the same row again adds up");
        ok(store_add_lost(s, run1, res1, 5) == 0, "5 samples lost");
        ok(add_run(s, "cpu-time", 20, &run2, &res2, &thr2) == 0, "run 2: cpu-time every 20");
        ok(res2 == res1, "the resource is stored once");
        ok(add_stack(s, res2, thr2, "main;f;g", 1) == 0, "run 2: one stack");
        ok(store_add_run_resource(s, run2, "cpu-time", "x", NULL, 30, &res2) == -EEXIST,
           "a run cannot have one resource at two periods");
        ok(store_commit(s) == 0, "commit");

        ok(store_open(path("a.db"), STORE_READ, &r) == 0, "it opens for reading");
        is_int(store_list_resources(r, &names), 1, "one resource");
        ok(names && names[0] && strcmp(names[0], "cpu-time") == 0, "named cpu-time");

        ok(store_load_tree(r, &(struct store_filter) { .resource = "cpu-time", .run_id = run1 }, &t) == 0,
           "run 1 loads");
        is_int(t->total, 10, "run 1: 10 hits");
        is_int(t->info.period, 10, "period 10");
        is_int(t->info.lost, 5, "5 lost");
        is_int(down_hits(t, "main", "main f g"), 7, "(main f g) [7]");
        is_int(t->info.frames, 3 * 7 + 2 * 2 + 2 * 1, "frames weighted by hits");
        is_int(t->info.frames_unsymbolized, 1, "one frame unsymbolized");
        t = sample_tree_free(t);

        ok(store_load_tree(r, &(struct store_filter) { .resource = "cpu-time" }, &t) == 0, "both runs load");
        is_int(t->info.period, 10, "mixed periods 10 and 20: counted in samples of gcd = 10 gticks");
        is_int(t->total, 12, "run 2's hit weighs 2");
        is_int(down_hits(t, "main", "main f g"), 9, "(main f g) [9]");
        t = sample_tree_free(t);

        ok(store_load_tree(r, &(struct store_filter) { .resource = "page-faults" }, &t) == -ENOENT,
           "an absent resource: -ENOENT");
        ok(store_begin(r) == -EROFS, "a reader cannot write");
}

/* Adds a process PID of UNIT named COMM running EXE, with one thread, in RUN. */
static int64_t add_process(struct store *s, int64_t run, int64_t pid, const char *unit, const char *comm,
                           const char *exe) {
        int64_t process, thread;

        if (store_add_process(s, run, pid, comm, exe, unit, 1, &process) < 0 ||
            store_add_thread(s, process, pid, comm, &thread) < 0)
                return -1;
        return thread;
}

static int add_stack_at(struct store *s, int64_t resource, int64_t thread, int64_t bucket, const char *names,
                        uint64_t hits) {
        char copy[256], *save = NULL;
        int64_t parent = 0, fn, frame;

        snprintf(copy, sizeof copy, "%s", names);
        for (char *n = strtok_r(copy, ";", &save); n; n = strtok_r(NULL, ";", &save))
                if (store_function_id(s, n, 0, false, &fn) < 0 ||
                    store_frame_id(s, fn, -1, NULL, 0, false, &frame) < 0 ||
                    store_stack_id(s, parent, frame, &parent) < 0)
                        return -1;
        return store_add_samples(s, resource, bucket, thread, parent, hits, hits, hits);
}

static uint64_t total(struct store *s, const struct store_filter *f) {
        struct sample_tree *t = NULL;
        uint64_t n;

        if (store_load_tree(s, f, &t) < 0)
                return UINT64_MAX;
        n = t->total;
        sample_tree_free(t);
        return n;
}

/* Rows of TABLE (and a condition) in store file NAME, through a connection of its own. */
static int64_t count(const char *name, const char *table) {
        char sql[128];
        sqlite3_stmt *st = NULL;
        sqlite3 *db = NULL;
        int64_t n = -1;

        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
        if (sqlite3_open_v2(path(name), &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
                n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

static void test_filters_and_expiry(void) {
        _cleanup_(store_closep) struct store *s = NULL;
        int64_t run, res, web, db1, db2, thr;
        uint64_t deleted = 0;
        struct store_filter f = { .resource = "cpu-time" };

        ok(store_open(path("f.db"), STORE_WRITE, &s) == 0 && store_begin(s) == 0 &&
                   add_run(s, "cpu-time", 1, &run, &res, &thr) == 0,
           "a store with a run");
        web = add_process(s, run, 100, "nginx.service", "nginx", "/usr/sbin/nginx");
        db1 = add_process(s, run, 200, "postgresql.service", "postgres",
                          "/usr/lib/postgresql/15/bin/postgres");
        db2 = add_process(s, run, 201, "postgresql.service", "postgres",
                          "/usr/lib/postgresql/15/bin/postgres");
        ok(web > 0 && db1 > 0 && db2 > 0, "three processes in two units");
        ok(add_stack_at(s, res, web, 60, "main;serve;parse", 5) == 0 &&
                   add_stack_at(s, res, db1, 60, "main;exec_query;seqscan", 7) == 0 &&
                   add_stack_at(s, res, db2, 120, "main;exec_query;sort", 11) == 0 &&
                   add_stack_at(s, res, web, 180, "main;serve;sendfile", 13) == 0 && store_commit(s) == 0,
           "samples in buckets 60, 120 and 180");

        is_int(total(s, &f), 36, "no filter: every hit");
        f.unit = "postgresql.service";
        is_int(total(s, &f), 18, "--unit postgresql.service");
        f.unit = NULL;
        f.pid = 201;
        is_int(total(s, &f), 11, "--pid 201");
        f.pid = 0;
        f.comm = "nginx";
        is_int(total(s, &f), 18, "--comm nginx");
        f.comm = NULL;
        f.exe = "postgres";
        is_int(total(s, &f), 18, "--exe by file name");
        f.exe = "/usr/sbin/nginx";
        is_int(total(s, &f), 18, "--exe by path");
        f.exe = "ginx";
        is_int(total(s, &f), 0, "--exe does not match part of a name");
        f.exe = NULL;
        f.since = 100;
        f.until = 180;
        f.has_since = f.has_until = true;
        is_int(total(s, &f), 11, "--since 100 --until 180: bucket 120 only");
        f.since = f.until = 0;
        is_int(total(s, &f), 0, "--until 0 (1970) is a bound: nothing before it");
        f.has_until = false;
        is_int(total(s, &f), 36, "--since 0: everything since 1970");
        f.has_since = false;

        /* unit_roots (the daemon's pushes): each unit's stacks below a node of its own, the same
         * stack shared by two units counted apart, the processes in no unit below "". */
        {
                struct sample_tree *t = NULL;
                int64_t other = add_process(s, run, 300, NULL, "cron", "/usr/sbin/cron");
                char got[512] = "";

                ok(other > 0 && store_begin(s) == 0 &&
                           add_stack_at(s, res, other, 60, "main;serve;parse", 2) == 0 &&
                           store_commit(s) == 0,
                   "a process in no unit with nginx's stack");
                f.unit_roots = true;
                ok(store_load_tree(s, &f, &t) == 0 && t->total == 38, "unit_roots: one load, every hit");
                for (uint32_t u = t ? t->nodes[SAMPLE_TREE_ROOT].first_child : SAMPLE_TREE_NONE;
                     u != SAMPLE_TREE_NONE; u = t->nodes[u].next_sibling)
                        snprintf(got + strlen(got), sizeof got - strlen(got), "[%s]=%" PRIu64 " ",
                                 sample_tree_name(t, t->nodes[u].name), t->nodes[u].weight);
                ok(strstr(got, "[nginx.service]=18 ") && strstr(got, "[postgresql.service]=18 ") &&
                           strstr(got, "[]=2 ") &&
                           strlen(got) == strlen("[nginx.service]=18 [postgresql.service]=18 []=2 "),
                   "a node per unit under the root, with its hits: %s", got);
                sample_tree_free(t);
                f.unit_roots = false;
                is_int(total(s, &f), 38, "without it, the same hits in one tree");
        }

        ok(store_expire(s, 100, 0, &deleted) == 0, "expire what is before 100");
        is_int(deleted, 3, "three sample rows go");
        is_int(total(s, &f), 24, "the rest stays");
        is_int(count("f.db", "function"), 5,
               "functions only the deleted stacks had are gone (main exec_query sort serve sendfile)");
        is_int(count("f.db", "stack"), 5,
               "and the stack trie is pruned to the two stacks left (main shared)");
        is_int(count("f.db", "process"), 2, "the processes without samples left are gone");

        ok(store_begin(s) == 0 && add_stack_at(s, res, db2, 240, "main;exec_query;sort", 1) == 0 &&
                   store_commit(s) == 0,
           "after expiry, writing (with ids found again) works");
        is_int(total(s, &f), 25, "and adds up");

        ok(store_expire(s, 0, 1, &deleted) == 0, "a size bound below anything: expire everything");
        is_int(total(s, &f), 0, "no samples left");
        is_int(count("f.db", "stack"), 0, "no stacks left");
}

static void test_migration(void) {
        _cleanup_(store_closep) struct store *s = NULL;
        sqlite3 *db;
        char sql[128];

        ok(sqlite3_open(path("v1.db"), &db) == SQLITE_OK &&
                   sqlite3_exec(db, store_migrations[0].sql, NULL, NULL, NULL) == SQLITE_OK,
           "a store at schema 1");
        snprintf(sql, sizeof sql, "PRAGMA user_version = 1; PRAGMA application_id = %d",
                 STORE_APPLICATION_ID);
        ok(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK && sqlite3_close(db) == SQLITE_OK,
           "marked as such");
        chmod(path("v1.db"), 0444);
        ok(geteuid() == 0 || store_open(path("v1.db"), STORE_READ, &s) == -EPROTO,
           "reading an older schema that may not be written: -EPROTO");
        chmod(path("v1.db"), 0644);
        ok(store_open(path("v1.db"), STORE_READ, &s) == 0 &&
                   store_version(s) == store_migrations[n_store_migrations - 1].version,
           "reading one that may be written upgrades it to the latest");
        ok(count("v1.db", "sqlite_schema WHERE name = 'sample_bucket'") == 1, "with the new index");
        ok(count("v1.db", "store_state") == 1, "and an identity");
}

/* Writes SQL to F without its comments, its runs of white space as one space and none beside
 * "(", ")" and ",", quoted text as it is: two texts of one schema compare equal whatever their
 * layout, such as ALTER TABLE ADD COLUMN's, which SQLite appends after the last column's text. */
static void put_normalized(const char *sql, FILE *f) {
        char quote = 0, last = 0;
        bool space = false;

        for (const char *p = sql; *p; p++) {
                if (quote) {
                        fputc(*p, f);
                        if (*p == quote)
                                quote = 0;
                        continue;
                }
                if (p[0] == '-' && p[1] == '-') {
                        p += strcspn(p, "\n");
                        space = true;
                        if (!*p)
                                break;
                        continue;
                }
                if (strchr(" \t\n", *p)) {
                        space = true;
                        continue;
                }
                if (space && last && !strchr("(),", last) && !strchr("(),", *p))
                        fputc(' ', f);
                space = false;
                if (*p == '\'' || *p == '"')
                        quote = *p;
                fputc(*p, f);
                last = *p;
        }
}

/* Writes every row SQL gives (?1 bound to ARG), one a line, its columns separated by '|'. */
static void put_rows(sqlite3 *db, const char *sql, const char *arg, FILE *f) {
        sqlite3_stmt *st = NULL;

        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
                fprintf(f, "error: %s: %s\n", sql, sqlite3_errmsg(db));
                return;
        }
        if (arg)
                sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
                for (int i = 0; i < sqlite3_column_count(st); i++) {
                        const unsigned char *v = sqlite3_column_text(st, i);

                        fprintf(f, "%s%s", i ? "|" : "", v ? (const char *) v : "NULL");
                }
                fputc('\n', f);
        }
        sqlite3_finalize(st);
}

/* The shape of store NAME as text: its version; every object with its SQL normalized; every
 * table's columns (type, NOT NULL, default, key), indexes with their columns, and foreign keys;
 * and the store_state row. NULL if it cannot be read. */
static char *schema_shape(const char *name) {
        _cleanup_free_ char *text = NULL;
        sqlite3_stmt *st = NULL;
        sqlite3 *db = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        if (sqlite3_open_v2(path(name), &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
                sqlite3_close(db);
                fclose(f);
                return NULL;
        }
        put_rows(db, "PRAGMA user_version", NULL, f);
        put_rows(db, "PRAGMA application_id", NULL, f);
        if (sqlite3_prepare_v2(db, "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name",
                               -1, &st, NULL) == SQLITE_OK)
                while (sqlite3_step(st) == SQLITE_ROW) {
                        const char *sql = (const char *) sqlite3_column_text(st, 3);

                        fprintf(f, "%s %s on %s: ", sqlite3_column_text(st, 0), sqlite3_column_text(st, 1),
                                sqlite3_column_text(st, 2));
                        put_normalized(sql ? sql : "", f);
                        fputc('\n', f);
                        if (strcmp((const char *) sqlite3_column_text(st, 0), "table") != 0)
                                continue;
                        const char *table = (const char *) sqlite3_column_text(st, 1);
                        put_rows(db, "SELECT * FROM pragma_table_xinfo(?1)", table, f);
                        put_rows(
                                db,
                                "SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1) ORDER BY name",
                                table, f);
                        put_rows(db,
                                 "SELECT il.name, ix.* FROM pragma_index_list(?1) AS il, "
                                 "pragma_index_xinfo(il.name) AS ix ORDER BY il.name, ix.seqno",
                                 table, f);
                        put_rows(db, "SELECT * FROM pragma_foreign_key_list(?1) ORDER BY id, seq", table, f);
                }
        sqlite3_finalize(st);
        put_rows(db, "SELECT id, length(uuid), length(token), generation FROM store_state", NULL, f);
        sqlite3_close(db);
        if (fclose(f) != 0)
                return NULL;
        return take_ptr(&text);
}

/* A new store is created from schemas/schema.sql, an older one migrated: both must end alike,
 * and the new one's text must keep each column's comment beside it (sqlite3's .schema). */
static void test_fresh_schema(void) {
        _cleanup_(store_closep) struct store *s = NULL, *t = NULL;
        _cleanup_free_ char *fresh = NULL, *migrated = NULL;
        sqlite3 *db;
        char sql[128];

        ok(store_open(path("fresh.db"), STORE_WRITE, &s) == 0, "a new store");
        ok(sqlite3_open(path("old.db"), &db) == SQLITE_OK &&
                   sqlite3_exec(db, store_migrations[0].sql, NULL, NULL, NULL) == SQLITE_OK,
           "a store at schema 1");
        snprintf(sql, sizeof sql, "PRAGMA user_version = 1; PRAGMA application_id = %d",
                 STORE_APPLICATION_ID);
        ok(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK && sqlite3_close(db) == SQLITE_OK,
           "marked as such");
        ok(store_open(path("old.db"), STORE_WRITE, &t) == 0 &&
                   store_version(t) == store_migrations[n_store_migrations - 1].version,
           "migrated to the latest");
        s = store_close(s);
        t = store_close(t);

        fresh = schema_shape("fresh.db");
        migrated = schema_shape("old.db");
        ok(fresh && migrated && strstr(fresh, "table sample on sample:") && strstr(fresh, "hits_squared"),
           "both shapes read");
        if (!ok(fresh && migrated && strcmp(fresh, migrated) == 0,
                "a new store and a migrated one: the same tables, columns, types, defaults, constraints, "
                "indexes, views and triggers")) {
                printf("# new:\n%s# migrated:\n%s", fresh ? fresh : "", migrated ? migrated : "");
        }

        /* What sqlite3's .schema shows of run_resource: lost's comment on lost's line, alone. */
        {
                _cleanup_free_ char *line = NULL;
                sqlite3_stmt *st = NULL;
                const char *text, *at, *end;

                if (sqlite3_open_v2(path("fresh.db"), &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
                    sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_schema WHERE name = 'run_resource'", -1,
                                       &st, NULL) == SQLITE_OK &&
                    sqlite3_step(st) == SQLITE_ROW) {
                        text = (const char *) sqlite3_column_text(st, 0);
                        at = strstr(text, "-- samples the kernel dropped");
                        if (at) {
                                while (at > text && at[-1] != '\n')
                                        at--;
                                end = at + strcspn(at, "\n");
                                line = strndup(at, (size_t) (end - at));
                        }
                }
                sqlite3_finalize(st);
                sqlite3_close(db);
                ok(line && strncmp(line, "    lost ", 9) == 0 && !strstr(line, "sampling") &&
                           !strstr(line, "thinned"),
                   "a new store's run_resource keeps lost's comment beside lost: %s", line ? line : "(none)");
        }
}

/* store_state: an id of its own per store, a generation that every change to samples moves. */
static void test_identity(void) {
        _cleanup_(store_closep) struct store *s = NULL, *t = NULL;
        struct store_identity a, b, c;
        int64_t run, res, thr, rid;

        ok(store_open(path("id.db"), STORE_WRITE, &s) == 0 && store_identity(s, &a) == 0 &&
                   strlen(a.uuid) == 32,
           "a new store has a random id: %s", a.uuid);
        ok(store_begin(s) == 0 && add_run(s, "cpu-time", 1, &run, &res, &thr) == 0 &&
                   add_stack(s, res, thr, "main;f", 3) == 0 && store_commit(s) == 0 &&
                   store_identity(s, &b) == 0,
           "samples stored");
        ok(streq(a.uuid, b.uuid) && b.generation > a.generation && b.dev == a.dev && b.ino == a.ino,
           "they move its generation (%lld to %lld), not its id", (long long) a.generation,
           (long long) b.generation);
        ok(store_begin(s) == 0 && add_stack(s, res, thr, "main;f", 1) == 0 && store_commit(s) == 0 &&
                   store_identity(s, &c) == 0 && c.generation > b.generation,
           "adding to a row moves it too");
        {
                sqlite3 *db = NULL;

                ok(sqlite3_open(path("id.db"), &db) == SQLITE_OK &&
                           sqlite3_exec(db, "DELETE FROM sample", NULL, NULL, NULL) == SQLITE_OK &&
                           store_identity(s, &b) == 0 && b.generation > c.generation,
                   "as does a hand's DELETE");
                ok(sqlite3_exec(db, "DELETE FROM store_state", NULL, NULL, NULL) != SQLITE_OK,
                   "the identity row cannot be deleted");
                sqlite3_close(db);
        }
        ok(store_resource_id(s, "cpu-time", &rid) == 0 && rid == res &&
                   store_resource_id(s, "nope", &rid) == -ENOENT,
           "resource ids by name");
        ok(store_open(path("id2.db"), STORE_WRITE, &t) == 0 && store_identity(t, &c) == 0 &&
                   !streq(a.uuid, c.uuid),
           "another store, another id");
}

static void test_rollback(void) {
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        int64_t run, res, thr;

        ok(store_open(path("b.db"), STORE_WRITE, &s) == 0, "store b");
        ok(store_begin(s) == 0 && add_run(s, "syscalls", 1, &run, &res, &thr) == 0 &&
                   add_stack(s, res, thr, "main;read", 9) == 0,
           "a transaction with samples");
        store_rollback(s);
        ok(store_begin(s) == 0 && add_run(s, "syscalls", 1, &run, &res, &thr) == 0 &&
                   add_stack(s, res, thr, "main;write", 2) == 0 && store_commit(s) == 0,
           "after a rollback the cached ids are forgotten and writing works");
        ok(store_load_tree(s, &(struct store_filter) { .resource = "syscalls" }, &t) == 0, "loads");
        is_int(t->total, 2, "only the committed samples are there");
        ok(name_table_find(t->names, "read") == NAME_NONE, "nothing of the rolled-back stack");
}

static int write_file(const char *p, const void *data, size_t len) {
        FILE *f = fopen(p, "we");

        if (!f || fwrite(data, 1, len, f) != len)
                return -1;
        return fclose(f);
}

static int same_file(const char *p, const void *data, size_t len) {
        char buf[8192];
        FILE *f = fopen(p, "re");
        size_t n;

        if (!f)
                return 0;
        n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        return n == len && memcmp(buf, data, len) == 0;
}

static void test_refusals(void) {
        static const char text[] = "this is not a database\n";
        struct store *s = NULL;
        sqlite3 *db;
        struct stat st_before, st_after;

        ok(store_open(path("missing.db"), STORE_READ, &s) == -ENOENT, "reading a missing store: -ENOENT");
        ok(access(path("missing.db"), F_OK) < 0, "and no file is made");

        ok(write_file(path("text.db"), text, sizeof text - 1) == 0, "a text file");
        ok(store_open(path("text.db"), STORE_WRITE, &s) == -EBADMSG, "is refused for writing: -EBADMSG");
        ok(store_open(path("text.db"), STORE_READ, &s) == -EBADMSG, "and for reading");
        ok(same_file(path("text.db"), text, sizeof text - 1), "and left as it was");

        ok(sqlite3_open(path("other.db"), &db) == SQLITE_OK &&
                   sqlite3_exec(db, "CREATE TABLE mine (x); INSERT INTO mine VALUES (1)", NULL, NULL, NULL) ==
                           SQLITE_OK &&
                   sqlite3_close(db) == SQLITE_OK,
           "someone else's SQLite database");
        stat(path("other.db"), &st_before);
        ok(store_open(path("other.db"), STORE_WRITE, &s) == -EBADMSG, "is refused: -EBADMSG");
        ok(strstr(store_error(NULL), "not a cppd store") != NULL, "with words that say why: %s",
           store_error(NULL));
        stat(path("other.db"), &st_after);
        ok(st_before.st_size == st_after.st_size && st_before.st_mtime == st_after.st_mtime,
           "and not modified");

        ok(store_open(path("new.db"), STORE_WRITE, &s) == 0, "a store");
        s = store_close(s);
        ok(sqlite3_open(path("new.db"), &db) == SQLITE_OK &&
                   sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL) == SQLITE_OK &&
                   sqlite3_close(db) == SQLITE_OK,
           "pretend a newer cppd wrote it");
        ok(store_open(path("new.db"), STORE_READ, &s) == -EPROTONOSUPPORT, "reading it: -EPROTONOSUPPORT");
        ok(store_open(path("new.db"), STORE_WRITE, &s) == -EPROTONOSUPPORT, "writing it: -EPROTONOSUPPORT");

        ok(store_open(dir, STORE_WRITE, &s) == -EBADMSG, "a directory is not a store");
}

static void test_corrupt(void) {
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        struct store *r = NULL;
        int64_t run, res, thr;
        char junk[4096];
        struct stat st;
        int fd, rc;

        ok(store_open(path("c.db"), STORE_WRITE, &s) == 0 && store_begin(s) == 0 &&
                   add_run(s, "cpu-time", 1, &run, &res, &thr) == 0,
           "a store with samples");
        for (int i = 0; i < 300; i++) {
                char stack[64];

                snprintf(stack, sizeof stack, "main;f%d;g%d", i, i % 7);
                add_stack(s, res, thr, stack, 1);
        }
        ok(store_commit(s) == 0, "committed");
        s = store_close(s);
        {
                /* Fold the WAL into the file, so the damage below hits the real pages. */
                sqlite3 *db;

                sqlite3_open(path("c.db"), &db);
                sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
                sqlite3_close(db);
        }
        memset(junk, 0x5a, sizeof junk);
        fd = open(path("c.db"), O_WRONLY | O_CLOEXEC);
        rc = fd >= 0 && fstat(fd, &st) == 0 ? 0 : -1;
        for (off_t o = 4096; rc == 0 && o < st.st_size; o += sizeof junk)
                rc = pwrite(fd, junk, sizeof junk, o) == (ssize_t) sizeof junk ? 0 : -1;
        ok(rc == 0 && close(fd) == 0, "every page but the first overwritten with junk");
        rc = store_open(path("c.db"), STORE_READ, &r);
        if (rc == 0) {
                rc = store_load_tree(r, &(struct store_filter) { .resource = "cpu-time" }, &t);
                r = store_close(r);
        }
        ok(rc == -EBADMSG, "the damage is reported as -EBADMSG (got %d)", rc);
}

static void test_reader_beside_writer(void) {
        _cleanup_(store_closep) struct store *w = NULL, *r = NULL;
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        int64_t run, res, thr;

        ok(store_open(path("d.db"), STORE_WRITE, &w) == 0 && store_begin(w) == 0 &&
                   add_run(w, "cpu-time", 1, &run, &res, &thr) == 0 &&
                   add_stack(w, res, thr, "main;a", 1) == 0 && store_commit(w) == 0,
           "a committed sample");
        ok(store_begin(w) == 0 && add_stack(w, res, thr, "main;b", 5) == 0, "a writer mid-transaction");
        ok(store_open(path("d.db"), STORE_READ, &r) == 0, "a reader opens meanwhile");
        ok(store_load_tree(r, &(struct store_filter) { .resource = "cpu-time" }, &t) == 0,
           "and reads without waiting for the writer");
        is_int(t->total, 1, "it sees the last commit only");
        ok(store_commit(w) == 0, "the writer commits while the reader is open");
        t = sample_tree_free(t);
        ok(store_load_tree(r, &(struct store_filter) { .resource = "cpu-time" }, &t) == 0 && t->total == 6,
           "the reader's next load sees it");
}

/* A writer commits in the middle of a reader's load (from SQLite's progress handler, at the
 * K-th callback, for each K): the load is one snapshot, before the commit or after it, never
 * stacks from before and samples from after (which would look like a damaged store). */
static struct {
        struct store *w;
        int64_t res, thr;
        int calls, at, k;
} mid;

static int commit_mid_load(void *userdata) {
        char names[64];

        if (++mid.calls != mid.at)
                return 0;
        snprintf(names, sizeof names, "main;new%d;deeper%d", mid.k, mid.k);
        if (store_begin(mid.w) < 0 || add_stack(mid.w, mid.res, mid.thr, names, 2) < 0 ||
            store_commit(mid.w) < 0)
                mid.k = -1000;
        return 0;
}

static void test_writer_commits_mid_load(void) {
        _cleanup_(store_closep) struct store *w = NULL, *r = NULL;
        uint64_t total = 3;
        int64_t run;
        int bad = 0, fired = 0;

        ok(store_open(path("m.db"), STORE_WRITE, &w) == 0 && store_begin(w) == 0 &&
                   add_run(w, "cpu-time", 1, &run, &mid.res, &mid.thr) == 0 &&
                   add_stack(w, mid.res, mid.thr, "main;a", 3) == 0 && store_commit(w) == 0 &&
                   store_open(path("m.db"), STORE_READ, &r) == 0,
           "a store, a writer and a reader");
        mid.w = w;
        sqlite3_progress_handler(r->db, 4, commit_mid_load, NULL);
        for (mid.k = 1; mid.k <= 60; mid.k++) {
                _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
                int q;

                mid.calls = 0;
                mid.at = mid.k;
                q = store_load_tree(r, &(struct store_filter) { .resource = "cpu-time" }, &t);
                fired += mid.calls >= mid.at;
                if (q < 0 || mid.k < 0 || (t->total != total && t->total != total + 2)) {
                        char line[128];

                        snprintf(line, sizeof line, "commit at callback %d: load %d, total %lld of %lld",
                                 mid.at, q, q < 0 ? -1LL : (long long) t->total, (long long) total);
                        diag(line);
                        bad++;
                }
                if (mid.calls >= mid.at)
                        total += 2;
        }
        sqlite3_progress_handler(r->db, 0, NULL, NULL);
        ok(fired > 10, "commits came at %d points of the loads", fired);
        is_int(bad, 0, "every load read one snapshot: before the commit or after it");
}

/* A new store is 0640 whatever the umask, and so are its -wal and -shm files while open. */
static void test_modes(void) {
        struct store *s = NULL;
        struct stat st;
        mode_t old = umask(0);

        ok(store_open(path("modes.db"), STORE_WRITE, &s) == 0, "a new store with umask 0");
        ok(stat(path("modes.db"), &st) == 0 && (st.st_mode & 0777) == 0640, "is 0640");
        ok(store_begin(s) == 0 &&
                   store_add_run(s, &(struct store_run) { .kind = "import", .started = 1 },
                                 &(int64_t) { 0 }) == 0 &&
                   store_commit(s) == 0,
           "a write, which makes the WAL");
        ok(stat(path("modes.db-wal"), &st) == 0 && (st.st_mode & 0777) == 0640, "the WAL is 0640 too");
        s = store_close(s);
        ok(chmod(path("modes.db"), 0600) == 0 && store_open(path("modes.db"), STORE_WRITE, &s) == 0 &&
                   stat(path("modes.db"), &st) == 0 && (st.st_mode & 0777) == 0600,
           "an existing store keeps the mode its owner gave it");
        store_close(s);
        umask(old);
}

/* A new unnamed file to lay an index out in, or -1. */
static int scratch_file(void) {
        char path[] = "/tmp/test-store-index-XXXXXX";
        int fd = mkstemp(path);

        if (fd >= 0)
                unlink(path);
        return fd;
}

/* The index of F's tree laid out from the stored stacks (store_load_index()) against the one built
 * from the loaded tree: the same header, nodes and hits by name, and every downward and upward
 * view of every root at thresholds 0 and 1% (name ids are the same: both label the frames in
 * id order). */
static bool same_index(struct store *s, const struct store_filter *f) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        _cleanup_(tree_index_freep) struct tree_index *a = NULL, *b = NULL, *ua = NULL, *ub = NULL;
        _cleanup_(tree_index_freep) struct tree_index *a2 = NULL, *b2 = NULL;
        const struct sample_tree_info *ia, *ib;
        _cleanup_close_ int fd = scratch_file();

        /* B in a file (its labels, then the index past them), B2 in memory */
        if (fd < 0 || store_load_tree(s, f, &t) < 0 || tree_index_build(t, &a) < 0 ||
            store_load_index(s, f, fd, &b) < 0 || !b->map || tree_index_build(t, &a2) < 0 ||
            store_load_index(s, f, -1, &b2) < 0 || tree_index_invert(take_ptr(&a2), -1, &ua) < 0 ||
            tree_index_invert(take_ptr(&b2), -1, &ub) < 0)
                return false;
        ia = &a->header->info;
        ib = &b->header->info;
        if (a->n != b->n || a->n_names != b->n_names || a->max_depth != b->max_depth ||
            a->header->total != b->header->total || ia->samples != ib->samples || ia->period != ib->period ||
            ia->frames != ib->frames || ia->frames_unsymbolized != ib->frames_unsymbolized ||
            ia->hits_squared != ib->hits_squared || ia->lost != ib->lost || ia->thinned != ib->thinned ||
            ia->periods_fixed != ib->periods_fixed || ia->periods_random != ib->periods_random ||
            !streq(ia->resource, ib->resource) || !streq(ia->unit, ib->unit))
                return false;
        for (uint32_t name = 0; name < a->n_names; name++)
                if (a->function_hits[name] != b->function_hits[name] ||
                    a->body_hits[name] != b->body_hits[name] ||
                    a->occ_start[name + 1] != b->occ_start[name + 1] ||
                    !streq(name_table_get(a->header->names, name), name_table_get(b->header->names, name)))
                        return false;
        for (uint32_t name = 0; name < a->n_names; name++)
                for (int k = 0; k < 4; k++) {
                        const char *root = name_table_get(a->header->names, name);
                        uint64_t min_hits = profile_min_hits(a->header->total, k % 2 ? 0.01 : 0);
                        _cleanup_(profile_freep) struct profile *p = NULL, *q = NULL;
                        int rp = k < 2 ? profile_down_index(a, root, min_hits, &p) :
                                         profile_up_index(ua, root, min_hits, &p);
                        int rq = k < 2 ? profile_down_index(b, root, min_hits, &q) :
                                         profile_up_index(ub, root, min_hits, &q);

                        if (rp != rq)
                                return false;
                        if (rp < 0)
                                continue;
                        if (p->n_entries != q->n_entries || p->n_omitted != q->n_omitted)
                                return false;
                        for (size_t i = 0; i < p->n_entries; i++)
                                if (p->entries[i].hits != q->entries[i].hits ||
                                    p->entries[i].len != q->entries[i].len ||
                                    memcmp(profile_path(p, &p->entries[i]), profile_path(q, &q->entries[i]),
                                           p->entries[i].len * sizeof(uint32_t)) != 0)
                                        return false;
                }
        return true;
}

/* Whether A and B are the same index: header, nodes, lists and hits, byte for byte. */
static bool index_equal(const struct tree_index *a, const struct tree_index *b) {
        const struct sample_tree_info *ia = &a->header->info, *ib = &b->header->info;

        if (a->n != b->n || a->n_names != b->n_names || a->max_depth != b->max_depth ||
            a->header->total != b->header->total || ia->samples != ib->samples || ia->period != ib->period ||
            ia->frames != ib->frames || ia->frames_unsymbolized != ib->frames_unsymbolized ||
            ia->hits_squared != ib->hits_squared || ia->lost != ib->lost || ia->thinned != ib->thinned ||
            ia->periods_fixed != ib->periods_fixed || ia->periods_random != ib->periods_random ||
            ia->frames_named_later != ib->frames_named_later || !streq(ia->resource, ib->resource) ||
            !streq(ia->unit, ib->unit))
                return false;
        for (uint32_t name = 0; name < a->n_names; name++)
                if (!streq(name_table_get(a->header->names, name), name_table_get(b->header->names, name)))
                        return false;
        return memcmp(a->nodes, b->nodes, a->n * sizeof *a->nodes) == 0 &&
                memcmp(a->function_hits, b->function_hits, a->n_names * sizeof *a->function_hits) == 0 &&
                memcmp(a->body_hits, b->body_hits, a->n_names * sizeof *a->body_hits) == 0 &&
                memcmp(a->occ_start, b->occ_start, (a->n_names + 1) * sizeof *a->occ_start) == 0 &&
                memcmp(a->occ, b->occ, (a->n - 1) * sizeof *a->occ) == 0;
}

/* The index of F (a filter of samples) laid out from the index of every sample
 * (store_select_index()) against the one laid out from the store's stacks, downward and
 * inverted, in a file and in memory: the same bytes. Where the inverted index of every sample
 * lacks a path of F's (a stack of no hits in all that others extend, a leaf in F's tree), the
 * select says so, and the downward one selected and inverted is F's, as the views do it; such
 * filters are counted into *N_AGAIN. */
static bool same_selected(struct store *s, const struct store_filter *f, int *n_again) {
        const struct store_filter every = { .resource = f->resource };
        _cleanup_(tree_index_freep) struct tree_index *all = NULL, *all_up = NULL, *down = NULL;
        _cleanup_(tree_index_freep) struct tree_index *want = NULL, *want_up = NULL, *got = NULL,
                                                      *got_up = NULL;
        _cleanup_close_ int fd = scratch_file();
        int r;

        if (fd < 0 || store_load_index(s, &every, -1, &all) < 0 ||
            store_load_index(s, &every, -1, &down) < 0 ||
            tree_index_invert(take_ptr(&down), -1, &all_up) < 0 || store_load_index(s, f, -1, &want) < 0 ||
            store_load_index(s, f, -1, &down) < 0 || tree_index_invert(take_ptr(&down), -1, &want_up) < 0)
                return false;
        if (all->n_stacks == 0 || all_up->n_stacks != all->n_stacks || !all_up->inverted)
                return false;
        if (store_select_index(s, f, all, fd, &got) < 0 || !got->map)
                return false;
        r = store_select_index(s, f, all_up, -1, &got_up);
        if (r == -EAGAIN) {
                (*n_again)++;
                r = store_select_index(s, f, all, -1, &down);
                if (r >= 0)
                        r = tree_index_invert(take_ptr(&down), -1, &got_up);
        }
        return r >= 0 && index_equal(got, want) && index_equal(got_up, want_up);
}

static void test_load_index(void) {
        _cleanup_(store_closep) struct store *s = NULL;
        int64_t run, res, thr, run2, res2, thr2, other;
        uint64_t seed = 7;
        regex_t focus, ignore, hide;
        bool added = true;
        int again = 0;

        ok(store_open(path("index.db"), STORE_WRITE, &s) == 0 && store_begin(s) == 0 &&
                   add_run(s, "cpu-time", 3, &run, &res, &thr) == 0 &&
                   add_run(s, "cpu-time", 5, &run2, &res2, &thr2) == 0,
           "a store with two runs of periods 3 and 5");
        other = add_process(s, run, 42, "web.service", "web", "/usr/bin/web");
        /* 3,000 random stacks over 40 names, with recursion, some without hits, in three buckets,
         * some in the second run or another process: stacks shared, periods merged. */
        for (int i = 0; i < 3000 && added; i++) {
                char names[512] = "main";
                size_t depth;

                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                depth = 1 + (seed >> 33) % 25;
                for (size_t d = 1; d < depth; d++) {
                        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                        snprintf(names + strlen(names), sizeof names - strlen(names), ";fn_%u",
                                 (unsigned) ((seed >> 33) % (d < 3 ? 3 : 40)));
                }
                added = add_stack_at(s, i % 3 ? res : res2, i % 7 ? (i % 3 ? thr : thr2) : other,
                                     60 * (1 + i % 3), names,
                                     (seed >> 40) % 9 == 0 ? 0 : 1 + (seed >> 44) % 20) == 0;
        }
        ok(added && store_commit(s) == 0, "3,000 random stacks");
        ok(regcomp(&focus, "^fn_1$", REG_EXTENDED | REG_NOSUB) == 0 &&
                   regcomp(&ignore, "^fn_2$", REG_EXTENDED | REG_NOSUB) == 0 &&
                   regcomp(&hide, "^fn_[3-5]$", REG_EXTENDED | REG_NOSUB) == 0,
           "patterns");
        ok(same_index(s, &(struct store_filter) { .resource = "cpu-time" }),
           "laid out from the stacks: the index of the loaded tree, every view alike");
        ok(same_index(s, &(struct store_filter) { .resource = "cpu-time", .unit = "web.service" }), "--unit");
        ok(same_index(s, &(struct store_filter) { .resource = "cpu-time", .run_id = run2 }), "--run");
        ok(same_index(s, &(struct store_filter) { .resource = "cpu-time", .since = 100, .has_since = true }),
           "--since");
        ok(same_index(s, &(struct store_filter) { .resource = "cpu-time", .focus = &focus }), "--focus");
        ok(same_index(s, &(struct store_filter) { .resource = "cpu-time", .ignore = &ignore }), "--ignore");
        ok(same_index(s, &(struct store_filter) { .resource = "cpu-time", .hide = &hide }), "--hide");
        ok(same_index(s, &(struct store_filter) { .resource = "cpu-time", .by = STORE_BY_MODULE }),
           "--by module");
        ok(same_selected(s, &(struct store_filter) { .resource = "cpu-time" }, &again),
           "laid out from the index of every sample: the same bytes as from the stacks, up and down");
        ok(same_selected(s, &(struct store_filter) { .resource = "cpu-time", .unit = "web.service" }, &again),
           "selected: --unit");
        ok(same_selected(s, &(struct store_filter) { .resource = "cpu-time", .run_id = run2 }, &again),
           "selected: --run");
        ok(same_selected(s, &(struct store_filter) { .resource = "cpu-time", .pid = 42 }, &again),
           "selected: --pid");
        ok(same_selected(s,
                         &(struct store_filter) { .resource = "cpu-time",
                                                  .since = 100,
                                                  .has_since = true,
                                                  .until = 150,
                                                  .has_until = true },
                         &again),
           "selected: --since --until");
        ok(same_selected(s,
                         &(struct store_filter) { .resource = "cpu-time", .since = 1000, .has_since = true },
                         &again),
           "selected: no sample at all");
        /* the stacks of no hits (1 in 9) make some: the second run's reach stacks of the first */
        ok(again > 0 && again < 6, "%d of 6 selected upward from the downward selection", again);
        regfree(&focus);
        regfree(&ignore);
        regfree(&hide);
}

int main(void) {
        if (!mkdtemp(dir))
                return 1;
        test_modes();
        test_round_trip();
        test_rollback();
        test_refusals();
        test_corrupt();
        test_reader_beside_writer();
        test_writer_commits_mid_load();
        test_filters_and_expiry();
        test_migration();
        test_fresh_schema();
        test_identity();
        test_load_index();
        {
                char cmd[300];

                snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
                if (system(cmd) != 0)
                        diag("could not remove the test directory");
        }
        return tap_done();
}
