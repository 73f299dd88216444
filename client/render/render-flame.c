/* Flame graphs as self-contained interactive SVG: one rectangle per sample tree node, as wide as
 * the node's weight is a share of the total, stacked by depth (the root at the bottom; hanging
 * from the top in an icicle, which is how the inverted tree shows a function's callers). Nodes
 * are laid out once, in a pre-order walk: a child starts where its previous sibling ended (in
 * hits), children heaviest first and ties by name, so that output is deterministic; what a
 * node's children leave over is its self time, at the right. Nodes below the threshold (and so
 * their subtrees, as weights only shrink downwards) and nodes of no weight are not drawn.
 *
 *     <g class="fg-frame" data-x="107" data-w="106" data-d="2" data-n="envelope">
 *       <title>main → envelope (106 hits, 17.26%)</title><rect .../><text ...>envelope</text></g>
 *
 * data-x and data-w are the frame's offset and weight in hits, data-d its depth and data-n its
 * name: all the embedded script needs. In hits, intervals are exact, so frame A is an ancestor
 * of B when A is shallower and its interval holds B's, and B is below A when the reverse holds;
 * nothing else need be stored. The script (plain DOM, no libraries) shows a frame's title in the
 * details line on hover, zooms into a frame on click (it and its subtree fill the width, its
 * ancestors stay as faded full-width bars, the rest is hidden), and searches by regular
 * expression from the Search control, highlighting matches and showing their share of the total
 * (nested matches counted once). It finds its own <svg> through document.currentScript, and
 * every class is prefixed "fg-", so several graphs can sit inline in one HTML page. Labels are
 * cut to fit here as the script cuts them after a zoom, so the image reads without scripts. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

#define FLAME_WIDTH 1200 /* px, the whole image */
#define FLAME_PAD 10     /* px left and right of the graph */
#define FLAME_GRAPH_WIDTH (FLAME_WIDTH - 2 * FLAME_PAD)
#define FLAME_TOP 56          /* px above the frames: title, facts, controls */
#define FLAME_BOTTOM 34       /* px below them: the details line */
#define FRAME_HEIGHT 16       /* px per row, the 1 px gap included */
#define FRAME_CHAR_WIDTH 7.08 /* px, average for 12 px Verdana: labels are cut to fit */

void xml_write_escaped(FILE *f, const char *s) {
        xml_write_escaped_n(f, s, strlen(s));
}

