/* cppctl merge --db FLEET.db HOST1.db HOST2.db ...: one store from many, so that one profile spans
 * a fleet (and --host picks a machine back out); the copying is import/merge.c's.
 *
 * Merging one input twice is refused, not counted twice: a run is known by its host, kind,
 * start, command, source, kernel, cppd version and unwinder, which together no second run
 * repeats, and an input with a run the output already has was merged before (or is a copy of one
 * that was). The daemon's run grows as long as it runs, so merging its store again later is
 * refused too; merge a fresh copy into a fresh output instead.
 *
 * The output may also be a ClickHouse fleet store, clickhouse://HOST:PORT/DB, given as --db or
 * as -o (the one place -o names a store: a URL is never a report's file). Its inputs are loaded
 * batch by batch (import/fleet-load.c), and loading one twice counts it once. */
#include "cppctl.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "ch-client.h"
#include "log.h"
#include "merge.h"

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
                        /* a clickhouse:// URL only: merge_stores() refuses a file */
                        a->db = a->output = optarg;
                        break;
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

int cmd_merge(int argc, char **argv, const struct verb *verb) {
        struct merge_args a;
        int r;

        r = parse_args(&a, argc, argv);
        if (r <= 0)
                return exit_status(r);
        return exit_status(merge_stores(&a));
}
