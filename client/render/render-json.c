/* JSON for scripts: the header's facts as fields, then the entries (or the tree, nested).
 *
 *     {"profile": "downward", "resource": "cpu-time", "unit": "1 ms of CPU time",
 *      "period": 10, "samples": 2676, "hits": 2676, "lost": 0, "frames_unsymbolized": 0.0,
 *      "root": "main", "threshold": 0.01, "omitted": 3,
 *      "entries": [{"fraction": 1.0, "ci95": [0.9986, 1.0], "hits": 2676, "path": ["main"]}, ...]}
 *
 * ci95 is Wilson's 95% interval on the fraction (sampling error).
 *
 * The tree is {"name", "fraction", "hits" (the weight), "self", "children": [...]}, written with
 * an explicit stack so that deep trees cannot overflow ours. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *render_view_name(enum profile_kind kind) {
        switch (kind) {
        case PROFILE_DOWN:
                return "downward";
        case PROFILE_UP:
                return "upward";
        case PROFILE_FUNCTION:
                return "function";
        case PROFILE_BODY:
                return "body";
        }
        return "unknown";
}

void render_json_header(FILE *f, const char *view, const struct sample_tree *t, double threshold) {
        const struct sample_tree_info *i = &t->info;

        fprintf(f, "{\"profile\": \"%s\", \"resource\": ", view);
        json_write_string(f, i->resource ?: "");
        fputs(", \"unit\": ", f);
        json_write_string(f, i->unit ?: "");
        fprintf(f,
                ", \"period\": %" PRIu64 ", \"samples\": %" PRIu64 ", \"hits\": %" PRIu64
                ", \"lost\": %" PRIu64 ", \"frames_unsymbolized\": %.6f, \"threshold\": %g",
                i->period, i->samples, t->total, i->lost,
                i->frames ? (double) i->frames_unsymbolized / (double) i->frames : 0.0, threshold);
        /* only when there are, so that profiles of stores named at record time read as before */
        if (i->frames_named_later)
                fprintf(f, ", \"frames_named_later\": %" PRIu64 ", \"modules_named_later\": %" PRIu64,
                        i->frames_named_later, i->modules_named_later);
        if (i->names_note) {
                fputs(", \"names_note\": ", f);
                json_write_string(f, i->names_note);
        }
        if (i->collect_note) {
                fputs(", \"not_measured\": ", f);
                json_write_string(f, i->collect_note);
        }
        if (i->python_note) {
                fputs(", \"python\": ", f);
                json_write_string(f, i->python_note);
        }
}

int render_json_profile(FILE *f, const struct profile *p, double threshold) {
        size_t omitted = p->n_omitted, shown = 0;

        render_json_header(f, render_view_name(p->kind), p->tree, threshold);
        if (p->root != NAME_NONE) {
                fputs(", \"root\": ", f);
                json_write_string(f, sample_tree_name(p->tree, p->root));
        }
        fputs(", \"entries\": [", f);
        for (size_t i = 0; i < p->n_entries; i++) {
                const struct profile_entry *e = &p->entries[i];
                const uint32_t *names = profile_path(p, e);
                double fraction = profile_fraction(p, e->hits), lo, hi;

                if (fraction < threshold) {
                        omitted++;
                        continue;
                }
                profile_interval(e->hits, p->total, &lo, &hi);
                fprintf(f,
                        "%s\n  {\"fraction\": %.6f, \"ci95\": [%.6f, %.6f], \"hits\": %" PRIu64
                        ", \"path\": [",
                        shown++ ? "," : "", fraction, lo, hi, e->hits);
                for (uint32_t j = 0; j < e->len; j++) {
                        if (j)
                                fputs(", ", f);
                        json_write_string(f, sample_tree_name(p->tree, names[j]));
                }
                fputs("]}", f);
        }
        /* omitted_exact: false where the view stopped at its threshold and counted only those it
         * saw (at least this many). */
        fprintf(f, "\n], \"omitted\": %zu, \"omitted_exact\": %s}\n", omitted,
                p->omitted_partial ? "false" : "true");
        return ferror(f) ? -EIO : 0;
}

/* qsort() has no context argument in C11. */
static _Thread_local const struct sample_tree *sorting;

static int child_cmp(const void *a, const void *b) {
        const struct sample_tree_node *x = &sorting->nodes[*(const uint32_t *) a];
        const struct sample_tree_node *y = &sorting->nodes[*(const uint32_t *) b];

        if (x->weight != y->weight)
                return x->weight > y->weight ? -1 : 1;
        return strcmp(sample_tree_name(sorting, x->name), sample_tree_name(sorting, y->name));
}

int render_sorted_children(const struct sample_tree *t, uint32_t node, uint32_t **ret) {
        uint32_t *children = NULL;
        int n = 0;

        for (uint32_t c = t->nodes[node].first_child; c != SAMPLE_TREE_NONE; c = t->nodes[c].next_sibling)
                n++;
        if (n > 0) {
                children = malloc(n * sizeof *children);
                if (!children)
                        return -ENOMEM;
                n = 0;
                for (uint32_t c = t->nodes[node].first_child; c != SAMPLE_TREE_NONE;
                     c = t->nodes[c].next_sibling)
                        children[n++] = c;
                sorting = t;
                qsort(children, n, sizeof *children, child_cmp);
                sorting = NULL;
        }
        *ret = children;
        return n;
}

struct json_tree {
        FILE *f;
        double threshold;
        size_t omitted;
        bool *first; /* by depth: no sibling written yet */
};

static int json_tree_open(const struct tree_index *x, const struct tree_index_drawn *d, void *userdata) {
        struct json_tree *w = userdata;
        const struct tree_index_node *n = &x->nodes[d->node];
        uint64_t total = x->header->total;
        double fraction = total ? (double) n->weight / (double) total : 0.0;

        if (d->depth > 0) {
                if (fraction < w->threshold) {
                        w->omitted++;
                        return 1;
                }
                fputs(w->first[d->depth - 1] ? "\n" : ",\n", w->f);
                w->first[d->depth - 1] = false;
                fprintf(w->f, "%*s{\"name\": ", (int) d->depth, "");
                json_write_string(w->f, sample_tree_name(x->header, n->name));
                fprintf(w->f,
                        ", \"fraction\": %.6f, \"hits\": %" PRIu64 ", \"self\": %" PRIu64 ", \"children\": [",
                        fraction, n->weight, d->self);
        }
        w->first[d->depth] = true;
        return 0;
}

static int json_tree_close(const struct tree_index *x, uint32_t node, uint32_t depth, void *userdata) {
        struct json_tree *w = userdata;

        if (depth > 0)
                fputs("]}", w->f);
        return 0;
}

int render_json_tree_index(FILE *f, const struct tree_index *x, double threshold) {
        _cleanup_free_ bool *first = malloc(((size_t) x->max_depth + 2) * sizeof *first);
        struct json_tree w = { .f = f, .threshold = threshold, .first = first };
        int r;

        if (!first)
                return -ENOMEM;
        render_json_header(f, "tree", x->header, threshold);
        fputs(", \"roots\": [", f);
        r = tree_index_each_drawn(x, json_tree_open, json_tree_close, &w);
        if (r < 0)
                return r;
        fprintf(f, "\n], \"omitted\": %zu}\n", w.omitted);
        return ferror(f) ? -EIO : 0;
}

int render_json_tree(FILE *f, struct sample_tree *t, double threshold) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        int r;

        r = tree_index_build(t, &x);
        return r < 0 ? r : render_json_tree_index(f, x, threshold);
}
