/* The appendix's Downward-CP-Profile: canonicalize-and-lock, on a tree index.
 *
 * Call paths are records in a trie of their own: a record is (parent record, name), record 0
 * being the empty path, so cons(NAME, PARENT-CALL-PATH) is one hash lookup keyed by
 * (parent, name), and walking rest() is following parent links. Each record carries the ticks
 * field and the locked? bit of the appendix's PATH-HASH.
 *
 * Summarize-below-root starts at each outermost occurrence of a root function (the index lists
 * a name's nodes in preorder, so the outermost are those past the previous one's subtree); CPP-Rec
 * then descends from there. For every tree node it forms CP = (NAME . parent), adds the node's
 * weight to CP's record unless that record is locked (we are already inside it on this stack,
 * so these samples were counted for CP once), locks it for the duration of the subtree, and
 * passes the children Canonicalize-name(CP, NAME): the path cut back to the earlier occurrence
 * of NAME if there is one. So (f f g) is counted as (f g), and no sample is counted twice for
 * one path. Walks use explicit stacks, as stacks of hostile input may be deep.
 *
 * The threshold. A view shows only paths with at least MIN_HITS hits, and a path never has more
 * hits than the path it extends, so the work worth doing is below paths that reach MIN_HITS.
 * When the walk meets a child C lighter than MIN_HITS whose subtree is fresh (no name in it
 * labels an ancestor: tree-index.h), every path C's subtree can add to starts with CP' =
 * (parent . NAME(C)) -- nothing in it can cut the path back below CP' -- and CP' is not locked
 * (NAME(C) is on no ancestor). So the walk adds C's weight to CP', as CPP-Rec would, and leaves
 * the rest of the subtree on CP''s list. Once every walk is done, lists are taken shortest path
 * first: a path's hits are then final (all that can add to it lies below shorter paths, already
 * taken), and its subtrees are walked if it reached MIN_HITS, or dropped: nothing below a path
 * under MIN_HITS can reach it. A view of a million distinct stacks at 1% walks the few
 * thousand nodes heavy enough to matter and the children beside them.
 *
 * Wanted paths. A table of several resources shows a path that reaches the threshold in any of
 * them, with its hits in each: in the others it may be far below. callpath_summarize() can be
 * given those paths (struct callpath_wanted, a trie of their names keyed as the records are), and
 * then also walks the subtrees left below a prefix of one of them, and adds those paths whatever
 * their hits. A subtree left below a path that is no such prefix holds none of them: every path
 * it adds to extends that path. */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>

#include "grow.h"
#include "idmap.h"

#define NONE UINT32_MAX

/* Visits between two tree_index_trim()s: each visit may map a few pages of a mapped index
 * around its node: 64 KiB around a fault, or the whole large folio (up to 2 MiB) the page cache
 * holds it in, as it does a file just written. So this bounds what the walk holds mapped at tens
 * of MiB, whatever the size of the index, for a madvise() every 32 nodes read (a few µs). */
#define CALLPATH_TRIM_VISITS 32

struct cp_record {
        uint32_t parent; /* record of the path without its last name; 0 for (NAME) */
        uint32_t name;   /* the path's last name; NAME_NONE for the empty path */
        uint32_t len;
        uint32_t deferred;    /* the first subtree left for later below this path, or NONE */
        uint32_t next_queued; /* the next record of its length with subtrees left, or NONE */
        bool locked, queued;
        uint64_t hits;
};

struct cp_later {
        uint32_t node; /* a subtree's root, already counted for its record */
        uint32_t next;
};

struct cp_frame {
        uint32_t node;        /* tree node being visited */
        uint32_t next_parent; /* Canonicalize-name(CP, NAME): the parent for the children */
        uint32_t record;      /* CP's record */
        uint32_t child;       /* next child of node to visit */
        uint32_t end;         /* past the node's subtree */
        bool was_locked;
};

struct cp_state {
        const struct tree_index *t;
        uint64_t min_hits;
        const struct callpath_wanted *wanted; /* NULL: none */
        uint32_t *want; /* with wanted, by record: its path's id there, or NONE (records stay 32 bytes) */
        size_t cap_want;
        struct cp_record *records;
        size_t n, cap;
        struct idmap *index; /* idmap_pair(parent, name) -> record */
        struct cp_later *later;
        size_t n_later, cap_later;
        uint32_t *queue;                 /* by path length: the first record with subtrees left */
        struct cp_frame *stack;          /* max_depth + 1 frames */
        uint32_t *on_path;               /* by name: how often it labels the walk's path or starting path */
        struct tree_index_window window; /* the nodes read since the pages were let go of */
        bool dropped;                    /* a subtree below the threshold was never walked */
};

