/* cppctl import: samples from other tools into a store, a folded-stacks file (--folded FILE,
 * import/import-folded.c) or perf's recording (a perf.data, import/import-perf-data.c). This
 * file holds the options; the importers are in import/. */
#include "cppctl.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "import-folded.h"
#include "import-perf-data.h"
#include "log.h"
#include "parse-util.h"
#include "resource.h"
#include "strv.h"

struct import_args {
        struct import_folded_args folded; /* --folded FILE and what goes with it */
        const char *perf_data;            /* cppctl import FILE: perf's recording */
        bool kernel;                      /* perf.data: keep kernel frames */
        bool lines;                       /* perf.data: keep call sites */
};

static int parse_args(struct import_args *a, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },          { "db", required_argument, NULL, 'd' },
                { "folded", required_argument, NULL, 'f' },  { "resource", required_argument, NULL, 'r' },
                { "period", required_argument, NULL, 'p' },  { "unit", required_argument, NULL, 'U' },
                { "host", required_argument, NULL, 'H' },    { "time", required_argument, NULL, 'T' },
                { "service", required_argument, NULL, 'S' }, { "kernel", no_argument, NULL, 'k' },
                { "lines", no_argument, NULL, 'l' },         {}
        };
        int c;

        *a = (struct import_args) { .folded = { .db = getenv("CPPD_DB") ?: SOURCE_DEFAULT_DB, .period = 1 } };
        optind = 0;
        while ((c = getopt_long(argc, argv, "hd:f:r:p:k", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: cppctl import --folded FILE --resource NAME [--period N] [--db FILE]\n"
                               "       cppctl import [--db FILE] [--kernel] [--lines] perf.data\n\n"
                               "A perf.data (perf record, frame pointers or --call-graph dwarf) becomes one run\n"
                               "with a resource per event; samples weigh their periods; its processes' binaries\n"
                               "are symbolized from this machine, as perf report does; frames are stored as\n"
                               "functions, or with --lines as call sites (address, file:line) for '--by line'.\n\n"
                               "Stores the stacks of FILE ('-': stdin), one per line, root first:\n"
                               "    main;f;g 12\n"
                               "as one run of resource NAME sampled every N gticks. Several imports may go\n"
                               "into one store, e.g. one per resource. A bad line is reported with its\n"
                               "number and nothing is stored.\n\n"
                               "Options:\n"
                               "  -f, --folded FILE      the folded stacks\n"
                               "  -r, --resource NAME    cpu-time, page-faults, ... or any event name\n"
                               "  -p, --period N         gticks per sample (default 1)\n"
                               "      --unit TEXT        what a gtick is, for a resource cppd does not know\n"
                               "      --host NAME        the machine the samples came from (default: this one)\n"
                               "      --time TIME        when they were taken: '2026-11-22 10:00', '@UNIXTIME'\n"
                               "                         (default: now); the run's start and the samples' bucket\n"
                               "      --service UNIT     the systemd unit the samples' process ran in\n"
                               "  -k, --kernel           perf.data: keep kernel frames\n"
                               "      --lines            perf.data: keep call sites, not functions\n"
                               "  -d, --db FILE          the store (default: $CPPD_DB or ./" SOURCE_DEFAULT_DB
                               ")\n"
                               "  -h, --help             this help\n");
                        return 0;
                case 'd':
                        a->folded.db = optarg;
                        break;
                case 'f':
                        a->folded.file = optarg;
                        break;
                case 'r':
                        a->folded.resource = optarg;
                        break;
                case 'p':
                        if (safe_atou64_range(optarg, 1, INT64_MAX, &a->folded.period) < 0)
                                return log_error_errno(
                                        EINVAL, "--period %s: expected a whole number of gticks, at least 1",
                                        optarg);
                        break;
                case 'U':
                        a->folded.unit = optarg;
                        break;
                case 'H':
                        if (!*optarg)
                                return log_error_errno(EINVAL, "--host: expected a host name");
                        a->folded.host = optarg;
                        break;
                case 'k':
                        a->kernel = true;
                        break;
                case 'l':
                        a->lines = true;
                        break;
                case 'S':
                        if (!*optarg)
                                return log_error_errno(EINVAL, "--service: expected a unit name");
                        a->folded.service = optarg;
                        break;
                case 'T':
                        if (parse_timestamp(optarg, time(NULL), &a->folded.time) < 0 || a->folded.time <= 0)
                                return log_error_errno(
                                        EINVAL,
                                        "--time %s: expected a time such as '2026-11-22 10:00' "
                                        "or '@1700000000'",
                                        optarg);
                        break;
                default:
                        return log_error_errno(EINVAL, "try 'cppctl import --help'");
                }
        if (!a->folded.file && optind < argc) {
                a->perf_data = argv[optind++];
                return optind < argc ?
                        log_error_errno(EINVAL, "import: unexpected argument '%s'", argv[optind]) :
                        1;
        }
        if (optind < argc)
                return log_error_errno(EINVAL, "import: unexpected argument '%s'", argv[optind]);
        if (!a->folded.file)
                return log_error_errno(EINVAL, "import needs --folded FILE, or a perf.data file");
        if (!a->folded.resource)
                return log_error_errno(EINVAL, "import needs --resource NAME (e.g. cpu-time)");
        if (!resource_name_valid(a->folded.resource))
                return log_error_errno(EINVAL, "--resource '%s': use letters, digits and ':_.-'",
                                       a->folded.resource);
        return 1;
}

int cmd_import(int argc, char **argv, const struct verb *verb) {
        _cleanup_free_ char *command = NULL;
        struct import_args a;
        int r;

        r = parse_args(&a, argc, argv);
        if (r <= 0)
                return exit_status(r);
        if (a.perf_data)
                return import_perf_data(a.perf_data, a.folded.db, a.kernel, a.lines, a.folded.host);
        command = strv_join(argv, " ");
        if (!command) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        a.folded.command = command;
        return import_folded(&a.folded);
}
