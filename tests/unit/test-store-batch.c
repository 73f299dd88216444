/* The bulk writer (store-batch.c) and the bulk transaction (store_begin_bulk()): nodes written
 * without their ids get the ids the batch handed out, parents before children; a new store that
 * no one else has open is written in rollback-journal mode and put back in WAL mode at the
 * commit or the rollback; a store with stacks, or open elsewhere, gets an ordinary transaction;
 * and an import killed mid-write leaves a journal that readers refuse to read past and the next
 * writer rolls back, leaving the store as it was. */
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store-batch.h"
#include "store-internal.h"
#include "store.h"
#include "tap.h"

static char dir[] = "/tmp/test-store-batch-XXXXXX";

static char *path(const char *name) {
        static char buf[4][256];
        static int i;

        i = (i + 1) % 4;
        snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
        return buf[i];
}

static int64_t query_int(struct store *s, const char *sql) {
        int64_t v;

        return store_query_int(s, sql, &v) < 0 ? -1 : v;
}

/* The store's journal mode, as PRAGMA journal_mode names it ("wal", "delete"), or "?". */
static const char *journal_mode(struct store *s) {
        static char mode[16];
        sqlite3_stmt *st;

        snprintf(mode, sizeof mode, "?");
        if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode", -1, &st, NULL) != SQLITE_OK)
                return mode;
        if (sqlite3_step(st) == SQLITE_ROW)
                snprintf(mode, sizeof mode, "%s", (const char *) sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        return mode;
}

/* The frame of the function NAME. Returns its id, or -1. */
static int64_t frame_of(struct store *s, const char *name) {
        int64_t fn, frame;

        if (store_function_id(s, name, 0, false, &fn) < 0 ||
            store_frame_id(s, fn, -1, NULL, 0, false, &frame) < 0)
                return -1;
        return frame;
}

/* One run, resource and thread, and N_CHAINS chains of DEPTH nodes under the root "f" (found or
 * added), each chain a function not seen before under the root, then "f" down to its leaf, a
 * sample row; through a batch. Sets *ret_last to the last node's id. */
static int write_chains(struct store *s, unsigned n_chains, unsigned depth, int64_t *ret_last) {
        _cleanup_(store_batch_freep) struct store_batch *b = NULL;
        int64_t run, res, process, thread, frame, root, id = 0;
        static unsigned chains;
        char name[32];
        int r;

        if (store_add_run(s, &(struct store_run) { .kind = "import", .started = 1 }, &run) < 0 ||
            store_add_run_resource(s, run, "cpu-time", "1 ms", NULL, 1, &res) < 0 ||
            store_add_process(s, run, -1, "test", NULL, NULL, 1, &process) < 0 ||
            store_add_thread(s, process, -1, NULL, &thread) < 0 || (frame = frame_of(s, "f")) < 0 ||
            store_batch_new(s, &b) < 0)
                return -1;
        r = store_batch_find_stack(b, 0, frame, &root);
        if (r == 0)
                r = store_batch_add_stack(b, 0, frame, 1, &root);
        if (r < 0)
                return -1;
        for (unsigned c = 0; c < n_chains; c++) {
                int64_t parent = root, chain;

                snprintf(name, sizeof name, "chain%u", chains++);
                chain = frame_of(s, name);
                if (chain < 0)
                        return -1;
                for (unsigned d = 2; d <= depth; d++) {
                        if (store_batch_add_stack(b, parent, d == 2 ? chain : frame, d, &id) < 0)
                                return -1;
                        parent = id;
                }
                if (store_batch_add_samples(b, res, 60, thread, parent, 1, 1, 1) < 0)
                        return -1;
        }
        *ret_last = id;
        return store_batch_finish(b);
}

static void test_new_store(void) {
        _cleanup_(store_closep) struct store *s = NULL;
        int64_t last = 0, generation;

        ok(store_open(path("new.db"), STORE_WRITE, &s) == 0, "a new store");
        generation = query_int(s, "SELECT generation FROM store_state");
        is_int(store_begin_bulk(s), 1, "its bulk transaction writes the file in place");
        ok(streq(journal_mode(s), "delete"), "in rollback-journal mode meanwhile (%s)", journal_mode(s));
        ok(write_chains(s, 3000, 5, &last) == 0, "3,000 chains of 5 nodes, in batches");
        ok(store_commit(s) == 0, "committed");
        ok(streq(journal_mode(s), "wal"), "then back in WAL mode (%s)", journal_mode(s));
        is_int(query_int(s, "SELECT count(*) FROM stack"), 1 + 3000 * 4, "every node is there");
        is_int(last, 1 + 3000 * 4, "ids were handed out from 1");
        /* Each chain's nodes follow one another, under the root (id 1). */
        is_int(query_int(s,
                         "SELECT count(*) FROM stack AS c JOIN stack AS p ON p.id = c.parent_id "
                         "WHERE c.depth = p.depth + 1 AND (c.id = p.id + 1 OR (p.id = 1 AND c.depth = 2))"),
               3000 * 4, "every node under the parent it was given");
        is_int(query_int(s,
                         "SELECT count(*) FROM sample AS x JOIN stack AS k ON k.id = x.stack_id "
                         "WHERE k.depth = 5"),
               3000, "every sample row on a leaf");
        is_int(query_int(
                       s,
                       "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'sample_%'"),
               3, "the sample triggers are back");
        /* Once for the run's resource row (its trigger), once for the batch's sample rows. */
        is_int(query_int(s, "SELECT generation FROM store_state"), generation + 2,
               "the generation bumped once");

        ok(store_begin_bulk(s) == 0, "a store with stacks gets an ordinary transaction");
        ok(streq(journal_mode(s), "wal"), "in WAL mode");
        ok(write_chains(s, 10, 3, &last) == 0 && store_commit(s) == 0, "and is written so");
        is_int(last, 1 + 3000 * 4 + 10 * 2, "ids go on from the largest (the root is found)");
        ok(store_check(s) == 0, "the store is whole");
}

static void test_open_elsewhere(void) {
        _cleanup_(store_closep) struct store *s = NULL, *other = NULL;
        int64_t last;

        ok(store_open(path("shared.db"), STORE_WRITE, &s) == 0 &&
                   store_open(path("shared.db"), STORE_READ, &other) == 0,
           "a new store, open twice");
        is_int(store_begin_bulk(s), 0, "with a reader there, an ordinary transaction");
        ok(streq(journal_mode(s), "wal"), "in WAL mode (%s)", journal_mode(s));
        ok(write_chains(s, 100, 4, &last) == 0 && store_commit(s) == 0, "written");
        is_int(query_int(other, "SELECT count(*) FROM stack"), 1 + 100 * 3, "and the reader sees it");
}

static void test_rollback(void) {
        _cleanup_(store_closep) struct store *s = NULL;
        int64_t last;

        ok(store_open(path("rolled.db"), STORE_WRITE, &s) == 0, "a new store");
        is_int(store_begin_bulk(s), 1, "a bulk transaction");
        ok(write_chains(s, 1000, 6, &last) == 0, "written");
        store_rollback(s);
        ok(streq(journal_mode(s), "wal"), "rolled back: in WAL mode again (%s)", journal_mode(s));
        is_int(query_int(s, "SELECT count(*) FROM stack"), 0, "no stacks");
        is_int(query_int(
                       s,
                       "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'sample_%'"),
               3, "the sample triggers are there");
        is_int(store_begin_bulk(s), 1, "a bulk transaction again");
        ok(write_chains(s, 10, 2, &last) == 0 && store_commit(s) == 0 && last == 11, "written, ids from 1");
}

/* A reader that opens the store while a bulk import writes its file (holding its exclusive lock)
 * waits for the commit and sees it, as it would see the last commit in WAL mode. */
static void test_reader_waits(void) {
        _cleanup_(store_closep) struct store *r = NULL;
        int fd[2], status = 0;
        char c = 0;
        pid_t pid;

        ok(pipe(fd) == 0, "a pipe");
        pid = fork();
        if (pid == 0) {
                struct store *w = NULL;
                int64_t last;

                close(fd[0]);
                if (store_open(path("waited.db"), STORE_WRITE, &w) < 0 || store_set_cache(w, 256 << 10) < 0 ||
                    store_begin_bulk(w) != 1 || write_chains(w, 20000, 8, &last) < 0 ||
                    write(fd[1], "w", 1) != 1)
                        _exit(1);
                usleep(500 * 1000);
                _exit(store_commit(w) < 0 ? 1 : 0);
        }
        close(fd[1]);
        ok(pid > 0 && read(fd[0], &c, 1) == 1 && c == 'w', "a child wrote 140,000 nodes, uncommitted");
        close(fd[0]);
        ok(store_open(path("waited.db"), STORE_READ, &r) == 0, "a reader opens the store meanwhile");
        is_int(query_int(r, "SELECT count(*) FROM stack"), 1 + 20000 * 7, "and reads it once committed");
        ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the child committed");
}

/* A child writes a bulk transaction past its page cache (so that pages reach the file) and is
 * killed before it commits. */
static void test_interrupted(void) {
        _cleanup_(store_closep) struct store *s = NULL;
        struct store *r = NULL;
        struct stat st;
        int status = 0, rr;
        pid_t pid;

        ok(store_open(path("killed.db"), STORE_WRITE, &s) == 0, "a new store");
        s = store_close(s);
        pid = fork();
        if (pid == 0) {
                struct store *c = NULL;
                int64_t last;

                if (store_open(path("killed.db"), STORE_WRITE, &c) < 0 || store_set_cache(c, 256 << 10) < 0 ||
                    store_begin_bulk(c) != 1 || write_chains(c, 20000, 8, &last) < 0)
                        _exit(1);
                _exit(0); /* no commit, no rollback: as if killed */
        }
        ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "a child wrote 140,000 nodes and died uncommitted");
        ok(stat(path("killed.db-journal"), &st) == 0 && st.st_size > 0, "its journal is left, hot");
        ok(stat(path("killed.db"), &st) == 0 && st.st_size > 1 << 20, "with its pages in the file");
        ok(store_journal_is_hot(path("killed.db")), "store_journal_is_hot() says so");
        rr = store_open(path("killed.db"), STORE_READ, &r);
        ok(rr < 0 || query_int(r, "SELECT count(*) FROM stack") == 0,
           "a reader first is refused or sees the store as it was (%s)",
           rr < 0 ? store_error(NULL) : "opened");
        r = store_close(r);
        ok(store_open(path("killed.db"), STORE_WRITE, &s) == 0, "the next writer opens the store");
        is_int(query_int(s, "SELECT count(*) FROM stack"), 0, "rolled back: no stacks");
        ok(streq(journal_mode(s), "wal"), "in WAL mode (%s)", journal_mode(s));
        ok(!store_journal_is_hot(path("killed.db")), "no hot journal any more");
        ok(store_check(s) == 0, "the store is whole");
        ok(store_open(path("killed.db"), STORE_READ, &r) == 0, "and readable");
        store_close(r);
}

int main(void) {
        if (!mkdtemp(dir))
                return 1;
        test_new_store();
        test_open_elsewhere();
        test_rollback();
        test_interrupted();
        test_reader_waits();
        {
                char cmd[300];

                snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
                if (system(cmd) != 0)
                        diag("could not remove the test directory");
        }
        return tap_done();
}
