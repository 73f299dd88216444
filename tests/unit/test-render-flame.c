/* tests/unit/test-render-flame.c: flame graphs of the paper's forms example, worked by hand.
 * Forms has 614 hits in 33 nodes; the graph is 1180 px wide, so a frame of H hits is
 * H / 614 * 1180 px wide, and six rows (depths 0-5) put the flame's root row at y = 56 + 5 * 16. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "render-check.h"
#include "render.h"
#include "tap.h"

static char *render(struct sample_tree *t, bool icicle, double threshold, const char *title) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        int r;

        if (!f)
                abort();
        r = render_flame_svg(f, t, icicle, threshold, title);
        fclose(f);
        if (r < 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* Copies into RET (of SIZE bytes) attribute ATTR of the INDEX-th frame named NAME ("" if none). */
static const char *frame_attr(const char *svg, const char *name, size_t index, const char *attr, char *ret,
                              size_t size) {
        char key[256], want[64];
        const char *p = svg, *end, *v;

        snprintf(key, sizeof key, "data-n=\"%s\"", name);
        snprintf(want, sizeof want, " %s=\"", attr);
        *ret = '\0';
        for (size_t i = 0; p && i <= index; i++)
                if ((p = strstr(p, key)))
                        p += strlen(key);
        if (!p)
                return ret;
        end = strstr(p, "</g>");
        v = strstr(p, want);
        if (!v || !end || v > end)
                return ret;
        v += strlen(want);
        snprintf(ret, size, "%.*s", (int) (strchr(v, '"') - v), v);
        return ret;
}

/* The label (text) of the INDEX-th frame named NAME. */
static const char *frame_label(const char *svg, const char *name, size_t index, char *ret, size_t size) {
        char key[256];
        const char *p = svg, *t;

        snprintf(key, sizeof key, "data-n=\"%s\"", name);
        *ret = '\0';
        for (size_t i = 0; p && i <= index; i++)
                if ((p = strstr(p, key)))
                        p += strlen(key);
        if (!p || !(t = strstr(p, "<text")) || !(t = strchr(t, '>')))
                return ret;
        t++;
        snprintf(ret, size, "%.*s", (int) (strchr(t, '<') - t), t);
        return ret;
}

#define is_str(got, want, what) \
        do { \
                const char *_g = (got), *_w = (want); \
                if (!ok(strcmp(_g, _w) == 0, "%s", what)) \
                        printf("#   got \"%s\", want \"%s\"\n", _g, _w); \
        } while (0)

static void test_forms(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(forms_folded);
        _cleanup_free_ char *svg = NULL, *again = NULL;
        char v[128];

        ok(sample_tree_set_resource(t, "cpu-time", "1 ms of CPU time") == 0, "forms as cpu-time");
        t->info.period = 10;
        svg = render(t, false, 0, "forms");
        again = render(t, false, 0, "forms");
        if (!ok(svg && again, "render_flame_svg() succeeds"))
                return;
        ok(strcmp(svg, again) == 0, "the output is deterministic");
        ok(xml_parses(svg), "the SVG is well-formed XML");
        ok(strncmp(svg, "<?xml version=\"1.0\"", 19) == 0, "it starts with an XML declaration");
        is_int(count_of(svg, "class=\"fg-frame\""), 34, "34 frames: the 33 nodes and 'all'");
        is_int(count_of(svg, "<script>"), 1, "one script...");
        ok(!strstr(svg, "href") && !strstr(svg, "src="), "...embedded: nothing is loaded");
        ok(strstr(svg,
                  "cpu-time: 614 hits in 614 samples, sampled every 10 gticks "
                  "(1 gtick = 1 ms of CPU time); 0 samples lost") != NULL,
           "the header's facts");

        is_str(frame_attr(svg, "all", 0, "width", v, sizeof v), "1180.00", "all: the full width");
        is_str(frame_attr(svg, "all", 0, "y", v, sizeof v), "136", "all: the bottom row");
        is_str(frame_attr(svg, "main", 0, "width", v, sizeof v), "1180.00", "main: 614 hits, full width");
        is_str(frame_attr(svg, "main", 0, "y", v, sizeof v), "120", "main: one row up");
        is_str(frame_attr(svg, "invoice", 0, "width", v, sizeof v), "205.64", "invoice: 107/614 of 1180 px");
        is_str(frame_attr(svg, "invoice", 0, "x", v, sizeof v), "10.00", "invoice: heaviest, leftmost");
        is_str(frame_attr(svg, "envelope", 0, "x", v, sizeof v), "215.64",
               "envelope: 106 hits, first by name of three, right after invoice");
        ok(strstr(svg, "data-x=\"107\" data-w=\"106\" data-d=\"2\" data-n=\"envelope\"") != NULL,
           "envelope starts at hit 107, for the script");
        is_str(frame_attr(svg, "db_update_record", 0, "width", v, sizeof v), "161.43",
               "db_update_record: 84/614 of 1180 px");
        is_str(frame_attr(svg, "db_update_record", 0, "x", v, sizeof v), "1028.57",
               "db_update_record: lightest, rightmost (530 hits to its left)");
        is_str(frame_attr(svg, "db_read_record", 0, "y", v, sizeof v), "56", "the deepest frames: top row");
        ok(strstr(svg, "<title>main → invoice → address_information (85 hits, 13.84%)</title>"),
           "a frame's title: its path, hits and percentage");
        is_str(frame_label(svg, "invoice", 0, v, sizeof v), "invoice", "a label that fits");
        /* invoice's own db_get_property: 22 hits, 42.28 px, room for 5 characters */
        is_str(frame_label(svg, "db_get_property", 1, v, sizeof v), "db_..", "a label cut to fit");
        ok(strstr(svg, "rgb(2") != NULL, "warm colours");
}

