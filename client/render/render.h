/* Renderers: one file each. They write to F and return 0 or -errno (-EIO on a write error). */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "call-graph.h"
#include "json-string.h"
#include "profile-join.h"
#include "profile.h"
#include "sample-tree-walk.h"
#include "sample-tree.h"

struct render_diff;

/* An output format, as --format names it: what it can draw, one operation each, NULL where it
 * cannot (perf's perf_hpp__format[], htop's MeterClass). render_formats[] is the one list of
 * them: the options' checks, help and errors print its names, and a new format is one entry
 * there and one file here. Each operation writes to F and returns 0 or -errno (-EIO on a write
 * error); THRESHOLD is a fraction of the total, entries below it left out. */
struct render_format {
        const char *name;
        const char *note;   /* said of it in --help, or NULL */
        const char *binary; /* not text, never written to a terminal: what it is; NULL: text */
        bool live;          /* redrawn in place, as cppctl top does */
        int (*profile)(FILE *f, const struct profile *p, double threshold);
        int (*tree)(FILE *f, struct sample_tree *t, double threshold);
        /* the same drawing from the index of the tree (of the inverted tree where INVERTED says),
         * which is never loaded: a window of it mapped at a time */
        int (*tree_index)(FILE *f, const struct tree_index *x, double threshold);
        bool inverted;
        bool labels; /* it needs the index's labels' binaries and stored names (store_filter.labels) */
        /* several trees' indexes in one file, as TREES draws the trees */
        int (*trees_index)(FILE *f, const struct tree_index *const *xs, size_t n);
        /* several trees (one per resource) in one file; a format with it draws one tree so too */
        int (*trees)(FILE *f, struct sample_tree *const *trees, size_t n);
        /* the caller/callee view of G, built from T; ROOTS as render_text_graph() takes them */
        int (*graph)(FILE *f, const struct call_graph *g, struct sample_tree *t, const bool *roots,
                     double threshold);
        /* profiles of several resources joined by path, as render_text_table() draws them */
        int (*table)(FILE *f, const struct profile_join *j, bool ratio, double threshold);
        /* two profiles compared path by path (render-diff.c) */
        int (*diff)(FILE *f, const struct render_diff *d, double threshold);
};

/* The formats, in the order help and errors list them, ending with an entry of NULL name. */
extern const struct render_format render_formats[];

/* What a command asks a format to draw, for render_format_draws() and render_format_list(). */
enum {
        RENDER_PROFILE = 1 << 0,
        RENDER_TREE = 1 << 1,
        RENDER_TREES = 1 << 2, /* several trees in one file */
        RENDER_GRAPH = 1 << 3,
        RENDER_TABLE = 1 << 4,
        RENDER_DIFF = 1 << 5,
        RENDER_LIVE = 1 << 6,
};

/* The format named NAME ("svg" is "flame"), or NULL. */
const struct render_format *render_format_find(const char *name);

/* Whether F draws everything WHAT (RENDER_* flags) asks. */
bool render_format_draws(const struct render_format *f, unsigned what);

/* The names of the formats that draw what WHAT asks (0: every format), in table order, joined by
 * ", " and LAST before the last one: "html, pprof and speedscope". Returns a malloc()ed string,
 * or NULL: no memory. */
char *render_format_list(unsigned what, const char *last);

/* Draws TREES[0..n) in F: all of them where it holds several, else the first. */
int render_format_trees(const struct render_format *f, FILE *out, struct sample_tree *const *trees, size_t n,
                        double threshold);

/* THRESHOLD is a fraction of the total: entries below it are left out (and counted). */
int render_text_profile(FILE *f, const struct profile *p, double threshold);
int render_text_tree(FILE *f, struct sample_tree *t, double threshold);
/* The same lines from the index X of a tree, drawn as tree_index_each_drawn() walks it: the
 * renderers of a loaded tree draw through an index built from it (tree_index_build()). */
int render_text_tree_index(FILE *f, const struct tree_index *x, double threshold);

int render_json_profile(FILE *f, const struct profile *p, double threshold);
int render_json_tree(FILE *f, struct sample_tree *t, double threshold);
int render_json_tree_index(FILE *f, const struct tree_index *x, double threshold);

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

/* Two profiles compared path by path (cppctl diff, which computes the rows; render-diff.c
 * writes them). */
struct render_diff_side {
        const char *store;
        /* the selection of samples, as the report options set it */
        int64_t run, pid;                     /* 0: any */
        const char *host, *unit, *comm, *exe; /* NULL: any */
        bool has_since, has_until;
        int64_t since, until; /* unix seconds */
        const struct sample_tree *tree;
};

struct render_diff_row {
        size_t row;       /* in the join */
        uint64_t hits[2]; /* base, new */
        double fraction[2];
        double change, z;
        bool significant; /* |z| at or above the critical z */
        /* |change| × both totals, exactly: equal changes sort by path, not by rounding. */
        unsigned __int128 size;
};

struct render_diff {
        struct render_diff_side sides[2]; /* base, new */
        const char *root;                 /* NULL: none */
        double critical_z;                /* the test's, at 95% */
        const struct profile_join *join;
        struct render_diff_row *rows; /* those shown, in order */
        size_t n_rows, n_omitted;
};

/* A side's store and selection as the text diff shows it: "a.db, host web1, since ...". */
void render_diff_selection(FILE *f, const struct render_diff_side *s);

/* The diff D as text (the paper's style), JSON or CSV; THRESHOLD is what D's rows were cut at. */
int render_text_diff(FILE *f, const struct render_diff *d, double threshold);
int render_json_diff(FILE *f, const struct render_diff *d, double threshold);
int render_csv_diff(FILE *f, const struct render_diff *d, double threshold);

