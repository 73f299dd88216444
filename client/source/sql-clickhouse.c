/* SQL over a ClickHouse fleet store (cppctl sql clickhouse://HOST:PORT/DB "SELECT ..."): the
 * statement goes to ClickHouse as it is, one statement, with readonly=1 on the request, so that
 * ClickHouse itself refuses whatever writes or changes a setting; KILL and SYSTEM, which
 * readonly=1 lets through, are refused here. The answer comes back as TabSeparated with names
 * and types and is written as it streams in (render-rows.c), a row at a time, as for SQLite. A
 * FORMAT clause is refused: cppctl does the formatting. */
#include "source-internal.h"

#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ch-client.h"
#include "fleet-open.h"
#include "log.h"

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
 * a row a line, each written as it comes, so that memory stays bounded whatever the answer's
 * size (a row at most CH_LINE_MAX bytes, the table's first rows held). */
struct ch_answer {
        enum render_rows_format format;
        FILE *out;
        int n; /* columns; 0 until the names line */
        size_t lines;
        char **names, **types; /* copies: the line buffer is reused */
        char **fields;         /* the row being written, in the line buffer */
        bool *nulls;
        struct render_cell *cells; /* n */
        struct render_rows *rows;
};

static void ch_answer_done(struct ch_answer *a) {
        for (int i = 0; i < a->n; i++) {
                free(a->names ? a->names[i] : NULL);
                free(a->types ? a->types[i] : NULL);
        }
        free(a->names);
        free(a->types);
        free(a->fields);
        free(a->nulls);
        free(a->cells);
        render_rows_free(a->rows);
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

static int ch_write_row(struct ch_answer *a) {
        for (int i = 0; i < a->n; i++) {
                const char *s = a->fields[i];

                a->cells[i] = (struct render_cell) { .type = RENDER_CELL_TEXT, .text = s };
                if (a->nulls[i])
                        a->cells[i].type = RENDER_CELL_NULL;
                else if (ch_type_numeric(a->types[i]) && *s && !strpbrk(s, "naif"))
                        a->cells[i].type = RENDER_CELL_NUMBER; /* not nan, inf: JSON has no such numbers */
        }
        return render_rows_add(a->rows, a->cells);
}

static int ch_answer_line(char *line, size_t len, void *userdata) {
        struct ch_answer *a = userdata;
        int r;

        switch (a->lines++) {
        case 0: /* the names: their count is the columns' */
                a->n = 1;
                for (size_t i = 0; i < len; i++)
                        a->n += line[i] == '\t';
                a->fields = calloc(a->n, sizeof *a->fields);
                a->nulls = calloc(a->n, sizeof *a->nulls);
                a->cells = calloc(a->n, sizeof *a->cells);
                if (!a->fields || !a->nulls || !a->cells)
                        return -ENOMEM;
                return ch_header(line, len, a->n, &a->names);
        case 1:
                r = ch_header(line, len, a->n, &a->types);
                return r < 0 ?
                        r :
                        render_rows_new(a->format, a->out, a->n, (const char *const *) a->names, &a->rows);
        default:
                if (ch_fields(line, line + len, a->n, a->fields, a->nulls) < 0)
                        return -EBADMSG;
                return ch_write_row(a);
        }
}

int source_clickhouse_sql(const char *url, const char *credentials, const char *sql,
                          enum render_rows_format format, FILE *out) {
        _cleanup_(ch_client_freep) struct ch_client *c = NULL;
        _cleanup_(ch_answer_done) struct ch_answer a = { .format = format, .out = out };
        const char *refused_word;
        int r;

        if (has_format_clause(sql))
                return log_error_errno(
                        EROFS,
                        "cppctl sql formats the answer itself: leave out the FORMAT clause (use --format)");
        refused_word = ch_refused_statement(sql);
        if (refused_word)
                return log_error_errno(
                        EROFS,
                        "cppctl sql is read-only: %s refused (ClickHouse's readonly=1 lets KILL QUERY and SYSTEM "
                        "statements through, which act on the server)",
                        refused_word);
        r = fleet_open(url, fleet_credentials(credentials), false, &c);
        if (r < 0)
                return r;
        r = ch_query_lines(c, sql, CH_QUERY_READONLY | CH_QUERY_NAMES_TYPES, ch_answer_line, &a);
        if (r == -EROFS)
                return log_error_errno(EROFS,
                                       "cppctl sql is read-only: ClickHouse refused the statement (%s)",
                                       ch_client_error(c));
        if (r == -EBADMSG && !*ch_client_error(c))
                return log_error_errno(EBADMSG,
                                       "%s answered in a form cppctl cannot read (a TabSeparated table with "
                                       "names and types expected)",
                                       url);
        if (r == -ENOMEM)
                return log_error_errno(r, "Out of memory");
        if (r < 0)
                return log_fleet_error(r, c);
        if (a.lines == 0)
                return 0; /* a statement without a result set */
        if (a.lines == 1)
                return log_error_errno(EBADMSG,
                                       "%s answered in a form cppctl cannot read (a TabSeparated table with "
                                       "names and types expected)",
                                       url);
        render_rows_finish(a.rows); /* a write error is the caller's to find, at its flush */
        return 0;
}
