/* The table of output formats (render-format.c): what each draws, the lists of names that help
 * and errors print, and the names --format takes. */
#include <string.h>

#include "render.h"
#include "tap.h"

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

int main(void) {
        test_find();
        test_draws();
        test_lists();
        return tap_done();
}