void xml_write_escaped_n(FILE *f, const char *s, size_t len) {
        const unsigned char *p = (const unsigned char *) s, *end = p + len;

        while (p < end) {
                unsigned char c = *p;
                uint32_t cp = 0;
                size_t n = utf8_decode((const char *) p, (size_t) (end - p), &cp);
                /* Nor code points XML 1.0 forbids. */
                bool valid = n > 0 && cp != 0xfffe && cp != 0xffff &&
                        !(cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') && cp != 0x7f;

                if (!valid) {
                        fputs("&#xfffd;", f);
                        p++;
                        continue;
                }
                switch (c) {
                case '&':
                        fputs("&amp;", f);
                        break;
                case '<':
                        fputs("&lt;", f);
                        break;
                case '>':
                        fputs("&gt;", f);
                        break;
                case '"':
                        fputs("&quot;", f);
                        break;
                case '\'':
                        fputs("&#39;", f);
                        break;
                case '\t':
                case '\n':
                case '\r':
                        fprintf(f, "&#%d;", c); /* attribute values would fold them */
                        break;
                default:
                        fwrite(p, 1, n, f);
                }
                p += n;
        }
}

static bool frame_shown(const struct tree_index *x, uint32_t node, double threshold) {
        uint64_t w = x->nodes[node].weight;

        return w > 0 && (double) w / (double) x->header->total >= threshold;
}

/* A warm colour from the name's FNV-1a hash, so that a function has one colour everywhere. */
static void frame_fill(FILE *f, const char *name) {
        uint32_t h = 2166136261u;

        for (const unsigned char *p = (const unsigned char *) name; *p; p++)
                h = (h ^ *p) * 16777619u;
        fprintf(f, "rgb(%u,%u,%u)", 205 + h % 50, (h >> 8) % 230, (h >> 16) % 55);
}

/* Writes NAME cut to fit WIDTH px: whole if it fits, else its first characters and "..", or
 * nothing under three characters. The script's fit() does the same, counting code points. */
static void frame_label(FILE *f, const char *name, double width) {
        double room = (width - 6) / FRAME_CHAR_WIDTH;
        size_t chars = 0, len = 0, cut = 0, max = room > 0 ? (size_t) room : 0;

        if (max < 3)
                return;
        for (; name[len]; len++)
                if (((unsigned char) name[len] & 0xc0) != 0x80 && chars++ == max - 2)
                        cut = len;
        if (chars <= max) {
                xml_write_escaped_n(f, name, len);
                return;
        }
        xml_write_escaped_n(f, name, cut);
        fputs("..", f);
}

static void frame_write(FILE *f, const struct tree_index *x, const struct tree_index_drawn *d, uint32_t rows,
                        bool icicle) {
        const struct sample_tree *t = x->header;
        uint64_t weight = x->nodes[d->node].weight;
        const char *name = d->depth == 0 ? "all" : sample_tree_name(t, x->nodes[d->node].name);
        double x0 = FLAME_PAD + (double) d->offset / (double) t->total * FLAME_GRAPH_WIDTH;
        double width = (double) weight / (double) t->total * FLAME_GRAPH_WIDTH;
        uint32_t y = FLAME_TOP + (icicle ? d->depth : rows - 1 - d->depth) * FRAME_HEIGHT;

        fprintf(f,
                "<g class=\"fg-frame\" data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%" PRIu32
                "\" data-n=\"",
                d->offset, weight, d->depth);
        xml_write_escaped(f, name);
        fputs("\"><title>", f);
        if (d->depth == 0)
                fputs(name, f);
        for (size_t i = 0; i < d->depth; i++) {
                if (i > 0)
                        fputs(icicle ? " ← " : " → ", f);
                xml_write_escaped(f, sample_tree_name(t, d->path[i]));
        }
        fprintf(f, " (%" PRIu64 " hit%s, %.2f%%)</title>", weight, weight == 1 ? "" : "s",
                100.0 * (double) weight / (double) t->total);
        fprintf(f, "<rect x=\"%.2f\" y=\"%" PRIu32 "\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"", x0, y,
                width, FRAME_HEIGHT - 1);
        frame_fill(f, name);
        fprintf(f, "\"/><text x=\"%.2f\" y=\"%.1f\">", x0 + 3, y + FRAME_HEIGHT * 0.75);
        frame_label(f, name, width);
        fputs("</text></g>\n", f);
}

static const char flame_style[] =
        "<style>\n"
        ".fg-frame { cursor: pointer; }\n"
        ".fg-frame text, .fg-control, .fg-info { font: 12px Verdana, sans-serif; fill: black; }\n"
        ".fg-frame text { pointer-events: none; }\n"
        ".fg-frame:hover rect { stroke: black; stroke-width: 0.5; }\n"
        ".fg-title { font: 17px Verdana, sans-serif; fill: black; }\n"
        ".fg-control { cursor: pointer; fill: rgb(0,0,160); }\n"
        ".fg-match rect { fill: rgb(230,0,230); }\n"
        ".fg-parent { opacity: 0.5; }\n"
        ".fg-hide { display: none; }\n"
        "</style>\n";

/* Before it, the writer declares total (hits), pad, width (px) and charWidth (px). */
static const char flame_script[] =
        "var svg = document.currentScript.parentNode;\n"
        "var details = svg.querySelector('.fg-details'), matched = svg.querySelector('.fg-matched');\n"
        "var unzoom = svg.querySelector('.fg-unzoom'), searcher = svg.querySelector('.fg-search');\n"
        "var frames = [], byElement = new Map(), searching = false;\n"
        "svg.querySelectorAll('g.fg-frame').forEach(function (g) {\n"
        "        var o = { g: g, x: +g.getAttribute('data-x'), w: +g.getAttribute('data-w'),\n"
        "                  d: +g.getAttribute('data-d'), n: g.getAttribute('data-n'),\n"
        "                  rect: g.querySelector('rect'), text: g.querySelector('text'),\n"
        "                  title: g.querySelector('title').textContent };\n"
        "        frames.push(o);\n"
        "        byElement.set(g, o);\n"
        "});\n"
        "function frameOf(e) {\n"
        "        var g = e.closest ? e.closest('g.fg-frame') : null;\n"
        "        return g ? byElement.get(g) : null;\n"
        "}\n"
        "function fit(name, w) {\n"
        "        var max = Math.floor((w - 6) / charWidth), cs = Array.from(name);\n"
        "        if (max < 3)\n"
        "                return '';\n"
        "        return cs.length <= max ? name : cs.slice(0, max - 2).join('') + '..';\n"
        "}\n"
        "function place(o, x, w) {\n"
        "        o.rect.setAttribute('x', (pad + x).toFixed(2));\n"
        "        o.rect.setAttribute('width', w.toFixed(2));\n"
        "        o.text.setAttribute('x', (pad + x + 3).toFixed(2));\n"
        "        o.text.textContent = fit(o.n, w);\n"
        "}\n"
        "/* The frame fills the width, its ancestors stay as bars, all else is hidden. */\n"
        "function zoom(z) {\n"
        "        var x0 = z ? z.x : 0, w0 = z ? z.w : total, d0 = z ? z.d : 0;\n"
        "        frames.forEach(function (o) {\n"
        "                var below = o.d >= d0 && o.x >= x0 && o.x + o.w <= x0 + w0;\n"
        "                var above = o.d < d0 && o.x <= x0 && o.x + o.w >= x0 + w0;\n"
        "                o.g.classList.toggle('fg-hide', !below && !above);\n"
        "                o.g.classList.toggle('fg-parent', above);\n"
        "                if (below)\n"
        "                        place(o, (o.x - x0) / w0 * width, o.w / w0 * width);\n"
        "                else if (above)\n"
        "                        place(o, 0, width);\n"
        "        });\n"
        "        unzoom.classList.toggle('fg-hide', !z || z.d === 0);\n"
        "}\n"
        "/* Highlights the frames whose name matches TERM (a regular expression, else literal text)\n"
        " * and shows their share of the total; frames nest or are disjoint, so in order of offset\n"
        " * then depth a match inside the previous counted one is nested in it. */\n"
        "function search(term) {\n"
        "        var re = null, found = [], sum = 0, end = -1;\n"
        "        if (term) {\n"
        "                try {\n"
        "                        re = new RegExp(term);\n"
        "                } catch (e) {\n"
        "                        re = new RegExp(term.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&'));\n"
        "                }\n"
        "        }\n"
        "        frames.forEach(function (o) {\n"
        "                var m = re !== null && o.d > 0 && re.test(o.n);\n"
        "                o.g.classList.toggle('fg-match', m);\n"
        "                if (m)\n"
        "                        found.push(o);\n"
        "        });\n"
        "        found.sort(function (a, b) { return a.x - b.x || a.d - b.d; });\n"
        "        found.forEach(function (o) {\n"
        "                if (o.x >= end) {\n"
        "                        sum += o.w;\n"
        "                        end = o.x + o.w;\n"
        "                }\n"
        "        });\n"
        "        searching = re !== null;\n"
        "        matched.textContent = searching ?\n"
        "                'Matched: ' + (100 * sum / total).toFixed(2) + '% of the total' : '';\n"
        "        searcher.textContent = searching ? 'Clear search' : 'Search';\n"
        "}\n"
        "svg.addEventListener('mouseover', function (e) {\n"
        "        var o = frameOf(e.target);\n"
        "        if (o)\n"
        "                details.textContent = o.title;\n"
        "});\n"
        "svg.addEventListener('mouseout', function (e) {\n"
        "        if (frameOf(e.target))\n"
        "                details.textContent = '';\n"
        "});\n"
        "svg.addEventListener('click', function (e) {\n"
        "        var o = frameOf(e.target);\n"
        "        if (o)\n"
        "                zoom(o);\n"
        "        else if (e.target === unzoom)\n"
        "                zoom(null);\n"
        "        else if (e.target === searcher)\n"
        "                search(searching ? null : prompt('Search for (regular expression):', ''));\n"
        "});\n";

static void flame_facts(FILE *f, const struct sample_tree *t, double threshold) {
        const struct sample_tree_info *i = &t->info;

        if (i->resource) {
                xml_write_escaped(f, i->resource);
                fputs(": ", f);
        }
        fprintf(f, "%" PRIu64 " hits in %" PRIu64 " samples", t->total, i->samples);
        if (i->period && i->unit) {
                fprintf(f, ", sampled every %" PRIu64 " gticks (1 gtick = ", i->period);
                xml_write_escaped(f, i->unit);
                fputc(')', f);
        }
        fprintf(f, "; %" PRIu64 " samples lost", i->lost);
        if (threshold > 0)
                fprintf(f, "; frames under %g%% of the total not shown", 100.0 * threshold);
}

/* The rows a graph needs: one more than the depth of the deepest frame shown. Frames shown are
 * closed upwards (weights only shrink below), so a subtree whose top is not shown is stepped over;
 * the preorder's open path is kept as the ends of its subtrees. */
static int flame_rows(const struct tree_index *x, double threshold, uint32_t *ret) {
        _cleanup_free_ uint32_t *ends = malloc(((size_t) x->max_depth + 1) * sizeof *ends);
        struct tree_index_window window = {};
        uint32_t rows = 0, depth = 0;

        if (!ends)
                return -ENOMEM;
        if (x->header->total == 0 || !frame_shown(x, 0, threshold)) {
                *ret = 0;
                return 0;
        }
        ends[0] = tree_index_size(x, 0);
        for (uint32_t i = 1; i < ends[0];) {
                uint32_t size = tree_index_size(x, i);

                while (depth > 0 && i >= ends[depth])
                        depth--;
                if (size == 0 || size > ends[depth] - i || depth >= x->max_depth)
                        return -EBADMSG;
                tree_index_touch(x, &window, i);
                if (!frame_shown(x, i, threshold)) {
                        i += size;
                        continue;
                }
                ends[++depth] = i + size;
                rows = MAX(rows, depth);
                i++;
        }
        *ret = rows + 1;
        return 0;
}

struct flame_walk {
        FILE *f;
        double threshold;
        uint32_t rows;
        bool icicle;
};

static int flame_frame(const struct tree_index *x, const struct tree_index_drawn *d, void *userdata) {
        struct flame_walk *w = userdata;

        if (d->depth > 0 && !frame_shown(x, d->node, w->threshold))
                return 1;
        frame_write(w->f, x, d, w->rows, w->icicle);
        return 0;
}

int render_flame_svg_index(FILE *f, const struct tree_index *x, bool icicle, double threshold,
                           const char *title) {
        const struct sample_tree *t = x->header;
        struct flame_walk w = { .f = f, .threshold = threshold, .icicle = icicle };
        uint32_t height, bottom;
        int r;

        r = flame_rows(x, threshold, &w.rows);
        if (r < 0)
                return r;
        height = FLAME_TOP + w.rows * FRAME_HEIGHT + FLAME_BOTTOM;
        bottom = height - 12;

        fprintf(f,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"fg\" width=\"%d\""
                " height=\"%" PRIu32 "\" viewBox=\"0 0 %d %" PRIu32 "\">\n",
                FLAME_WIDTH, height, FLAME_WIDTH, height);
        fputs(flame_style, f);
        fprintf(f,
                "<rect width=\"100%%\" height=\"100%%\" fill=\"rgb(250,250,238)\"/>\n"
                "<text class=\"fg-title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">",
                FLAME_WIDTH / 2);
        xml_write_escaped(f, title ?: icicle ? "Icicle Graph" : "Flame Graph");
        fprintf(f, "</text>\n<text class=\"fg-info\" x=\"%d\" y=\"44\" text-anchor=\"middle\">",
                FLAME_WIDTH / 2);
        flame_facts(f, t, threshold);
        fprintf(f,
                "</text>\n"
                "<text class=\"fg-control fg-unzoom fg-hide\" x=\"%d\" y=\"24\">Reset zoom</text>\n"
                "<text class=\"fg-control fg-search\" x=\"%d\" y=\"24\" text-anchor=\"end\">"
                "Search</text>\n"
                "<text class=\"fg-info fg-details\" x=\"%d\" y=\"%" PRIu32 "\">%s</text>\n"
                "<text class=\"fg-info fg-matched\" x=\"%d\" y=\"%" PRIu32 "\" text-anchor=\"end\">"
                "</text>\n",
                FLAME_PAD, FLAME_WIDTH - FLAME_PAD, FLAME_PAD, bottom, t->total > 0 ? "" : "No samples.",
                FLAME_WIDTH - FLAME_PAD, bottom);

        /* Pre-order, children heaviest first; a child starts where its previous sibling ended. */
        if (t->total > 0) {
                r = tree_index_each_drawn(x, flame_frame, NULL, &w);
                if (r < 0)
                        return r;
        }

        fprintf(f,
                "<script><![CDATA[\n(function () {\n\"use strict\";\n"
                "var total = %" PRIu64 ", pad = %d, width = %d, charWidth = %g;\n"
                "%s})();\n]]></script>\n"
                "</svg>\n",
                t->total, FLAME_PAD, FLAME_GRAPH_WIDTH, FRAME_CHAR_WIDTH, flame_script);
        return ferror(f) ? -EIO : 0;
}

int render_flame_svg_element(FILE *f, struct sample_tree *t, bool icicle, double threshold,
                             const char *title) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        int r;

        r = tree_index_build(t, &x);
        return r < 0 ? r : render_flame_svg_index(f, x, icicle, threshold, title);
}

int render_flame_svg(FILE *f, struct sample_tree *t, bool icicle, double threshold, const char *title) {
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", f);
        return render_flame_svg_element(f, t, icicle, threshold, title);
}

int render_flame_svg_file_index(FILE *f, const struct tree_index *x, bool icicle, double threshold) {
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", f);
        return render_flame_svg_index(f, x, icicle, threshold, NULL);
}
