/* The output formats, as --format names them: one table of what each draws, so that a command
 * asks the table whether a format draws what it has and calls the entry's operation, and the
 * help and the errors print the table's names. The order is the one they are listed in. */
#include "render.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int text_graph(FILE *f, const struct call_graph *g, struct sample_tree *t, const bool *roots,
                      double threshold) {
        return render_text_graph(f, g, roots, threshold);
}

static int json_graph(FILE *f, const struct call_graph *g, struct sample_tree *t, const bool *roots,
                      double threshold) {
        return render_json_graph(f, g, roots, threshold);
}

/* dot draws the whole call graph, whatever the roots. */
static int dot_graph(FILE *f, const struct call_graph *g, struct sample_tree *t, const bool *roots,
                     double threshold) {
        return render_dot_graph(f, g, t, threshold);
}

static int folded_tree(FILE *f, struct sample_tree *t, double threshold) {
        return render_folded(f, t);
}

static int flame_tree(FILE *f, struct sample_tree *t, double threshold) {
        return render_flame_svg(f, t, false, threshold, NULL);
}

/* The icicle graph is drawn from the inverted tree: who calls what. */
static int icicle_tree(FILE *f, struct sample_tree *t, double threshold) {
        _cleanup_(sample_tree_freep) struct sample_tree *inverted = NULL;
        int r;

        r = sample_tree_invert(t, &inverted);
        return r < 0 ? r : render_flame_svg(f, inverted, true, threshold, NULL);
}

static int folded_index(FILE *f, const struct tree_index *x, double threshold) {
        return render_folded_index(f, x);
}

static int flame_index(FILE *f, const struct tree_index *x, double threshold) {
        return render_flame_svg_file_index(f, x, false, threshold);
}

/* from the inverted tree's index */
static int icicle_index(FILE *f, const struct tree_index *x, double threshold) {
        return render_flame_svg_file_index(f, x, true, threshold);
}

static int speedscope_index(FILE *f, const struct tree_index *x, double threshold) {
        return render_speedscope_index(f, &x, 1);
}

static int pprof_index(FILE *f, const struct tree_index *x, double threshold) {
        return render_pprof_index(f, x);
}

static int html_trees(FILE *f, struct sample_tree *const *trees, size_t n) {
        return render_html_report(f, trees, n, NULL);
}

static int html_index(FILE *f, const struct tree_index *x, double threshold) {
        return render_html_report_index(f, &x, 1, NULL);
}

static int html_indexes(FILE *f, const struct tree_index *const *xs, size_t n) {
        return render_html_report_index(f, xs, n, NULL);
}

const struct render_format render_formats[] = {
        {
                .name = "text",
                .note = "the paper's",
                .live = true,
                .profile = render_text_profile,
                .tree = render_text_tree,
                .tree_index = render_text_tree_index,
                .graph = text_graph,
                .table = render_text_table,
                .diff = render_text_diff,
        },
        {
                .name = "json",
                .live = true,
                .profile = render_json_profile,
                .tree = render_json_tree,
                .tree_index = render_json_tree_index,
                .graph = json_graph,
                .table = render_json_table,
                .diff = render_json_diff,
        },
        {
                .name = "csv",
                .profile = render_csv_profile,
                .table = render_csv_table,
                .diff = render_csv_diff,
        },
        { .name = "folded", .tree = folded_tree, .tree_index = folded_index },
        { .name = "flame", .tree = flame_tree, .tree_index = flame_index },
        { .name = "icicle", .tree = icicle_tree, .tree_index = icicle_index, .inverted = true },
        { .name = "dot", .tree = render_dot, .graph = dot_graph },
        { .name = "html", .trees = html_trees, .tree_index = html_index, .trees_index = html_indexes },
        {
                .name = "pprof",
                .binary = "gzipped binary",
                .trees = render_pprof,
                .tree_index = pprof_index,
                .trees_index = render_pprof_indexes,
                .labels = true,
        },
        {
                .name = "speedscope",
                .trees = render_speedscope,
                .tree_index = speedscope_index,
                .trees_index = render_speedscope_index,
        },
        {},
};

const struct render_format *render_format_find(const char *name) {
        if (strcmp(name, "svg") == 0)
                name = "flame";
        for (const struct render_format *f = render_formats; f->name; f++)
                if (strcmp(f->name, name) == 0)
                        return f;
        return NULL;
}

bool render_format_draws(const struct render_format *f, unsigned what) {
        return (!(what & RENDER_PROFILE) || f->profile) && (!(what & RENDER_TREE) || f->tree || f->trees) &&
                (!(what & RENDER_TREES) || f->trees) && (!(what & RENDER_GRAPH) || f->graph) &&
                (!(what & RENDER_TABLE) || f->table) && (!(what & RENDER_DIFF) || f->diff) &&
                (!(what & RENDER_LIVE) || f->live);
}

char *render_format_list(unsigned what, const char *last) {
        _cleanup_free_ char *list = NULL;
        const char *prev = NULL;
        size_t size = 0;
        FILE *f;

        f = open_memstream(&list, &size);
        if (!f)
                return NULL;
        for (const struct render_format *x = render_formats; x->name; x++) {
                if (!render_format_draws(x, what))
                        continue;
                if (prev)
                        fprintf(f, "%s%s", ftell(f) > 0 ? ", " : "", prev);
                prev = x->name;
        }
        if (prev)
                fprintf(f, "%s%s", ftell(f) > 0 ? last : "", prev);
        if (fclose(f) != 0)
                return NULL;
        return take_ptr(&list);
}

int render_format_trees(const struct render_format *f, FILE *out, struct sample_tree *const *trees, size_t n,
                        double threshold) {
        if (f->trees)
                return f->trees(out, trees, n);
        if (f->tree)
                return f->tree(out, trees[0], threshold);
        return -EINVAL;
}
