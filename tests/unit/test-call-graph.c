/* The call graph, worked by hand, and against the function and body profiles on random input. */
#include "call-graph.h"
#include "folded-tree.h"
#include "paper-examples.h"
#include "profile.h"
#include "tap.h"

static int64_t edge(const struct call_graph *g, const char *caller, const char *callee) {
        for (size_t i = 0; i < g->n_edges; i++)
                if (strcmp(sample_tree_name(g->tree, g->nodes[g->edges[i].caller].name), caller) == 0 &&
                    strcmp(sample_tree_name(g->tree, g->nodes[g->edges[i].callee].name), callee) == 0)
                        return g->edges[i].hits;
        return -1;
}

static int64_t node(const struct call_graph *g, const char *name, bool self) {
        const struct call_graph_node *n = call_graph_find(g, name_table_find(g->tree->names, name));

        return n ? (int64_t) (self ? n->self : n->total) : -1;
}

int main(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *forms = tree_from_folded(forms_folded);
        _cleanup_(sample_tree_freep) struct sample_tree *rec =
                tree_from_folded("main;f;g;f;g 2\nmain;g 1\nmain 1\n");
        _cleanup_(call_graph_freep) struct call_graph *g = NULL, *h = NULL;

        ok(call_graph_build(forms, &g) == 0, "forms: call graph");
        is_int(node(g, "db_read_record", false), 614, "db_read_record total 614");
        is_int(node(g, "db_read_record", true), 614, "and self 614");
        is_int(node(g, "db_get_property", true), 0, "db_get_property self 0");
        is_int(edge(g, "db_get_property", "db_read_record"), 530, "db_get_property -> db_read_record 530");
        is_int(edge(g, "address_information", "db_get_property"), 422, "address_information -> db_get_property 422");
        is_int(edge(g, "invoice", "db_get_property"), 22, "invoice -> db_get_property 22 (the direct call only)");
        is_int(edge(g, "main", "db_update_record"), 84, "main -> db_update_record 84");
        is_int(edge(g, "db_read_record", "main"), -1, "no edge that never happens");
        ok(g->nodes[0].total == 614 && g->edges[0].hits == 530 && strcmp(sample_tree_name(forms, g->nodes[g->edges[0].callee].name), "db_read_record") == 0,
           "sorted: the heaviest edge first (into db_read_record)");

        ok(call_graph_build(rec, &h) == 0, "recursion");
        is_int(node(h, "f", false), 2, "f total 2: once per sample");
        is_int(node(h, "g", false), 3, "g total 3");
        is_int(edge(h, "f", "g"), 2, "f -> g 2: twice on one stack, counted once");
        is_int(edge(h, "g", "f"), 2, "g -> f 2");
        is_int(edge(h, "main", "g"), 1, "main -> g 1");
        is_int(node(h, "main", true), 1, "main self 1");
        is_int(node(h, "g", true), 3, "g self 3");
        return tap_done();
}