static void test_threshold(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(forms_folded);
        _cleanup_free_ char *svg = render(t, false, 0.05, NULL);

        if (!ok(svg != NULL, "render at threshold 0.05"))
                return;
        /* 0.05 * 614 = 30.7 hits: each form's direct db_get_property (21 or 22) goes, and with
         * it its db_read_record. */
        is_int(count_of(svg, "class=\"fg-frame\""), 24, "24 frames: 10 below 30.7 hits pruned");
        ok(!strstr(svg, "data-w=\"22\"") && !strstr(svg, "data-w=\"21\""), "none of 21 or 22 hits");
        ok(strstr(svg, "frames under 5% of the total not shown") != NULL, "the header says so");
        ok(strstr(svg, ">Flame Graph</text>") != NULL, "a default title");
        ok(xml_parses(svg), "well-formed");
}

static void test_icicle(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(forms_folded);
        _cleanup_(sample_tree_freep) struct sample_tree *inv = NULL;
        _cleanup_free_ char *svg = NULL;
        char v[128];

        ok(sample_tree_invert(t, &inv) == 0, "invert forms");
        svg = render(inv, true, 0, "callers of db_read_record");
        if (!ok(svg != NULL, "render the icicle"))
                return;
        ok(xml_parses(svg), "well-formed");
        is_str(frame_attr(svg, "all", 0, "y", v, sizeof v), "56", "all: the top row");
        is_str(frame_attr(svg, "db_read_record", 0, "y", v, sizeof v), "72", "the leaf hangs below it");
        is_str(frame_attr(svg, "db_get_property", 0, "width", v, sizeof v), "1018.57",
               "db_get_property calls it in 530 of 614 hits");
        ok(strstr(svg, "<title>db_read_record ← db_update_record (84 hits, 13.68%)</title>") != NULL,
           "paths read callee ← caller");
}

static void test_escaping(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t =
                tree_from_folded("main;std::map<int, int>::find& 3\n"
                                 "main;a\"b'c 1\n"
                                 "main;bad\xff\x01name 1\n");
        _cleanup_free_ char *svg = render(t, false, 0, "a < b & c");
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        FILE *f;

        if (!ok(svg != NULL, "render C++ names"))
                return;
        ok(xml_parses(svg), "well-formed despite < > & \" ' and bad bytes");
        ok(!strstr(svg, "<int") && !strstr(svg, "find& "), "no raw < or &");
        ok(strstr(svg, "data-n=\"std::map&lt;int, int&gt;::find&amp;\""), "escaped in attributes");
        ok(strstr(svg, "<title>main → std::map&lt;int, int&gt;::find&amp; (3 hits, 60.00%)</title>"),
           "escaped in titles");
        ok(strstr(svg, "data-n=\"a&quot;b&#39;c\"") != NULL, "quotes escaped");
        ok(strstr(svg, ">a &lt; b &amp; c</text>") != NULL, "the title escaped");
        ok(strstr(svg, "bad&#xfffd;&#xfffd;name"), "a byte not UTF-8 and a control become U+FFFD");

        f = open_memstream(&buf, &size);
        if (!f)
                abort();
        xml_write_escaped(f, "é\xed\xa0\x80\xc0\xaf|\xf0\x9f\x94\xa5");
        fclose(f);
        ok(streq(buf, "é&#xfffd;&#xfffd;&#xfffd;&#xfffd;&#xfffd;|\xf0\x9f\x94\xa5"),
           "UTF-8 kept; surrogates and overlong forms replaced byte by byte");
}

static void test_empty(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = sample_tree_new(NULL);
        _cleanup_free_ char *svg = NULL;

        if (!t)
                abort();
        svg = render(t, false, 0, NULL);
        if (!ok(svg != NULL, "render an empty tree"))
                return;
        is_int(count_of(svg, "class=\"fg-frame\""), 0, "no frames");
        ok(strstr(svg, "No samples.") != NULL, "it says so");
        ok(strstr(svg, "height=\"90\"") != NULL, "no rows");
        ok(xml_parses(svg), "well-formed");
}

int main(void) {
        test_forms();
        test_threshold();
        test_icicle();
        test_escaping();
        test_empty();
        return tap_done();
}
