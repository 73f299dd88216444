/* The sample tree. Inserts come once per distinct stack and look up one child per frame, so a
 * child is found through one hash map keyed by (parent id, name id) rather than by walking
 * sibling lists; the sibling lists are kept too, for traversals, which come once per query and
 * visit every node. Nodes sit in one array and are only ever appended, so a parent's id is
 * always smaller than its children's: weights are summed in one backward pass and traversals
 * need no recursion. A tree loaded from the store also knows each label's binary (path, build
 * id) and, for a name shown demangled, the stored one, in arrays by name id beside the nodes,
 * for the exports that name binaries and keep both names. */
#include "sample-tree.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idmap.h"

/* Node ids are 32-bit and NONE is reserved. */
#define SAMPLE_TREE_MAX_NODES (UINT32_MAX - 1)

struct sample_tree *sample_tree_new(struct name_table *names) {
        struct sample_tree *t = calloc(1, sizeof *t);

        if (!t)
                return NULL;
        t->names = names ? names : name_table_new();
        t->own_names = !names;
        t->children = idmap_new();
        t->cap = 64;
        t->nodes = malloc(t->cap * sizeof *t->nodes);
        if (!t->names || !t->children || !t->nodes)
                return sample_tree_free(t);
        t->nodes[0] = (struct sample_tree_node) {
                .name = NAME_NONE,
                .parent = SAMPLE_TREE_NONE,
                .first_child = SAMPLE_TREE_NONE,
                .next_sibling = SAMPLE_TREE_NONE,
        };
        t->n_nodes = 1;
        return t;
}

struct sample_tree *sample_tree_free(struct sample_tree *t) {
        if (!t)
                return NULL;
        if (t->own_names)
                name_table_free(t->names);
        idmap_free(t->children);
        free(t->nodes);
        free(t->info.resource);
        free(t->info.unit);
        free(t->info.names_note);
        free(t->info.collect_note);
        free(t->info.python_note);
        for (size_t i = 0; i < t->n_modules; i++) {
                free(t->modules[i].path);
                free(t->modules[i].build_id);
        }
        free(t->modules);
        free(t->label_module);
        name_table_free(t->raw_names);
        free(t->label_raw);
        free(t);
        return NULL;
}

/* Makes *A (of *N entries, by name id) hold NAME, new entries set to NONE. Returns 0 or -ENOMEM. */
static int grow_by_name(uint32_t **a, size_t *n, uint32_t name, uint32_t none) {
        size_t old = *n;
        int r;

        r = GROW(*a, *n, (size_t) name + 1);
        if (r < 0)
                return r;
        for (size_t i = old; i < *n; i++)
                (*a)[i] = none;
        return 0;
}

int64_t sample_tree_add_module(struct sample_tree *t, const char *path, const char *build_id) {
        struct sample_tree_module *m;

        if (t->n_modules >= UINT32_MAX - 1)
                return -E2BIG;
        if (GROW(t->modules, t->cap_modules, t->n_modules + 1) < 0)
                return -ENOMEM;
        m = &t->modules[t->n_modules];
        *m = (struct sample_tree_module) { .path = strdup(path ?: ""), .build_id = strdup(build_id ?: "") };
        if (!m->path || !m->build_id) {
                free(m->path);
                free(m->build_id);
                return -ENOMEM;
        }
        return t->n_modules++;
}

static bool module_before(const struct sample_tree_module *a, const struct sample_tree_module *b) {
        int c = strcmp(a->path, b->path);

        return c < 0 || (c == 0 && strcmp(a->build_id ?: "", b->build_id ?: "") < 0);
}

int sample_tree_set_label_module(struct sample_tree *t, uint32_t name, uint32_t module) {
        assert(module < t->n_modules);
        if (grow_by_name(&t->label_module, &t->n_label_module, name, SAMPLE_TREE_NONE) < 0)
                return -ENOMEM;
        if (t->label_module[name] == SAMPLE_TREE_NONE ||
            module_before(&t->modules[module], &t->modules[t->label_module[name]]))
                t->label_module[name] = module;
        return 0;
}

int sample_tree_set_label_raw(struct sample_tree *t, uint32_t name, const char *raw) {
        int64_t id;

        if (!t->raw_names && !(t->raw_names = name_table_new()))
                return -ENOMEM;
        if (grow_by_name(&t->label_raw, &t->n_label_raw, name, NAME_NONE) < 0)
                return -ENOMEM;
        if (t->label_raw[name] != NAME_NONE)
                return 0;
        id = name_table_intern(t->raw_names, raw, strlen(raw));
        if (id < 0)
                return (int) id;
        t->label_raw[name] = id;
        return 0;
}

