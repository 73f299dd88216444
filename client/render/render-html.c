/* The HTML report: one self-contained page (no scripts, styles or fonts fetched from anywhere)
 * on the sample trees of a store, one section per resource, each with
 *
 *   - the header's facts: unit, period, samples, hits, samples lost, unsymbolized frames;
 *   - the function profile (paper §4.4), its HTML_TOP_FUNCTIONS heaviest functions;
 *   - the downward profile (paper §4.3) of the heaviest outermost frame (usually main, or the
 *     thread start routine that does the work), its HTML_TOP_PATHS heaviest call paths: where
 *     the program's time goes, read from the top, in the paper's notation;
 *   - the flame graph of render_flame_svg_element(), inline, pruned at HTML_FLAME_THRESHOLD.
 *
 * Every name is escaped by xml_write_escaped(), which serves HTML as well. A section costs a
 * function profile, a downward profile and a walk of the tree; reports are written once. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HTML_TOP_FUNCTIONS 30
#define HTML_TOP_PATHS 20
#define HTML_FLAME_THRESHOLD 0.001 /* narrower frames: under 1.2 px of 1180 */

static const char html_style[] =
        "<style>\n"
        "body { font: 14px sans-serif; margin: 1em 2em; color: #222; }\n"
        "table { border-collapse: collapse; margin: 0.5em 0 1.5em; }\n"
        "th, td { padding: 2px 10px; text-align: left; border-bottom: 1px solid #ddd; }\n"
        "td.num { text-align: right; font-variant-numeric: tabular-nums; }\n"
        "td.name { font-family: monospace; }\n"
        "td.bar { width: 120px; }\n"
        "td.bar div { height: 10px; background: rgb(230,120,30); }\n"
        "svg.fg { max-width: 100%; height: auto; }\n"
        "p.note { color: #666; }\n"
        "</style>\n";

/* T's header facts; its TOTAL hits are given, since an index's header holds no weighed tree. */
static void html_facts(FILE *f, const struct sample_tree *t, uint64_t total) {
        const struct sample_tree_info *i = &t->info;

        fputs("<table class=\"facts\">\n<tr><th>Unit</th><td>1 gtick = ", f);
        xml_write_escaped(f, i->unit ?: "?");
        fputs("</td></tr>\n<tr><th>Period</th><td>", f);
        if (i->period)
                fprintf(f, "every %" PRIu64 " gticks", i->period);
        else
                fputs("several (runs with different periods merged)", f);
        fprintf(f,
                "</td></tr>\n<tr><th>Samples</th><td>%" PRIu64 "</td></tr>\n"
                "<tr><th>Hits</th><td>%" PRIu64 "</td></tr>\n"
                "<tr><th>Samples lost</th><td>%" PRIu64 "</td></tr>\n",
                i->samples, total, i->lost);
        if (i->frames)
                fprintf(f, "<tr><th>Frames unsymbolized</th><td>%.1f%%</td></tr>\n",
                        100.0 * (double) i->frames_unsymbolized / (double) i->frames);
        if (i->frames_named_later)
                fprintf(f,
                        "<tr><th>Named later</th><td>%" PRIu64 " frames from %" PRIu64 " modules</td></tr>\n",
                        i->frames_named_later, i->modules_named_later);
        if (i->names_note) {
                fputs("<tr><th>Names</th><td>", f);
                xml_write_escaped(f, i->names_note);
                fputs("</td></tr>\n", f);
        }
        if (i->collect_note) {
                fputs("<tr><th>Not measured</th><td>", f);
                xml_write_escaped(f, i->collect_note);
                fputs("</td></tr>\n", f);
        }
        if (i->python_note) {
                fputs("<tr><th>Python</th><td>", f);
                xml_write_escaped(f, i->python_note);
                fputs("</td></tr>\n", f);
        }
        fputs("</table>\n", f);
}

