/* The tree algorithms against a naive model on random input with heavy recursion.
 *
 * The model works sample by sample, with paths as strings: from the outermost occurrence of the
 * root, CP = parent + name, counted once per sample (the appendix's lock), and the parent for the
 * next frame is CP cut back to the deepest earlier occurrence of the name (Canonicalize-name).
 * Upward is the same on reversed stacks. Function: each distinct name once per sample; body:
 * the leaf. It is slow and obviously right; the tree versions must agree with it exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "name-table.h"
#include "profile.h"
#include "tap.h"

#define N_STACKS 1500
#define MAX_DEPTH 12
#define ALPHABET "abcdefghijklmnop"

struct sample {
        char names[MAX_DEPTH];
        int n;
        uint64_t hits;
};

static uint64_t rng_state;
static unsigned n_partial; /* profiles that left paths below their threshold unseen */

static uint32_t rng(uint32_t bound) {
        rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (uint32_t) (rng_state >> 33) % bound;
}

/* A map from path strings to hits: a name table gives the ids, an array the hits. */
struct model {
        struct name_table *paths;
        uint64_t hits[1 << 20];
};

static void model_add(struct model *m, const char *path, uint64_t hits) {
        int64_t id = name_table_intern(m->paths, path, strlen(path));

        if (id < 0 || id >= (int64_t) ELEMENTSOF(m->hits))
                abort();
        m->hits[id] += hits;
}

static void path_text(const char *names, int n, bool reverse, char *ret) {
        char *p = ret;

        for (int i = 0; i < n; i++) {
                if (i)
                        *p++ = ' ';
                *p++ = names[reverse ? n - 1 - i : i];
        }
        *p = '\0';
}

/* One sample's contribution to the downward profile from ROOT (NAMES read in order). */
static void model_down_sample(struct model *m, const char *names, int n, char root, uint64_t hits,
                              bool reverse) {
        char parent[MAX_DEPTH + 1], cp[MAX_DEPTH + 1], text[2 * MAX_DEPTH + 2];
        char seen[MAX_DEPTH][2 * MAX_DEPTH + 2];
        int np = 0, n_seen = 0, i;

        for (i = 0; i < n && names[i] != root; i++)
                ;
        for (; i < n; i++) {
                int ncp = np + 1, k;
                bool dup = false;

                memcpy(cp, parent, np);
                cp[np] = names[i];
                path_text(cp, ncp, reverse, text);
                for (int s = 0; s < n_seen; s++)
                        dup = dup || strcmp(seen[s], text) == 0;
                if (!dup) {
                        strcpy(seen[n_seen++], text);
                        model_add(m, text, hits);
                }
                for (k = np - 1; k >= 0 && parent[k] != names[i]; k--)
                        ;
                if (k >= 0)
                        np = k + 1; /* cut back to the earlier occurrence */
                else {
                        memcpy(parent, cp, ncp);
                        np = ncp;
                }
        }
}

/* The profile must hold exactly the model's paths with at least MIN_HITS hits, with the
 * model's hits, and count the others (all of them, unless it says some went unseen). */
static int compare(struct model *m, const struct profile *p, uint64_t min_hits, const char *what) {
        size_t n = name_table_size(m->paths), kept = 0, below = 0;
        int wrong = 0;

        for (size_t i = 0; i < n; i++) {
                const char *path = name_table_get(m->paths, i);
                int64_t got = profile_hits(p, path);

                if (m->hits[i] < min_hits) {
                        below++;
                        if (got >= 0 && wrong++ < 5)
                                printf("# %s: (%s) has %llu hits, below %llu, yet shown\n", what, path,
                                       (unsigned long long) m->hits[i], (unsigned long long) min_hits);
                        continue;
                }
                kept++;
                if (got != (int64_t) m->hits[i] && wrong++ < 5)
                        printf("# %s: (%s) model %llu, profile %lld\n", what, path,
                               (unsigned long long) m->hits[i], (long long) got);
        }
        if (kept != profile_n_paths(p)) {
                printf("# %s: model has %zu paths at or above %llu, profile %zu\n", what, kept,
                       (unsigned long long) min_hits, profile_n_paths(p));
                wrong++;
        }
        if (p->n_omitted > below || (!p->omitted_partial && p->n_omitted != below)) {
                printf("# %s: %zu paths below %llu, profile counts %zu%s\n", what, below,
                       (unsigned long long) min_hits, p->n_omitted, p->omitted_partial ? " at least" : "");
                wrong++;
        }
        return wrong;
}