const char *sample_tree_label_raw(const struct sample_tree *t, uint32_t name) {
        if (name >= t->n_label_raw || t->label_raw[name] == NAME_NONE)
                return NULL;
        return name_table_get(t->raw_names, t->label_raw[name]);
}

const struct sample_tree_module *sample_tree_label_module(const struct sample_tree *t, uint32_t name) {
        if (name >= t->n_label_module || t->label_module[name] == SAMPLE_TREE_NONE)
                return NULL;
        return &t->modules[t->label_module[name]];
}

/* Makes the map of children again after sample_tree_shrink(). Returns 0 or -ENOMEM. */
static int children_rebuild(struct sample_tree *t) {
        _cleanup_(idmap_freep) struct idmap *m = idmap_new();
        uint64_t *slot;

        if (!m || idmap_reserve(m, t->n_nodes) < 0)
                return -ENOMEM;
        for (uint32_t i = 1; i < t->n_nodes; i++)
                if (idmap_put(m, idmap_pair(t->nodes[i].parent, t->nodes[i].name), i, &slot) < 0)
                        return -ENOMEM;
        t->children = take_ptr(&m);
        return 0;
}

/* Appends node NAME below PARENT, as its first child. Returns 0 or -ENOMEM. */
static int append_child(struct sample_tree *t, uint32_t parent, uint32_t name) {
        struct sample_tree_node *p;
        uint32_t id;
        int r;

        r = GROW(t->nodes, t->cap, t->n_nodes + 1);
        if (r < 0)
                return r;
        id = t->n_nodes++;
        p = &t->nodes[parent];
        t->nodes[id] = (struct sample_tree_node) {
                .name = name,
                .parent = parent,
                .first_child = SAMPLE_TREE_NONE,
                .next_sibling = p->first_child,
                .depth = p->depth + 1,
        };
        p->first_child = id;
        t->weighed = false;
        return 0;
}

int64_t sample_tree_child(struct sample_tree *t, uint32_t parent, uint32_t name) {
        uint64_t *slot;
        int64_t id;
        int r;

        if (!t->children && (r = children_rebuild(t)) < 0)
                return r;
        r = idmap_put(t->children, idmap_pair(parent, name), t->n_nodes, &slot);
        if (r < 0)
                return r;
        if (r == 0)
                return *slot;

        if (t->n_nodes >= SAMPLE_TREE_MAX_NODES) {
                *slot = SAMPLE_TREE_NONE; /* never reached in practice; keep the map sane */
                return -E2BIG;
        }
        id = t->n_nodes;
        r = append_child(t, parent, name);
        if (r < 0)
                return r;
        return id;
}

int64_t sample_tree_add_child(struct sample_tree *t, uint32_t parent, uint32_t name) {
        int64_t id = t->n_nodes;
        int r;

        if (t->n_nodes >= SAMPLE_TREE_MAX_NODES)
                return -E2BIG;
        r = append_child(t, parent, name);
        return r < 0 ? r : id;
}

int sample_tree_reserve(struct sample_tree *t, size_t n, bool mapped) {
        int r;

        if (n > SAMPLE_TREE_MAX_NODES)
                return -E2BIG;
        if (mapped && !t->children && (r = children_rebuild(t)) < 0)
                return r;
        if (n > t->cap) {
                struct sample_tree_node *nodes = realloc(t->nodes, n * sizeof *nodes);

                if (!nodes)
                        return -ENOMEM;
                t->nodes = nodes;
                t->cap = n;
        }
        return mapped ? idmap_reserve(t->children, n) : 0;
}

void sample_tree_shrink(struct sample_tree *t) {
        struct sample_tree_node *nodes;

        t->children = idmap_free(t->children);
        if (t->cap > t->n_nodes && (nodes = realloc(t->nodes, t->n_nodes * sizeof *nodes))) {
                t->nodes = nodes;
                t->cap = t->n_nodes;
        }
}

int64_t sample_tree_add(struct sample_tree *t, const uint32_t *names, size_t n, uint64_t hits) {
        int64_t node = SAMPLE_TREE_ROOT;

        for (size_t i = 0; i < n; i++) {
                node = sample_tree_child(t, node, names[i]);
                if (node < 0)
                        return node;
        }
        sample_tree_add_hits(t, node, hits);
        return node;
}

