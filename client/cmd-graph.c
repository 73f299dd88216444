/* cppctl graph: the caller/callee view of gprof and Racket's profiler (render-graph.c), for
 * every function above the threshold or for --root F alone: who calls F, with the share of
 * F's total each accounts for, and whom F calls, likewise. The graph is gathered in one pass over
 * the tree's index (call_graph_build_index()), as the profile views read it, for every format. */
#include "cppctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "strv.h"

/* Says that Q's root appears in no sample, with the names of functions that contain it (SIMILAR,
 * may be NULL). Returns EXIT_EMPTY. */
static int no_root(const struct query_args *q, char **similar) {
        _cleanup_free_ char *list = similar && similar[0] ? strv_join(similar, ", ") : NULL;

        log_error("'%s' appears in no sample of %s%s%s", q->root, q->resource,
                  list ? "; functions with that in their name: " : "", list ? list : "");
        return EXIT_EMPTY;
}

int cmd_graph(int argc, char **argv, const struct verb *verb) {
        _cleanup_(query_args_done) struct query_args q = {};
        _cleanup_(view_data_done) struct view_data v = {};
        _cleanup_(call_graph_freep) struct call_graph *g = NULL;
        _cleanup_free_ bool *roots = NULL;
        uint32_t first;
        FILE *out;
        int r;

        r = query_args_parse(
                &q, argc, argv, "graph",
                "Caller/callee graph (gprof, Racket's profiler): per function its total and self\n"
                "hits, its callers above it and its callees below, each with the share of the\n"
                "function's total it accounts for (a recursive function is its own caller).\n"
                "With --root F, F's entry alone.",
                QUERY_TAKES_ROOT);
        if (r <= 0)
                return exit_status(r);
        r = query_check_format(&q, "graph", RENDER_GRAPH);
        if (r < 0)
                return exit_status(r);
        /* Drawn from the tree's index, mapped from the cache or laid out from the store's stacks:
         * one pass over it, never the whole tree in memory (dot too: it draws the whole graph,
         * whatever the root, which it checks all the same). */
        r = query_load_index(&q, false, &v);
        if (r < 0)
                return exit_status(r);
        if (q.root) {
                r = profile_roots_index(v.index, q.root, &roots, &first);
                if (r < 0)
                        return exit_status(log_error_errno(r, "Out of memory"));
                if (r == 0) {
                        _cleanup_(strv_freep) char **similar = NULL;

                        (void) profile_similar_roots_index(v.index, q.root, 5, &similar);
                        return no_root(&q, similar);
                }
        }
        r = call_graph_build_index(v.index, &g);
        if (r < 0)
                return exit_status(log_error_errno(r, "Cannot build the call graph: %m"));
        out = query_output(&q);
        if (!out)
                return EXIT_FAILURE_;
        r = q.format->graph(out, g, v.index->header, roots, q.threshold);
        return query_output_close(&q, out, r);
}