static void cp_state_done(struct cp_state *s) {
        free(s->records);
        idmap_free(s->index);
        free(s->later);
        free(s->queue);
        free(s->stack);
        free(s->on_path);
        free(s->want);
}

static uint32_t want_of(const struct cp_state *s, uint32_t record) {
        return s->want ? s->want[record] : NONE;
}

static int64_t record_get(struct cp_state *s, uint32_t parent, uint32_t name) {
        uint32_t want = want_of(s, parent);
        uint64_t *slot;
        int r;

        r = idmap_put(s->index, idmap_pair(parent, name), s->n, &slot);
        if (r < 0)
                return r;
        if (r == 0)
                return *slot;
        if (want != NONE) {
                const uint64_t *w = idmap_get(s->wanted->paths, idmap_pair(want, name));

                want = w ? (uint32_t) *w : NONE;
        }
        if (GROW(s->records, s->cap, s->n + 1) < 0 || (s->want && GROW(s->want, s->cap_want, s->n + 1) < 0))
                return -ENOMEM;
        if (s->want)
                s->want[s->n] = want;
        s->records[s->n] = (struct cp_record) {
                .parent = parent,
                .name = name,
                .len = s->records[parent].len + 1,
                .deferred = NONE,
                .next_queued = NONE,
        };
        return s->n++;
}

/* Canonicalize-name(CP, NAME): the first record in rest(CP) whose last name is NAME, else CP.
 * A path's names all label nodes of the walk's path or of its starting path (on_path), so a
 * name not there is not in rest(CP): the common case costs no walk up the records. */
static uint32_t canonicalize(const struct cp_state *s, uint32_t cp, uint32_t name) {
        if (s->on_path[name] <= 1)
                return cp; /* only CP's own node carries it */
        for (uint32_t p = s->records[cp].parent; p != 0; p = s->records[p].parent)
                if (s->records[p].name == name)
                        return p;
        return cp;
}

/* The checked subtree end of NODE inside [NODE, LIMIT), or 0 if the index lies. */
static uint32_t subtree_end(const struct tree_index *t, uint32_t node, uint32_t limit) {
        uint32_t size = tree_index_size(t, node);

        return size == 0 || size > limit - node ? 0 : node + size;
}

/* Notes NODE read from the index; now and then lets go of the index pages read so far
 * (tree_index_touch(): the ranges of nodes read, not the whole file, whose madvise() every few
 * dozen nodes cost the kernel more than the walk at -t 0): a view's memory is what it keeps, not
 * the pages it passed. */
static void touched(struct cp_state *s, uint32_t node) {
        tree_index_touch(s->t, &s->window, node);
}

/* Prepares the visit of NODE (its subtree ends at END) as record CP, counting its weight unless
 * COUNTED or the record is locked: CPP-Rec's prologue. */
static void visit(struct cp_state *s, uint32_t node, uint32_t end, uint32_t cp, bool counted,
                  struct cp_frame *f) {
        struct cp_record *rec = &s->records[cp];

        s->on_path[rec->name]++;
        *f = (struct cp_frame) {
                .node = node,
                .next_parent = canonicalize(s, cp, rec->name),
                .record = cp,
                .child = node + 1,
                .end = end,
                .was_locked = rec->locked,
        };
        if (!rec->locked) {
                rec->locked = true;
                if (!counted)
                        rec->hits += s->t->nodes[node].weight;
        }
}

/* Counts light fresh child C as (PARENT . NAME(C)) and leaves its subtree on that record's list.
 * Returns 1 if done, 0 if C must be walked after all (its record is locked: an index that lies
 * about freshness), or a negative errno. */
static int defer(struct cp_state *s, uint32_t parent, uint32_t c) {
        const struct tree_index_node *n = &s->t->nodes[c];
        struct cp_record *rec;
        int64_t q;

        q = record_get(s, parent, n->name);
        if (q < 0)
                return q;
        rec = &s->records[q];
        if (rec->locked || rec->len > s->t->max_depth)
                return 0;
        rec->hits += n->weight;
        if (tree_index_size(s->t, c) == 1)
                return 1; /* a leaf: nothing below it */
        if (GROW(s->later, s->cap_later, s->n_later + 1) < 0)
                return -ENOMEM;
        s->later[s->n_later] = (struct cp_later) { .node = c, .next = rec->deferred };
        rec->deferred = s->n_later++;
        if (!rec->queued) {
                rec->queued = true;
                rec->next_queued = s->queue[rec->len];
                s->queue[rec->len] = q;
        }
        return 1;
}

