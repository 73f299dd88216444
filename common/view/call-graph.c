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
 * than that on one stack (rare: deep recursion) as a double beside.
 *
 * The same walk runs over a tree index (call_graph_build_index()): its nodes in preorder are the
 * walk, a node left at the end of its subtree, when its self hits are known and the open path is
 * its stack, so Racket's times are summed then; the index is read once in file order and let go
 * of as it goes. That is what cppctl graph reads: over 1 M distinct stacks, 0.8 s and 22 MiB
 * from the cached index, where the loaded tree took 11 s and 907 MiB. Either walk gathers into
 * one struct gather, and graph_finish() makes the graph of it, so they cannot differ. */
#include "call-graph.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idmap.h"
#include "tree-index.h"

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

/* What both walks (of a sample tree, of a tree index) gather, by name id below n_names, and
 * per call edge; graph_finish() makes the graph of it. */
struct gather {
        size_t n_names;
        struct idmap *edges; /* idmap_pair(caller, callee) -> index in states */
        struct edge_state *states;
        size_t n_states, cap_states;
        uint32_t *active;       /* occurrences on the current stack */
        uint32_t *depth;        /* the least depth + 1 a name is at; 0: nowhere */
        uint64_t *total, *self; /* hits of samples holding it, ending in it */
        struct time_sum *root_time, *leaf_time;
};

static void gather_done(struct gather *a) {
        idmap_free(a->edges);
        free(a->states);
        free(a->active);
        free(a->depth);
        free(a->total);
        free(a->self);
        free(a->root_time);
        free(a->leaf_time);
}

static int gather_init(struct gather *a, size_t n_names) {
        *a = (struct gather) {
                .n_names = n_names,
                .edges = idmap_new(),
                .active = calloc(n_names + 1, sizeof *a->active),
                .depth = calloc(n_names + 1, sizeof *a->depth),
                .total = calloc(n_names + 1, sizeof *a->total),
                .self = calloc(n_names + 1, sizeof *a->self),
                .root_time = calloc(n_names + 1, sizeof *a->root_time),
                .leaf_time = calloc(n_names + 1, sizeof *a->leaf_time),
        };
        return a->edges && a->active && a->depth && a->total && a->self && a->root_time && a->leaf_time ?
                0 :
                -ENOMEM;
}

/* The index in a->states of the edge CALLER -> CALLEE, made if new. Returns it or -ENOMEM. */
static int64_t gather_edge(struct gather *a, uint32_t caller, uint32_t callee) {
        uint64_t *slot;

        if (idmap_put(a->edges, idmap_pair(caller, callee), a->n_states, &slot) < 0)
                return -ENOMEM;
        if (*slot == a->n_states) {
                if (GROW(a->states, a->cap_states, a->n_states + 1) < 0)
                        return -ENOMEM;
                a->states[a->n_states++] = (struct edge_state) {};
        }
        return (int64_t) *slot;
}

/* Racket's times of a distinct stack PATH[0..n) with HITS ending on it: each occurrence's share
 * of its two edges. a->active must hold the occurrences of each name on PATH. */
static void gather_times(struct gather *a, const uint32_t *path, size_t n, uint64_t hits) {
        for (size_t k = 0; k < n; k++) {
                uint32_t occurrences = a->active[path[k]];
                uint64_t *slot;

                if (k == 0)
                        time_add(&a->root_time[path[k]], hits, occurrences);
                if (k + 1 == n)
                        time_add(&a->leaf_time[path[k]], hits, occurrences);
                if (k > 0) {
                        slot = idmap_get(a->edges, idmap_pair(path[k - 1], path[k]));
                        time_add(&a->states[*slot].callee_time, hits, occurrences);
                }
                if (k + 1 < n) {
                        slot = idmap_get(a->edges, idmap_pair(path[k], path[k + 1]));
                        time_add(&a->states[*slot].caller_time, hits, occurrences);
                }
        }
}