/* Writes P's first MAX entries as table rows; paths in the paper's "(main f g)" notation. */
static void html_profile(FILE *f, const struct profile *p, size_t max, const char *what) {
        bool paths = p->kind == PROFILE_DOWN || p->kind == PROFILE_UP;
        size_t shown = MIN(p->n_entries, max);

        fprintf(f,
                "<table class=\"profile\">\n"
                "<tr><th>Fraction</th><th></th><th>Hits</th><th>%s</th></tr>\n",
                paths ? "Call path" : "Function");
        for (size_t i = 0; i < shown; i++) {
                const struct profile_entry *e = &p->entries[i];
                const uint32_t *names = profile_path(p, e);
                double fraction = profile_fraction(p, e->hits);

                fprintf(f,
                        "<tr><td class=\"num\">%.4f</td>"
                        "<td class=\"bar\"><div style=\"width: %.1f%%\"></div></td>"
                        "<td class=\"num\">%" PRIu64 "</td><td class=\"name\">%s",
                        fraction, 100.0 * fraction, e->hits, paths ? "(" : "");
                for (uint32_t j = 0; j < e->len; j++) {
                        if (j)
                                fputc(' ', f);
                        xml_write_escaped(f, sample_tree_name(p->tree, names[j]));
                }
                fprintf(f, "%s</td></tr>\n", paths ? ")" : "");
        }
        fputs("</table>\n", f);
        /* a profile at a threshold (profile_heaviest_index()) counted those below it */
        if (p->n_entries + p->n_omitted > shown)
                fprintf(f, "<p class=\"note\">%s%zu more %s not shown.</p>\n",
                        p->omitted_partial ? "At least " : "", p->n_entries + p->n_omitted - shown, what);
}

/* The section's heading and facts; returns whether there are samples to show. */
static bool html_section_head(FILE *f, const struct sample_tree *header, uint64_t total, size_t index) {
        fprintf(f, "<section id=\"resource-%zu\">\n<h2>", index);
        xml_write_escaped(f, header->info.resource ?: "samples");
        fputs("</h2>\n", f);
        html_facts(f, header, total);
        if (total == 0) {
                fputs("<p>No samples.</p>\n</section>\n", f);
                return false;
        }
        return true;
}

static void html_functions(FILE *f, const struct profile *functions) {
        fputs("<h3>Functions</h3>\n<p class=\"note\">Per function, the share of samples whose stack "
              "contains it (body and descendants, paper §4.4).</p>\n",
              f);
        html_profile(f, functions, HTML_TOP_FUNCTIONS, "functions");
}

static void html_down(FILE *f, const struct profile *down, const char *top) {
        fputs("<h3>Call paths down from <code>", f);
        xml_write_escaped(f, top);
        fputs("</code></h3>\n<p class=\"note\">The heaviest call paths starting at the "
              "heaviest outermost frame (downward profile, paper §4.3).</p>\n",
              f);
        html_profile(f, down, HTML_TOP_PATHS, "call paths");
}

static void html_flame_head(FILE *f) {
        fputs("<h3>Flame graph</h3>\n<p class=\"note\">Hover for details, click to zoom, Search to "
              "highlight.</p>\n",
              f);
}

static int html_section(FILE *f, struct sample_tree *t, size_t index) {
        _cleanup_(profile_freep) struct profile *functions = NULL, *down = NULL;
        _cleanup_free_ uint32_t *roots = NULL;
        const char *resource = t->info.resource ?: "samples";
        const char *top;
        int r, k;

        sample_tree_weigh(t);
        if (!html_section_head(f, t, t->total, index))
                return 0;

        r = profile_function(t, 0, &functions);
        if (r < 0)
                return r;
        html_functions(f, functions);

        k = render_sorted_children(t, SAMPLE_TREE_ROOT, &roots);
        if (k < 0)
                return k;
        if (k > 0) {
                top = sample_tree_name(t, t->nodes[roots[0]].name);
                r = profile_down(t, top, 0, &down);
                if (r < 0)
                        return r;
                html_down(f, down, top);
        }

        html_flame_head(f);
        r = render_flame_svg_element(f, t, false, HTML_FLAME_THRESHOLD, resource);
        if (r < 0)
                return r;
        fputs("</section>\n", f);
        return 0;
}

/* The same section from the index X of the tree: the profiles are the index's views, the
 * heaviest outermost frame the heaviest of the root's children (ties by name, as
 * render_sorted_children() sorts them), its call paths the heaviest (profile_heaviest_index():
 * of a big index, not every one of its millions), and the flame graph is drawn from the tree of
 * the nodes above its threshold (tree_index_prune()), as `cppctl tree --format flame -t` draws it. */
