/* cppctl sql: SQL over a store, read-only, through the source interface (source_sql(): a store
 * file with the call path functions of sql-ext.c, sql-sqlite.c; or a ClickHouse fleet store,
 * sql-clickhouse.c, which say how each keeps it read-only).
 *
 * Output (render-rows.c): an aligned table with a header (the default), CSV (RFC 4180, CRLF) or
 * JSON (an array of objects per statement; several statements give one array each, one per
 * line), written a row at a time as the answer comes. */
#include "cppctl.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "ch-client.h"
#include "log.h"
#include "source-names.h"

int cmd_sql(int argc, char **argv, const struct verb *verb) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "db", required_argument, NULL, 'd' },
                                                 { "format", required_argument, NULL, 'f' },
                                                 { "credentials", required_argument, NULL, 'K' },
                                                 { "debug-dir", required_argument, NULL, 'X' },
                                                 {} };
        enum render_rows_format format = RENDER_ROWS_TABLE;
        const char *db = NULL, *sql, *credentials = NULL;
        int opt, r;

        optind = 0;
        while ((opt = getopt_long(argc, argv, "hd:f:", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        printf("Usage: cppctl sql [--db DB | DB] [--format table|csv|json] \"SELECT ...\"\n\n"
                               "SQL over a store, read-only: writes, ATTACH and pragmas that set anything are\n"
                               "refused. The tables and views are described in schemas/README.md; the call path\n"
                               "profiles are table-valued functions:\n"
                               "  downward(root, resource, ...)  upward(root, resource, ...)\n"
                               "  functions(resource, ...)       body(resource, ...)\n"
                               "with columns path, leaf, depth, hits, fraction, ci_low, ci_high and the filters\n"
                               "threshold unit pid comm exe since until run host by inline focus ignore hide.\n"
                               "Several statements separated by ';' run in order. Rows are written as they\n"
                               "come; a table's columns are as wide as in its first 1,000 rows.\n\n"
                               "DB may be a ClickHouse fleet store, clickhouse://[USER@]HOST[:PORT]/DB: the\n"
                               "statement (one, without a FORMAT clause) runs there with readonly=1, over the\n"
                               "tables of schemas/README.md's fleet section (KILL and SYSTEM, which readonly=1\n"
                               "lets through, are refused); --credentials FILE (default\n"
                               "$" CH_CREDENTIALS_ENV ") holds the user and the password.\n\n"
                               "Frames a store holds as addresses are named from debug info found now, as in\n"
                               "the views: --debug-dir DIR (repeatable) and $DEBUGINFOD_URLS say where else to\n"
                               "look; the statements then run over a named copy of the store ('cppctl symbolize'\n"
                               "writes the names into the store itself).\n");
                        return EXIT_OK;
                case 'd':
                        db = optarg;
                        break;
                case 'K':
                        credentials = optarg;
                        break;
                case 'X':
                        if (source_names_add_debug_dir(optarg) < 0)
                                return EXIT_USAGE;
                        break;
                case 'f':
                        r = render_rows_format_from_name(optarg);
                        if (r < 0) {
                                log_error("--format %s: expected " RENDER_ROWS_FORMATS, optarg);
                                return EXIT_USAGE;
                        }
                        format = r;
                        break;
                default:
                        return EXIT_USAGE;
                }
        if (argc - optind == 2)
                db = argv[optind++];
        if (argc - optind != 1) {
                log_error("usage: cppctl sql [--db DB | DB] \"SELECT ...\"");
                return EXIT_USAGE;
        }
        sql = argv[optind];
        if (!db)
                db = source_default_db();
        r = source_sql(db, credentials, sql, format, stdout);
        if (fflush(stdout) != 0) {
                log_error_errno(errno, "Cannot write: %m");
                return EXIT_FAILURE_;
        }
        if (r == -EROFS)
                return EXIT_USAGE; /* a statement refused: it writes, or formats */
        return r < 0 ? EXIT_FAILURE_ : EXIT_OK;
}