/* The graph of what A gathered, over TREE's names and info, with TOTAL hits. */
static int graph_finish(struct gather *a, const struct sample_tree *tree, uint64_t total,
                        struct call_graph **ret) {
        _cleanup_(call_graph_freep) struct call_graph *g = calloc(1, sizeof *g);
        _cleanup_free_ uint32_t *node_of = malloc((a->n_names + 1) * sizeof *node_of);
        uint64_t key, value;
        size_t i = 0;

        if (!g || !node_of)
                return -ENOMEM;
        g->tree = tree;
        g->total = total;
        g->nodes = malloc((a->n_names + 1) * sizeof *g->nodes);
        if (!g->nodes)
                return -ENOMEM;
        for (uint32_t name = 0; name < a->n_names; name++)
                if (a->depth[name])
                        g->nodes[g->n_nodes++] =
                                (struct call_graph_node) { .name = name,
                                                           .total = a->total[name],
                                                           .self = a->self[name],
                                                           .depth = a->depth[name] - 1,
                                                           .root_time = time_value(&a->root_time[name]),
                                                           .leaf_time = time_value(&a->leaf_time[name]) };
        sorting = g;
        if (g->n_nodes > 0)
                qsort(g->nodes, g->n_nodes, sizeof *g->nodes, node_cmp);
        for (size_t n = 0; n < g->n_nodes; n++)
                node_of[g->nodes[n].name] = n;

        g->edges = malloc((idmap_size(a->edges) + 1) * sizeof *g->edges);
        if (!g->edges) {
                sorting = NULL;
                return -ENOMEM;
        }
        while (idmap_next(a->edges, &i, &key, &value))
                g->edges[g->n_edges++] = (struct call_graph_edge) {
                        .caller = node_of[key >> 32],
                        .callee = node_of[(uint32_t) key],
                        .hits = a->states[value].hits,
                        .caller_time = time_value(&a->states[value].caller_time),
                        .callee_time = time_value(&a->states[value].callee_time),
                };
        if (g->n_edges > 0)
                qsort(g->edges, g->n_edges, sizeof *g->edges, edge_cmp);
        sorting = NULL;
        *ret = take_ptr(&g);
        return 0;
}

int call_graph_build(struct sample_tree *t, struct call_graph **ret) {
        _cleanup_(gather_done) struct gather a = {};
        _cleanup_free_ uint32_t *stack = NULL, *path = NULL;
        size_t depth = 0;
        uint32_t max_depth = 0;
        int r;

        sample_tree_weigh(t);
        r = gather_init(&a, name_table_size(t->names));
        if (r < 0)
                return r;
        stack = malloc(2 * t->n_nodes * sizeof *stack);
        if (!stack)
                return -ENOMEM;

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
                        int64_t k = gather_edge(&a, t->nodes[parent].name, name);

                        if (k < 0)
                                return (int) k;
                        e = &a.states[k];
                }
                if (leaving) {
                        a.active[name]--;
                        if (e)
                                e->active--;
                        continue;
                }
                if (a.active[name]++ == 0)
                        a.total[name] += t->nodes[node].weight;
                if (e && e->active++ == 0)
                        e->hits += t->nodes[node].weight;
                a.self[name] += t->nodes[node].self;
                stack[depth++] = node | 0x80000000u;
                for (uint32_t c = t->nodes[node].first_child; c != SAMPLE_TREE_NONE;
                     c = t->nodes[c].next_sibling)
                        stack[depth++] = c;
        }

        /* Racket's times, per distinct stack with self hits: the occurrences of each name on the
         * stack first, then each occurrence's share of its two edges. ACTIVE is all zeros
         * again after the walk, and is left so after each stack. */
        for (size_t node = 1; node < t->n_nodes; node++)
                if (t->nodes[node].depth > max_depth)
                        max_depth = t->nodes[node].depth;
        path = malloc((max_depth + 1) * sizeof *path);
        if (!path)
                return -ENOMEM;
        for (uint32_t node = 1; node < t->n_nodes; node++) {
                uint64_t hits = t->nodes[node].self;
                size_t n;

                if (hits == 0)
                        continue;
                n = sample_tree_stack(t, node, path);
                for (size_t k = 0; k < n; k++)
                        a.active[path[k]]++;
                gather_times(&a, path, n, hits);
                for (size_t k = 0; k < n; k++)
                        a.active[path[k]] = 0;
        }

        /* The least depth each name is at, + 1. */
        for (size_t n = 1; n < t->n_nodes; n++) {
                uint32_t *d = &a.depth[t->nodes[n].name];

                if (*d == 0 || t->nodes[n].depth + 1 < *d)
                        *d = t->nodes[n].depth + 1;
        }
        return graph_finish(&a, t, t->total, ret);
}