static int html_section_index(FILE *f, const struct tree_index *x, size_t index) {
        _cleanup_(profile_freep) struct profile *functions = NULL, *down = NULL;
        _cleanup_(sample_tree_freep) struct sample_tree *pruned = NULL;
        const char *resource = x->header->info.resource ?: "samples";
        uint32_t top = 0;
        int r;

        if (!html_section_head(f, x->header, x->header->total, index))
                return 0;

        r = profile_function_index(x, 0, &functions);
        if (r < 0)
                return r;
        html_functions(f, functions);

        for (uint32_t c = 1, end = tree_index_size(x, 0); c < end; c += tree_index_size(x, c)) {
                if (tree_index_size(x, c) == 0 || x->nodes[c].name >= x->n_names)
                        return -EBADMSG;
                if (top == 0 || x->nodes[c].weight > x->nodes[top].weight ||
                    (x->nodes[c].weight == x->nodes[top].weight &&
                     strcmp(sample_tree_name(x->header, x->nodes[c].name),
                            sample_tree_name(x->header, x->nodes[top].name)) < 0))
                        top = c;
        }
        if (top > 0) {
                const char *name = sample_tree_name(x->header, x->nodes[top].name);

                r = profile_heaviest_index(x, PROFILE_DOWN, name, HTML_TOP_PATHS, &down);
                if (r < 0)
                        return r;
                html_down(f, down, name);
        }

        html_flame_head(f);
        r = tree_index_prune(x, HTML_FLAME_THRESHOLD, &pruned);
        if (r < 0)
                return r;
        r = render_flame_svg_element(f, pruned, false, HTML_FLAME_THRESHOLD, resource);
        if (r < 0)
                return r;
        fputs("</section>\n", f);
        return 0;
}

/* The page around N sections, each written by SECTION(F, I, USERDATA); RESOURCE(I, USERDATA)
 * names the Ith for the links. */
static int html_page(FILE *f, size_t n, const char *title, const char *(*resource)(size_t i, void *userdata),
                     int (*section)(FILE *f, size_t i, void *userdata), void *userdata) {
        int r;

        title = title ?: "cppd profile report";
        fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", f);
        xml_write_escaped(f, title);
        fprintf(f, "</title>\n%s</head>\n<body>\n<h1>", html_style);
        xml_write_escaped(f, title);
        fputs("</h1>\n", f);
        if (n == 0)
                fputs("<p>The store holds no samples.</p>\n", f);
        if (n > 1) {
                fputs("<nav><ul>\n", f);
                for (size_t i = 0; i < n; i++) {
                        fprintf(f, "<li><a href=\"#resource-%zu\">", i);
                        xml_write_escaped(f, resource(i, userdata) ?: "samples");
                        fputs("</a></li>\n", f);
                }
                fputs("</ul></nav>\n", f);
        }
        for (size_t i = 0; i < n; i++) {
                r = section(f, i, userdata);
                if (r < 0)
                        return r;
        }
        fputs("</body>\n</html>\n", f);
        return ferror(f) ? -EIO : 0;
}

static const char *tree_resource(size_t i, void *userdata) {
        struct sample_tree *const *trees = userdata;

        return trees[i]->info.resource;
}

static int tree_section(FILE *f, size_t i, void *userdata) {
        struct sample_tree *const *trees = userdata;

        return html_section(f, trees[i], i);
}

int render_html_report(FILE *f, struct sample_tree *const *trees, size_t n, const char *title) {
        return html_page(f, n, title, tree_resource, tree_section, (void *) trees);
}

static const char *index_resource(size_t i, void *userdata) {
        const struct tree_index *const *xs = userdata;

        return xs[i]->header->info.resource;
}

static int index_section(FILE *f, size_t i, void *userdata) {
        const struct tree_index *const *xs = userdata;

        return html_section_index(f, xs[i], i);
}

int render_html_report_index(FILE *f, const struct tree_index *const *xs, size_t n, const char *title) {
        return html_page(f, n, title, index_resource, index_section, (void *) xs);
}
