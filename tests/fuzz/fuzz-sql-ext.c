/* Fuzz target: the arguments of the SQL functions (client/source/sql-ext.c), which come from whoever
 * writes the query. The input is lines: the first picks the view (its first byte, modulo 4), each
 * further line is one argument in order (root, resource, threshold, unit, pid, ... hide; a line
 * "\N" is NULL; a newline at the very end starts no empty argument). They are bound as text to a
 * query over a small fixed store, run to the end, and every row is checked: hits within the
 * total, the fraction and its interval in [0, 1] with ci_low <= fraction <= ci_high. An SQL
 * error (a bad argument) is a fine outcome; a crash, a sanitizer report or a row out of bounds
 * is not. */
#include <sqlite3.h>
#include <stdbool.h>
#include <unistd.h>

#include "fuzz.h"
#include "sql-ext.h"
#include "store.h"

#define MAX_ARGS 16 /* root and the 15 arguments after it */

static char dir[] = "/tmp/fuzz-sql-ext-XXXXXX";
static sqlite3 *db;

static void remove_store(void) {
        static const char *const files[] = { "p.db", "p.db-wal", "p.db-shm" };
        char path[128];

        sqlite3_close(db);
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
                snprintf(path, sizeof path, "%s/%s", dir, files[i]);
                unlink(path);
        }
        rmdir(dir);
}

static int add_stack(struct store *s, int64_t resource, int64_t thread, int64_t bucket, const char *names,
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

/* A store of two services' processes, two resources and two time buckets, recursion included,
 * open read-only on DB with the functions registered. */
static int make_store(void) {
        struct store *s = NULL;
        int64_t run, cpu, faults, process, web, sql;
        char path[128];
        int r;

        if (!mkdtemp(dir))
                return -1;
        atexit(remove_store);
        snprintf(path, sizeof path, "%s/p.db", dir);
        r = store_open(path, STORE_WRITE, &s) == 0 && store_begin(s) == 0 &&
                store_add_run(s, &(struct store_run) { .kind = "import", .started = 1000 }, &run) == 0 &&
                store_add_run_resource(s, run, "cpu-time", "1 ns", NULL, 10, &cpu) == 0 &&
                store_add_run_resource(s, run, "page-faults", "1 page fault", NULL, 1, &faults) == 0 &&
                store_add_process(s, run, 10, "nginx", "/usr/sbin/nginx", "nginx.service", 1000, &process) ==
                        0 &&
                store_add_thread(s, process, 10, "nginx", &web) == 0 &&
                store_add_process(s, run, 20, "postgres", "/usr/bin/postgres", "postgresql.service", 1000,
                                  &process) == 0 &&
                store_add_thread(s, process, 20, "postgres", &sql) == 0 &&
                add_stack(s, cpu, web, 3600, "main;serve;sendfile", 30) == 0 &&
                add_stack(s, cpu, web, 7200, "main;serve;parse;parse;parse", 12) == 0 &&
                add_stack(s, cpu, sql, 3600, "main;exec_query;sort;cmp", 50) == 0 &&
                add_stack(s, cpu, sql, 7200, "main;exec_query;sort", 8) == 0 &&
                add_stack(s, faults, web, 3600, "main;serve;malloc", 5) == 0 &&
                add_stack(s, faults, sql, 7200, "main;exec_query;malloc", 9) == 0 && store_commit(s) == 0;
        store_close(s);
        if (!r || sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
            sql_ext_register(db) != SQLITE_OK) {
                fprintf(stderr, "fuzz-sql-ext: cannot make the store in %s\n", dir);
                abort();
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const views[] = { "downward", "upward", "functions", "body" };
        const char *p = (const char *) data, *end = p + size, *args[MAX_ARGS];
        size_t lens[MAX_ARGS], n = 0;
        char sql[256];
        sqlite3_stmt *st = NULL;
        int view, len;

        if (!db)
                make_store();
        if (size == 0)
                return 0;
        view = data[0] % 4;
        p = memchr(p, '\n', size);
        while (p && p + 1 < end && n < MAX_ARGS) { /* a last '\n' ends the input */
                const char *line = p + 1, *nl = memchr(line, '\n', end - line);

                args[n] = line;
                lens[n++] = (nl ? nl : end) - line;
                p = nl;
        }
        if (view >= 2 && n == MAX_ARGS)
                n--; /* functions and body take no root */

        len = snprintf(sql, sizeof sql, "SELECT hits, fraction, ci_low, ci_high FROM %s(", views[view]);
        for (size_t i = 0; i < n; i++)
                len += snprintf(sql + len, sizeof sql - len, "%s?", i ? ", " : "");
        snprintf(sql + len, sizeof sql - len, ")");
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
                abort(); /* the query is ours: it must compile */
        for (size_t i = 0; i < n; i++)
                if (lens[i] == 2 && memcmp(args[i], "\\N", 2) == 0)
                        sqlite3_bind_null(st, i + 1);
                else
                        sqlite3_bind_text(st, i + 1, args[i], lens[i], SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
                sqlite3_int64 hits = sqlite3_column_int64(st, 0);
                double f = sqlite3_column_double(st, 1), lo = sqlite3_column_double(st, 2),
                       hi = sqlite3_column_double(st, 3);

                /* 50 + 30 + 12 + 8 hits of cpu-time, the most of either resource. */
                if (hits < 0 || hits > 100 || !(f >= 0 && f <= 1) || !(lo >= 0 && lo <= f + 1e-12) ||
                    !(hi <= 1 && hi >= f - 1e-12))
                        abort();
        }
        sqlite3_finalize(st);
        return 0;
}
