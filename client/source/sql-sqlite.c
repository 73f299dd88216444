/* SQL over a store file, read-only. The connection is opened read-only AND an authorizer
 * refuses everything but reading (no INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, ATTACH,
 * DETACH, VACUUM, REINDEX, ANALYZE, and no PRAGMA but the ones that only describe tables), so
 * that no statement can change the file, nor reach another one. The store's views
 * (schemas/README.md) and the call path functions of sql-ext.c are there to query. Several
 * statements separated by ';' run in order, each answer written in turn (render-rows.c). */
#include "source-internal.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "source-names.h"
#include "sql-ext.h"

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

/* Runs ST to the end, writing its rows in FORMAT to OUT. Returns an SQLite result code. */
static int write_rows(sqlite3_stmt *st, enum render_rows_format format, FILE *out) {
        int n = sqlite3_column_count(st), rc;
        _cleanup_(render_rows_freep) struct render_rows *rows = NULL;
        _cleanup_free_ const char **names = calloc(n + 1, sizeof *names);
        _cleanup_free_ struct render_cell *cells = calloc(n + 1, sizeof *cells);

        if (!names || !cells)
                return SQLITE_NOMEM;
        /* The first step may fail (a bad argument to a call path function): then nothing is
         * written, not a header over no rows. */
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                return rc;
        for (int i = 0; i < n; i++)
                names[i] = sqlite3_column_name(st, i);
        if (render_rows_new(format, out, n, names, &rows) < 0)
                return SQLITE_NOMEM;
        for (; rc == SQLITE_ROW; rc = sqlite3_step(st)) {
                for (int i = 0; i < n; i++) {
                        struct render_cell *c = &cells[i];
                        int type;

                        /* Table and CSV write every cell as its text. */
                        if (format != RENDER_ROWS_JSON) {
                                c->type = RENDER_CELL_TEXT;
                                c->text = text_of(st, i);
                                continue;
                        }
                        /* The type first: SQLite's is undefined once the value was converted to
                         * text. JSON writes numbers as numbers, so only its strings need text. */
                        type = sqlite3_column_type(st, i);
                        *c = (struct render_cell) { .type = RENDER_CELL_TEXT };
                        if (type == SQLITE_TEXT || type == SQLITE_BLOB)
                                c->text = text_of(st, i);
                        switch (type) {
                        case SQLITE_NULL:
                                c->type = RENDER_CELL_NULL;
                                break;
                        case SQLITE_INTEGER:
                                c->type = RENDER_CELL_INTEGER;
                                c->integer = sqlite3_column_int64(st, i);
                                break;
                        case SQLITE_FLOAT:
                                c->type = RENDER_CELL_REAL;
                                c->real = sqlite3_column_double(st, i);
                                break;
                        }
                }
                if (render_rows_add(rows, cells) < 0)
                        return SQLITE_NOMEM;
        }
        if (rc != SQLITE_DONE)
                return rc;
        render_rows_finish(rows); /* a write error is the caller's to find, at its flush */
        return SQLITE_OK;
}

/* Reports why a statement failed: refused by the authorizer (-EROFS), or SQLite's words. */
static int report_failure(sqlite3 *c) {
        if (refused)
                return log_error_errno(EROFS, "cppctl sql is read-only: %s refused", refused);
        return log_error_errno(EIO, "%s", sqlite3_errmsg(c));
}

/* The file to run SQL over: DB, or its named copy when debug info found now names frames it
 * holds as addresses (source-names.c), into *ret (NULL: DB itself). A store that cannot be
 * opened as one is left to SQLite's own words. */
static void named_copy(const char *db, char **ret) {
        _cleanup_(store_closep) struct store *s = NULL;

        *ret = NULL;
        if (store_open(db, STORE_READ, &s) >= 0)
                (void) source_names_copy(db, s, ret);
}

int source_sqlite_sql(const char *db, const char *credentials, const char *sql,
                      enum render_rows_format format, FILE *out) {
        _cleanup_free_ char *copy = NULL;
        sqlite3 *c = NULL;
        const char *tail;
        int rc, r = 0;

        if (access(db, R_OK) < 0)
                return log_error_errno(errno, "%s: %m", db);
        named_copy(db, &copy);

        /* As the views open a store: read-only, immutable where a -shm cannot be made. */
        rc = store_sqlite_open_read(copy ?: db, 0, &c);
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
                r = log_error_errno(EIO, "%s: %s", db, c ? sqlite3_errmsg(c) : sqlite3_errstr(rc));
                sqlite3_close(c);
                source_names_remove_copy(copy);
                return r;
        }
        sqlite3_busy_timeout(c, 5000);

        for (tail = sql; tail && *tail;) {
                sqlite3_stmt *st = NULL;

                refused = NULL;
                rc = sqlite3_prepare_v2(c, tail, -1, &st, &tail);
                if (rc != SQLITE_OK) {
                        r = report_failure(c);
                        break;
                }
                if (!st)
                        continue; /* blank or a comment */
                rc = write_rows(st, format, out);
                if (rc != SQLITE_OK)
                        r = report_failure(c); /* VACUUM asks the authorizer as it runs */
                sqlite3_finalize(st);
                if (r < 0)
                        break;
        }
        sqlite3_close(c);
        source_names_remove_copy(copy);
        return r;
}