void sample_tree_add_hits(struct sample_tree *t, uint32_t node, uint64_t hits) {
        t->nodes[node].self += hits;
        t->weighed = false;
}

void sample_tree_weigh(struct sample_tree *t) {
        if (t->weighed)
                return;
        for (size_t i = 0; i < t->n_nodes; i++)
                t->nodes[i].weight = t->nodes[i].self;
        for (size_t i = t->n_nodes - 1; i > 0; i--)
                t->nodes[t->nodes[i].parent].weight += t->nodes[i].weight;
        t->total = t->nodes[0].weight;
        t->weighed = true;
}

size_t sample_tree_stack(const struct sample_tree *t, uint32_t node, uint32_t *ret) {
        size_t depth = t->nodes[node].depth;

        for (size_t i = depth; i > 0; i--) {
                ret[i - 1] = t->nodes[node].name;
                node = t->nodes[node].parent;
        }
        return depth;
}

int sample_tree_invert(struct sample_tree *t, struct sample_tree **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *inv = NULL;

        inv = sample_tree_new(t->names);
        if (!inv)
                return -ENOMEM;

        /* Each node that ends samples is walked to the root, descending the inverted tree as
         * it goes: a cost of one child lookup per frame of each distinct stack. */
        for (size_t i = 0; i < t->n_nodes; i++) {
                int64_t node = SAMPLE_TREE_ROOT;

                /* Only stacks that end here; a leaf with no hits is kept, as downward views show
                 * such paths with [0]. */
                if (t->nodes[i].self == 0 && t->nodes[i].first_child != SAMPLE_TREE_NONE)
                        continue;
                if (i == SAMPLE_TREE_ROOT)
                        continue;
                for (uint32_t j = i; j != SAMPLE_TREE_ROOT; j = t->nodes[j].parent) {
                        node = sample_tree_child(inv, node, t->nodes[j].name);
                        if (node < 0)
                                return node;
                }
                sample_tree_add_hits(inv, node, t->nodes[i].self);
        }
        /* What the header states is T's. */
        if (sample_tree_set_resource(inv, t->info.resource, t->info.unit) < 0)
                return -ENOMEM;
        inv->info.period = t->info.period;
        inv->info.samples = t->info.samples;
        inv->info.hits_squared = t->info.hits_squared;
        inv->info.lost = t->info.lost;
        inv->info.periods_fixed = t->info.periods_fixed;
        inv->info.periods_random = t->info.periods_random;
        inv->info.thinned = t->info.thinned;
        inv->info.frames = t->info.frames;
        inv->info.frames_unsymbolized = t->info.frames_unsymbolized;
        inv->info.frames_named_later = t->info.frames_named_later;
        if (sample_tree_set_names_note(inv, t->info.names_note) < 0 ||
            sample_tree_set_collect_note(inv, t->info.collect_note) < 0 ||
            sample_tree_set_python_note(inv, t->info.python_note) < 0)
                return -ENOMEM;
        inv->info.modules_named_later = t->info.modules_named_later;
        sample_tree_weigh(inv);
        sample_tree_shrink(inv);
        *ret = take_ptr(&inv);
        return 0;
}

int sample_tree_set_resource(struct sample_tree *t, const char *resource, const char *unit) {
        char *r = strdup(resource ?: ""), *u = strdup(unit ?: "");

        if (!r || !u) {
                free(r);
                free(u);
                return -ENOMEM;
        }
        free(t->info.resource);
        free(t->info.unit);
        t->info.resource = r;
        t->info.unit = u;
        return 0;
}

int sample_tree_set_names_note(struct sample_tree *t, const char *note) {
        char *copy = NULL;

        if (note && !(copy = strdup(note)))
                return -ENOMEM;
        free(t->info.names_note);
        t->info.names_note = copy;
        return 0;
}

int sample_tree_set_collect_note(struct sample_tree *t, const char *note) {
        char *copy = NULL;

        if (note && !(copy = strdup(note)))
                return -ENOMEM;
        free(t->info.collect_note);
        t->info.collect_note = copy;
        return 0;
}

int sample_tree_set_python_note(struct sample_tree *t, const char *note) {
        char *copy = NULL;

        if (note && !(copy = strdup(note)))
                return -ENOMEM;
        free(t->info.python_note);
        t->info.python_note = copy;
        return 0;
}
