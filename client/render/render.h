/* Renderers: one file each. They write to F and return 0 or -errno (-EIO on a write error). */
#pragma once

#include <stdio.h>

#include "call-graph.h"
#include "json-string.h"
#include "profile-join.h"
#include "profile.h"
#include "sample-tree-walk.h"
#include "sample-tree.h"

enum render_format {
        RENDER_TEXT, /* the paper's format */
        RENDER_JSON,
        RENDER_CSV,
        RENDER_FOLDED,
        RENDER_DOT,
        RENDER_FLAME,  /* SVG flame graph */
        RENDER_ICICLE, /* SVG icicle graph of the inverted tree */
        RENDER_HTML,
        RENDER_PPROF,
        RENDER_SPEEDSCOPE,
        _RENDER_FORMAT_MAX,
};

/* "text", "json", ... and back; render_format_from_name() returns -EINVAL for an unknown name. */
const char *render_format_name(enum render_format f);
int render_format_from_name(const char *name);

/* THRESHOLD is a fraction of the total: entries below it are left out (and counted). */
int render_text_profile(FILE *f, const struct profile *p, double threshold);
int render_text_tree(FILE *f, struct sample_tree *t, double threshold);

int render_json_profile(FILE *f, const struct profile *p, double threshold);
int render_json_tree(FILE *f, struct sample_tree *t, double threshold);

/* The caller/callee view of G (render-graph.c): every function at or above THRESHOLD, or with
 * ROOTS (indexed by name id; NULL: all) only those marked, each with its callers and callees. */
int render_text_graph(FILE *f, const struct call_graph *g, const bool *roots, double threshold);
int render_json_graph(FILE *f, const struct call_graph *g, const bool *roots, double threshold);

/* A view's title in text ("Downward Call Path Profile") and its name in JSON ("downward"). */
const char *render_view_title(enum profile_kind kind);
const char *render_view_name(enum profile_kind kind);

/* Profiles of several resources joined by path (render-table.c), rows shown where any column
 * reaches THRESHOLD: a column of fractions per resource, or with RATIO (two columns) the first
 * resource's gticks per the second's with its 95% error. */
int render_text_table(FILE *f, const struct profile_join *j, bool ratio, double threshold);
int render_json_table(FILE *f, const struct profile_join *j, bool ratio, double threshold);
int render_csv_table(FILE *f, const struct profile_join *j, bool ratio, double threshold);

/* The parts every text view shares: the header (title, resource, samples, period, losses, the
 * format line and a rule) and the closing rule with the count of entries left out (WHAT names
 * one, "s" is added; AT_LEAST: the count is a lower bound, as a view that stopped at its
 * threshold did not see them all). render_text_finish() returns 0 or -EIO. */
void render_text_header(FILE *f, const char *title, const struct sample_tree *t, const char *format);
/* The name of the counts the text views print of T: "#raw_samples" while its hits are its
 * samples, one each; "#hits" once they are weighted (thinned under load, runs of different
 * periods merged), as the header's "H hits in S samples" then says. */
const char *render_count_label(const struct sample_tree *t);
/* The header's second line alone: samples, period and unit, losses, unsymbolized frames. */
void render_text_facts(FILE *f, const struct sample_tree *t);
int render_text_finish(FILE *f, size_t omitted, bool at_least, double threshold, const char *what);

/* Opens a JSON view object with T's facts: {"profile": VIEW, "resource": ..., "threshold": T
 * (left open for the view's own fields). */
void render_json_header(FILE *f, const char *view, const struct sample_tree *t, double threshold);

/* Children of NODE sorted by weight (most first), ties by name; *ret is malloc()ed (possibly
 * NULL when there are none). Returns how many, or -ENOMEM. Shared by the tree renderers. */
int render_sorted_children(const struct sample_tree *t, uint32_t node, uint32_t **ret);

/* Flame graphs and the HTML report (render-flame.c, render-html.c). */

/* Writes S (up to a NUL, or LEN bytes) escaped for XML and HTML text and attribute values;
 * bytes that are not UTF-8, and characters XML forbids, become U+FFFD. */
void xml_write_escaped(FILE *f, const char *s);
void xml_write_escaped_n(FILE *f, const char *s, size_t len);

/* Writes T as a self-contained interactive SVG document: a flame graph (root at the bottom) or,
 * with ICICLE, an icicle graph (root at the top, paths written "f ← caller"), meant for the
 * inverted tree of sample_tree_invert() to show who calls what. Frames below THRESHOLD (a
 * fraction of the total) are left out with their subtrees; TITLE may be NULL. Returns 0, -ENOMEM
 * or -EIO. render_flame_svg_element() writes the <svg> element alone, to inline in HTML. */
int render_flame_svg(FILE *f, struct sample_tree *t, bool icicle, double threshold, const char *title);
int render_flame_svg_element(FILE *f, struct sample_tree *t, bool icicle, double threshold,
                             const char *title);

/* Writes a self-contained HTML page on the N TREES of a store (one per resource): per tree its
 * header facts, function profile, heaviest downward call paths and flame graph. TITLE may be
 * NULL. Returns 0, -ENOMEM or -EIO. */
int render_html_report(FILE *f, struct sample_tree *const *trees, size_t n, const char *title);

/* Formats for other tools; each file's opening comment shows its format. */

/* Folded stacks, "main;f;g HITS", one line per stack with self hits, in render_each_stack()
 * order: what flame graph tools and `cppctl import --folded` read. Returns 0, -ENOMEM or -EIO. */
int render_folded(FILE *f, struct sample_tree *t);

/* RFC 4180 CSV: "fraction,hits,path", then one row per entry at or above THRESHOLD (a fraction
 * of the total), the path's names joined by ';'. Returns 0 or -EIO. */
int render_csv_profile(FILE *f, const struct profile *p, double threshold);
/* Writes NAMES[0..len) of T joined by ';' as one CSV field, quoted when needed. */
void csv_write_path(FILE *f, const struct sample_tree *t, const uint32_t *names, uint32_t len);

/* A Graphviz digraph of T's call graph: functions whose total is below THRESHOLD (a fraction of
 * the total) are left out with their edges. Returns 0, -ENOMEM or -EIO. */
int render_dot(FILE *f, struct sample_tree *t, double threshold);

/* speedscope's JSON file format: one sampled profile per tree in TREES[0..n) (one per resource),
 * frames shared by name, weights in gticks. Returns 0, -ENOMEM or -EIO. */
int render_speedscope(FILE *f, struct sample_tree *const *trees, size_t n);

/* pprof's profile.proto (schemas/profile.proto), gzipped: one sample type per tree in
 * TREES[0..n), values in gticks, one sample per distinct stack. Returns 0, -ENOMEM, -EIO, or
 * -E2BIG past 4 GiB before compression. */
int render_pprof(FILE *f, struct sample_tree *const *trees, size_t n);
