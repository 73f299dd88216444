/* Several resources side by side (the paper's "where and why" in one view), and one resource
 * per another. The rows are call paths of one view joined across resources
 * (common/view/profile-join.c); a row is shown when any resource's fraction reaches the threshold.
 *
 *     Downward Call Path Profile for resources: cpu-time, page-faults
 *     cpu-time: 2676 samples, sampled every 10 gticks (1 gtick = 1 ms of CPU time); 0 samples lost
 *     page-faults: 9950 samples, sampled every 16 gticks (1 gtick = 1 page fault); 0 samples lost
 *     format: usage_fraction ±95% per resource (call_path)
 *     -----------------------------------------------------
 *     cpu-time        page-faults
 *     0.6790 ±0.0177  0.8022 ±0.0078  (main uniquify_db)
 *
 * With --ratio A/B the rows give A's gticks per B's gticks on the path, sorted by that ratio,
 * with a 95% error from the two counts (the delta method on counts that are Poisson-like:
 * ratio × 1.96 √(1/a + 1/b)); a path with no B hits has an infinite ratio and comes first,
 * one with no A hits has 0; neither has an error bar. The whole profile's ratio, over every
 * sample, is in the header, to compare a path against. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RULE "-----------------------------------------------------"

static const struct sample_tree *tree_of(const struct profile_join *j, size_t c) {
        return j->columns[c]->tree;
}

static bool row_shown(const struct profile_join *j, size_t row, double threshold) {
        for (size_t c = 0; c < j->n_columns; c++)
                if (profile_fraction(j->columns[c], profile_join_hits(j, row, c)) >= threshold &&
                    profile_join_hits(j, row, c) > 0)
                        return true;
        return false;
}

/* Gticks of HITS in column C; a tree merged from runs of different periods has period 0, and
 * its hits are then counted as gticks of 1. */
static double gticks(const struct profile_join *j, size_t c, uint64_t hits) {
        uint64_t period = tree_of(j, c)->info.period;

        return (double) hits * (double) (period ? period : 1);
}

struct ratio {
        size_t row;
        double value; /* INFINITY with no B hits */
        double error; /* NAN with no hits on either side */
};

static struct ratio ratio_of(const struct profile_join *j, size_t row) {
        uint64_t a = profile_join_hits(j, row, 0), b = profile_join_hits(j, row, 1);
        struct ratio r = { row, INFINITY, NAN };

        if (b > 0)
                r.value = gticks(j, 0, a) / gticks(j, 1, b);
        if (a > 0 && b > 0)
                r.error = r.value * 1.96 * sqrt(1.0 / (double) a + 1.0 / (double) b);
        return r;
}

static int ratio_cmp(const void *x, const void *y) {
        const struct ratio *a = x, *b = y;

        if (a->value != b->value)
                return a->value > b->value ? -1 : 1;
        return a->row < b->row ? -1 : a->row > b->row; /* the join's order: by hits */
}

/* The rows to show, in the order to show them: the join's, or by ratio. Returns how many, or
 * -ENOMEM; *ret is malloc()ed. */
static long rows_shown(const struct profile_join *j, bool ratio, double threshold, struct ratio **ret) {
        struct ratio *rows = malloc((j->n_rows + 1) * sizeof *rows);
        long n = 0;

        if (!rows)
                return -ENOMEM;
        for (size_t i = 0; i < j->n_rows; i++)
                if (row_shown(j, i, threshold))
                        rows[n++] = ratio ? ratio_of(j, i) : (struct ratio) { i, 0, 0 };
        if (ratio)
                qsort(rows, n, sizeof *rows, ratio_cmp);
        *ret = rows;
        return n;
}

static void text_path(FILE *f, const struct profile_join *j, size_t row) {
        const struct profile_join_row *r = &j->rows[row];
        const uint32_t *names = profile_join_path(j, r);
        bool paths = j->columns[0]->kind == PROFILE_DOWN || j->columns[0]->kind == PROFILE_UP;

        fputs(paths ? "(" : "", f);
        for (uint32_t i = 0; i < r->len; i++)
                fprintf(f, "%s%s", i ? " " : "", sample_tree_name(tree_of(j, 0), names[i]));
        fputs(paths ? ")" : "", f);
}