/* Nodes of an index read between two tree_index_trim()s: the walk is in file order. */
#define TRIM_NODES 65536

int call_graph_build_index(const struct tree_index *x, struct call_graph **ret) {
        _cleanup_(gather_done) struct gather a = {};
        _cleanup_free_ uint32_t *path = NULL, *node = NULL, *end = NULL, *edge = NULL;
        _cleanup_free_ uint64_t *children = NULL;
        size_t room = (size_t) x->max_depth + 2;
        uint32_t sp = 0;
        int r;

        r = gather_init(&a, x->n_names);
        if (r < 0)
                return r;
        /* The open path, by depth from 1: its names, nodes, ends of subtrees, edges from the
         * callers (UINT32_MAX at depth 1), and the weights of the children so far. */
        path = malloc(room * sizeof *path);
        node = malloc(room * sizeof *node);
        end = malloc(room * sizeof *end);
        edge = malloc(room * sizeof *edge);
        children = malloc(room * sizeof *children);
        if (!path || !node || !end || !edge || !children)
                return -ENOMEM;

        /* The preorder is the walk: a node is entered at its number and left at the end of its
         * subtree, when its self hits (its weight less its children's) are known and the open
         * path is its stack. */
        for (uint32_t i = 1;; i++) {
                bool done = i >= x->n;
                uint32_t name, size;
                int64_t e = -1;

                if (i % TRIM_NODES == 0)
                        tree_index_trim(x);
                for (; sp > 0 && (done || end[sp] <= i); sp--) {
                        uint64_t weight = x->nodes[node[sp]].weight, self;

                        if (children[sp] > weight)
                                return -EBADMSG;
                        self = weight - children[sp];
                        a.self[path[sp]] += self;
                        if (self > 0)
                                gather_times(&a, path + 1, sp, self);
                        if (sp > 1)
                                children[sp - 1] += weight;
                        a.active[path[sp]]--;
                        if (edge[sp] != UINT32_MAX)
                                a.states[edge[sp]].active--;
                }
                if (done)
                        break;
                name = x->nodes[i].name;
                size = tree_index_size(x, i);
                if (sp >= x->max_depth || name >= x->n_names || size == 0 ||
                    size > (sp > 0 ? end[sp] : x->n) - i)
                        return -EBADMSG;
                if (sp > 0) {
                        e = gather_edge(&a, path[sp], name);
                        if (e < 0)
                                return (int) e;
                        if (a.states[e].active++ == 0)
                                a.states[e].hits += x->nodes[i].weight;
                }
                if (a.active[name]++ == 0)
                        a.total[name] += x->nodes[i].weight;
                sp++;
                if (a.depth[name] == 0 || sp + 1 < a.depth[name])
                        a.depth[name] = sp + 1;
                path[sp] = name;
                node[sp] = i;
                end[sp] = i + size;
                edge[sp] = e < 0 ? UINT32_MAX : (uint32_t) e;
                children[sp] = 0;
        }
        return graph_finish(&a, x->header, x->header->total, ret);
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
