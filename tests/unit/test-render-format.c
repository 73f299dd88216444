/* The table of output formats (render-format.c): what each draws, the lists of names that help
 * and errors print, and the names --format takes; and the text tree drawn at a threshold from the
 * pruned tree of an index (tree_index_prune(), what cppctl tree reads) the same as from the whole
 * tree, on random stacks; so do the JSON tree and the flame graph, and the icicle graph from
 * the pruned inverted tree's index (cmd-tree.c draws these four so); and the dot digraph of the
 * call graph gathered from the index the same as of the whole tree (graph and tree draw it so),
 * and folded stacks written as the index is walked the same as from the tree. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call-graph.h"
#include "folded-tree.h"
#include "render.h"
#include "tap.h"
#include "tree-index.h"

static void test_find(void) {
        ok(render_format_find("text") == &render_formats[0], "text is the first format, the default");
        ok(render_format_find("svg") == render_format_find("flame"), "svg is flame");
        ok(!render_format_find("xml"), "an unknown name: NULL");
        ok(render_format_find("pprof")->binary && !render_format_find("html")->binary,
           "pprof is binary, html is not");
}

static void test_draws(void) {
        ok(render_format_draws(render_format_find("csv"), RENDER_PROFILE | RENDER_TABLE | RENDER_DIFF),
           "csv draws profiles, tables and diffs");
        ok(!render_format_draws(render_format_find("csv"), RENDER_TREE), "but no tree");
        ok(render_format_draws(render_format_find("html"), RENDER_TREE), "html draws a tree (as several)");
        ok(!render_format_draws(render_format_find("csv"), RENDER_PROFILE | RENDER_LIVE), "top: no csv");
}

static void test_lists(void) {
        static const struct {
                unsigned what;
                const char *last, *want;
        } cases[] = {
                { 0, " or ", "text, json, csv, folded, flame, icicle, dot, html, pprof or speedscope" },
                { RENDER_PROFILE, ", ", "text, json, csv" },
                { RENDER_TREES, " and ", "html, pprof and speedscope" },
                { RENDER_GRAPH, ", ", "text, json, dot" },
                { RENDER_PROFILE | RENDER_LIVE, ", ", "text, json" },
                { RENDER_DIFF | RENDER_TREES, " or ", "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *list = render_format_list(cases[i].what, cases[i].last);

                ok(list && streq(list, cases[i].want), "list %zu: '%s'", i, list ?: "(null)");
        }
}

/* T drawn in FORMAT (text, json, flame; icicle: T is the inverted tree, drawn as is) at
 * THRESHOLD, into a string (malloc()ed), or NULL. */
static char *drawn(const char *format, struct sample_tree *t, double threshold) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        int r;

        if (!f)
                return NULL;
        if (streq(format, "icicle"))
                r = render_flame_svg(f, t, true, threshold, NULL);
        else
                r = render_format_find(format)->tree(f, t, threshold);
        fclose(f);
        if (r < 0)
                buf = mfree(buf);
        return buf;
}

/* N random stacks over 25 names with recursion, hits by a long tail, folded (malloc()ed). */
static char *random_folded(int n, uint64_t seed) {
        char *text = malloc((size_t) n * 160);
        size_t at = 0;

        if (!text)
                abort();
        for (int i = 0; i < n; i++) {
                size_t depth;

                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                depth = 1 + (seed >> 33) % 18;
                at += sprintf(text + at, "main");
                for (size_t d = 1; d < depth; d++) {
                        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                        at += sprintf(text + at, ";f%u", (unsigned) ((seed >> 33) % (d < 3 ? 4 : 25)));
                }
                at += sprintf(text + at, " %u\n", (unsigned) (1 + 4000 / (1 + (seed >> 40) % 400)));
        }
        return text;
}