/* As compare(), for a profile that was also asked for WANT[0..n) (model path ids) and so must
 * hold those paths and their prefixes in the index's order too (upward, REVERSE: the shown
 * path's suffixes), whatever their hits. */
static int compare_wanted(struct model *m, const struct profile *p, uint64_t min_hits, const uint32_t *want,
                          size_t n_want, bool reverse, const char *what) {
        size_t n = name_table_size(m->paths), kept = 0;
        int wrong = 0;

        for (size_t i = 0; i < n; i++) {
                const char *path = name_table_get(m->paths, i);
                int64_t got = profile_hits(p, path);
                bool asked = false;

                for (size_t k = 0; k < n_want && !asked; k++) {
                        const char *w = name_table_get(m->paths, want[k]);
                        size_t len = strlen(path), wlen = strlen(w);

                        if (reverse)
                                asked = wlen >= len && strcmp(w + wlen - len, path) == 0 &&
                                        (wlen == len || w[wlen - len - 1] == ' ');
                        else
                                asked = strncmp(w, path, len) == 0 && (w[len] == '\0' || w[len] == ' ');
                }
                if (m->hits[i] < min_hits && !asked) {
                        if (got >= 0 && wrong++ < 5)
                                printf("# %s: (%s) neither asked for nor above %llu, yet shown\n", what, path,
                                       (unsigned long long) min_hits);
                        continue;
                }
                kept++;
                if (got != (int64_t) m->hits[i] && wrong++ < 5)
                        printf("# %s: (%s)%s model %llu, profile %lld\n", what, path,
                               asked ? " asked for:" : "", (unsigned long long) m->hits[i], (long long) got);
        }
        if (kept != profile_n_paths(p)) {
                printf("# %s: model has %zu paths asked for or above %llu, profile %zu\n", what, kept,
                       (unsigned long long) min_hits, profile_n_paths(p));
                wrong++;
        }
        return wrong;
}

/* Asks for N_WANT of the model's paths at random (any hits) through WANTED, in T's name ids and
 * in the index's order (REVERSE: the model's path read backwards). */
static void want_random(struct model *m, const struct sample_tree *t, bool reverse, uint32_t *want,
                        size_t n_want, struct callpath_wanted *wanted) {
        for (size_t k = 0; k < n_want; k++) {
                const char *text = name_table_get(m->paths, want[k] = rng(name_table_size(m->paths)));
                uint32_t ids[MAX_DEPTH];
                size_t len = (strlen(text) + 1) / 2;

                for (size_t j = 0; j < len; j++) {
                        char name[2] = { text[2 * j], '\0' };

                        ids[reverse ? len - 1 - j : j] = name_table_find(t->names, name);
                }
                if (callpath_wanted_add(wanted, ids, len) < 0)
                        abort();
        }
}

/* The downward (or upward: INVERTED) view of T from ROOT at MIN_HITS with random paths asked
 * for, against the model. */
static void check_wanted(struct model *m, const struct sample_tree *t, const struct tree_index *x,
                         enum profile_kind kind, const char *root, uint64_t min_hits) {
        _cleanup_(profile_freep) struct profile *p = NULL;
        struct callpath_wanted wanted = {};
        uint32_t want[12];
        int r;

        want_random(m, t, kind == PROFILE_UP, want, ELEMENTSOF(want), &wanted);
        r = profile_paths_index(x, kind, root, min_hits, &wanted, &p);
        ok(r == 0 &&
                   compare_wanted(m, p, min_hits, want, ELEMENTSOF(want), kind == PROFILE_UP, "wanted") == 0,
           "%s %s at %llu hits, %zu paths asked for: those and the paths above match the model",
           kind == PROFILE_UP ? "up to" : "down from", root, (unsigned long long) min_hits, ELEMENTSOF(want));
        callpath_wanted_done(&wanted);
}

static void model_reset(struct model *m) {
        name_table_free(m->paths);
        m->paths = name_table_new();
        memset(m->hits, 0, sizeof m->hits);
}

/* Random stacks over the first N_LETTERS of the alphabet (few: deep recursion everywhere; many:
 * fresh subtrees, which the threshold lets the algorithm leave for later), checked with every
 * root at thresholds 0 (every path), 0.5% and 3% of the hits. */
