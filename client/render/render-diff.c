/* cppctl diff's rows (cmd-diff.c computes them): per path its change in fraction, both
 * fractions, both hit counts and the z statistic, as text with each side's store, selection and
 * facts in the header, as JSON, or as CSV. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define RULE "-----------------------------------------------------"

static void fprint_time(FILE *f, int64_t t) {
        time_t tt = (time_t) t;
        struct tm tm;
        char buf[64];

        if (gmtime_r(&tt, &tm) && strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm) > 0)
                fputs(buf, f);
        else
                fprintf(f, "@%" PRId64, t);
}

void render_diff_selection(FILE *f, const struct render_diff_side *s) {
        fputs(s->store, f);
        if (s->run)
                fprintf(f, ", run %" PRId64, s->run);
        if (s->host)
                fprintf(f, ", host %s", s->host);
        if (s->unit)
                fprintf(f, ", unit %s", s->unit);
        if (s->pid)
                fprintf(f, ", pid %" PRId64, s->pid);
        if (s->comm)
                fprintf(f, ", comm %s", s->comm);
        if (s->exe)
                fprintf(f, ", exe %s", s->exe);
        if (s->has_since) {
                fputs(", since ", f);
                fprint_time(f, s->since);
        }
        if (s->has_until) {
                fputs(", until ", f);
                fprint_time(f, s->until);
        }
}

static void text_side(FILE *f, const char *label, const struct render_diff_side *s) {
        fprintf(f, "%s (", label);
        render_diff_selection(f, s);
        fputs("): ", f);
        render_text_facts(f, s->tree);
}

static void text_path(FILE *f, const struct render_diff *d, const struct render_diff_row *r) {
        const struct profile_join_row *row = &d->join->rows[r->row];
        const uint32_t *names = profile_join_path(d->join, row);
        enum profile_kind kind = d->join->columns[0]->kind;
        bool paths = kind == PROFILE_DOWN || kind == PROFILE_UP;

        fputs(paths ? "(" : "", f);
        for (uint32_t i = 0; i < row->len; i++)
                fprintf(f, "%s%s", i ? " " : "", sample_tree_name(d->sides[0].tree, names[i]));
        fputs(paths ? ")" : "", f);
}

int render_text_diff(FILE *f, const struct render_diff *d, double threshold) {
        enum profile_kind kind = d->join->columns[0]->kind;
        bool paths = kind == PROFILE_DOWN || kind == PROFILE_UP;
        const char *rb = d->sides[0].tree->info.resource, *rn = d->sides[1].tree->info.resource;

        fprintf(f, "%s difference", render_view_title(kind));
        if (d->root)
                fprintf(f, " at %s", d->root);
        if (streq(rb, rn))
                fprintf(f, " for resource: %s\n", rn);
        else
                fprintf(f, " for resources: %s (base), %s (new)\n", rb, rn);
        text_side(f, "base", &d->sides[0]);
        text_side(f, "new", &d->sides[1]);
        fprintf(f,
                "test: two-proportion z on the samples, pooled; * where |z| >= %.2f (significant at 95%%)\n"
                "format: change base_fraction new_fraction z [%s base → new] %s\n%s\n",
                d->critical_z,
                streq(render_count_label(d->sides[0].tree), "#hits") ? "#hits" :
                                                                       render_count_label(d->sides[1].tree),
                paths ? "(call_path)" : "function_name", RULE);
        for (size_t i = 0; i < d->n_rows; i++) {
                const struct render_diff_row *r = &d->rows[i];

                fprintf(f, "%+.4f %.4f %.4f %+6.2f %s [%" PRIu64 " → %" PRIu64 "] ", r->change,
                        r->fraction[0], r->fraction[1], r->z, r->significant ? "*" : " ", r->hits[0],
                        r->hits[1]);
                text_path(f, d, r);
                fputc('\n', f);
        }
        return render_text_finish(f, d->n_omitted, false, threshold, paths ? "call path" : "function");
}

/* ", KEY: VALUE" where VALUE is set. */
static void json_field(FILE *f, const char *key, const char *value) {
        if (!value)
                return;
        fprintf(f, ", \"%s\": ", key);
        json_write_string(f, value);
}

