/* tests/unit/test-render-html.c: the HTML report on the paper's examples, one section per
 * resource, checked for its facts, tables, inline flame graphs and escaping; python3's HTML
 * parser checks that every element that is opened is closed. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "render-check.h"
#include "render.h"
#include "tap.h"

/* Exits 1 if an element is closed that is not the innermost open one, or one is left open. */
#define HTML_BALANCED \
        "import sys, html.parser\n" \
        "void = {\"meta\", \"br\", \"img\", \"input\", \"link\", \"hr\"}\n" \
        "class P(html.parser.HTMLParser):\n" \
        "    open = []\n" \
        "    def handle_starttag(self, tag, attrs):\n" \
        "        if tag not in void: self.open.append(tag)\n" \
        "    def handle_startendtag(self, tag, attrs): pass\n" \
        "    def handle_endtag(self, tag):\n" \
        "        if not self.open or self.open.pop() != tag: sys.exit(1)\n" \
        "p = P(convert_charrefs=True)\n" \
        "p.feed(sys.stdin.read())\n" \
        "p.close()\n" \
        "sys.exit(1 if p.open else 0)"

static char *report(struct sample_tree *const *trees, size_t n, const char *title) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        int r;

        if (!f)
                abort();
        r = render_html_report(f, trees, n, title);
        fclose(f);
        if (r < 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static void test_store(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *forms = tree_from_folded(forms_folded);
        _cleanup_(sample_tree_freep) struct sample_tree *faults = tree_from_folded(process_db);
        _cleanup_(sample_tree_freep) struct sample_tree *none = sample_tree_new(NULL);
        _cleanup_(sample_tree_freep) struct sample_tree *cxx =
                tree_from_folded("main;std::map<int, int>::find& 3\nmain;g 1\n");
        _cleanup_free_ char *html = NULL;

        if (!none)
                abort();
        ok(sample_tree_set_resource(forms, "cpu-time", "1 ms of CPU time") == 0 &&
                   sample_tree_set_resource(faults, "page-faults", "1 page fault") == 0 &&
                   sample_tree_set_resource(none, "real-time", "1 ms of real time") == 0 &&
                   sample_tree_set_resource(cxx, "syscalls", "1 <call> & more") == 0,
           "four resources");
        forms->info.period = 20;
        faults->info.period = 10;
        faults->info.lost = 7;

        html = report((struct sample_tree *[]) { forms, faults, none, cxx }, 4, "Store <s.db>");
        if (!ok(html != NULL, "render_html_report() succeeds"))
                return;
        ok(python_accepts(html, HTML_BALANCED), "every element opened is closed");
        ok(strncmp(html, "<!DOCTYPE html>", 15) == 0, "an HTML5 document");
        ok(strstr(html, "<title>Store &lt;s.db&gt;</title>") != NULL, "the title, escaped");
        ok(!strstr(html, "href=\"http") && !strstr(html, "src="), "nothing is loaded");
        is_int(count_of(html, "<section id=\"resource-"), 4, "a section per resource");
        is_int(count_of(html, "<li><a href=\"#resource-"), 4, "and a contents entry");

        ok(strstr(html, "<tr><th>Period</th><td>every 20 gticks</td></tr>") != NULL, "the period");
        ok(strstr(html, "<tr><th>Samples</th><td>614</td></tr>") != NULL, "the samples");
        ok(strstr(html, "<tr><th>Samples lost</th><td>7</td></tr>") != NULL, "the samples lost");
        ok(strstr(html, "<td>1 gtick = 1 &lt;call&gt; &amp; more</td>") != NULL, "the unit, escaped");

        /* Function profile of forms (paper §4.4): main and db_read_record in every sample. */
        ok(strstr(html,
                  "<tr><td class=\"num\">1.0000</td>"
                  "<td class=\"bar\"><div style=\"width: 100.0%\"></div></td>"
                  "<td class=\"num\">614</td><td class=\"name\">db_read_record</td></tr>"),
           "function profile: db_read_record in all 614");
        ok(strstr(html, "<td class=\"num\">530</td><td class=\"name\">db_get_property</td>") != NULL,
           "function profile: db_get_property in 530");
        ok(strstr(html, "<h3>Call paths down from <code>main</code></h3>") != NULL,
           "downward paths from the heaviest outermost frame");
        ok(strstr(html, "<td class=\"num\">107</td><td class=\"name\">(main invoice)</td>") != NULL,
           "(main invoice) [107]");
        ok(strstr(html, "<td class=\"num\">1820</td><td class=\"name\">(main uniquify_db qsort)</td>"),
           "(main uniquify_db qsort) [1820] for page faults (paper §4)");

        is_int(count_of(html, "<svg "), 3, "a flame graph per resource with samples");
        is_int(count_of(html, "<?xml"), 0, "inline, without XML declarations");
        ok(strstr(html, "<p>No samples.</p>") != NULL, "the empty resource says so");
        ok(strstr(html, "<td class=\"name\">std::map&lt;int, int&gt;::find&amp;</td>") != NULL,
           "C++ names escaped in tables");
        ok(!strstr(html, "<int") && !strstr(html, "find& "), "and nowhere raw");
}

static void test_top(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        _cleanup_free_ char *html = NULL, *folded = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&folded, &size);

        if (!f)
                abort();
        for (int i = 0; i < 40; i++)
                fprintf(f, "main;f%02d %d\n", i, 100 - i);
        fclose(f);
        t = tree_from_folded(folded);
        html = report(&t, 1, NULL);
        if (!ok(html != NULL, "41 functions"))
                return;
        ok(strstr(html, "<h1>cppd profile report</h1>") != NULL, "a default title");
        ok(!strstr(html, "<nav>"), "no contents for one resource");
        is_int(count_of(html, "<td class=\"name\">f"), 29, "29 functions besides main");
        is_int(count_of(html, "<td class=\"name\">(main f"), 19, "19 call paths besides (main)");
        ok(strstr(html, "<td class=\"name\">f28</td>") && !strstr(html, "<td class=\"name\">f29</td>"),
           "the heaviest functions");
        ok(strstr(html, "<p class=\"note\">11 more functions not shown.</p>"), "and the rest counted");
        ok(strstr(html, "<p class=\"note\">21 more call paths not shown.</p>") != NULL,
           "20 of 41 call paths down from main");
}

static void test_empty(void) {
        _cleanup_free_ char *html = report(NULL, 0, "empty");

        ok(html && strstr(html, "<p>The store holds no samples.</p>"), "an empty store");
        ok(html && python_accepts(html, HTML_BALANCED), "balanced");
}

int main(void) {
        test_store();
        test_top();
        test_empty();
        return tap_done();
}
