/* tests/unit/test-store-rename.c: naming after the fact (store-rename.c), worked by hand. A store
 * holds frames of /usr/bin/app stored as addresses, one as a name only ("app+0x10", frames
 * stored as functions) and one with its address kept ("app+0x20", --lines), and one that no
 * sample reaches; the renames replace them by a chain (a function and one inlined into it) and
 * by one function with a line. The profile after must be the one a recording with the debug
 * info at hand would give, every hit where it was; samples added to an old stack later (a
 * daemon writing beside us, with its cached ids) are moved by the next rename, which adds no
 * stack. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"
#include "store-rename.h"
#include "store.h"
#include "tap.h"

static char dir[] = "/tmp/test-store-rename-XXXXXX";

struct ids {
        int64_t resource, thread, module;
        int64_t main_frame, leaf_frame, at10, at20, at30; /* frames */
        int64_t s_main, s_10, s_10_leaf, s_20, s_30;      /* stacks */
};

static int frame_of(struct store *s, const char *name, int64_t module, bool unknown, int64_t address,
                    int64_t *ret) {
        int64_t fn;

        if (store_function_id(s, name, module, unknown, &fn) < 0)
                return -1;
        return store_frame_id(s, fn, address, NULL, 0, false, ret);
}

static int fill(struct store *s, struct ids *x) {
        int64_t run, process;

        if (store_begin(s) < 0 ||
            store_add_run(s, &(struct store_run) { .kind = "record", .started = 1 }, &run) < 0 ||
            store_add_run_resource(s, run, "cpu-time", "1 ms", NULL, 1, &x->resource) < 0 ||
            store_add_process(s, run, 7, "app", "/usr/bin/app", NULL, 1, &process) < 0 ||
            store_add_thread(s, process, 7, "app", &x->thread) < 0 ||
            store_module_id(s, "/usr/bin/app", "aabbccdd", &x->module) < 0 ||
            frame_of(s, "main", x->module, false, -1, &x->main_frame) < 0 ||
            frame_of(s, "leaf", x->module, false, -1, &x->leaf_frame) < 0 ||
            frame_of(s, "app+0x10", x->module, true, -1, &x->at10) < 0 ||
            frame_of(s, "app+0x20", x->module, true, 0x20, &x->at20) < 0 ||
            frame_of(s, "app+0x30", x->module, true, -1, &x->at30) < 0 ||
            store_stack_id(s, 0, x->main_frame, &x->s_main) < 0 ||
            store_stack_id(s, x->s_main, x->at10, &x->s_10) < 0 ||
            store_stack_id(s, x->s_10, x->leaf_frame, &x->s_10_leaf) < 0 ||
            store_stack_id(s, x->s_main, x->at20, &x->s_20) < 0 ||
            store_stack_id(s, x->s_main, x->at30, &x->s_30) < 0 || /* no sample: not reached */
            store_add_samples(s, x->resource, 60, x->thread, x->s_main, 1, 1, 1) < 0 ||
            store_add_samples(s, x->resource, 60, x->thread, x->s_10, 5, 5, 5) < 0 ||
            store_add_samples(s, x->resource, 60, x->thread, x->s_10_leaf, 3, 3, 3) < 0 ||
            store_add_samples(s, x->resource, 60, x->thread, x->s_20, 2, 2, 2) < 0)
                return -1;
        return store_commit(s);
}

static const struct store_name chain10[] = {
        { "outer", "/src/app.c", 40, false },
        { "inl", "/src/app.h", 3, true },
};
static const struct store_name chain20[] = { { "f2", "/src/a.c", 7, false } };

static int rename_all(struct store *s, const struct ids *x, struct store_rename_stats *st) {
        const struct store_rename r[] = {
                { .frame_id = x->at10,
                  .module_id = x->module,
                  .address = 0x10,
                  .chain = chain10,
                  .n_chain = 2 },
                { .frame_id = x->at20,
                  .module_id = x->module,
                  .address = 0x20,
                  .located = true,
                  .chain = chain20,
                  .n_chain = 1 },
        };
        int r0;

        if (store_begin(s) < 0)
                return -1;
        r0 = store_rename_frames(s, r, 2, st);
        if (r0 < 0) {
                store_rollback(s);
                return r0;
        }
        return store_commit(s);
}

static int64_t down_by(struct store *s, enum store_granularity by, const char *root, const char *path_text,
                       struct sample_tree **ret) {
        struct store_filter f = { .resource = "cpu-time", .by = by };
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        int64_t hits;

        if (store_load_tree(s, &f, &t) < 0 || profile_down(t, root, 0, &p) < 0)
                return -2;
        hits = profile_hits(p, path_text);
        if (ret)
                *ret = take_ptr(&t);
        return hits;
}

