/* The caller/callee view (gprof's call graph, Racket's profile renderer): one entry per
 * function, its callers above it and its callees below, each with the share of the function's
 * total it accounts for:
 *
 *     Caller/Callee Graph for resource: real-time
 *     614 samples, sampled every 20 gticks (1 gtick = 1 ms of real time); 0 samples lost
 *     format: [index] total_fraction [#raw_samples ±95%] self_fraction [#raw_samples] function
 *     -----------------------------------------------------
 *             0.9300 [393] address_information [3]
 *             0.0700 [29] invoice [6]
 *       [2] 0.6873 [422 ±37] 0.0000 [0] db_get_property
 *             1.0000 [422] db_read_record [1]
 *
 * The lines above an entry are its callers, those below its callees, with the share of its
 * total and the hits behind it; "(root)" is the caller when the function was the outermost
 * frame, "(self)" the callee when it was the innermost. Shares are Racket's: a sample with the
 * function K times on its stack gives each occurrence 1/K of its hits, so that callers add up
 * to 1 and so do callees, recursion included (a recursive function is its own caller and
 * callee). Entries go by total, most first, as in the function profile; the index numbers them
 * so that a caller or callee can be found. Entries below the threshold are left out, and so are
 * callers and callees with less than the threshold's share of the entry. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One caller or callee line: node index (or -1 for "(root)"/"(self)") and time. */
struct link {
        long node;
        double time;
};

static _Thread_local const struct call_graph *sorting;

static double fraction(uint64_t hits, uint64_t total) {
        return total ? (double) hits / (double) total : 0.0;
}

static const char *link_name(const struct call_graph *g, const struct link *l, bool callee) {
        if (l->node < 0)
                return callee ? "(self)" : "(root)";
        return sample_tree_name(g->tree, g->nodes[l->node].name);
}

static int link_cmp(const void *a, const void *b) {
        const struct link *x = a, *y = b;

        if (x->time != y->time)
                return x->time > y->time ? -1 : 1;
        if (x->node != y->node && (x->node < 0 || y->node < 0))
                return x->node < 0 ? -1 : 1;
        return x->node < 0 ? 0 :
                             strcmp(sample_tree_name(sorting->tree, sorting->nodes[x->node].name),
                                    sample_tree_name(sorting->tree, sorting->nodes[y->node].name));
}

/* The callers (or CALLEES) of node N, with the root (or leaf) pseudo-link, sorted. Returns how
 * many, or -ENOMEM; *ret is malloc()ed. */
static long links_of(const struct call_graph *g, size_t n, bool callees, struct link **ret) {
        const struct call_graph_node *node = &g->nodes[n];
        double edge_time = callees ? node->leaf_time : node->root_time;
        struct link *links = malloc((g->n_edges + 1) * sizeof *links);
        long k = 0;

        if (!links)
                return -ENOMEM;
        if (edge_time > 0)
                links[k++] = (struct link) { -1, edge_time };
        for (size_t i = 0; i < g->n_edges; i++) {
                const struct call_graph_edge *e = &g->edges[i];

                if (callees && e->caller == n)
                        links[k++] = (struct link) { (long) e->callee, e->caller_time };
                else if (!callees && e->callee == n)
                        links[k++] = (struct link) { (long) e->caller, e->callee_time };
        }
        sorting = g;
        qsort(links, k, sizeof *links, link_cmp);
        sorting = NULL;
        *ret = links;
        return k;
}

/* Whether entry N is shown: ROOTS (indexed by name id) when given, else every entry at or
 * above the threshold. */
static bool shown(const struct call_graph *g, size_t n, const bool *roots, uint64_t min_hits) {
        if (roots)
                return roots[g->nodes[n].name];
        return g->nodes[n].total >= min_hits && g->nodes[n].total > 0;
}

/* Entry N's callers and callees, when it is shown. Returns 1 with both set (malloc()ed), 0 when
 * the entry is not shown, or -ENOMEM. */
static int entry_links(const struct call_graph *g, size_t n, const bool *roots, uint64_t min_hits,
                       struct link **ret_callers, long *ret_n_callers, struct link **ret_callees,
                       long *ret_n_callees) {
        if (!shown(g, n, roots, min_hits))
                return 0;
        *ret_n_callers = links_of(g, n, false, ret_callers);
        *ret_n_callees = links_of(g, n, true, ret_callees);
        return *ret_n_callers < 0 || *ret_n_callees < 0 ? -ENOMEM : 1;
}