static void json_side(FILE *f, const struct render_diff_side *s) {
        const struct sample_tree *t = s->tree;

        fputs("{\"store\": ", f);
        json_write_string(f, s->store);
        if (s->run)
                fprintf(f, ", \"run\": %" PRId64, s->run);
        if (s->pid)
                fprintf(f, ", \"pid\": %" PRId64, s->pid);
        json_field(f, "host", s->host);
        json_field(f, "unit", s->unit);
        json_field(f, "comm", s->comm);
        json_field(f, "exe", s->exe);
        if (s->has_since)
                fprintf(f, ", \"since\": %" PRId64, s->since);
        if (s->has_until)
                fprintf(f, ", \"until\": %" PRId64, s->until);
        fputs(", \"resource\": ", f);
        json_write_string(f, t->info.resource ?: "");
        fputs(", \"unit\": ", f);
        json_write_string(f, t->info.unit ?: "");
        fprintf(f,
                ", \"period\": %" PRIu64 ", \"samples\": %" PRIu64 ", \"hits\": %" PRIu64
                ", \"lost\": %" PRIu64 "}",
                t->info.period, t->info.samples, t->total, t->info.lost);
}

int render_json_diff(FILE *f, const struct render_diff *d, double threshold) {
        fprintf(f, "{\"diff\": \"%s\"", render_view_name(d->join->columns[0]->kind));
        json_field(f, "root", d->root);
        fprintf(f,
                ", \"threshold\": %g, \"test\": {\"name\": \"two-proportion z, pooled\", \"confidence\": 0.95, "
                "\"critical_z\": %.2f},\n \"base\": ",
                threshold, d->critical_z);
        json_side(f, &d->sides[0]);
        fputs(",\n \"new\": ", f);
        json_side(f, &d->sides[1]);
        fputs(",\n \"entries\": [", f);
        for (size_t i = 0; i < d->n_rows; i++) {
                const struct render_diff_row *r = &d->rows[i];
                const struct profile_join_row *row = &d->join->rows[r->row];
                const uint32_t *names = profile_join_path(d->join, row);

                fprintf(f,
                        "%s\n  {\"change\": %.6f, \"base\": {\"fraction\": %.6f, \"hits\": %" PRIu64 "}, "
                        "\"new\": {\"fraction\": %.6f, \"hits\": %" PRIu64
                        "}, \"z\": %.4f, \"significant\": %s, "
                        "\"path\": [",
                        i ? "," : "", r->change, r->fraction[0], r->hits[0], r->fraction[1], r->hits[1], r->z,
                        r->significant ? "true" : "false");
                for (uint32_t k = 0; k < row->len; k++) {
                        if (k)
                                fputs(", ", f);
                        json_write_string(f, sample_tree_name(d->sides[0].tree, names[k]));
                }
                fputs("]}", f);
        }
        fprintf(f, "\n], \"omitted\": %zu}\n", d->n_omitted);
        return ferror(f) ? -EIO : 0;
}

int render_csv_diff(FILE *f, const struct render_diff *d, double threshold) {
        fputs("change,base_fraction,new_fraction,z,significant,base_hits,new_hits,path\r\n", f);
        for (size_t i = 0; i < d->n_rows; i++) {
                const struct render_diff_row *r = &d->rows[i];
                const struct profile_join_row *row = &d->join->rows[r->row];

                fprintf(f, "%.6f,%.6f,%.6f,%.4f,%d,%" PRIu64 ",%" PRIu64 ",", r->change, r->fraction[0],
                        r->fraction[1], r->z, r->significant, r->hits[0], r->hits[1]);
                csv_write_path(f, d->sides[0].tree, profile_join_path(d->join, row), row->len);
                fputs("\r\n", f);
        }
        return ferror(f) ? -EIO : 0;
}
