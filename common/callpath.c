/* The appendix's Downward-CP-Profile: canonicalize-and-lock.
 *
 * Call paths are records in a trie of their own: a record is (parent record, name), record 0
 * being the empty path, so cons(NAME, PARENT-CALL-PATH) is one hash lookup keyed by
 * (parent, name), and walking rest() is following parent links. Each record carries the ticks
 * field and the locked? bit of the appendix's PATH-HASH.
 *
 * Summarize-below-root walks the sample tree down to each outermost occurrence of a root
 * function; CPP-Rec then descends from there. For every tree node it forms CP = (NAME . parent),
 * adds the node's weight to CP's record unless that record is locked (we are already inside it
 * on this stack, so these samples were counted for CP once), locks it for the duration of the
 * subtree, and passes the children Canonicalize-name(CP, NAME): the path cut back to the earlier
 * occurrence of NAME if there is one. So (f f g) is counted as (f g), and no sample is counted
 * twice for one path. Both walks use explicit stacks, as stacks of hostile input may be deep. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

#include "idmap.h"

struct cp_record {
        uint32_t parent;        /* record of the path without its last name; 0 for (NAME) */
        uint32_t name;          /* the path's last name; NAME_NONE for the empty path */
        uint32_t len;
        bool locked;
        uint64_t hits;
};

struct cp_state {
        struct cp_record *records;
        size_t n, cap;
        struct idmap *index;    /* idmap_pair(parent, name) -> record */
};

static void cp_state_done(struct cp_state *s) {
        free(s->records);
        idmap_free(s->index);
}

struct cp_frame {
        uint32_t node;          /* sample tree node being visited */
        uint32_t next_parent;   /* Canonicalize-name(CP, NAME): the parent for the children */
        uint32_t record;        /* CP's record */
        bool was_locked;
        uint32_t child;         /* next child of node to visit */
};

static int64_t record_get(struct cp_state *s, uint32_t parent, uint32_t name) {
        uint64_t *slot;
        int r;

        r = idmap_put(s->index, idmap_pair(parent, name), s->n, &slot);
        if (r < 0)
                return r;
        if (r == 0)
                return *slot;
        if (s->n == s->cap) {
                size_t cap = s->cap * 2;
                struct cp_record *a = realloc(s->records, cap * sizeof *a);

                if (!a)
                        return -ENOMEM;
                s->records = a;
                s->cap = cap;
        }
        s->records[s->n] = (struct cp_record) {
                .parent = parent,
                .name = name,
                .len = s->records[parent].len + 1,
        };
        return s->n++;
}

/* Canonicalize-name(CP, NAME): the first record in rest(CP) whose last name is NAME, else CP. */
static uint32_t canonicalize(const struct cp_state *s, uint32_t cp, uint32_t name) {
        for (uint32_t p = s->records[cp].parent; p != 0; p = s->records[p].parent)
                if (s->records[p].name == name)
                        return p;
        return cp;
}

/* Pushes the visit of NODE with PARENT-CALL-PATH PARENT: CPP-Rec's prologue. */
static int cpp_enter(struct cp_state *s, const struct sample_tree *t, uint32_t node, uint32_t parent,
                     struct cp_frame *f) {
        uint32_t name = t->nodes[node].name;
        struct cp_record *rec;
        int64_t cp;

        cp = record_get(s, parent, name);
        if (cp < 0)
                return cp;
        rec = &s->records[cp];
        *f = (struct cp_frame) {
                .node = node,
                .next_parent = canonicalize(s, cp, name),
                .record = cp,
                .was_locked = rec->locked,
                .child = t->nodes[node].first_child,
        };
        if (!rec->locked) {
                rec->locked = true;
                rec->hits += t->nodes[node].weight;
        }
        return 0;
}

/* CPP-Rec(TREE-NODE, ()) */
static int cpp_rec(struct cp_state *s, const struct sample_tree *t, uint32_t top, struct cp_frame *stack) {
        size_t depth = 0;
        int r;

        r = cpp_enter(s, t, top, 0, &stack[depth++]);
        if (r < 0)
                return r;
        while (depth > 0) {
                struct cp_frame *f = &stack[depth - 1];

                if (f->child != SAMPLE_TREE_NONE) {
                        uint32_t c = f->child;

                        f->child = t->nodes[c].next_sibling;
                        r = cpp_enter(s, t, c, f->next_parent, &stack[depth++]);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!f->was_locked)
                        s->records[f->record].locked = false;
                depth--;
        }
        return 0;
}

int callpath_summarize(struct sample_tree *t, const bool *roots, bool reverse, struct profile *p) {
        _cleanup_(cp_state_done) struct cp_state s = {};
        _cleanup_free_ struct cp_frame *stack = NULL;
        _cleanup_free_ uint32_t *todo = NULL, *path = NULL;
        uint32_t max_depth = 0;
        size_t n_todo = 0;
        int r;

        sample_tree_weigh(t);
        for (size_t i = 0; i < t->n_nodes; i++)
                max_depth = MAX(max_depth, t->nodes[i].depth);

        s.cap = 1024;
        s.records = malloc(s.cap * sizeof *s.records);
        s.index = idmap_new();
        stack = malloc((max_depth + 1) * sizeof *stack);
        todo = malloc(t->n_nodes * sizeof *todo);
        path = malloc((max_depth + 1) * sizeof *path);
        if (!s.records || !s.index || !stack || !todo || !path)
                return -ENOMEM;
        s.records[s.n++] = (struct cp_record) { .name = NAME_NONE };

        /* Summarize-below-root: stop at the outermost occurrence of ROOT on each stack. */
        todo[n_todo++] = SAMPLE_TREE_ROOT;
        while (n_todo > 0) {
                uint32_t node = todo[--n_todo];

                if (node != SAMPLE_TREE_ROOT && roots[t->nodes[node].name]) {
                        r = cpp_rec(&s, t, node, stack);
                        if (r < 0)
                                return r;
                        continue;
                }
                for (uint32_t c = t->nodes[node].first_child; c != SAMPLE_TREE_NONE; c = t->nodes[c].next_sibling)
                        todo[n_todo++] = c;
        }

        for (size_t i = 1; i < s.n; i++) {
                uint32_t len = s.records[i].len, j = 0;

                for (uint32_t k = i; k != 0; k = s.records[k].parent, j++)
                        path[reverse ? j : len - 1 - j] = s.records[k].name;
                r = profile_add(p, path, len, s.records[i].hits);
                if (r < 0)
                        return r;
        }
        return 0;
}
