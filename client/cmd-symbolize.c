/* cppctl symbolize [--db STORE | clickhouse://...]: names the frames a store holds as addresses ('prog+0x118d') from
 * debug info found now (late-names.c: the file at the module's path if it still has the
 * recorded build id, /usr/lib/debug and --debug-dir, .gnu_debuglink, MiniDebugInfo, debuginfod
 * servers), and writes the names into the store, so that later views and `cppctl sql` read them
 * without looking again. One transaction (store-rename.c says why a writer beside it, the
 * daemon, loses nothing and counts nothing twice); a second run finds nothing more to do, or
 * only what was recorded since. Says how many frames were named and, for each module not found,
 * why. Over a fleet store the names go into its `names` table (ch-names.h), which every view
 * over the fleet reads before it looks for debug info; what the hosts sent stays as it is. */
#include "cppctl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ch-client.h"
#include "ch-names.h"
#include "fleet-open.h"
#include "late-names.h"
#include "log.h"
#include "source-names.h"
#include "store-error.h"
#include "url-util.h"

static void usage(void) {
        printf("Usage: cppctl symbolize [--db STORE | clickhouse://...] [--debug-dir DIR]...\n"
               "                        [--no-debuginfod] [--credentials FILE]\n\n"
               "Names the frames STORE holds as addresses (module+0xoffset: no symbol was at hand\n"
               "when they were recorded) from debug info found now, by each module's build id:\n"
               "the file at the module's path if it still has that build id, /usr/lib/debug and\n"
               "each --debug-dir (.build-id/xx/yyyy.debug, .gnu_debuglink), MiniDebugInfo, and\n"
               "the debuginfod servers of $DEBUGINFOD_URLS (bounded by $DEBUGINFOD_TIMEOUT,\n"
               "$DEBUGINFOD_MAXTIME, $DEBUGINFOD_MAXSIZE; cached in $DEBUGINFOD_CACHE_PATH). The\n"
               "names, with inlined functions and source lines as at record time, are written\n"
               "into STORE in one transaction, safely beside a daemon writing it; running it again\n"
               "names only what came since. Views and 'cppctl sql' look for the same names on\n"
               "their own at each command: after symbolize they need not.\n\n"
               "Over a fleet store (--db clickhouse://HOST[:PORT]/DB) the names go into its\n"
               "'names' table (made if missing; the user needs CREATE TABLE and INSERT), which\n"
               "views over the fleet read first; the stacks the hosts sent stay as they are.\n\n"
               "Options:\n"
               "  -d, --db FILE          the store (default: $CPPD_DB, ./" SOURCE_DEFAULT_DB
               ", or the daemon's)\n"
               "      --debug-dir DIR    look in DIR too, laid out as /usr/lib/debug; repeatable\n"
               "      --no-debuginfod    ask no debuginfod server, whatever $DEBUGINFOD_URLS says\n"
               "      --credentials FILE for clickhouse://: the user (first line) and password\n"
               "                         (second line); default $" CH_CREDENTIALS_ENV "\n"
               "  -h, --help             this help\n");
}

/* Says which modules were not found, and why, and the count of each reason. */
static void report_missing(struct late_names *ln) {
        uint64_t no_id = 0, nowhere = 0, servers = 0, other = 0;

        for (size_t i = 0; i < ln->n_modules; i++) {
                const struct late_names_module *m = &ln->modules[i];
                char status[32];

                if (m->module)
                        continue;
                log_warning("%s%s%s: %s%s", m->path, m->build_id[0] ? " build id " : "", m->build_id,
                            late_names_strerror(m), late_names_http(m, status, sizeof status));
                if (m->error == -ENOKEY)
                        no_id++;
                else if (m->server_error)
                        servers++;
                else if (m->error == -ENOENT)
                        nowhere++;
                else
                        other++;
        }
        if (no_id + nowhere + servers + other > 0)
                printf("not found: %" PRIu64 " without a build id, %" PRIu64
                       " on no server nor here, %" PRIu64 " with the servers down or too slow, %" PRIu64
                       " refused (another build id, not ELF)\n",
                       no_id, nowhere, servers, other);
}

/* Over a fleet store: the names found go into its names table. */
static int symbolize_fleet(const char *url, const char *credentials, struct late_names *ln) {
        _cleanup_(ch_client_freep) struct ch_client *c = NULL;
        struct store_namer namer = { late_names_name, ln };
        struct ch_names_stats st;
        char shown[1024];
        int r;

        r = fleet_open(url, fleet_credentials(credentials), false, &c);
        if (r < 0)
                return exit_status(r);
        r = ch_names_symbolize(c, &namer, &st);
        if (r < 0)
                return exit_status(log_fleet_error(r, c));
        url_redact(url, shown, sizeof shown);
        if (st.frames == 0 && st.frames_before == 0) {
                printf("%s: no frame stored as an address: nothing to name\n", shown);
                return EXIT_OK;
        }
        printf("named %" PRIu64 " of %" PRIu64 " frames stored as addresses, in %" PRIu64 " of %" PRIu64
               " modules (%" PRIu64 " named before; the names kept in %s, table names)\n",
               st.frames_named, st.frames, st.modules_named, st.modules, st.frames_before, shown);
        report_missing(ln);
        return EXIT_OK;
}

int cmd_symbolize(int argc, char **argv, const struct verb *verb) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "db", required_argument, NULL, 'd' },
                                                 { "debug-dir", required_argument, NULL, 'X' },
                                                 { "no-debuginfod", no_argument, NULL, 'N' },
                                                 { "credentials", required_argument, NULL, 'K' },
                                                 {} };
        _cleanup_(late_names_freep) struct late_names *ln = NULL;
        _cleanup_(store_closep) struct store *s = NULL;
        struct late_names_stats st;
        const char *db = NULL, *credentials = NULL;
        bool network = true;
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "hd:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        usage();
                        return EXIT_OK;
                case 'd':
                        db = optarg;
                        break;
                case 'X':
                        if (source_names_add_debug_dir(optarg) < 0)
                                return EXIT_USAGE;
                        break;
                case 'N':
                        network = false;
                        break;
                case 'K':
                        credentials = optarg;
                        break;
                default:
                        log_error("try 'cppctl symbolize --help'");
                        return EXIT_USAGE;
                }
        if (optind < argc) {
                log_error("symbolize takes no argument '%s': the store is --db", argv[optind]);
                return EXIT_USAGE;
        }
        if (!db)
                db = source_default_db();
        r = late_names_new(network, &ln);
        if (r < 0)
                return exit_status(log_error_errno(r, "Out of memory"));
        if (ch_url_is(db))
                return symbolize_fleet(db, credentials, ln);

        r = store_open(db, STORE_WRITE, &s);
        if (r < 0)
                return exit_status(log_store_error(r, db, s));
        r = late_names_apply(ln, s, true, &st);
        if (r < 0)
                return exit_status(
                        log_error_errno(r, "%s: cannot write the names found: %s (the store is as it was)",
                                        db, store_error(s)[0] ? store_error(s) : strerror(-r)));
        if (st.frames == 0) {
                printf("%s: no frame stored as an address: nothing to name\n", db);
                return EXIT_OK;
        }
        printf("named %" PRIu64 " of %" PRIu64 " frames stored as addresses, in %" PRIu64 " of %" PRIu64
               " modules (%" PRIu64 " stacks added, %" PRIu64 " sample rows moved)\n",
               st.frames_named, st.frames, st.modules_named, st.modules, st.stacks_new, st.samples_moved);
        report_missing(ln);
        return EXIT_OK;
}