static void test_pruned_tree(void) {
        _cleanup_free_ char *text = random_folded(4000, 11);
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(text), *inv = NULL;
        _cleanup_(tree_index_freep) struct tree_index *x = NULL, *up = NULL, *down = NULL;
        static const double thresholds[] = { 0.2, 0.05, 0.01, 0.002, 0.0005 };
        static const char *const formats[] = { "text", "json", "flame", "icicle" };

        ok(sample_tree_set_resource(t, "cpu-time", "1 ms of CPU time") == 0 && tree_index_build(t, &x) == 0 &&
                   tree_index_build(t, &down) == 0 && tree_index_invert(take_ptr(&down), -1, &up) == 0 &&
                   sample_tree_invert(t, &inv) == 0,
           "4,000 random stacks, their index and their inverted tree's");
        for (size_t k = 0; x && up && k < sizeof formats / sizeof *formats; k++)
                for (size_t i = 0; i < sizeof thresholds / sizeof *thresholds; i++) {
                        bool icicle = streq(formats[k], "icicle");
                        _cleanup_(sample_tree_freep) struct sample_tree *p = NULL;
                        _cleanup_free_ char *whole = drawn(formats[k], icicle ? inv : t, thresholds[i]);
                        _cleanup_free_ char *pruned = NULL;

                        if (tree_index_prune(icicle ? up : x, thresholds[i], &p) == 0)
                                pruned = drawn(formats[k], p, thresholds[i]);
                        ok(whole && pruned && streq(whole, pruned),
                           "%s at %g: the pruned tree (%zu of %zu nodes) draws the same bytes", formats[k],
                           thresholds[i], p ? p->n_nodes : 0, (icicle ? inv : t)->n_nodes);
                }
}

/* The dot digraph of the call graph gathered from the index (what cppctl graph and tree draw)
 * against the one render_dot() gathers from the whole tree: the same bytes. */
static void test_dot_from_index(void) {
        _cleanup_free_ char *text = random_folded(5000, 13);
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(text);
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        _cleanup_(call_graph_freep) struct call_graph *g = NULL;
        static const double thresholds[] = { 0.2, 0.05, 0.01, 0.002, 0 };

        ok(sample_tree_set_resource(t, "cpu-time", "1 ms of CPU time") == 0 && tree_index_build(t, &x) == 0 &&
                   call_graph_build_index(x, &g) == 0,
           "5,000 random stacks, their index and its call graph");
        for (size_t i = 0; g && i < sizeof thresholds / sizeof *thresholds; i++) {
                _cleanup_free_ char *whole = drawn("dot", t, thresholds[i]), *indexed = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&indexed, &size);
                int r = f ? render_dot_graph(f, g, x->header, thresholds[i]) : -ENOMEM;

                if (f)
                        fclose(f);
                ok(r == 0 && whole && indexed && streq(whole, indexed),
                   "dot at %g: the same bytes from the index", thresholds[i]);
        }
}

/* T's folded stacks drawn from the whole tree (FROM_INDEX false) or from its index, into a
 * string (malloc()ed), or NULL. */
static char *folded(struct sample_tree *t, bool from_index) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        if (from_index && tree_index_build(t, &x) < 0)
                return NULL;
        f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        r = from_index ? render_folded_index(f, x) : render_folded(f, t);
        fclose(f);
        if (r < 0)
                buf = mfree(buf);
        return buf;
}

/* Folded stacks written as the index is walked (cppctl tree and export) against those of the
 * whole tree: the same lines in the same order, children by name whatever their ids. */
static void test_folded_from_index(void) {
        _cleanup_free_ char *text = random_folded(5000, 17);
        static const char *const small[] = {
                "main;zeta;b 1\nmain;alpha 2\nmain;zeta 3\nmain;mid;zeta;alpha 4\n",
                "main 5\nmain;f;f;f 1\nmain;f;g 2\n",
        };
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(text);

        for (size_t i = 0; i < 3; i++) {
                _cleanup_(sample_tree_freep) struct sample_tree *s =
                        i < 2 ? tree_from_folded(small[i]) : NULL;
                struct sample_tree *u = i < 2 ? s : t;
                _cleanup_free_ char *whole = folded(u, false), *indexed = folded(u, true);

                ok(whole && indexed && streq(whole, indexed), "folded from the index: %zu bytes, the same",
                   whole ? strlen(whole) : 0);
        }
}

int main(void) {
        test_find();
        test_draws();
        test_lists();
        test_pruned_tree();
        test_dot_from_index();
        test_folded_from_index();
        return tap_done();
}
