/* The rows of a query's answer (cppctl sql, over SQLite or ClickHouse alike): an aligned table
 * with a header (the default), CSV (RFC 4180, CRLF; render-csv.c's quoting) or JSON (an array of
 * objects, one line per row).
 *
 * Rows are written as they come. The table's column widths are measured over the header and
 * the first RENDER_ROWS_BATCH rows (fewer if they hold more than RENDER_ROWS_HELD_MAX bytes),
 * which are held until then; later rows are printed with those widths (a longer cell pushes
 * the rest of its line out), as the sqlite3 shell's column mode does. Output starts at once and
 * memory stays bounded for any number of rows; holding them all took time quadratic in the
 * cells and printed nothing until the end. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define RENDER_ROWS_BATCH 1000
#define RENDER_ROWS_HELD_MAX (16u << 20)

struct render_rows {
        enum render_rows_format format;
        FILE *out;
        size_t n;          /* columns */
        char **names;      /* copies, for JSON's keys */
        const char **text; /* n: the row being added, as text */
        size_t rows;       /* written or held */
        size_t *width;     /* table: bytes, per column, over the held rows */
        char **held;       /* table: (1 + RENDER_ROWS_BATCH) * n cells, the header first */
        size_t n_held;     /* table: rows held, the header included */
        size_t held_bytes;
        bool streaming; /* table: the held rows are out; print each row as it comes */
};

int render_rows_format_from_name(const char *name) {
        static const char *const names[] = {
                [RENDER_ROWS_TABLE] = "table",
                [RENDER_ROWS_CSV] = "csv",
                [RENDER_ROWS_JSON] = "json",
        };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcmp(names[i], name) == 0)
                        return (int) i;
        return -EINVAL;
}

struct render_rows *render_rows_free(struct render_rows *r) {
        if (!r)
                return NULL;
        for (size_t k = 0; r->held && k < r->n_held * r->n; k++)
                free(r->held[k]);
        for (size_t i = 0; r->names && i < r->n; i++)
                free(r->names[i]);
        free(r->held);
        free(r->width);
        free(r->names);
        free(r->text);
        free(r);
        return NULL;
}

/* One row of cells, padded to the widths; the last column is not padded, so lines carry no
 * trailing blanks. */
static void table_print(const struct render_rows *r, const char *const *cells) {
        for (size_t i = 0; i < r->n; i++)
                fprintf(r->out, "%s%-*s", i ? "  " : "", i + 1 < r->n ? (int) r->width[i] : 0, cells[i]);
        fputc('\n', r->out);
}

/* Prints the held rows, the line under the header included, and streams from then on. */
static void table_flush(struct render_rows *r) {
        for (size_t k = 0; k < r->n_held; k++) {
                table_print(r, (const char *const *) r->held + k * r->n);
                if (k == 0) {
                        for (size_t i = 0; i < r->n; i++)
                                for (size_t w = 0; w < r->width[i] + (i + 1 < r->n ? 2 : 0); w++)
                                        fputc('-', r->out);
                        fputc('\n', r->out);
                }
        }
        for (size_t k = 0; k < r->n_held * r->n; k++)
                r->held[k] = mfree(r->held[k]);
        r->n_held = r->held_bytes = 0;
        r->streaming = true;
}

/* Adds the row of CELLS (copied). Returns 0 or -ENOMEM. */
static int table_add(struct render_rows *r, const char *const *cells) {
        if (r->streaming) {
                table_print(r, cells);
                return 0;
        }
        for (size_t i = 0; i < r->n; i++) {
                char *copy = strdup(cells[i]);

                if (!copy)
                        return -ENOMEM;
                r->held[r->n_held * r->n + i] = copy;
                r->width[i] = MAX(r->width[i], strlen(copy));
                r->held_bytes += strlen(copy) + 1;
        }
        if (++r->n_held == 1 + RENDER_ROWS_BATCH || r->held_bytes > RENDER_ROWS_HELD_MAX)
                table_flush(r);
        return 0;
}

static void csv_record(FILE *f, size_t n, const char *const *fields) {
        for (size_t i = 0; i < n; i++) {
                fputs(i ? "," : "", f);
                csv_write_field(f, fields[i]);
        }
        fputs("\r\n", f);
}

int render_rows_new(enum render_rows_format format, FILE *out, size_t n, const char *const *names,
                    struct render_rows **ret) {
        _cleanup_(render_rows_freep) struct render_rows *r = calloc(1, sizeof *r);
        int k;

        if (!r)
                return -ENOMEM;
        *r = (struct render_rows) { .format = format, .out = out, .n = n };
        r->names = calloc(n + 1, sizeof *r->names);
        r->text = calloc(n + 1, sizeof *r->text);
        if (!r->names || !r->text)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(r->names[i] = strdup(names[i])))
                        return -ENOMEM;
        switch (format) {
        case RENDER_ROWS_TABLE:
                if (n == 0)
                        break; /* nothing to show, not even a rule */
                r->width = calloc(n, sizeof *r->width);
                r->held = calloc((1 + RENDER_ROWS_BATCH) * n, sizeof *r->held);
                if (!r->width || !r->held)
                        return -ENOMEM;
                k = table_add(r, names);
                if (k < 0)
                        return k;
                break;
        case RENDER_ROWS_CSV:
                csv_record(out, n, names);
                break;
        case RENDER_ROWS_JSON:
                fputc('[', out);
                break;
        }
        *ret = take_ptr(&r);
        return 0;
}

int render_rows_add(struct render_rows *r, const struct render_cell *cells) {
        const char **text = r->text;
        FILE *f = r->out;
        int k = 0;

        for (size_t i = 0; i < r->n; i++)
                text[i] = cells[i].text;
        switch (r->format) {
        case RENDER_ROWS_TABLE:
                if (r->n > 0)
                        k = table_add(r, text);
                break;
        case RENDER_ROWS_CSV:
                csv_record(f, r->n, text);
                break;
        case RENDER_ROWS_JSON:
                fputs(r->rows ? ",\n {" : "{", f);
                for (size_t i = 0; i < r->n; i++) {
                        fputs(i ? ", " : "", f);
                        json_write_string(f, r->names[i]);
                        fputs(": ", f);
                        switch (cells[i].type) {
                        case RENDER_CELL_NULL:
                                fputs("null", f);
                                break;
                        case RENDER_CELL_INTEGER:
                                fprintf(f, "%" PRId64, cells[i].integer);
                                break;
                        case RENDER_CELL_REAL:
                                fprintf(f, "%.17g", cells[i].real);
                                break;
                        case RENDER_CELL_NUMBER:
                                fputs(cells[i].text, f);
                                break;
                        case RENDER_CELL_TEXT:
                                json_write_string(f, cells[i].text);
                                break;
                        }
                }
                fputc('}', f);
                break;
        }
        r->rows++;
        return k;
}

int render_rows_finish(struct render_rows *r) {
        if (r->format == RENDER_ROWS_JSON)
                fputs("]\n", r->out);
        if (r->format == RENDER_ROWS_TABLE && r->n > 0 && !r->streaming)
                table_flush(r);
        return ferror(r->out) ? -EIO : 0;
}
