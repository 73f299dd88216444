/* The call graph. One depth-first walk over the sample tree counts, per function, whether an
 * ancestor already carries it (as the function profile does), and per (caller, callee) pair
 * likewise, so that a sample adds its hits to each function and each call edge once: in
 * f -> g -> f -> g the edge (f, g) counts once and (g, f) once. Edge counts live in a hash keyed by
 * the pair of name ids, with a depth counter per edge while the walk is inside it.
 *
 * Racket's times are sums of hits / k, k the occurrences of a name on one stack. Summed as
 * doubles they would depend on the order of the tree's nodes, which is the order of the store's
 * stack ids (an import, a merge and the daemon each number them their own way), and so would the
 * last digit of a time that falls on a half, and the order of two links that tie. So they are
 * summed exactly, in units of 1 / lcm(1..TIME_EXACT_MAX), and a share of a name found more often
 * than that on one stack (rare: deep recursion) as a double beside. */
#include "call-graph.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idmap.h"

/* The most occurrences of a name on a stack whose shares are summed exactly; TIME_UNITS is
 * lcm(1..TIME_EXACT_MAX), the most below 2^64. A sum of shares is at most the tree's total
 * hits (< 2^63) times TIME_UNITS (< 2^64): it fits in 128 bits. */
#define TIME_EXACT_MAX 46
#define TIME_UNITS UINT64_C(9419588158802421600)

struct time_sum {
        unsigned __int128 units; /* of 1 / TIME_UNITS hits */
        double rest;             /* shares of names found more than TIME_EXACT_MAX times */
};

static void time_add(struct time_sum *t, uint64_t hits, uint32_t k) {
        if (k <= TIME_EXACT_MAX)
                t->units += (unsigned __int128) hits * (TIME_UNITS / k);
        else
                t->rest += (double) hits / k;
}

/* The sum, the whole hits and the fraction converted apart: a sum of whole hits is exact. */
static double time_value(const struct time_sum *t) {
        return (double) (uint64_t) (t->units / TIME_UNITS) +
                (double) (uint64_t) (t->units % TIME_UNITS) / (double) TIME_UNITS + t->rest;
}

struct edge_state {
        uint64_t hits;
        uint32_t active; /* occurrences on the current stack */
        struct time_sum caller_time, callee_time;
};

static _Thread_local const struct call_graph *sorting;

static int node_cmp(const void *a, const void *b) {
        const struct call_graph_node *x = a, *y = b;

        if (x->total != y->total)
                return x->total > y->total ? -1 : 1;
        if (x->depth != y->depth) /* callers before callees */
                return x->depth < y->depth ? -1 : 1;
        return strcmp(sample_tree_name(sorting->tree, x->name), sample_tree_name(sorting->tree, y->name));
}

static int edge_cmp(const void *a, const void *b) {
        const struct call_graph_edge *x = a, *y = b;
        int c;

        if (x->hits != y->hits)
                return x->hits > y->hits ? -1 : 1;
        c = strcmp(sample_tree_name(sorting->tree, sorting->nodes[x->caller].name),
                   sample_tree_name(sorting->tree, sorting->nodes[y->caller].name));
        if (c)
                return c;
        return strcmp(sample_tree_name(sorting->tree, sorting->nodes[x->callee].name),
                      sample_tree_name(sorting->tree, sorting->nodes[y->callee].name));
}

