/* The join: every (path, column, hits) entry of the profiles in one array, sorted by path so
 * that equal paths are adjacent, then merged into rows. Sorting beats hashing here: paths are
 * variable-length and profiles are small next to the trees they come from. */
#include "profile-join.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cell {
        const uint32_t *path;
        uint32_t len;
        uint32_t column;
        uint64_t hits;
};

static int path_cmp(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb) {
        for (uint32_t i = 0; i < na && i < nb; i++)
                if (a[i] != b[i])
                        return a[i] < b[i] ? -1 : 1;
        return na < nb ? -1 : na > nb;
}

static int cell_cmp(const void *a, const void *b) {
        const struct cell *x = a, *y = b;

        return path_cmp(x->path, x->len, y->path, y->len);
}

/* Row indexes by hits, column by column, most first; ties by the names of the path, as
 * profile_sort(). */
static int row_cmp(const void *a, const void *b, void *userdata) {
        const struct profile_join *j = userdata;
        const struct sample_tree *t = j->columns[0]->tree;
        size_t rx = *(const size_t *) a, ry = *(const size_t *) b;
        const struct profile_join_row *x = &j->rows[rx], *y = &j->rows[ry];
        const uint32_t *px = profile_join_path(j, x), *py = profile_join_path(j, y);

        for (size_t c = 0; c < j->n_columns; c++) {
                uint64_t hx = profile_join_hits(j, rx, c), hy = profile_join_hits(j, ry, c);

                if (hx != hy)
                        return hx > hy ? -1 : 1;
        }
        for (uint32_t i = 0; i < x->len && i < y->len; i++) {
                int k = strcmp(sample_tree_name(t, px[i]), sample_tree_name(t, py[i]));

                if (k)
                        return k;
        }
        return x->len < y->len ? -1 : x->len > y->len;
}

int profile_join(const struct profile *const *columns, size_t n, struct profile_join **ret) {
        _cleanup_(profile_join_freep) struct profile_join *j = calloc(1, sizeof *j);
        _cleanup_free_ struct cell *cells = NULL;
        _cleanup_free_ uint64_t *hits = NULL;
        _cleanup_free_ size_t *order = NULL;
        _cleanup_free_ struct profile_join_row *sorted_rows = NULL;
        size_t n_cells = 0, n_names = 0;

        for (size_t c = 1; c < n; c++)
                assert(columns[c]->kind == columns[0]->kind &&
                       columns[c]->tree->names == columns[0]->tree->names);
        if (!j)
                return -ENOMEM;
        j->n_columns = n;
        j->columns = columns;
        for (size_t c = 0; c < n; c++) {
                n_cells += columns[c]->n_entries;
                j->n_omitted += columns[c]->n_omitted;
                j->omitted_partial = j->omitted_partial || columns[c]->omitted_partial;
        }
        cells = malloc((n_cells + 1) * sizeof *cells);
        if (!cells)
                return -ENOMEM;
        n_cells = 0;
        for (size_t c = 0; c < n; c++)
                for (size_t i = 0; i < columns[c]->n_entries; i++) {
                        const struct profile_entry *e = &columns[c]->entries[i];

                        cells[n_cells++] = (struct cell) { profile_path(columns[c], e), e->len, c, e->hits };
                        n_names += e->len;
                }
        qsort(cells, n_cells, sizeof *cells, cell_cmp);

        j->rows = malloc((n_cells + 1) * sizeof *j->rows);
        j->names = malloc((n_names + 1) * sizeof *j->names);
        hits = calloc((n_cells + 1) * n, sizeof *hits);
        if (!j->rows || !j->names || !hits)
                return -ENOMEM;
        n_names = 0;
        for (size_t i = 0; i < n_cells; i++) {
                if (i == 0 || cell_cmp(&cells[i - 1], &cells[i]) != 0) {
                        j->rows[j->n_rows++] = (struct profile_join_row) { n_names, cells[i].len };
                        memcpy(j->names + n_names, cells[i].path, cells[i].len * sizeof *j->names);
                        n_names += cells[i].len;
                }
                hits[(j->n_rows - 1) * n + cells[i].column] += cells[i].hits;
        }

        /* Sort row indexes, then lay rows and hits out in that order. */
        j->hits = take_ptr(&hits);
        order = malloc((j->n_rows + 1) * sizeof *order);
        sorted_rows = malloc((j->n_rows + 1) * sizeof *sorted_rows);
        hits = malloc((j->n_rows * n + 1) * sizeof *hits);
        if (!order || !sorted_rows || !hits)
                return -ENOMEM;
        for (size_t i = 0; i < j->n_rows; i++)
                order[i] = i;
        qsort_r(order, j->n_rows, sizeof *order, row_cmp, j);
        for (size_t i = 0; i < j->n_rows; i++) {
                sorted_rows[i] = j->rows[order[i]];
                memcpy(hits + i * n, j->hits + order[i] * n, n * sizeof *hits);
        }
        free(j->rows);
        free(j->hits);
        j->rows = take_ptr(&sorted_rows);
        j->hits = take_ptr(&hits);
        *ret = take_ptr(&j);
        return 0;
}

struct profile_join *profile_join_free(struct profile_join *j) {
        if (!j)
                return NULL;
        free(j->rows);
        free(j->names);
        free(j->hits);
        free(j);
        return NULL;
}