static double whole_ratio(const struct profile_join *j) {
        uint64_t b = tree_of(j, 1)->total;

        return b ? gticks(j, 0, tree_of(j, 0)->total) / gticks(j, 1, b) : INFINITY;
}

int render_text_table(FILE *f, const struct profile_join *j, bool ratio, double threshold) {
        _cleanup_free_ struct ratio *rows = NULL;
        bool paths = j->columns[0]->kind == PROFILE_DOWN || j->columns[0]->kind == PROFILE_UP;
        long n = rows_shown(j, ratio, threshold, &rows);
        size_t omitted = 0;

        if (n < 0)
                return (int) n;
        fprintf(f, "%s", render_view_title(j->columns[0]->kind));
        if (ratio)
                fprintf(f, ", %s per %s\n", tree_of(j, 0)->info.resource, tree_of(j, 1)->info.resource);
        else
                for (size_t c = 0; c < j->n_columns; c++)
                        fprintf(f, "%s%s", c ? ", " : " for resources: ", tree_of(j, c)->info.resource);
        if (!ratio)
                fputc('\n', f);
        for (size_t c = 0; c < j->n_columns; c++) {
                fprintf(f, "%s: ", tree_of(j, c)->info.resource);
                render_text_facts(f, tree_of(j, c));
        }
        if (ratio) {
                fprintf(f, "ratio: gticks of %s (%s) per gtick of %s (%s); all samples: %.4f\n",
                        tree_of(j, 0)->info.resource, tree_of(j, 0)->info.unit, tree_of(j, 1)->info.resource,
                        tree_of(j, 1)->info.unit, whole_ratio(j));
                fprintf(f, "format: ratio ±95%% %s [%s of %s, %s]\n%s\n",
                        paths ? "(call_path)" : "function_name",
                        streq(render_count_label(tree_of(j, 0)), "#hits") ? "#hits" :
                                                                            render_count_label(tree_of(j, 1)),
                        tree_of(j, 0)->info.resource, tree_of(j, 1)->info.resource, RULE);
        } else {
                fprintf(f, "format: usage_fraction ±95%% per resource %s\n%s\n",
                        paths ? "(call_path)" : "function_name", RULE);
                for (size_t c = 0; c < j->n_columns; c++)
                        fprintf(f, "%-*s", (int) (c + 1 < j->n_columns ? 16 : 0),
                                tree_of(j, c)->info.resource);
                fputc('\n', f);
        }
        for (long i = 0; i < n; i++) {
                size_t row = rows[i].row;

                if (ratio) {
                        fprintf(f, "%.4f ", rows[i].value);
                        if (isnan(rows[i].error))
                                fputs("±- ", f);
                        else
                                fprintf(f, "±%.4f ", rows[i].error);
                } else
                        for (size_t c = 0; c < j->n_columns; c++) {
                                const struct profile *p = j->columns[c];
                                uint64_t hits = profile_join_hits(j, row, c);

                                fprintf(f, "%.4f ±%.4f  ", profile_fraction(p, hits),
                                        p->total ? profile_tree_error(p->tree, hits, p->total) /
                                                        (double) p->total :
                                                   0.0);
                        }
                text_path(f, j, row);
                if (ratio)
                        fprintf(f, " [%" PRIu64 " %" PRIu64 "]", profile_join_hits(j, row, 0),
                                profile_join_hits(j, row, 1));
                fputc('\n', f);
        }
        omitted = j->n_rows - (size_t) n + j->n_omitted; /* and the paths the views left out already */
        return render_text_finish(f, omitted, j->omitted_partial, threshold,
                                  paths ? "call path" : "function");
}

static void json_facts(FILE *f, const struct sample_tree *t) {
        const struct sample_tree_info *i = &t->info;

        fputs("{\"resource\": ", f);
        json_write_string(f, i->resource ?: "");
        fputs(", \"unit\": ", f);
        json_write_string(f, i->unit ?: "");
        fprintf(f,
                ", \"period\": %" PRIu64 ", \"samples\": %" PRIu64 ", \"hits\": %" PRIu64
                ", \"lost\": %" PRIu64 "}",
                i->period, i->samples, t->total, i->lost);
}

static void json_number(FILE *f, double x) {
        if (isfinite(x))
                fprintf(f, "%.6f", x);
        else
                fputs("null", f);
}