static int64_t down(struct store *s, const char *root, const char *path_text, struct sample_tree **ret) {
        return down_by(s, STORE_BY_FUNCTION, root, path_text, ret);
}

int main(void) {
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        struct store_unnamed_module *u = NULL;
        struct store_rename_stats st = {};
        struct ids x = {};
        char db[256];
        int n;

        if (!mkdtemp(dir))
                return 1;
        snprintf(db, sizeof db, "%s/s.db", dir);
        ok(store_open(db, STORE_WRITE, &s) == 0 && fill(s, &x) == 0,
           "a store with frames stored as addresses");

        n = store_unnamed_modules(s, true, &u);
        is_int(n, 1, "one module holds unnamed frames that samples reach");
        if (n == 1) {
                ok(streq(u[0].path, "/usr/bin/app") && streq(u[0].build_id, "aabbccdd"),
                   "its path and build id");
                is_int(u[0].n_frames, 2, "two frames: app+0x30 is on no sampled stack");
                ok(u[0].n_frames == 2 && u[0].frames[0] == x.at10 && u[0].addresses[0] == 0x10 &&
                           !u[0].located[0],
                   "app+0x10: the address read from the name");
                ok(u[0].n_frames == 2 && u[0].frames[1] == x.at20 && u[0].addresses[1] == 0x20 &&
                           u[0].located[1],
                   "app+0x20: the address kept in the frame");
        }
        store_unnamed_modules_free(u, n > 0 ? (size_t) n : 0);
        n = store_unnamed_modules(s, false, &u);
        ok(n == 1 && u[0].n_frames == 3 && u[0].frames[2] == x.at30,
           "without reaching: all three, app+0x30 too (a probe of the tables alone)");
        store_unnamed_modules_free(u, n > 0 ? (size_t) n : 0);

        is_int(rename_all(s, &x, &st), 0, "rename");
        is_int(st.frames, 2, "two frames renamed");
        is_int(st.stacks_new, 4, "stacks added: main;outer, main;outer;inl, main;outer;inl;leaf, main;f2");
        is_int(st.samples_moved, 3, "three sample rows moved");
        is_int(down(s, "main", "main", NULL), 11, "every hit still there");
        is_int(down(s, "main", "main outer inl", NULL), 8, "app+0x10 became outer with inl inlined into it");
        is_int(down(s, "main", "main outer inl leaf", NULL), 3, "and its callee stays below it");
        is_int(down(s, "main", "main f2", &t), 2, "app+0x20 became f2");
        ok(t && t->info.frames_unsymbolized == 0, "no frame unsymbolized");
        is_int(down_by(s, STORE_BY_LINE, "main", "main f2 (a.c:7)", NULL), 2,
               "f2 keeps the address and gets the line, as app+0x20 kept its address");
        is_int(down_by(s, STORE_BY_LINE, "main", "main outer inl", NULL), 8,
               "outer and inl get none, as app+0x10 had none (frames stored as functions)");
        ok(t && t->info.frames_named_later == 3 && t->info.modules_named_later == 1,
           "named later: 3 frames from 1 module (%" PRIu64 ", %" PRIu64 ")",
           t ? t->info.frames_named_later : 0, t ? t->info.modules_named_later : 0);
        t = sample_tree_free(t);

        n = store_unnamed_modules(s, true, &u);
        is_int(n, 0, "nothing left to name");
        store_unnamed_modules_free(u, n > 0 ? (size_t) n : 0);

        /* A writer beside us (the daemon) still has the old stack's id, and adds to it. */
        ok(store_begin(s) == 0 && store_add_samples(s, x.resource, 120, x.thread, x.s_10, 4, 4, 4) == 0 &&
                   store_commit(s) == 0,
           "a writer adds 4 hits to the old stack app+0x10");
        is_int(down(s, "main", "main", NULL), 15, "counted once");
        n = store_unnamed_modules(s, true, &u);
        is_int(n, 1, "its frame is unnamed again");
        store_unnamed_modules_free(u, n > 0 ? (size_t) n : 0);
        is_int(rename_all(s, &x, &st), 0, "rename again");
        is_int(st.stacks_new, 0, "no stack added: the twins are found by key");
        is_int(down(s, "main", "main outer inl", NULL), 12, "the 4 hits moved to the named stack");
        is_int(down(s, "main", "main", NULL), 15, "every hit there, once");

        s = store_close(s);
        unlink(db);
        snprintf(db, sizeof db, "%s/s.db-wal", dir);
        unlink(db);
        snprintf(db, sizeof db, "%s/s.db-shm", dir);
        unlink(db);
        rmdir(dir);
        return tap_done();
}
