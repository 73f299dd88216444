/* The call graph (common/view/call-graph.h) as a Graphviz digraph, for `dot -Tsvg`: one box per
 * function with its total and self fractions and hits, one arrow per caller -> callee pair with
 * the hits of samples making that call:
 *
 *     digraph "call graph" {
 *             graph [label="Call graph for resource: cpu-time\n614 hits, ...", labelloc=t];
 *             node [shape=box, style=filled];
 *             n0 [label="db_read_record\ntotal 1.0000 [614]\nself 1.0000 [614]",
 *                 fillcolor="0.000 1.000 1.000"];
 *             n1 -> n0 [label="530"];
 *     }
 *
 * As in Racket's profile renderer, a node's fill is an HSV red whose saturation is its self hits
 * over the largest self shown: white for functions that only call, full red for the hottest
 * body. Functions whose total is below the threshold are left out with their edges, and counted
 * in the graph's label; since an edge's hits never exceed either end's total, every edge left
 * out touches a node left out. Nodes and edges come in the call graph's order, by hits, so output
 * is deterministic. Names go into dot string literals: quotes and backslashes (which start
 * Graphviz's label escapes) are escaped, line breaks become \n, other control bytes and bytes
 * that are not UTF-8 (which dot rejects) become '?'. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "call-graph.h"
#include "utf8.h"

/* Writes S inside a dot string literal. */
static void write_escaped(FILE *f, const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        while (*p) {
                size_t len = utf8_decode((const char *) p, SIZE_MAX, NULL);

                if (len == 0) {
                        fputc('?', f);
                        p++;
                        continue;
                }
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f);
                else if (*p < 0x20 || *p == 0x7f)
                        fputc('?', f);
                else
                        fwrite(p, 1, len, f);
                p += len;
        }
}

static double fraction(const struct call_graph *g, uint64_t hits) {
        return g->total ? (double) hits / (double) g->total : 0.0;
}

static void write_label(FILE *f, const struct sample_tree *t, size_t omitted, double threshold) {
        fputs("        graph [label=\"Call graph for resource: ", f);
        write_escaped(f, t->info.resource ?: "");
        fprintf(f, "\\n%" PRIu64 " hits", t->total);
        if (t->info.period) {
                fprintf(f, ", sampled every %" PRIu64 " gticks (1 gtick = ", t->info.period);
                write_escaped(f, t->info.unit ?: "");
                fputc(')', f);
        }
        if (omitted)
                fprintf(f, "\\n%zu function%s below the threshold %g not shown", omitted,
                        omitted == 1 ? "" : "s", threshold);
        fputs("\", labelloc=t];\n", f);
}

int render_dot(FILE *f, struct sample_tree *t, double threshold) {
        _cleanup_(call_graph_freep) struct call_graph *g = NULL;
        int r;

        r = call_graph_build(t, &g);
        if (r < 0)
                return r;
        return render_dot_graph(f, g, t, threshold);
}

int render_dot_graph(FILE *f, const struct call_graph *g, const struct sample_tree *t, double threshold) {
        _cleanup_free_ bool *shown = NULL;
        uint64_t max_self = 0;
        size_t omitted = 0;

        shown = malloc((g->n_nodes + 1) * sizeof *shown);
        if (!shown)
                return -ENOMEM;
        for (size_t i = 0; i < g->n_nodes; i++) {
                shown[i] = fraction(g, g->nodes[i].total) >= threshold;
                if (shown[i])
                        max_self = MAX(max_self, g->nodes[i].self);
                else
                        omitted++;
        }

        fputs("digraph \"call graph\" {\n", f);
        write_label(f, t, omitted, threshold);
        fputs("        node [shape=box, style=filled];\n", f);
        for (size_t i = 0; i < g->n_nodes; i++) {
                const struct call_graph_node *n = &g->nodes[i];

                if (!shown[i])
                        continue;
                fprintf(f, "        n%zu [label=\"", i);
                write_escaped(f, sample_tree_name(t, n->name));
                fprintf(f,
                        "\\ntotal %.4f [%" PRIu64 "]\\nself %.4f [%" PRIu64 "]\", "
                        "fillcolor=\"0.000 %.3f 1.000\"];\n",
                        fraction(g, n->total), n->total, fraction(g, n->self), n->self,
                        max_self ? (double) n->self / (double) max_self : 0.0);
        }
        for (size_t i = 0; i < g->n_edges; i++) {
                const struct call_graph_edge *e = &g->edges[i];

                if (shown[e->caller] && shown[e->callee])
                        fprintf(f, "        n%" PRIu32 " -> n%" PRIu32 " [label=\"%" PRIu64 "\"];\n",
                                e->caller, e->callee, e->hits);
        }
        fputs("}\n", f);
        return ferror(f) ? -EIO : 0;
}
