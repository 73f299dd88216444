/* cppctl sql: SQL over a store, read-only. The connection is opened read-only AND an authorizer
 * refuses everything but reading (no INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, ATTACH,
 * DETACH, VACUUM, REINDEX, ANALYZE, and no PRAGMA but the ones that only describe tables), so
 * that no statement can change the file, nor reach another one. The store's views
 * (schemas/README.md) and the call path functions of sql-ext.c are there to query. Several
 * statements separated by ';' run in order, each result printed in turn.
 *
 * Output: an aligned table with a header (the default), CSV (RFC 4180, CRLF) or JSON (an array
 * of objects per statement; several statements give one array each, one per line).
 *
 * With a ClickHouse fleet store (cppctl sql clickhouse://HOST:PORT/DB "SELECT ..."), the SQL goes
 * to ClickHouse as it is, one statement, with readonly=1 on the request, so that ClickHouse
 * itself refuses whatever writes or changes a setting; KILL and SYSTEM, which readonly=1 lets
 * through, are refused here. The answer comes back as TabSeparated with names and types and is
 * printed in the same three formats a row at a time as it streams in, as for SQLite. A FORMAT
 * clause is refused: cppctl does the formatting. */
#include "cppctl.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <regex.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ch-client.h"
#include "fleet-open.h"
#include "log.h"
#include "sql-ext.h"

enum sql_format {
        SQL_TABLE,
        SQL_CSV,
        SQL_JSON,
};

/* What the authorizer refused, for the message. */
static const char *refused;

static int authorize(void *userdata, int action, const char *a, const char *b, const char *db,
                     const char *trigger) {
        static const char *const describing[] = {
                "table_info",    "table_xinfo", "table_list",       "index_list",
                "index_info",    "index_xinfo", "foreign_key_list", "database_list",
                "function_list", "module_list", "pragma_list",      "application_id",
                "user_version",  "page_count",  "page_size",        "freelist_count",
        };

        switch (action) {
        case SQLITE_SELECT:
        case SQLITE_READ:
        case SQLITE_FUNCTION:
        case SQLITE_RECURSIVE:
                return SQLITE_OK;
        case SQLITE_PRAGMA:
                /* Reading pragmas only: a name from the list, with no value to set (b: the
                 * argument, which for table_info and friends is a table name, not a value). */
                for (size_t i = 0; i < ELEMENTSOF(describing); i++)
                        if (strcasecmp(a, describing[i]) == 0 &&
                            (!b || strcasecmp(a, "application_id") != 0) &&
                            (!b || strcasecmp(a, "user_version") != 0))
                                return SQLITE_OK;
                refused = "PRAGMA";
                return SQLITE_DENY;
        case SQLITE_INSERT:
                refused = "INSERT";
                return SQLITE_DENY;
        case SQLITE_UPDATE:
                refused = "UPDATE";
                return SQLITE_DENY;
        case SQLITE_DELETE:
                refused = "DELETE";
                return SQLITE_DENY;
        case SQLITE_ATTACH:
                refused = "ATTACH";
                return SQLITE_DENY;
        case SQLITE_DETACH:
                refused = "DETACH";
                return SQLITE_DENY;
        case SQLITE_TRANSACTION:
        case SQLITE_SAVEPOINT:
                return SQLITE_OK; /* harmless on a read-only connection */
        default:
                refused = "a statement that writes";
                return SQLITE_DENY;
        }
}

/* A column's value as text for the table and CSV ("" for NULL). */
static const char *text_of(sqlite3_stmt *st, int i) {
        const unsigned char *t = sqlite3_column_text(st, i);

        return t ? (const char *) t : "";
}

static void csv_field(FILE *f, const char *s) {
        if (!strpbrk(s, ",\"\r\n")) {
                fputs(s, f);
                return;
        }
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"')
                        fputc('"', f);
                fputc(*s, f);
        }
        fputc('"', f);
}

