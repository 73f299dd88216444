/* The call graph, worked by hand, against the function and body profiles on random input, and
 * gathered from a tree index (call_graph_build_index()) equal to the tree's, on random stacks
 * with recursion. */
#include "call-graph.h"
#include "folded-tree.h"
#include "paper-examples.h"
#include "profile.h"
#include "tap.h"
#include "tree-index.h"

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

/* Whether every time of G equals H's exactly, matching nodes and edges by name. */
static bool same_times(const struct call_graph *g, const struct call_graph *h) {
        if (g->n_nodes != h->n_nodes || g->n_edges != h->n_edges)
                return false;
        for (size_t i = 0; i < g->n_nodes; i++) {
                const char *name = sample_tree_name(g->tree, g->nodes[i].name);
                const struct call_graph_node *n = call_graph_find(h, name_table_find(h->tree->names, name));

                if (!n || n->root_time != g->nodes[i].root_time || n->leaf_time != g->nodes[i].leaf_time)
                        return false;
        }
        for (size_t i = 0; i < g->n_edges; i++) {
                const struct call_graph_edge *e = &g->edges[i];
                const char *caller = sample_tree_name(g->tree, g->nodes[e->caller].name);
                const char *callee = sample_tree_name(g->tree, g->nodes[e->callee].name);
                bool found = false;

                for (size_t j = 0; j < h->n_edges; j++) {
                        const struct call_graph_edge *f = &h->edges[j];

                        if (strcmp(sample_tree_name(h->tree, h->nodes[f->caller].name), caller) == 0 &&
                            strcmp(sample_tree_name(h->tree, h->nodes[f->callee].name), callee) == 0)
                                found = f->caller_time == e->caller_time && f->callee_time == e->callee_time;
                }
                if (!found)
                        return false;
        }
        return true;
}

/* Racket's times of the same stacks added in two orders (the order of a store's ids), with shares
 * of thirds, sevenths and elevenths whose double sums depend on the order. */
static void test_times_in_any_order(void) {
        static const char *const lines[] = {
                "main;f;x;f;x;f 1\n",
                "main;f;y;f;y;f;y;f;y;f;y;f;y;f 1\n",
                "main;f 3\n",
                "main;x;f;x;f;x;f 5\n",
                "main;f;x;f;x;f;x;f;x;f;x;f;x;f;x;f;x;f;x;f;x;f 7\n",
                "main;y;f;y;f 2\n",
                "main;f;y;f;y;f 11\n",
        };
        char forward[1024] = "", backward[1024] = "";
        size_t n = sizeof lines / sizeof *lines;

        for (size_t i = 0; i < n; i++) {
                strcat(forward, lines[i]);
                strcat(backward, lines[n - 1 - i]);
        }
        _cleanup_(sample_tree_freep) struct sample_tree *a = tree_from_folded(forward);
        _cleanup_(sample_tree_freep) struct sample_tree *b = tree_from_folded(backward);
        _cleanup_(call_graph_freep) struct call_graph *g = NULL, *h = NULL;

        ok(call_graph_build(a, &g) == 0 && call_graph_build(b, &h) == 0, "one graph from each order");
        ok(same_times(g, h), "every time the same to the last bit, whatever the order of the nodes");
}

/* Whether G and H are the same graph to the last bit: nodes and edges in the same order. */
static bool same_graph(const struct call_graph *g, const struct call_graph *h) {
        if (g->n_nodes != h->n_nodes || g->n_edges != h->n_edges || g->total != h->total)
                return false;
        for (size_t i = 0; i < g->n_nodes; i++)
                if (g->nodes[i].name != h->nodes[i].name || g->nodes[i].total != h->nodes[i].total ||
                    g->nodes[i].self != h->nodes[i].self || g->nodes[i].depth != h->nodes[i].depth ||
                    g->nodes[i].root_time != h->nodes[i].root_time ||
                    g->nodes[i].leaf_time != h->nodes[i].leaf_time)
                        return false;
        for (size_t i = 0; i < g->n_edges; i++)
                if (g->edges[i].caller != h->edges[i].caller || g->edges[i].callee != h->edges[i].callee ||
                    g->edges[i].hits != h->edges[i].hits ||
                    g->edges[i].caller_time != h->edges[i].caller_time ||
                    g->edges[i].callee_time != h->edges[i].callee_time)
                        return false;
        return true;
}

static void check_index(struct sample_tree *t, const char *what) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        _cleanup_(call_graph_freep) struct call_graph *g = NULL, *h = NULL;
        bool same = call_graph_build(t, &g) == 0 && tree_index_build(t, &x) == 0 &&
                call_graph_build_index(x, &h) == 0 && same_graph(g, h);

        ok(same, "%s: the graph of the index is the tree's (%zu functions, %zu calls)", what,
           g ? g->n_nodes : 0, g ? g->n_edges : 0);
}