static void run(uint64_t seed, int n_letters) {
        static struct sample samples[N_STACKS];
        static struct model m;
        _cleanup_(sample_tree_freep) struct sample_tree *t = sample_tree_new(NULL), *inverted = NULL;
        _cleanup_(tree_index_freep) struct tree_index *x = NULL, *inverted_x = NULL;
        uint32_t ids[MAX_DEPTH];
        int wrong;

        rng_state = seed;
        for (int i = 0; i < N_STACKS; i++) {
                struct sample *s = &samples[i];

                s->n = 1 + rng(MAX_DEPTH);
                s->hits = 1 + rng(5);
                for (int j = 0; j < s->n; j++) {
                        s->names[j] = ALPHABET[rng(n_letters)];
                        ids[j] = name_table_intern(t->names, &s->names[j], 1);
                }
                sample_tree_add(t, ids, s->n, s->hits);
        }

        sample_tree_weigh(t);
        if (tree_index_build(t, &x) < 0 || sample_tree_invert(t, &inverted) < 0 ||
            tree_index_build(inverted, &inverted_x) < 0)
                abort();
        for (const char *r = ALPHABET; r < ALPHABET + n_letters; r++) {
                char root[2] = { *r, '\0' }, reversed[MAX_DEPTH];

                model_reset(&m);
                for (int i = 0; i < N_STACKS; i++)
                        model_down_sample(&m, samples[i].names, samples[i].n, *r, samples[i].hits, false);
                for (int k = 0; k < 3; k++) {
                        _cleanup_(profile_freep) struct profile *down = NULL;
                        uint64_t min_hits = profile_min_hits(t->total, (double[]) { 0, 0.005, 0.03 }[k]);

                        ok(profile_down(t, root, min_hits, &down) == 0,
                           "seed %llu, %d names: downward from %s "
                           "computed (at least %llu hits)",
                           (unsigned long long) seed, n_letters, root, (unsigned long long) min_hits);
                        wrong = compare(&m, down, min_hits, "down");
                        n_partial += down->omitted_partial;
                        ok(wrong == 0, "seed %llu: downward from %s matches the model on %zu paths",
                           (unsigned long long) seed, root, name_table_size(m.paths));
                }
                check_wanted(&m, t, x, PROFILE_DOWN, root, profile_min_hits(t->total, 0.03));

                model_reset(&m);
                for (int i = 0; i < N_STACKS; i++) {
                        for (int j = 0; j < samples[i].n; j++)
                                reversed[j] = samples[i].names[samples[i].n - 1 - j];
                        model_down_sample(&m, reversed, samples[i].n, *r, samples[i].hits, true);
                }
                for (int k = 0; k < 3; k++) {
                        _cleanup_(profile_freep) struct profile *up = NULL;
                        uint64_t min_hits = profile_min_hits(t->total, (double[]) { 0, 0.005, 0.03 }[k]);

                        ok(profile_up(t, root, min_hits, &up) == 0,
                           "seed %llu, %d names: upward to %s computed "
                           "(at least %llu hits)",
                           (unsigned long long) seed, n_letters, root, (unsigned long long) min_hits);
                        wrong = compare(&m, up, min_hits, "up");
                        n_partial += up->omitted_partial;
                        ok(wrong == 0, "seed %llu: upward to %s matches the model on %zu paths",
                           (unsigned long long) seed, root, name_table_size(m.paths));
                }
                check_wanted(&m, t, inverted_x, PROFILE_UP, root, profile_min_hits(t->total, 0.03));
        }

        {
                _cleanup_(profile_freep) struct profile *fn = NULL, *body = NULL;
                char name[2] = "";

                model_reset(&m);
                for (int i = 0; i < N_STACKS; i++)
                        for (const char *r = ALPHABET; r < ALPHABET + n_letters; r++)
                                if (memchr(samples[i].names, *r, samples[i].n)) {
                                        name[0] = *r;
                                        model_add(&m, name, samples[i].hits);
                                }
                ok(profile_function(t, 0, &fn) == 0 && compare(&m, fn, 0, "function") == 0,
                   "seed %llu: function profile matches the model", (unsigned long long) seed);

                model_reset(&m);
                for (int i = 0; i < N_STACKS; i++) {
                        name[0] = samples[i].names[samples[i].n - 1];
                        model_add(&m, name, samples[i].hits);
                }
                ok(profile_body(t, 0, &body) == 0 && compare(&m, body, 0, "body") == 0,
                   "seed %llu: body profile matches the model", (unsigned long long) seed);
        }
        name_table_free(m.paths);
        m.paths = NULL;
}

int main(void) {
        run(1, 5);
        run(42, 5);
        run(20261122, 5);
        run(7, 16);
        run(20261123, 16);
        /* Else the threshold's shortcut (callpath.c) went untested. */
        ok(n_partial > 0, "%u profiles left light subtrees unwalked, and still match the model", n_partial);
        return tap_done();
}
