/* cppctl merge's copying: many stores into one, so that one profile spans a fleet (and --host
 * picks a machine back out). Into a SQLite store, each input is copied in a transaction of its
 * own (common/store/store-write.c, store_merge()): an input that fails leaves the output as the
 * inputs before it made it, and the merge stops there. Merging one input twice is refused, not
 * counted twice (cmd-merge.c says how a run is known). Into a ClickHouse fleet store
 * (clickhouse://HOST:PORT/DB), the inputs are loaded batch by batch (fleet-load.c), and loading
 * one twice counts it once. merge_stores() is where the two are told apart. */
#include "merge.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "ch-client.h"
#include "fleet-load.h"
#include "fleet-open.h"
#include "log.h"
#include "store-error.h"

static bool same_file(const struct stat *x, const struct stat *y) {
        return x->st_dev == y->st_dev && x->st_ino == y->st_ino;
}

/* Refuses an input that is the output (through any name) or is named twice, before anything is
 * written. A missing input is left for store_open() to report. */
static int check_inputs(const struct merge_args *a) {
        _cleanup_free_ struct stat *st = calloc(a->n_inputs, sizeof *st);
        _cleanup_free_ bool *exists = calloc(a->n_inputs, sizeof *exists);
        struct stat out;
        bool have_out;

        if (!st || !exists)
                return log_error_errno(ENOMEM, "Out of memory");
        have_out = stat(a->db, &out) == 0;
        for (size_t i = 0; i < a->n_inputs; i++) {
                exists[i] = stat(a->inputs[i], &st[i]) == 0;
                if (!exists[i])
                        continue;
                if (have_out && same_file(&st[i], &out))
                        return log_error_errno(EINVAL,
                                               "%s is the output store: a store cannot be merged into itself",
                                               a->inputs[i]);
                for (size_t k = 0; k < i; k++)
                        if (exists[k] && same_file(&st[k], &st[i]))
                                return log_error_errno(EINVAL, "%s and %s are the same store: name it once",
                                                       a->inputs[k], a->inputs[i]);
        }
        return 0;
}

/* Merges input PATH into OUT, reporting what happened. Returns 0 or a negative errno after
 * reporting. */
static int merge_one(struct store *out, const char *out_path, const char *path) {
        _cleanup_(store_closep) struct store *in = NULL;
        struct store_merge_stats stats;
        int64_t run = 0;
        int r;

        /* Open it as any reader would: that names a missing file, a foreign one or a version. */
        r = store_open(path, STORE_READ, &in);
        if (r < 0)
                return log_store_error(r, path, in);
        in = store_close(in);

        r = store_merge(out, path, &stats, &run);
        if (r == -EEXIST)
                return log_error_errno(EEXIST,
                                       "%s: its run %" PRId64 " is already in %s (same host, start and "
                                       "command): merged before; nothing of it was merged again",
                                       path, run, out_path);
        if (r == -EOVERFLOW)
                return log_error_errno(EOVERFLOW,
                                       "%s: with it, %s would hold more than 2^62 gticks of %s, past what "
                                       "views can sum; nothing of it was merged",
                                       path, out_path, store_error(out));
        if (r == -EBADMSG || r == -EPROTO || r == -EPROTONOSUPPORT)
                return log_error_errno(EBADMSG,
                                       "%s: damaged, or not a cppd store of this version: %s; nothing of "
                                       "it was merged and %s is as it was",
                                       path, store_error(out), out_path);
        if (r < 0) {
                log_store_error(r, out_path, out);
                return log_error_errno(r, "Nothing of %s was merged into %s.", path, out_path);
        }
        printf("Merged %s into %s: %" PRIu64 " run%s, %" PRIu64 " sample rows, %" PRIu64 " new stacks.\n",
               path, out_path, stats.runs, stats.runs == 1 ? "" : "s", stats.samples, stats.stacks_new);
        return 0;
}

/* Loads each input into the ClickHouse store at A->db. */
static int merge_into_clickhouse(const struct merge_args *a) {
        _cleanup_(ch_client_freep) struct ch_client *c = NULL;
        int r;

        r = fleet_open(a->db, fleet_credentials(a->credentials), true, &c);
        if (r < 0)
                return -EIO;
        for (size_t i = 0; i < a->n_inputs; i++) {
                r = fleet_load_store(c, a->inputs[i]);
                if (r < 0) {
                        if (i > 0)
                                log_error("%zu of %zu inputs were loaded before %s.", i, a->n_inputs,
                                          a->inputs[i]);
                        return -EIO;
                }
        }
        return 0;
}

int merge_stores(const struct merge_args *a) {
        _cleanup_(store_closep) struct store *out = NULL;
        int r;

        if (a->output && !ch_url_is(a->output))
                return log_error_errno(
                        EINVAL,
                        "merge: -o names a report's file in every cppctl command, "
                        "never a store (unless a clickhouse:// URL); the store to merge into is --db %s",
                        a->output);
        if (ch_url_is(a->db))
                return merge_into_clickhouse(a);
        r = check_inputs(a);
        if (r < 0)
                return r;

        r = store_open(a->db, STORE_WRITE, &out);
        if (r < 0)
                return log_store_error(r, a->db, out);
        for (size_t i = 0; i < a->n_inputs; i++) {
                r = merge_one(out, a->db, a->inputs[i]);
                if (r < 0) {
                        if (i > 0)
                                log_error("%zu of %zu inputs were merged into %s before %s.", i, a->n_inputs,
                                          a->db, a->inputs[i]);
                        return -EIO;
                }
        }
        return 0;
}