static void test_index(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *forms = tree_from_folded(forms_folded);
        _cleanup_(sample_tree_freep) struct sample_tree *rec =
                tree_from_folded("main;f;g;f;g 2\nmain;g 1\nmain 1\n");
        _cleanup_free_ char *text = malloc(3000 * 200);
        uint64_t seed = 3;
        size_t at = 0;

        check_index(forms, "forms");
        check_index(rec, "recursion");
        /* 3,000 random stacks over 30 names, deep recursion included (shares of k > 46, summed
         * as doubles), some stacks ending inside others. */
        for (int i = 0; text && i < 3000; i++) {
                size_t depth;

                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                depth = 1 + (seed >> 33) % (i % 100 ? 20 : 60);
                at += sprintf(text + at, "main");
                for (size_t d = 1; d < depth; d++) {
                        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                        at += sprintf(text + at, ";r%u", (unsigned) ((seed >> 33) % (i % 100 ? 30 : 2)));
                }
                at += sprintf(text + at, " %u\n", (unsigned) (1 + (seed >> 40) % 13));
        }
        if (text) {
                _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(text);

                check_index(t, "3,000 random stacks");
        }
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
        is_int(edge(g, "address_information", "db_get_property"), 422,
               "address_information -> db_get_property 422");
        is_int(edge(g, "invoice", "db_get_property"), 22,
               "invoice -> db_get_property 22 (the direct call only)");
        is_int(edge(g, "main", "db_update_record"), 84, "main -> db_update_record 84");
        is_int(edge(g, "db_read_record", "main"), -1, "no edge that never happens");
        ok(g->nodes[0].total == 614 && g->edges[0].hits == 530 &&
                   strcmp(sample_tree_name(forms, g->nodes[g->edges[0].callee].name), "db_read_record") == 0,
           "sorted: the heaviest edge first (into db_read_record)");

        ok(call_graph_build(rec, &h) == 0, "recursion");
        is_int(node(h, "f", false), 2, "f total 2: once per sample");
        is_int(node(h, "g", false), 3, "g total 3");
        is_int(edge(h, "f", "g"), 2, "f -> g 2: twice on one stack, counted once");
        is_int(edge(h, "g", "f"), 2, "g -> f 2");
        is_int(edge(h, "main", "g"), 1, "main -> g 1");
        is_int(node(h, "main", true), 1, "main self 1");
        is_int(node(h, "g", true), 3, "g self 3");

        /* Racket's times. main;f;g;f;g x2: f and g occur twice, so each occurrence's edges get 1;
         * main;g x1; main x1. */
        const struct call_graph_node *f = call_graph_find(h, name_table_find(rec->names, "f"));
        const struct call_graph_node *gn = call_graph_find(h, name_table_find(rec->names, "g"));
        const struct call_graph_node *m = call_graph_find(h, name_table_find(rec->names, "main"));
        double f_callers = 0, f_callees = 0, g_callers = 0, g_callees = 0;

        for (size_t i = 0; i < h->n_edges; i++) {
                const struct call_graph_edge *e = &h->edges[i];

                if (h->nodes[e->callee].name == f->name)
                        f_callers += e->callee_time;
                if (h->nodes[e->caller].name == f->name)
                        f_callees += e->caller_time;
                if (h->nodes[e->callee].name == gn->name)
                        g_callers += e->callee_time;
                if (h->nodes[e->caller].name == gn->name)
                        g_callees += e->caller_time;
        }
        ok(f_callers + f->root_time == 2.0 && f_callees + f->leaf_time == 2.0,
           "f: callers and callees each add up to its total 2");
        ok(g_callers + gn->root_time == 3.0 && g_callees + gn->leaf_time == 3.0,
           "g: callers and callees each add up to its total 3");
        is_int((int64_t) (gn->leaf_time * 1000), 2000, "g as the leaf: 2 x (2 / 2 occurrences) + 1 = 2");
        is_int((int64_t) (m->root_time * 1000), 4000, "main outermost in all 4 hits");
        is_int((int64_t) (m->leaf_time * 1000), 1000, "main innermost once");
        for (size_t i = 0; i < h->n_edges; i++) {
                const struct call_graph_edge *e = &h->edges[i];

                if (h->nodes[e->caller].name == gn->name && h->nodes[e->callee].name == f->name)
                        ok(e->caller_time == 1.0 && e->callee_time == 1.0,
                           "g -> f: 2 hits over 2 occurrences of each, 1 from either side");
                if (h->nodes[e->caller].name == m->name && h->nodes[e->callee].name == f->name)
                        ok(e->caller_time == 2.0 && e->callee_time == 1.0,
                           "main -> f: 2 from main (once on the stack), 1 from f (twice)");
        }

        /* Racket's example: A -> B -> B -> B -> A, one hit. */
        _cleanup_(sample_tree_freep) struct sample_tree *r = tree_from_folded("A;B;B;B;A 6\n");
        _cleanup_(call_graph_freep) struct call_graph *rg = NULL;

        ok(call_graph_build(r, &rg) == 0, "Racket's A B B B A");
        for (size_t i = 0; i < rg->n_edges; i++) {
                const struct call_graph_edge *e = &rg->edges[i];

                if (strcmp(sample_tree_name(r, rg->nodes[e->caller].name), "A") == 0 &&
                    strcmp(sample_tree_name(r, rg->nodes[e->callee].name), "B") == 0)
                        ok(e->caller_time == 3.0 && e->callee_time == 2.0,
                           "A -> B: 1/2 of the sample from A's side, 1/3 from B's");
        }
        test_times_in_any_order();
        test_index();
        return tap_done();
}
