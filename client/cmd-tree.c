/* cppctl tree: the sample tree profile (paper §7.2), pruned at --threshold, in any format that
 * draws a whole tree: the paper's indented text, JSON, folded stacks, flame and icicle SVG,
 * Graphviz dot, an HTML report, pprof, speedscope. cppctl export is the same command for other
 * tools, pprof by default. Several resources (-r A,B) go into the formats that hold several
 * (html, pprof, speedscope). At a threshold, the text, JSON, flame and icicle trees read the
 * tree's index, as the profile views do, and draw the paths above the threshold alone; at
 * threshold 0 they are drawn as the index is walked, as folded stacks are written; dot draws the
 * call graph gathered from the index; the other formats load the tree. */
#include "cppctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* Formats that draw, at a threshold, only the nodes above it and count or size the rest by
 * their weight: drawn from the tree of the index's nodes above the threshold and their children
 * (tree_index_prune()), the same bytes as from the whole tree, which is never loaded. Their
 * children come sorted by weight, then name, so the index's order of siblings shows nowhere. The
 * icicle graph is the inverted tree's flame graph: drawn from the inverted tree's index. */
static bool draws_above_threshold(const struct render_format *format) {
        return streq(format->name, "text") || streq(format->name, "json") || streq(format->name, "flame") ||
                streq(format->name, "icicle");
}

static int pruned_tree(struct query_args *q) {
        _cleanup_(view_data_done) struct view_data v = {};
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        bool icicle = streq(q->format->name, "icicle");
        FILE *out;
        int r;

        r = query_load_index(q, icicle, &v);
        if (r < 0)
                return exit_status(r);
        r = tree_index_prune(v.index, q->threshold, &t);
        if (r < 0)
                return exit_status(log_error_errno(r, "Cannot read the tree's index: %m"));
        out = query_output(q);
        if (!out)
                return EXIT_FAILURE_;
        /* the icicle format inverts the tree it is given: this one is inverted already */
        r = icicle ? render_flame_svg(out, t, true, q->threshold, NULL) :
                     render_format_trees(q->format, out, &t, 1, q->threshold);
        return query_output_close(q, out, r);
}

/* The dot format draws the tree's call graph: gathered from the index in one pass
 * (call_graph_build_index()), as cppctl graph gathers it, at any threshold. */
static int dot_tree(struct query_args *q) {
        _cleanup_(view_data_done) struct view_data v = {};
        _cleanup_(call_graph_freep) struct call_graph *g = NULL;
        FILE *out;
        int r;

        r = query_load_index(q, false, &v);
        if (r < 0)
                return exit_status(r);
        r = call_graph_build_index(v.index, &g);
        if (r < 0)
                return exit_status(log_error_errno(r, "Cannot build the call graph: %m"));
        out = query_output(q);
        if (!out)
                return EXIT_FAILURE_;
        r = render_dot_graph(out, g, v.index->header, q->threshold);
        return query_output_close(q, out, r);
}

/* The text, JSON, flame and icicle trees at threshold 0, and folded stacks at any: drawn as the
 * index is walked (tree_index_each_drawn(), tree_index_each_stack()), with the index mapped a
 * window at a time, so that a tree of millions of nodes is drawn whole without loading it. */
static int index_tree(struct query_args *q) {
        _cleanup_(view_data_done) struct view_data v = {};
        FILE *out;
        int r;

        q->filter.labels = q->format->labels;
        r = query_load_index(q, q->format->inverted, &v);
        if (r < 0)
                return exit_status(r);
        out = query_output(q);
        if (!out)
                return EXIT_FAILURE_;
        r = q->format->tree_index(out, v.index, q->threshold);
        return query_output_close(q, out, r);
}

/* Several resources in a format that holds several, from their indexes walked (speedscope,
 * pprof). */
