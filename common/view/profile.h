/* A call path profile: a list of (call path, hits) entries computed from a sample tree, sorted
 * by hits, with the fractions of the tree's total. The four views of the paper (§4.3, §4.4,
 * §5.2) all produce this shape; function and body profiles have paths of length one. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "sample-tree.h"
#include "tree-index.h"

struct callpath_wanted;

enum profile_kind {
        PROFILE_DOWN,     /* call paths starting at the root function (paper §4.3) */
        PROFILE_UP,       /* call paths ending at the root function (paper §4.3) */
        PROFILE_FUNCTION, /* body + descendants, once per sample (paper §4.4) */
        PROFILE_BODY,     /* hits in the body: the stack's leaf (paper §5.2) */
};

struct profile_entry {
        uint64_t hits;
        uint32_t path; /* offset of the first name in profile.names */
        uint32_t len;  /* names in the path; printed in this order (caller first) */
};

struct profile {
        enum profile_kind kind;
        const struct sample_tree *tree; /* borrowed: names and header info */
        uint32_t root;                  /* NAME_NONE for function and body profiles */
        struct profile_entry *entries;
        size_t n_entries, cap_entries;
        uint32_t *names; /* every entry's path, concatenated */
        size_t n_names, cap_names;
        uint64_t total;       /* the tree's total hits: fractions divide by it */
        uint64_t min_hits;    /* entries with fewer hits were left out... */
        size_t n_omitted;     /* ...and counted here... */
        bool omitted_partial; /* ...or some, below paths under min_hits, not even seen */
};

/* Allocates an empty profile of KIND over T (which must outlive it). NULL: no memory. */
struct profile *profile_new(enum profile_kind kind, const struct sample_tree *t, uint32_t root);
struct profile *profile_free(struct profile *p);
DEFINE_CLEANUP(struct profile *, profile_free);

/* Appends an entry for PATH[0..len) with HITS, or only counts it in n_omitted if HITS is below
 * p->min_hits. Returns 0 or -ENOMEM. */
int profile_add(struct profile *p, const uint32_t *path, size_t len, uint64_t hits);
/* The same whatever HITS (a path asked for by name: struct callpath_wanted). */
int profile_add_always(struct profile *p, const uint32_t *path, size_t len, uint64_t hits);

/* Sorts by hits, most first; ties in path order (name by name, a prefix before its
 * extensions) so that output is deterministic and reads like a tree. */
void profile_sort(struct profile *p);

static inline const uint32_t *profile_path(const struct profile *p, const struct profile_entry *e) {
        return p->names + e->path;
}

static inline double profile_fraction(const struct profile *p, uint64_t hits) {
        return p->total ? (double) hits / (double) p->total : 0.0;
}

/* Sampling error. A path's hits are a binomial count out of the total, so its fraction p has a
 * 95% interval: profile_interval() gives Wilson's (sound at small counts and near 0 and 1), and
 * profile_hits_error() the half-width in hits of the normal approximation, 1.96 sqrt(N p (1-p)),
 * for printing "[HITS ±E]". Both treat each hit as a sample (exact when a sample is one hit).
 * profile_tree_error() is what views print: profile_hits_error() widened by sqrt(W) for the
 * samples of tree T, which carry several hits (thinned under load, bytes): a sample of weight w
 * moves the count by w, so the count's variance grows with sum(w²) against a count of single
 * hits. profile_tree_weight() is W = sum(w²) / sum(w) over T's samples (hits per sample when
 * the store has no squares; 1 for single hits). */
void profile_interval(uint64_t hits, uint64_t total, double *ret_lo, double *ret_hi);
double profile_hits_error(uint64_t hits, uint64_t total);
double profile_tree_error(const struct sample_tree *t, uint64_t hits, uint64_t total);
double profile_tree_weight(const struct sample_tree *t);

/* The hits of the entry whose path is PATH, names separated by single spaces ("main f g");
 * -1 if there is no such entry. For tests and scripts. */
int64_t profile_hits(const struct profile *p, const char *path);

static inline size_t profile_n_paths(const struct profile *p) {
        return p->n_entries;
}

/* The smallest hits whose fraction of TOTAL is at least THRESHOLD: entries below it are not
 * shown, so the views need not keep them. */
uint64_t profile_min_hits(uint64_t total, double threshold);

/* The views. Each weighs T, computes its profile sorted by hits, keeping the entries with at
 * least MIN_HITS (0: all) and counting the others, and returns 0 with *ret set, or -ENOMEM.
 * profile_down() and profile_up() return -ENOENT, and set nothing, when ROOT (a function
 * name; see profile_roots()) appears in no sample. The profile's tree is T, which must outlive
 * it. */
int profile_down(struct sample_tree *t, const char *root, uint64_t min_hits, struct profile **ret);
int profile_up(struct sample_tree *t, const char *root, uint64_t min_hits, struct profile **ret);
int profile_function(struct sample_tree *t, uint64_t min_hits, struct profile **ret);
int profile_body(struct sample_tree *t, uint64_t min_hits, struct profile **ret);