int call_graph_build(struct sample_tree *t, struct call_graph **ret) {
        _cleanup_(call_graph_freep) struct call_graph *g = NULL;
        _cleanup_(idmap_freep) struct idmap *edges = idmap_new();
        _cleanup_free_ uint32_t *active = NULL, *node_of = NULL, *stack = NULL;
        _cleanup_free_ uint64_t *total = NULL, *self = NULL;
        _cleanup_free_ struct edge_state *states = NULL;
        size_t n_names = name_table_size(t->names), n_states = 0, cap_states = 0, depth = 0, i = 0;
        uint64_t key, value, *slot;

        sample_tree_weigh(t);
        g = calloc(1, sizeof *g);
        active = calloc(n_names + 1, sizeof *active);
        node_of = malloc((n_names + 1) * sizeof *node_of);
        total = calloc(n_names + 1, sizeof *total);
        self = calloc(n_names + 1, sizeof *self);
        stack = malloc(2 * t->n_nodes * sizeof *stack);
        if (!g || !edges || !active || !node_of || !total || !self || !stack)
                return -ENOMEM;
        g->tree = t;
        g->total = t->total;

        /* Enter/leave walk as in profile-function.c: the top bit marks a leave. */
        for (uint32_t c = t->nodes[SAMPLE_TREE_ROOT].first_child; c != SAMPLE_TREE_NONE;
             c = t->nodes[c].next_sibling)
                stack[depth++] = c;
        while (depth > 0) {
                uint32_t node = stack[--depth], parent, name;
                bool leaving = node & 0x80000000u;
                struct edge_state *e = NULL;

                node &= 0x7fffffffu;
                name = t->nodes[node].name;
                parent = t->nodes[node].parent;
                if (parent != SAMPLE_TREE_ROOT) {
                        if (idmap_put(edges, idmap_pair(t->nodes[parent].name, name), n_states, &slot) < 0)
                                return -ENOMEM;
                        if (*slot == n_states) {
                                if (GROW(states, cap_states, n_states + 1) < 0)
                                        return -ENOMEM;
                                states[n_states++] = (struct edge_state) {};
                        }
                        e = &states[*slot];
                }
                if (leaving) {
                        active[name]--;
                        if (e)
                                e->active--;
                        continue;
                }
                if (active[name]++ == 0)
                        total[name] += t->nodes[node].weight;
                if (e && e->active++ == 0)
                        e->hits += t->nodes[node].weight;
                self[name] += t->nodes[node].self;
                stack[depth++] = node | 0x80000000u;
                for (uint32_t c = t->nodes[node].first_child; c != SAMPLE_TREE_NONE;
                     c = t->nodes[c].next_sibling)
                        stack[depth++] = c;
        }

        /* Racket's times, per distinct stack with self hits: the occurrences of each name on the
         * stack first, then each occurrence's share of its two edges. ACTIVE is all zeros
         * again after the walk, and is left so after each stack. */
        _cleanup_free_ struct time_sum *root_time = calloc(n_names + 1, sizeof *root_time);
        _cleanup_free_ struct time_sum *leaf_time = calloc(n_names + 1, sizeof *leaf_time);
        _cleanup_free_ uint32_t *path = NULL;
        uint32_t max_depth = 0;

        for (size_t node = 1; node < t->n_nodes; node++)
                if (t->nodes[node].depth > max_depth)
                        max_depth = t->nodes[node].depth;
        path = malloc((max_depth + 1) * sizeof *path);
        if (!root_time || !leaf_time || !path)
                return -ENOMEM;
        for (uint32_t node = 1; node < t->n_nodes; node++) {
                uint64_t hits = t->nodes[node].self;
                size_t n;

                if (hits == 0)
                        continue;
                n = sample_tree_stack(t, node, path);
                for (size_t k = 0; k < n; k++)
                        active[path[k]]++;
                for (size_t k = 0; k < n; k++) {
                        uint32_t occurrences = active[path[k]];

                        if (k == 0)
                                time_add(&root_time[path[k]], hits, occurrences);
                        if (k + 1 == n)
                                time_add(&leaf_time[path[k]], hits, occurrences);
                        if (k > 0) {
                                slot = idmap_get(edges, idmap_pair(path[k - 1], path[k]));
                                time_add(&states[*slot].callee_time, hits, occurrences);
                        }
                        if (k + 1 < n) {
                                slot = idmap_get(edges, idmap_pair(path[k], path[k + 1]));
                                time_add(&states[*slot].caller_time, hits, occurrences);
                        }
                }
                for (size_t k = 0; k < n; k++)
                        active[path[k]] = 0;
        }

        /* Nodes: the names the tree has. */
        /* The walk left every count at 0: count depth + 1 instead, the least a name is at. */
        for (size_t n = 1; n < t->n_nodes; n++) {
                uint32_t *a = &active[t->nodes[n].name];

                if (*a == 0 || t->nodes[n].depth + 1 < *a)
                        *a = t->nodes[n].depth + 1;
        }
        g->nodes = malloc((n_names + 1) * sizeof *g->nodes);
        if (!g->nodes)
                return -ENOMEM;
        for (uint32_t name = 0; name < n_names; name++)
                if (active[name])
                        g->nodes[g->n_nodes++] =
                                (struct call_graph_node) { .name = name,
                                                           .total = total[name],
                                                           .self = self[name],
                                                           .depth = active[name] - 1,
                                                           .root_time = time_value(&root_time[name]),
                                                           .leaf_time = time_value(&leaf_time[name]) };
        sorting = g;
        qsort(g->nodes, g->n_nodes, sizeof *g->nodes, node_cmp);
        for (size_t n = 0; n < g->n_nodes; n++)
                node_of[g->nodes[n].name] = n;

        g->edges = malloc((idmap_size(edges) + 1) * sizeof *g->edges);
        if (!g->edges)
                return -ENOMEM;
        while (idmap_next(edges, &i, &key, &value))
                g->edges[g->n_edges++] = (struct call_graph_edge) {
                        .caller = node_of[key >> 32],
                        .callee = node_of[(uint32_t) key],
                        .hits = states[value].hits,
                        .caller_time = time_value(&states[value].caller_time),
                        .callee_time = time_value(&states[value].callee_time),
                };
        qsort(g->edges, g->n_edges, sizeof *g->edges, edge_cmp);
        sorting = NULL;
        *ret = take_ptr(&g);
        return 0;
}

struct call_graph *call_graph_free(struct call_graph *g) {
        if (!g)
                return NULL;
        free(g->nodes);
        free(g->edges);
        free(g);
        return NULL;
}

const struct call_graph_node *call_graph_find(const struct call_graph *g, uint32_t name) {
        for (size_t i = 0; i < g->n_nodes; i++)
                if (g->nodes[i].name == name)
                        return &g->nodes[i];
        return NULL;
}