static void text_links(FILE *f, const struct call_graph *g, const struct link *links, long k, bool callees,
                       double total, double threshold, size_t *omitted) {
        for (long i = 0; i < k; i++) {
                double share = total > 0 ? links[i].time / total : 0.0;

                if (share < threshold) {
                        (*omitted)++;
                        continue;
                }
                fprintf(f, "        %.4f [%.0f] %s", share, links[i].time, link_name(g, &links[i], callees));
                if (links[i].node >= 0)
                        fprintf(f, " [%ld]", links[i].node + 1);
                fputc('\n', f);
        }
}

int render_text_graph(FILE *f, const struct call_graph *g, const bool *roots, double threshold) {
        uint64_t min_hits = profile_min_hits(g->total, threshold);
        size_t omitted = 0, links_omitted = 0;
        const char *label = render_count_label(g->tree);
        bool first = true;
        char format[256];

        snprintf(format, sizeof format,
                 "[index] total_fraction [%s ±95%%] self_fraction [%s] function;\n"
                 "        callers above, callees below: share_of_total [%s] function [index]",
                 label, label, label);
        render_text_header(f, "Caller/Callee Graph", g->tree, format);
        for (size_t n = 0; n < g->n_nodes; n++) {
                const struct call_graph_node *node = &g->nodes[n];
                _cleanup_free_ struct link *callers = NULL, *callees = NULL;
                long n_callers = 0, n_callees = 0;
                int k = entry_links(g, n, roots, min_hits, &callers, &n_callers, &callees, &n_callees);

                if (k < 0)
                        return k;
                if (k == 0) {
                        omitted += !roots;
                        continue;
                }
                if (!first)
                        fputc('\n', f);
                first = false;
                text_links(f, g, callers, n_callers, false, (double) node->total, threshold, &links_omitted);
                fprintf(f, "  [%zu] %.4f [%" PRIu64 " ±%.0f] %.4f [%" PRIu64 "] %s\n", n + 1,
                        fraction(node->total, g->total), node->total,
                        ceil(profile_tree_error(g->tree, node->total, g->total)),
                        fraction(node->self, g->total), node->self, sample_tree_name(g->tree, node->name));
                text_links(f, g, callees, n_callees, true, (double) node->total, threshold, &links_omitted);
        }
        render_text_finish(f, omitted, false, threshold, "function");
        if (links_omitted)
                fprintf(f, "(%zu caller and callee line%s below the threshold %g not shown)\n", links_omitted,
                        links_omitted == 1 ? "" : "s", threshold);
        return ferror(f) ? -EIO : 0;
}

static void json_links(FILE *f, const struct call_graph *g, const struct link *links, long k, bool callees,
                       double total, double threshold) {
        bool first = true;

        for (long i = 0; i < k; i++) {
                double share = total > 0 ? links[i].time / total : 0.0;

                if (share < threshold)
                        continue;
                fprintf(f, "%s{\"name\": ", first ? "" : ", ");
                first = false;
                json_write_string(f, link_name(g, &links[i], callees));
                if (links[i].node >= 0)
                        fprintf(f, ", \"index\": %ld", links[i].node + 1);
                else
                        fprintf(f, ", \"%s\": true", callees ? "self" : "root");
                fprintf(f, ", \"share\": %.6f, \"hits\": %.3f}", share, links[i].time);
        }
}

int render_json_graph(FILE *f, const struct call_graph *g, const bool *roots, double threshold) {
        uint64_t min_hits = profile_min_hits(g->total, threshold);
        size_t omitted = 0;
        bool first = true;

        render_json_header(f, "graph", g->tree, threshold);
        fputs(", \"functions\": [", f);
        for (size_t n = 0; n < g->n_nodes; n++) {
                const struct call_graph_node *node = &g->nodes[n];
                _cleanup_free_ struct link *callers = NULL, *callees = NULL;
                long n_callers = 0, n_callees = 0;
                int k = entry_links(g, n, roots, min_hits, &callers, &n_callers, &callees, &n_callees);

                if (k < 0)
                        return k;
                if (k == 0) {
                        omitted += !roots;
                        continue;
                }
                fprintf(f, "%s\n  {\"index\": %zu, \"name\": ", first ? "" : ",", n + 1);
                first = false;
                json_write_string(f, sample_tree_name(g->tree, node->name));
                fprintf(f,
                        ", \"fraction\": %.6f, \"hits\": %" PRIu64
                        ", \"self_fraction\": %.6f, \"self\": %" PRIu64 ", \"callers\": [",
                        fraction(node->total, g->total), node->total, fraction(node->self, g->total),
                        node->self);
                json_links(f, g, callers, n_callers, false, (double) node->total, threshold);
                fputs("], \"callees\": [", f);
                json_links(f, g, callees, n_callees, true, (double) node->total, threshold);
                fputs("]}", f);
        }
        fprintf(f, "%s], \"omitted\": %zu}\n", first ? "" : "\n", omitted);
        return ferror(f) ? -EIO : 0;
}