/* The same views of a tree index (upward: of the index of the inverted tree), as above; the
 * profile's tree is the index's header, and the index must outlive it. -EBADMSG for an index
 * that does not add up. */
int profile_down_index(const struct tree_index *x, const char *root, uint64_t min_hits, struct profile **ret);
int profile_up_index(const struct tree_index *inverted, const char *root, uint64_t min_hits,
                     struct profile **ret);
int profile_function_index(const struct tree_index *x, uint64_t min_hits, struct profile **ret);
int profile_body_index(const struct tree_index *x, uint64_t min_hits, struct profile **ret);

/* KIND's view of T (profile-compute.c), ROOT for down and up (ignored by the others): the one
 * mapping from a kind to its function above. Returns what that function returns, or -EINVAL
 * for a kind that is none. profile_compute_index() likewise of a tree index (upward: of the
 * inverted tree's). */
int profile_compute(struct sample_tree *t, enum profile_kind kind, const char *root, uint64_t min_hits,
                    struct profile **ret);
int profile_compute_index(const struct tree_index *x, enum profile_kind kind, const char *root,
                          uint64_t min_hits, struct profile **ret);
/* The downward or upward view of X, as profile_compute_index(), with WANTED's paths added whatever
 * their hits (callpath_summarize()). */
int profile_paths_index(const struct tree_index *x, enum profile_kind kind, const char *root,
                        uint64_t min_hits, const struct callpath_wanted *wanted, struct profile **ret);

/* A view that shows a few paths and counts the rest (the HTML report's, a table of several
 * resources) computes them all where its indexes hold at most this many nodes (a path per node
 * at most: tens of MiB), and above it only those at a threshold, counting the rest "at least".
 * CPPD_EXACT_NODES in the environment sets another (tests: 0). */
#define PROFILE_EXACT_NODES 500000
size_t profile_exact_nodes(void);

/* KIND's view of X holding at least its K heaviest entries, exactly (ties included), and the
 * others counted: every entry where X holds at most profile_exact_nodes() nodes, else those
 * above the highest of min_hits total/2^i that reaches K entries (n_omitted then exact unless
 * omitted_partial). Returns as profile_compute_index(). */
int profile_heaviest_index(const struct tree_index *x, enum profile_kind kind, const char *root, size_t k,
                           struct profile **ret);

/* Call paths asked for whatever their hits: a trie of names (an index's name ids, in the
 * index's order: root first downward, leaf first in an inverted index), keyed by
 * idmap_pair(prefix id, name), the empty path's id 0. Adding a path adds its prefixes.
 * callpath_wanted_add() returns 0 or -ENOMEM. */
struct callpath_wanted {
        struct idmap *paths;
        uint32_t n;
};
int callpath_wanted_add(struct callpath_wanted *w, const uint32_t *path, size_t len);
void callpath_wanted_done(struct callpath_wanted *w);

/* Runs the appendix's algorithm on T from the names marked in ROOTS (indexed by name id; one
 * name, or the call sites of one function) and adds one entry per canonical call path with at
 * least MIN_HITS hits to P, in T's order (root first) or REVERSEd, counting the others in
 * n_omitted (and setting omitted_partial where it left paths below MIN_HITS unseen). Every
 * path of WANTED (may be NULL) that has hits is added too, whatever their number, and is never
 * counted omitted. Used by the downward view on the sample tree's index and the upward view on
 * the inverted tree's. Returns 0, -ENOMEM, or -EBADMSG for an index that does not add up. */
int callpath_summarize(const struct tree_index *t, const bool *roots, uint64_t min_hits,
                       const struct callpath_wanted *wanted, bool reverse, struct profile *p);

/* Marks in *ret (indexed by name id, malloc()ed) the names ROOT stands for: the name itself if a
 * node has it, else every label "ROOT (...)" (the call sites of function ROOT with --by line).
 * Sets *ret_first to one of them. Returns how many, 0 if none, or -ENOMEM. */
int profile_roots(const struct sample_tree *t, const char *root, bool **ret, uint32_t *ret_first);
int profile_roots_index(const struct tree_index *x, const char *root, bool **ret, uint32_t *ret_first);

/* Sets *ret to a NULL-terminated list (strv_free()) of at most MAX names of the tree's (or the
 * index's) nodes that contain PART, in byte order: what to suggest for a root that appears in no
 * sample. Only names of nodes count, never the rest of the name table, so that a source that
 * interns more names than the selection uses suggests the same as one that does not. Returns how
 * many, or -ENOMEM. */
int profile_similar_roots(const struct sample_tree *t, const char *part, size_t max, char ***ret);
int profile_similar_roots_index(const struct tree_index *x, const char *part, size_t max, char ***ret);