int render_json_table(FILE *f, const struct profile_join *j, bool ratio, double threshold) {
        _cleanup_free_ struct ratio *rows = NULL;
        long n = rows_shown(j, ratio, threshold, &rows);

        if (n < 0)
                return (int) n;
        fprintf(f, "{\"profile\": \"%s\", \"resources\": [", render_view_name(j->columns[0]->kind));
        for (size_t c = 0; c < j->n_columns; c++) {
                fputs(c ? ", " : "", f);
                json_facts(f, tree_of(j, c));
        }
        fprintf(f, "], \"threshold\": %g", threshold);
        if (ratio) {
                fputs(", \"ratio\": ", f);
                json_number(f, whole_ratio(j));
        }
        fputs(", \"entries\": [", f);
        for (long i = 0; i < n; i++) {
                size_t row = rows[i].row;
                const struct profile_join_row *r = &j->rows[row];

                fprintf(f, "%s\n  {\"path\": [", i ? "," : "");
                for (uint32_t k = 0; k < r->len; k++) {
                        fputs(k ? ", " : "", f);
                        json_write_string(f, sample_tree_name(tree_of(j, 0), profile_join_path(j, r)[k]));
                }
                fputs("], \"hits\": [", f);
                for (size_t c = 0; c < j->n_columns; c++)
                        fprintf(f, "%s%" PRIu64, c ? ", " : "", profile_join_hits(j, row, c));
                if (ratio) {
                        fputs("], \"ratio\": ", f);
                        json_number(f, rows[i].value);
                        fputs(", \"ratio_error95\": ", f);
                        json_number(f, rows[i].error);
                        fputc('}', f);
                        continue;
                }
                fputs("], \"fractions\": [", f);
                for (size_t c = 0; c < j->n_columns; c++) {
                        fputs(c ? ", " : "", f);
                        json_number(f, profile_fraction(j->columns[c], profile_join_hits(j, row, c)));
                }
                fputs("], \"ci95\": [", f);
                for (size_t c = 0; c < j->n_columns; c++) {
                        double lo, hi;

                        profile_interval(profile_join_hits(j, row, c), j->columns[c]->total, &lo, &hi);
                        fprintf(f, "%s[%.6f, %.6f]", c ? ", " : "", lo, hi);
                }
                fputs("]}", f);
        }
        /* "omitted_exact" only where it is false (the views stopped at the threshold), so that a
         * table whose count is exact reads as it always did */
        fprintf(f, "%s], \"omitted\": %zu%s}\n", n ? "\n" : "", j->n_rows - (size_t) n + j->n_omitted,
                j->omitted_partial ? ", \"omitted_exact\": false" : "");
        return ferror(f) ? -EIO : 0;
}

/* CSV: path last, as in render_csv_profile(); numbers without a value are empty fields. */
int render_csv_table(FILE *f, const struct profile_join *j, bool ratio, double threshold) {
        _cleanup_free_ struct ratio *rows = NULL;
        long n = rows_shown(j, ratio, threshold, &rows);

        if (n < 0)
                return (int) n;
        if (ratio)
                fputs("ratio,ratio_error95,", f);
        for (size_t c = 0; c < j->n_columns; c++)
                if (ratio)
                        fprintf(f, "%s_hits,", tree_of(j, c)->info.resource);
                else
                        fprintf(f, "%s_fraction,%s_hits,", tree_of(j, c)->info.resource,
                                tree_of(j, c)->info.resource);
        fputs("path\r\n", f);
        for (long i = 0; i < n; i++) {
                size_t row = rows[i].row;
                const struct profile_join_row *r = &j->rows[row];

                if (ratio) {
                        if (isfinite(rows[i].value))
                                fprintf(f, "%.6f", rows[i].value);
                        fputc(',', f);
                        if (isfinite(rows[i].error))
                                fprintf(f, "%.6f", rows[i].error);
                        fputc(',', f);
                }
                for (size_t c = 0; c < j->n_columns; c++) {
                        uint64_t hits = profile_join_hits(j, row, c);

                        if (!ratio)
                                fprintf(f, "%.6f,", profile_fraction(j->columns[c], hits));
                        fprintf(f, "%" PRIu64 ",", hits);
                }
                csv_write_path(f, tree_of(j, 0), profile_join_path(j, r), r->len);
                fputs("\r\n", f);
        }
        return ferror(f) ? -EIO : 0;
}