/* The rows of a query's answer (cppctl sql; render-rows.c), in one of its formats. */
enum render_rows_format {
        RENDER_ROWS_TABLE, /* aligned columns under a header */
        RENDER_ROWS_CSV,
        RENDER_ROWS_JSON,
};
#define RENDER_ROWS_FORMATS "table, csv or json"

/* The format named NAME, or -EINVAL. */
int render_rows_format_from_name(const char *name);

/* A cell: TEXT as the table and CSV show it ("" for NULL), and its type and value for JSON. */
struct render_cell {
        enum {
                RENDER_CELL_NULL,
                RENDER_CELL_INTEGER,
                RENDER_CELL_REAL,
                RENDER_CELL_NUMBER, /* TEXT is a number as JSON writes one */
                RENDER_CELL_TEXT,
        } type;
        const char *text;
        int64_t integer;
        double real;
};

struct render_rows;

/* Starts an answer of N columns named NAMES (copied) in FORMAT on OUT, writing its header.
 * Returns 0 and sets *ret, or -ENOMEM. */
int render_rows_new(enum render_rows_format format, FILE *out, size_t n, const char *const *names,
                    struct render_rows **ret);
/* Adds a row of the N CELLS (their strings copied where held). Returns 0 or -ENOMEM. */
int render_rows_add(struct render_rows *r, const struct render_cell *cells);
/* Ends the answer: what was held, and JSON's closing bracket. Returns 0 or -EIO. An answer
 * freed without it (a statement that failed halfway) ends where it stopped. */
int render_rows_finish(struct render_rows *r);
struct render_rows *render_rows_free(struct render_rows *r);
DEFINE_CLEANUP(struct render_rows *, render_rows_free);

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
/* The same from the index X of the tree (for an icicle graph, of the inverted tree), walked by
 * tree_index_each_drawn(): render_flame_svg_index() is the element, render_flame_svg_file_index()
 * the document, untitled. */
int render_flame_svg_index(FILE *f, const struct tree_index *x, bool icicle, double threshold,
                           const char *title);
int render_flame_svg_file_index(FILE *f, const struct tree_index *x, bool icicle, double threshold);

/* Writes a self-contained HTML page on the N TREES of a store (one per resource): per tree its
 * header facts, function profile, heaviest downward call paths and flame graph. TITLE may be
 * NULL. Returns 0, -ENOMEM or -EIO. */
int render_html_report(FILE *f, struct sample_tree *const *trees, size_t n, const char *title);
/* The same page from the indexes XS[0..n) of the trees (their views, and the flame graph of their
 * nodes above its threshold), which are never loaded. */
int render_html_report_index(FILE *f, const struct tree_index *const *xs, size_t n, const char *title);

/* Formats for other tools; each file's opening comment shows its format. */

/* Folded stacks, "main;f;g HITS", one line per stack with self hits, in render_each_stack()
 * order: what flame graph tools and `cppctl import --folded` read. Returns 0, -ENOMEM or -EIO. */
int render_folded(FILE *f, struct sample_tree *t);
/* The same lines from the index X of a tree (tree_index_each_stack()), which is never loaded. */
int render_folded_index(FILE *f, const struct tree_index *x);

/* RFC 4180 CSV: "fraction,hits,path", then one row per entry at or above THRESHOLD (a fraction
 * of the total), the path's names joined by ';'. Returns 0 or -EIO. */
int render_csv_profile(FILE *f, const struct profile *p, double threshold);
/* Writes S as one CSV field, quoted when needed. */
void csv_write_field(FILE *f, const char *s);
/* Writes NAMES[0..len) of T joined by ';' as one CSV field, quoted when needed. */
void csv_write_path(FILE *f, const struct sample_tree *t, const uint32_t *names, uint32_t len);

/* A Graphviz digraph of T's call graph: functions whose total is below THRESHOLD (a fraction of
 * the total) are left out with their edges. Returns 0, -ENOMEM or -EIO. */
int render_dot(FILE *f, struct sample_tree *t, double threshold);
/* The same digraph of G, a call graph of a tree whose names and header T holds (a tree index's
 * header: the graph gathered from the index, call_graph_build_index()). */
int render_dot_graph(FILE *f, const struct call_graph *g, const struct sample_tree *t, double threshold);

/* speedscope's JSON file format: one sampled profile per tree in TREES[0..n) (one per resource),
 * frames shared by name, weights in gticks. Returns 0, -ENOMEM or -EIO. */
int render_speedscope(FILE *f, struct sample_tree *const *trees, size_t n);
/* The same from the indexes XS[0..n) of the trees, walked (tree_index_each_stack()), not loaded. */
int render_speedscope_index(FILE *f, const struct tree_index *const *xs, size_t n);

/* pprof's profile.proto (schemas/profile.proto), gzipped: one sample type per tree in
 * TREES[0..n), values in gticks, one sample per distinct stack. Returns 0, -ENOMEM, -EIO, or
 * -E2BIG past 4 GiB before compression. */
int render_pprof(FILE *f, struct sample_tree *const *trees, size_t n);
/* The same of the one tree the index X holds (pprof_write_index()): X's header must know its
 * labels' binaries (an index laid out from the store with store_filter.labels). */
int render_pprof_index(FILE *f, const struct tree_index *x);
/* The same of the trees the indexes XS[0..n) hold, one sample type each (pprof_write_indexes()). */
int render_pprof_indexes(FILE *f, const struct tree_index *const *xs, size_t n);