/* CPP-Rec from the visit prepared in s->stack[0]. */
static int walk(struct cp_state *s) {
        const struct tree_index *t = s->t;
        size_t depth = 1;
        int r;

        while (depth > 0) {
                struct cp_frame *f = &s->stack[depth - 1];

                if (f->child < f->end) {
                        uint32_t c = f->child, end = subtree_end(t, c, f->end);
                        int64_t cp;

                        if (end == 0 || depth > t->max_depth || t->nodes[c].name >= t->n_names)
                                return -EBADMSG;
                        f->child = end;
                        touched(s, c);
                        if (s->min_hits > 0 && t->nodes[c].weight < s->min_hits && tree_index_fresh(t, c)) {
                                r = defer(s, f->next_parent, c);
                                if (r < 0)
                                        return r;
                                if (r > 0)
                                        continue;
                        }
                        cp = record_get(s, f->next_parent, t->nodes[c].name);
                        if (cp < 0)
                                return cp;
                        visit(s, c, end, cp, false, &s->stack[depth++]);
                        continue;
                }
                if (!f->was_locked)
                        s->records[f->record].locked = false;
                s->on_path[s->records[f->record].name]--;
                depth--;
        }
        return 0;
}

static int uint32_cmp(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

        return x < y ? -1 : x > y;
}

/* The outermost occurrences of the names marked in ROOTS, in preorder, into *ret (malloc()ed);
 * without LEAVES, only those with children. Returns how many, or a negative errno. */
static int64_t outermost(const struct tree_index *t, const bool *roots, bool leaves, uint32_t **ret) {
        _cleanup_free_ uint32_t *all = NULL;
        size_t n = 0, k = 0;
        uint32_t end = 0;

        for (uint32_t name = 0; name < t->n_names; name++)
                if (roots[name])
                        n += t->occ_start[name + 1] - t->occ_start[name];
        all = malloc((n ? n : 1) * sizeof *all);
        if (!all)
                return -ENOMEM;
        for (uint32_t name = 0; name < t->n_names; name++)
                for (uint32_t i = roots[name] ? t->occ_start[name] : 0;
                     roots[name] && i < t->occ_start[name + 1]; i++) {
                        uint32_t node = t->occ[i] & ~TREE_INDEX_LEAF;

                        if (node == 0 || node >= t->n)
                                return -EBADMSG;
                        if (leaves || !(t->occ[i] & TREE_INDEX_LEAF))
                                all[k++] = node;
                }
        n = k;
        /* One root name's nodes are in preorder already; several (call sites of a function)
         * need merging. */
        for (uint32_t name = 0, seen = 0; name < t->n_names; name++)
                if (roots[name] && seen++ > 0) {
                        qsort(all, n, sizeof *all, uint32_cmp);
                        break;
                }
        k = 0;
        for (size_t i = 0; i < n; i++)
                if (all[i] >= end) {
                        if (k % CALLPATH_TRIM_VISITS == CALLPATH_TRIM_VISITS - 1)
                                tree_index_trim(t);
                        end = all[i] + tree_index_size(t, all[i]);
                        all[k++] = all[i];
                }
        *ret = take_ptr(&all);
        return k;
}

int callpath_wanted_add(struct callpath_wanted *w, const uint32_t *path, size_t len) {
        uint32_t id = 0;

        if (!w->paths && !(w->paths = idmap_new()))
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                uint64_t *slot;
                int r = idmap_put(w->paths, idmap_pair(id, path[i]), w->n + 1, &slot);

                if (r < 0)
                        return r;
                w->n += r;
                id = (uint32_t) *slot;
        }
        return 0;
}

void callpath_wanted_done(struct callpath_wanted *w) {
        w->paths = idmap_free(w->paths);
        w->n = 0;
}

