/* cppctl tree: the sample tree profile (paper §7.2), pruned at --threshold, in any format that
 * draws a whole tree: the paper's indented text, JSON, folded stacks, flame and icicle SVG,
 * Graphviz dot, an HTML report, pprof, speedscope. cppctl export is the same command for other
 * tools, pprof by default. Several resources (-r A,B) go into the formats that hold several
 * (html, pprof, speedscope). */
#include "cppctl.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"

/* The formats that hold one tree per resource in one file. */
#define FORMATS_MANY ((1u << RENDER_HTML) | (1u << RENDER_PPROF) | (1u << RENDER_SPEEDSCOPE))

static int render_trees(const struct query_args *q, struct sample_tree **trees, size_t n, FILE *out) {
        _cleanup_(sample_tree_freep) struct sample_tree *inverted = NULL;
        int r;

        switch (q->format) {
        case RENDER_TEXT:
                return render_text_tree(out, trees[0], q->threshold);
        case RENDER_JSON:
                return render_json_tree(out, trees[0], q->threshold);
        case RENDER_FOLDED:
                return render_folded(out, trees[0]);
        case RENDER_DOT:
                return render_dot(out, trees[0], q->threshold);
        case RENDER_FLAME:
                return render_flame_svg(out, trees[0], false, q->threshold, NULL);
        case RENDER_ICICLE:
                r = sample_tree_invert(trees[0], &inverted);
                return r < 0 ? r : render_flame_svg(out, inverted, true, q->threshold, NULL);
        case RENDER_HTML:
                return render_html_report(out, trees, n, NULL);
        case RENDER_PPROF:
                return render_pprof(out, trees, n);
        case RENDER_SPEEDSCOPE:
                return render_speedscope(out, trees, n);
        default:
                return -EINVAL;
        }
}

int tree_command(int argc, char **argv, const char *name, const char *usage, enum render_format format) {
        _cleanup_(query_args_done) struct query_args q = {};
        _cleanup_(name_table_freep) struct name_table *names = NULL;
        _cleanup_free_ struct sample_tree **trees = NULL;
        size_t n = 0;
        FILE *out;
        int r;

        r = query_args_parse(&q, argc, argv, name, usage, QUERY_MANY_RESOURCES);
        if (r <= 0)
                return exit_status(r);
        if (format != RENDER_TEXT && !q.format_set)
                q.format = format;
        if (format != RENDER_TEXT && !q.threshold_set)
                q.threshold = 0; /* export: everything */
        r = query_check_format(&q, name, FORMATS_TREE);
        if (r < 0)
                return exit_status(r);
        if (q.ratio)
                return exit_status(log_error_errno(EINVAL,
                                                   "%s: --ratio is a view of paths: use it with "
                                                   "down, up, functions or body",
                                                   name));
        if (q.resources && q.resources[1] && !((1u << q.format) & FORMATS_MANY))
                return exit_status(log_error_errno(EINVAL,
                                                   "%s --format %s shows one resource; html, pprof and "
                                                   "speedscope hold several",
                                                   name, render_format_name(q.format)));
        if (q.format == RENDER_PPROF && !q.output && isatty(STDOUT_FILENO))
                return exit_status(log_error_errno(EINVAL,
                                                   "pprof's format is gzipped binary: write it to a "
                                                   "file with -o FILE (or redirect)"));
        r = query_load_many(&q, &names, &trees, &n);
        if (r < 0)
                return exit_status(r);
        out = query_output(&q);
        r = out ? render_trees(&q, trees, n, out) : -EIO;
        if (out)
                r = query_output_close(&q, out, r);
        else
                r = EXIT_FAILURE_;
        for (size_t i = 0; i < n; i++)
                sample_tree_free(trees[i]);
        return r;
}

int cmd_tree(int argc, char **argv) {
        return tree_command(argc, argv, "tree",
                            "Sample tree profile (paper §7.2): every distinct stack as an indented tree,\n"
                            "each node with the fraction and hits at or below it. --format draws it as a\n"
                            "flame graph, an icicle graph, a dot graph, an HTML report, or writes it for\n"
                            "other tools (folded, pprof, speedscope).",
                            RENDER_TEXT);
}

int cmd_export(int argc, char **argv) {
        return tree_command(argc, argv, "export",
                            "The sample tree of the filtered samples for other tools: --format pprof (the\n"
                            "default: gzipped profile.proto for pprof, Pyroscope, Parca), speedscope,\n"
                            "folded (flamegraph.pl, inferno), json, flame or icicle (SVG), dot, html.\n"
                            "Every filter option applies; -r A,B puts several resources in one pprof,\n"
                            "speedscope or html file. The threshold defaults to 0 here: everything.",
                            RENDER_PPROF);
}