/* Table output streams: the column widths are measured over the header and the first
 * SQL_TABLE_BATCH rows (fewer if they hold more than SQL_TABLE_HELD_MAX bytes), which are held
 * until then; later rows are printed as they come with those widths (a longer cell pushes the
 * rest of its line out), as the sqlite3 shell's column mode does. Output starts at once and
 * memory stays bounded for any number of rows; holding them all, as before, took time quadratic
 * in the cells and printed nothing until the end. */
#define SQL_TABLE_BATCH 1000
#define SQL_TABLE_HELD_MAX (16u << 20)

struct table {
        int n;         /* columns */
        size_t *width; /* bytes, per column, over the held rows */
        char **held;   /* (1 + SQL_TABLE_BATCH) * n cells, the header first */
        size_t n_held; /* rows held, the header included */
        size_t held_bytes;
        char **row;     /* n cells: the row being added */
        bool streaming; /* the held rows are out: print each row as it comes */
};

static void table_done(struct table *t) {
        for (size_t k = 0; t->held && k < t->n_held * (size_t) t->n; k++)
                free(t->held[k]);
        t->held = mfree(t->held);
        t->width = mfree(t->width);
        t->row = mfree(t->row);
}

/* One row of T's cells (CELLS[0..n)), padded to the widths; the last column is not padded, so
 * lines carry no trailing blanks. */
static void table_print(const struct table *t, char *const *cells, FILE *out) {
        for (int i = 0; i < t->n; i++)
                fprintf(out, "%s%-*s", i ? "  " : "", i + 1 < t->n ? (int) t->width[i] : 0, cells[i]);
        fputc('\n', out);
}

/* Prints the held rows, the line under the header included, and streams from then on. */
static void table_flush(struct table *t, FILE *out) {
        for (size_t r = 0; r < t->n_held; r++) {
                table_print(t, t->held + r * t->n, out);
                if (r == 0) {
                        for (int i = 0; i < t->n; i++)
                                for (size_t w = 0; w < t->width[i] + (i + 1 < t->n ? 2 : 0); w++)
                                        fputc('-', out);
                        fputc('\n', out);
                }
        }
        for (size_t k = 0; k < t->n_held * (size_t) t->n; k++)
                t->held[k] = mfree(t->held[k]);
        t->n_held = t->held_bytes = 0;
        t->streaming = true;
}

/* Adds the row of CELLS (t->n of them, copied). Returns 0 or -ENOMEM. */
static int table_add_cells(struct table *t, char *const *cells, FILE *out) {
        if (t->streaming) {
                table_print(t, cells, out);
                return 0;
        }
        for (int i = 0; i < t->n; i++) {
                char *copy = strdup(cells[i]);

                if (!copy)
                        return -ENOMEM;
                t->held[t->n_held * t->n + i] = copy;
                t->width[i] = MAX(t->width[i], strlen(copy));
                t->held_bytes += strlen(copy) + 1;
        }
        if (++t->n_held == 1 + SQL_TABLE_BATCH || t->held_bytes > SQL_TABLE_HELD_MAX)
                table_flush(t, out);
        return 0;
}

static int table_init(struct table *t, int n) {
        *t = (struct table) { .n = n };
        t->width = calloc(n, sizeof *t->width);
        t->held = calloc((1 + SQL_TABLE_BATCH) * (size_t) n, sizeof *t->held);
        t->row = calloc(n, sizeof *t->row);
        return t->width && t->held && t->row ? 0 : -ENOMEM;
}

/* Adds a row: the header's names (ST NULL: NAMES), or ST's current row. Returns an SQLite code. */
static int table_add(struct table *t, sqlite3_stmt *st, sqlite3_stmt *names, FILE *out) {
        char **row = t->row;

        for (int i = 0; i < t->n; i++)
                row[i] = (char *) (st ? text_of(st, i) : sqlite3_column_name(names, i));
        return table_add_cells(t, row, out) < 0 ? SQLITE_NOMEM : SQLITE_OK;
}