static int indexes_tree(struct query_args *q) {
        _cleanup_free_ struct view_data *v = NULL;
        _cleanup_free_ const struct tree_index **xs = NULL;
        size_t n = 0;
        FILE *out;
        int r;

        q->filter.labels = q->format->labels;
        r = query_load_indexes(q, false, &v, &n);
        if (r < 0)
                return exit_status(r);
        xs = calloc(n, sizeof *xs);
        if (!xs)
                r = log_error_errno(ENOMEM, "Out of memory");
        else if ((out = query_output(q))) {
                for (size_t i = 0; i < n; i++)
                        xs[i] = v[i].index;
                r = query_output_close(q, out, q->format->trees_index(out, xs, n));
        } else
                r = EXIT_FAILURE_;
        for (size_t i = 0; i < n; i++)
                view_data_done(&v[i]);
        return r < 0 ? exit_status(r) : r;
}

/* The whole of tree and export: NAME renders the sample tree in FORMAT (NULL: text, at the
 * threshold; else with everything) unless --format says. */
static int tree_command(int argc, char **argv, const char *name, const char *usage,
                        const struct render_format *format) {
        _cleanup_(query_args_done) struct query_args q = {};
        _cleanup_(name_table_freep) struct name_table *names = NULL;
        _cleanup_free_ struct sample_tree **trees = NULL;
        size_t n = 0;
        FILE *out;
        int r;

        r = query_args_parse(&q, argc, argv, name, usage, QUERY_MANY_RESOURCES);
        if (r <= 0)
                return exit_status(r);
        if (format && !q.format_set)
                q.format = format;
        if (format && !q.threshold_set)
                q.threshold = 0; /* export: everything */
        r = query_check_format(&q, name, RENDER_TREE);
        if (r < 0)
                return exit_status(r);
        if (q.ratio)
                return exit_status(log_error_errno(EINVAL,
                                                   "%s: --ratio is a view of paths: use it with "
                                                   "down, up, functions or body",
                                                   name));
        if (q.resources && q.resources[1] && !render_format_draws(q.format, RENDER_TREES)) {
                _cleanup_free_ char *several = render_format_list(RENDER_TREES, " and ");

                return exit_status(log_error_errno(EINVAL,
                                                   "%s --format %s shows one resource; %s hold several", name,
                                                   q.format->name, several ?: ""));
        }
        if (q.format->binary && !q.output && isatty(STDOUT_FILENO))
                return exit_status(log_error_errno(EINVAL,
                                                   "%s's format is %s: write it to a file with -o FILE "
                                                   "(or redirect)",
                                                   q.format->name, q.format->binary));
        if (draws_above_threshold(q.format) && q.threshold > 0 && !(q.resources && q.resources[1]))
                return pruned_tree(&q);
        if (streq(q.format->name, "dot"))
                return dot_tree(&q);
        if (q.format->tree_index && !(q.resources && q.resources[1]))
                return index_tree(&q);
        if (q.format->trees_index)
                return indexes_tree(&q);
        r = query_load_many(&q, &names, &trees, &n);
        if (r < 0)
                return exit_status(r);
        out = query_output(&q);
        r = out ? render_format_trees(q.format, out, trees, n, q.threshold) : -EIO;
        if (out)
                r = query_output_close(&q, out, r);
        else
                r = EXIT_FAILURE_;
        for (size_t i = 0; i < n; i++)
                sample_tree_free(trees[i]);
        return r;
}

int cmd_tree(int argc, char **argv, const struct verb *verb) {
        return tree_command(argc, argv, "tree",
                            "Sample tree profile (paper §7.2): every distinct stack as an indented tree,\n"
                            "each node with the fraction and hits at or below it. --format draws it as a\n"
                            "flame graph, an icicle graph, a dot graph, an HTML report, or writes it for\n"
                            "other tools (folded, pprof, speedscope).",
                            NULL);
}

int cmd_export(int argc, char **argv, const struct verb *verb) {
        return tree_command(argc, argv, "export",
                            "The sample tree of the filtered samples for other tools: --format pprof (the\n"
                            "default: gzipped profile.proto for pprof, Pyroscope, Parca), speedscope,\n"
                            "folded (flamegraph.pl, inferno), json, flame or icicle (SVG), dot, html.\n"
                            "Every filter option applies; -r A,B puts several resources in one pprof,\n"
                            "speedscope or html file. The threshold defaults to 0 here: everything.",
                            render_format_find("pprof"));
}