int callpath_summarize(const struct tree_index *t, const bool *roots, uint64_t min_hits,
                       const struct callpath_wanted *wanted, bool reverse, struct profile *p) {
        _cleanup_(cp_state_done) struct cp_state s = { .t = t, .min_hits = min_hits };
        _cleanup_free_ uint32_t *tops = NULL, *path = NULL;
        uint32_t n_roots = 0, single = 0;
        int64_t n_tops;
        int r;

        s.cap = 1024;
        s.records = malloc(s.cap * sizeof *s.records);
        s.index = idmap_new();
        s.stack = malloc(((size_t) t->max_depth + 1) * sizeof *s.stack);
        s.queue = malloc(((size_t) t->max_depth + 2) * sizeof *s.queue);
        path = malloc(((size_t) t->max_depth + 1) * sizeof *path);
        s.on_path = calloc((size_t) t->n_names + 1, sizeof *s.on_path);
        if (!s.records || !s.index || !s.stack || !s.queue || !path || !s.on_path)
                return -ENOMEM;
        for (size_t i = 0; i < (size_t) t->max_depth + 2; i++)
                s.queue[i] = NONE;
        if (wanted && wanted->paths) {
                s.wanted = wanted;
                s.cap_want = s.cap;
                s.want = malloc(s.cap_want * sizeof *s.want);
                if (!s.want)
                        return -ENOMEM;
                s.want[0] = 0; /* the empty path: the root of the wanted ones */
        }
        s.records[s.n++] = (struct cp_record) { .name = NAME_NONE, .deferred = NONE, .next_queued = NONE };

        /* Summarize-below-root: from the outermost occurrence of ROOT on each stack. With one
         * root name, (ROOT)'s hits are the function profile's (the samples holding it), and an
         * occurrence without children adds nothing else: only those with children are walked
         * (the callers of main in an upward profile are none, in a million occurrences). */
        for (uint32_t name = 0; name < t->n_names; name++)
                if (roots[name] && n_roots++ == 0)
                        single = name;
        if (n_roots == 1) {
                int64_t cp = record_get(&s, 0, single);

                if (cp < 0)
                        return cp;
                s.records[cp].hits = t->function_hits[single];
        }
        n_tops = outermost(t, roots, n_roots != 1, &tops);
        if (n_tops < 0)
                return n_tops;
        for (int64_t i = 0; i < n_tops; i++) {
                uint32_t end = subtree_end(t, tops[i], t->n);
                int64_t cp;

                if (end == 0 || t->nodes[tops[i]].name >= t->n_names)
                        return -EBADMSG;
                touched(&s, tops[i]);
                cp = record_get(&s, 0, t->nodes[tops[i]].name);
                if (cp < 0)
                        return cp;
                visit(&s, tops[i], end, cp, n_roots == 1, &s.stack[0]);
                r = walk(&s);
                if (r < 0)
                        return r;
        }

        /* The subtrees left for later, shortest paths first: each path's hits are final. */
        for (size_t len = 1; len < (size_t) t->max_depth + 2; len++)
                for (uint32_t q = s.queue[len]; q != NONE; q = s.records[q].next_queued) {
                        if (s.records[q].hits < min_hits && want_of(&s, q) == NONE) {
                                s.dropped = true;
                                continue;
                        }
                        /* The walks start below Q's path, whose names canonicalize() must see. */
                        for (uint32_t k = s.records[q].parent; k != 0; k = s.records[k].parent)
                                s.on_path[s.records[k].name]++;
                        for (uint32_t l = s.records[q].deferred; l != NONE; l = s.later[l].next) {
                                uint32_t c = s.later[l].node;

                                touched(&s, c);
                                visit(&s, c, c + tree_index_size(t, c), q, true, &s.stack[0]);
                                r = walk(&s);
                                if (r < 0)
                                        return r;
                        }
                        for (uint32_t k = s.records[q].parent; k != 0; k = s.records[k].parent)
                                s.on_path[s.records[k].name]--;
                }

        /* Every path is counted: the map from (parent, name) to records and the subtrees left
         * go before the profile takes its room, which at -t 0 is as big (over a million distinct
         * stacks, 14 M paths: 512 MiB of map). */
        s.index = idmap_free(s.index);
        s.later = mfree(s.later);
        for (size_t i = 1; i < s.n; i++) {
                uint32_t len = s.records[i].len, j = 0;

                bool wanted_here = want_of(&s, i) != NONE && s.records[i].hits > 0;

                if (s.records[i].hits < min_hits && !wanted_here) {
                        p->n_omitted++; /* as profile_add() would, without the path */
                        continue;
                }
                for (uint32_t k = i; k != 0; k = s.records[k].parent, j++)
                        path[reverse ? j : len - 1 - j] = s.records[k].name;
                r = wanted_here ? profile_add_always(p, path, len, s.records[i].hits) :
                                  profile_add(p, path, len, s.records[i].hits);
                if (r < 0)
                        return r;
        }
        p->omitted_partial = s.dropped;
        return 0;
}