/* Runs ST to the end, printing its rows in FORMAT. Returns an SQLite result code. */
static int print_rows(sqlite3_stmt *st, enum sql_format format, FILE *out) {
        int n = sqlite3_column_count(st), rc;
        _cleanup_(table_done) struct table table = { .n = n };
        size_t rows = 0;

        /* The first step may fail (a bad argument to a call path function): then nothing is
         * printed, not a header over no rows. */
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                return rc;
        if (format == SQL_TABLE && n > 0 &&
            (table_init(&table, n) < 0 || table_add(&table, NULL, st, out) != SQLITE_OK))
                return SQLITE_NOMEM;
        if (format == SQL_CSV) {
                for (int i = 0; i < n; i++) {
                        fputs(i ? "," : "", out);
                        csv_field(out, sqlite3_column_name(st, i));
                }
                fputs("\r\n", out);
        }
        if (format == SQL_JSON)
                fputc('[', out);
        for (; rc == SQLITE_ROW; rc = sqlite3_step(st)) {
                if (format == SQL_JSON)
                        fputs(rows ? ",\n {" : "{", out);
                if (format == SQL_TABLE && n > 0 && table_add(&table, st, NULL, out) != SQLITE_OK)
                        return SQLITE_NOMEM;
                for (int i = 0; i < n && format != SQL_TABLE; i++) {
                        switch (format) {
                        case SQL_TABLE:
                                break;
                        case SQL_CSV:
                                fputs(i ? "," : "", out);
                                csv_field(out, text_of(st, i));
                                break;
                        case SQL_JSON:
                                fputs(i ? ", " : "", out);
                                json_write_string(out, sqlite3_column_name(st, i));
                                fputs(": ", out);
                                switch (sqlite3_column_type(st, i)) {
                                case SQLITE_NULL:
                                        fputs("null", out);
                                        break;
                                case SQLITE_INTEGER:
                                        fprintf(out, "%lld", (long long) sqlite3_column_int64(st, i));
                                        break;
                                case SQLITE_FLOAT:
                                        fprintf(out, "%.17g", sqlite3_column_double(st, i));
                                        break;
                                default:
                                        json_write_string(out, text_of(st, i));
                                }
                                break;
                        }
                }
                if (format == SQL_CSV)
                        fputs("\r\n", out);
                if (format == SQL_JSON)
                        fputc('}', out);
                rows++;
        }
        if (format == SQL_JSON)
                fputs("]\n", out);
        if (format == SQL_TABLE && n > 0 && !table.streaming)
                table_flush(&table, out);
        return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Reports why a statement failed: refused by the authorizer (EXIT_USAGE), or SQLite's words. */
static int report_failure(sqlite3 *c) {
        if (refused) {
                log_error("cppctl sql is read-only: %s refused", refused);
                return EXIT_USAGE;
        }
        log_error("%s", sqlite3_errmsg(c));
        return EXIT_FAILURE_;
}

/* Whether ClickHouse type TYPE prints as a JSON number (NULLs aside). */
static bool ch_type_numeric(const char *type) {
        if (strncmp(type, "Nullable(", 9) == 0)
                type += 9;
        return strncmp(type, "UInt", 4) == 0 || strncmp(type, "Int", 3) == 0 ||
                strncmp(type, "Float", 5) == 0;
}

/* Splits the TabSeparated line [P, END) into exactly N unescaped fields in CELLS. ClickHouse
 * writes NULL as \N, which NULLS (may be NULL) marks. Returns 0 or -EBADMSG. */
static int ch_fields(char *p, char *end, int n, char **cells, bool *nulls) {
        for (int i = 0; i < n; i++) {
                char *tab = memchr(p, '\t', end - p), *stop = tab ?: end;
                bool null = stop - p == 2 && p[0] == '\\' && p[1] == 'N';

                if ((i + 1 < n) != !!tab || (!null && ch_tsv_unescape(p, stop - p) < 0))
                        return -EBADMSG;
                if (null)
                        p[0] = 0;
                cells[i] = p;
                if (nulls)
                        nulls[i] = null;
                p = tab ? tab + 1 : end;
        }
        return 0;
}

/* The first word of SQL, past blanks and comments, when it is a statement that ClickHouse's
 * readonly=1 lets through though it acts on the server (KILL QUERY ends others' queries; SYSTEM
 * drops caches, stops merges, reloads dictionaries); NULL otherwise. */
static const char *ch_refused_statement(const char *sql) {
        static const char *const words[] = { "KILL", "SYSTEM" };
        const char *p = sql;

        for (;;) {
                p += strspn(p, " \t\r\n\f\v");
                if (startswith(p, "--") || *p == '#')
                        p += strcspn(p, "\n");
                else if (startswith(p, "/*")) {
                        const char *end = strstr(p + 2, "*/");

                        if (!end)
                                return NULL; /* all comment: ClickHouse says what it makes of it */
                        p = end + 2;
                } else
                        break;
        }
        for (size_t i = 0; i < ELEMENTSOF(words); i++) {
                size_t n = strlen(words[i]);

                if (strncasecmp(p, words[i], n) == 0 && !isalnum((unsigned char) p[n]) && p[n] != '_')
                        return words[i];
        }
        return NULL;
}

/* Whether SQL ends in a FORMAT clause. */
static bool has_format_clause(const char *sql) {
        regex_t re;
        bool found;

        if (regcomp(&re, "[[:space:]]FORMAT[[:space:]]+[[:alnum:]_]+[[:space:];]*$",
                    REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0)
                return false;
        found = regexec(&re, sql, 0, NULL, 0) == 0;
        regfree(&re);
        return found;
}

/* A ClickHouse answer as it streams in (ch_query_lines()): its names line, its types line, then
 * a row a line, each printed as it comes, so that memory stays bounded whatever the answer's
 * size (a row at most CH_LINE_MAX bytes, the table's first SQL_TABLE_BATCH rows held). */
struct ch_answer {
        enum sql_format format;
        int n; /* columns; 0 until the names line */
        size_t lines, rows;
        char **names, **types; /* copies: the line buffer is reused */
        char **cells;          /* the row being printed, in the line buffer */
        bool *nulls;
        struct table table;
};

static void ch_answer_done(struct ch_answer *a) {
        for (int i = 0; i < a->n; i++) {
                free(a->names ? a->names[i] : NULL);
                free(a->types ? a->types[i] : NULL);
        }
        free(a->names);
        free(a->types);
        free(a->cells);
        free(a->nulls);
        table_done(&a->table);
}

/* Copies the N fields of LINE (LEN bytes) into *ret, a new array of new strings (freed by
 * ch_answer_done() even when this fails halfway). */
static int ch_header(char *line, size_t len, int n, char ***ret) {
        _cleanup_free_ char **fields = calloc(n, sizeof *fields);
        char **copy;

        if (!fields)
                return -ENOMEM;
        if (ch_fields(line, line + len, n, fields, NULL) < 0)
                return -EBADMSG;
        copy = calloc(n, sizeof *copy);
        if (!copy)
                return -ENOMEM;
        *ret = copy;
        for (int i = 0; i < n; i++)
                if (!(copy[i] = strdup(fields[i])))
                        return -ENOMEM;
        return 0;
}

/* The header of the answer, once both its lines are in. */
static int ch_print_header(struct ch_answer *a) {
        if (a->format == SQL_TABLE &&
            (table_init(&a->table, a->n) < 0 || table_add_cells(&a->table, a->names, stdout) < 0))
                return -ENOMEM;
        if (a->format == SQL_CSV) {
                for (int i = 0; i < a->n; i++) {
                        fputs(i ? "," : "", stdout);
                        csv_field(stdout, a->names[i]);
                }
                fputs("\r\n", stdout);
        }
        if (a->format == SQL_JSON)
                fputc('[', stdout);
        return 0;
}

static int ch_print_row(struct ch_answer *a) {
        switch (a->format) {
        case SQL_TABLE:
                return table_add_cells(&a->table, a->cells, stdout);
        case SQL_CSV:
                for (int i = 0; i < a->n; i++) {
                        fputs(i ? "," : "", stdout);
                        csv_field(stdout, a->cells[i]);
                }
                fputs("\r\n", stdout);
                break;
        case SQL_JSON:
                fputs(a->rows ? ",\n {" : "{", stdout);
                for (int i = 0; i < a->n; i++) {
                        fputs(i ? ", " : "", stdout);
                        json_write_string(stdout, a->names[i]);
                        fputs(": ", stdout);
                        if (a->nulls[i])
                                fputs("null", stdout);
                        else if (ch_type_numeric(a->types[i]) && *a->cells[i] &&
                                 !strpbrk(a->cells[i], "naif"))
                                fputs(a->cells[i], stdout); /* not nan, inf: JSON has no such numbers */
                        else
                                json_write_string(stdout, a->cells[i]);
                }
                fputc('}', stdout);
                break;
        }
        return 0;
}

static int ch_answer_line(char *line, size_t len, void *userdata) {
        struct ch_answer *a = userdata;
        int r;

        switch (a->lines++) {
        case 0: /* the names: their count is the columns' */
                a->n = 1;
                for (size_t i = 0; i < len; i++)
                        a->n += line[i] == '\t';
                a->cells = calloc(a->n, sizeof *a->cells);
                a->nulls = calloc(a->n, sizeof *a->nulls);
                if (!a->cells || !a->nulls)
                        return -ENOMEM;
                return ch_header(line, len, a->n, &a->names);
        case 1:
                r = ch_header(line, len, a->n, &a->types);
                return r < 0 ? r : ch_print_header(a);
        default:
                if (ch_fields(line, line + len, a->n, a->cells, a->nulls) < 0)
                        return -EBADMSG;
                r = ch_print_row(a);
                a->rows++;
                return r;
        }
}

static int sql_clickhouse(const char *url, const char *credentials, const char *sql, enum sql_format format) {
        _cleanup_(ch_client_freep) struct ch_client *c = NULL;
        _cleanup_(ch_answer_done) struct ch_answer a = { .format = format };
        const char *refused_word;
        int r;

        if (has_format_clause(sql)) {
                log_error("cppctl sql formats the answer itself: leave out the FORMAT clause (use --format)");
                return EXIT_USAGE;
        }
        refused_word = ch_refused_statement(sql);
        if (refused_word) {
                log_error(
                        "cppctl sql is read-only: %s refused (ClickHouse's readonly=1 lets KILL QUERY and SYSTEM "
                        "statements through, which act on the server)",
                        refused_word);
                return EXIT_USAGE;
        }
        r = fleet_open(url, fleet_credentials(credentials), false, &c);
        if (r < 0)
                return EXIT_FAILURE_;
        r = ch_query_lines(c, sql, CH_QUERY_READONLY | CH_QUERY_NAMES_TYPES, ch_answer_line, &a);
        if (r == -EROFS) {
                log_error("cppctl sql is read-only: ClickHouse refused the statement (%s)",
                          ch_client_error(c));
                return EXIT_USAGE;
        }
        if (r == -EBADMSG && !*ch_client_error(c)) {
                log_error(
                        "%s answered in a form cppctl cannot read (a TabSeparated table with names and types "
                        "expected)",
                        url);
                return EXIT_FAILURE_;
        }
        if (r == -ENOMEM) {
                log_error_errno(r, "Out of memory");
                return EXIT_FAILURE_;
        }
        if (r < 0) {
                log_fleet_error(r, c);
                return EXIT_FAILURE_;
        }
        if (a.lines == 0)
                return EXIT_OK; /* a statement without a result set */
        if (a.lines == 1) {
                log_error(
                        "%s answered in a form cppctl cannot read (a TabSeparated table with names and types "
                        "expected)",
                        url);
                return EXIT_FAILURE_;
        }
        if (format == SQL_JSON)
                fputs("]\n", stdout);
        if (format == SQL_TABLE && !a.table.streaming)
                table_flush(&a.table, stdout);
        if (fflush(stdout) != 0) {
                log_error_errno(errno, "Cannot write: %m");
                return EXIT_FAILURE_;
        }
        return EXIT_OK;
}

int cmd_sql(int argc, char **argv, const struct verb *verb) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "db", required_argument, NULL, 'd' },
                                                 { "format", required_argument, NULL, 'f' },
                                                 { "credentials", required_argument, NULL, 'K' },
                                                 {} };
        enum sql_format format = SQL_TABLE;
        const char *db = NULL, *sql, *tail, *credentials = NULL;
        sqlite3 *c = NULL;
        int opt, rc, status = EXIT_OK;

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
                               "$" CH_CREDENTIALS_ENV ") holds the user and the password.\n");
                        return EXIT_OK;
                case 'd':
                        db = optarg;
                        break;
                case 'K':
                        credentials = optarg;
                        break;
                case 'f':
                        if (streq(optarg, "table"))
                                format = SQL_TABLE;
                        else if (streq(optarg, "csv"))
                                format = SQL_CSV;
                        else if (streq(optarg, "json"))
                                format = SQL_JSON;
                        else {
                                log_error("--format %s: expected table, csv or json", optarg);
                                return EXIT_USAGE;
                        }
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
        if (ch_url_is(db))
                return sql_clickhouse(db, credentials, sql, format);
        if (access(db, R_OK) < 0) {
                log_error_errno(errno, "%s: %m", db);
                return EXIT_FAILURE_;
        }

        /* As the views open a store: read-only, immutable where a -shm cannot be made. */
        rc = store_sqlite_open_read(db, 0, &c);
        if (rc == SQLITE_OK)
                rc = sql_ext_register(c);
        /* Connecting an eponymous table for the first time declares it in the schema, which the
         * authorizer would take for a write: connect them all before it is in place. */
        for (size_t i = 0; rc == SQLITE_OK && i < ELEMENTSOF(sql_ext_tables); i++) {
                _cleanup_free_ char *q = NULL;
                sqlite3_stmt *st = NULL;

                if (asprintf(&q, "SELECT path FROM %s", sql_ext_tables[i]) < 0)
                        rc = SQLITE_NOMEM;
                else
                        rc = sqlite3_prepare_v2(c, q, -1, &st, NULL);
                sqlite3_finalize(st);
        }
        if (rc == SQLITE_OK)
                rc = sqlite3_set_authorizer(c, authorize, NULL);
        if (rc != SQLITE_OK) {
                log_error("%s: %s", db, c ? sqlite3_errmsg(c) : sqlite3_errstr(rc));
                sqlite3_close(c);
                return EXIT_FAILURE_;
        }
        sqlite3_busy_timeout(c, 5000);

        for (tail = sql; tail && *tail;) {
                sqlite3_stmt *st = NULL;

                refused = NULL;
                rc = sqlite3_prepare_v2(c, tail, -1, &st, &tail);
                if (rc != SQLITE_OK) {
                        status = report_failure(c);
                        break;
                }
                if (!st)
                        continue; /* blank or a comment */
                rc = print_rows(st, format, stdout);
                if (rc != SQLITE_OK)
                        status = report_failure(c); /* VACUUM asks the authorizer as it runs */
                sqlite3_finalize(st);
                if (status != EXIT_OK)
                        break;
        }
        sqlite3_close(c);
        if (fflush(stdout) != 0) {
                log_error_errno(errno, "Cannot write: %m");
                return EXIT_FAILURE_;
        }
        return status;
}
