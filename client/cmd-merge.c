/* cppctl merge --db FLEET.db HOST1.db HOST2.db ...: one store from many, so that one profile spans
 * a fleet (and --host picks a machine back out). Each input is copied in a transaction of its
 * own (common/store/store-write.c, store_merge()): an input that fails leaves the output as the inputs
 * before it made it, and the merge stops there.
 *
 * Merging one input twice is refused, not counted twice: a run is known by its host, kind,
 * start, command, source, kernel, cppd version and unwinder, which together no second run
 * repeats, and an input with a run the output already has was merged before (or is a copy of one
 * that was). The daemon's run grows as long as it runs, so merging its store again later is
 * refused too; merge a fresh copy into a fresh output instead.
 *
 * The output may also be a ClickHouse fleet store, clickhouse://HOST:PORT/DB, given as --db or
 * as -o (the one place -o names a store: a URL is never a report's file). Its inputs are loaded
 * batch by batch (client/fleet.c), and loading one twice counts it once. */
#include "cppctl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "ch-client.h"
#include "fleet-load.h"
#include "fleet-open.h"
#include "log.h"
#include "store-error.h"

struct merge_args {
        const char *db;          /* the store merged into, or a clickhouse:// URL */
        const char *credentials; /* --credentials FILE, for a URL */
        char **inputs;           /* borrowed from argv */
        size_t n_inputs;
};

static int parse_args(struct merge_args *a, int argc, char **argv) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "db", required_argument, NULL, 'd' },
                                                 { "output", required_argument, NULL, 'o' },
                                                 { "credentials", required_argument, NULL, 'c' },
                                                 {} };
        int c;

        *a = (struct merge_args) {};
        optind = 0;
        while ((c = getopt_long(argc, argv, "hd:o:c:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: cppctl merge --db OUTPUT.db INPUT.db...\n"
                               "       cppctl merge -o clickhouse://[USER@]HOST[:PORT]/DB INPUT.db...\n\n"
                               "Copies every run of each INPUT store, with its samples, stacks, processes and\n"
                               "threads, into OUTPUT (made if missing). Each run keeps the host it was\n"
                               "recorded on, so reports over OUTPUT span all inputs and --host NAME picks one.\n"
                               "Stacks, frames, functions and modules are shared by content. Each input goes\n"
                               "in one transaction: a damaged input is refused and leaves OUTPUT as it was.\n"
                               "An input whose runs OUTPUT already has (merged before) is refused.\n\n"
                               "With a clickhouse:// URL (as --db or -o), every run and time bucket of each\n"
                               "INPUT is loaded into that ClickHouse fleet store (made if missing) as one\n"
                               "batch; batches already there are skipped, so loading twice counts once.\n\n"
                               "Options:\n"
                               "  -d, --db FILE|URL      the store to merge into\n"
                               "  -o URL                 the same, for a clickhouse:// URL only\n"
                               "      --credentials FILE the ClickHouse user (first line) and password (second\n"
                               "                         line); default $" CH_CREDENTIALS_ENV "\n"
                               "  -h, --help             this help\n");
                        return 0;
                case 'd':
                        a->db = optarg;
                        break;
                case 'c':
                        a->credentials = optarg;
                        break;
                case 'o':
                        if (ch_url_is(optarg)) {
                                a->db = optarg;
                                break;
                        }
                        return log_error_errno(
                                EINVAL,
                                "merge: -o names a report's file in every cppctl command, "
                                "never a store (unless a clickhouse:// URL); the store to merge into is --db %s",
                                optarg);
                default:
                        return log_error_errno(EINVAL, "try 'cppctl merge --help'");
                }
        if (!a->db)
                return log_error_errno(
                        EINVAL, "merge needs the output store: cppctl merge --db OUTPUT.db INPUT.db...");
        if (optind >= argc)
                return log_error_errno(
                        EINVAL, "merge needs at least one input store: cppctl merge --db %s INPUT.db...",
                        a->db);
        a->inputs = argv + optind;
        a->n_inputs = argc - optind;
        return 1;
}

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
                return EXIT_FAILURE_;
        for (size_t i = 0; i < a->n_inputs; i++) {
                r = fleet_load_store(c, a->inputs[i]);
                if (r < 0) {
                        if (i > 0)
                                log_error("%zu of %zu inputs were loaded before %s.", i, a->n_inputs,
                                          a->inputs[i]);
                        return EXIT_FAILURE_;
                }
        }
        return EXIT_OK;
}

int cmd_merge(int argc, char **argv, const struct verb *verb) {
        _cleanup_(store_closep) struct store *out = NULL;
        struct merge_args a;
        int r;

        r = parse_args(&a, argc, argv);
        if (r <= 0)
                return exit_status(r);
        if (ch_url_is(a.db))
                return merge_into_clickhouse(&a);
        r = check_inputs(&a);
        if (r < 0)
                return exit_status(r);

        r = store_open(a.db, STORE_WRITE, &out);
        if (r < 0)
                return exit_status(log_store_error(r, a.db, out));
        for (size_t i = 0; i < a.n_inputs; i++) {
                r = merge_one(out, a.db, a.inputs[i]);
                if (r < 0) {
                        if (i > 0)
                                log_error("%zu of %zu inputs were merged into %s before %s.", i, a.n_inputs,
                                          a.db, a.inputs[i]);
                        return EXIT_FAILURE_;
                }
        }
        return EXIT_OK;
}
