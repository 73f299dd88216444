/* The profile container shared by every view: entries point into one array of name ids, so a
 * profile of a million paths is two allocations, and sorting moves 16-byte entries only. */
#include "profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "strv.h"

struct profile *profile_new(enum profile_kind kind, const struct sample_tree *t, uint32_t root) {
        struct profile *p = calloc(1, sizeof *p);

        if (!p)
                return NULL;
        p->kind = kind;
        p->tree = t;
        p->root = root;
        p->total = t->total;
        return p;
}

struct profile *profile_free(struct profile *p) {
        if (!p)
                return NULL;
        free(p->entries);
        free(p->names);
        free(p);
        return NULL;
}

int profile_add(struct profile *p, const uint32_t *path, size_t len, uint64_t hits) {
        if (hits < p->min_hits) {
                p->n_omitted++;
                return 0;
        }
        return profile_add_always(p, path, len, hits);
}

int profile_add_always(struct profile *p, const uint32_t *path, size_t len, uint64_t hits) {
        if (p->n_names + len > UINT32_MAX)
                return -E2BIG;
        if (GROW(p->entries, p->cap_entries, p->n_entries + 1) < 0 ||
            GROW(p->names, p->cap_names, p->n_names + len) < 0)
                return -ENOMEM;
        memcpy(p->names + p->n_names, path, len * sizeof *path);
        p->entries[p->n_entries++] = (struct profile_entry) {
                .hits = hits,
                .path = p->n_names,
                .len = len,
        };
        p->n_names += len;
        return 0;
}

uint64_t profile_min_hits(uint64_t total, double threshold) {
        uint64_t h;

        if (threshold <= 0.0 || total == 0)
                return 0;
        /* Start from the product and settle on the exact boundary of the comparison that the
         * renderers make, hits / total >= threshold, in the same floating point. */
        h = (uint64_t) (threshold * (double) total);
        while (h > 0 && (double) (h - 1) / (double) total >= threshold)
                h--;
        while ((double) h / (double) total < threshold)
                h++;
        return h;
}

/* qsort() has no context argument in C11; one sort runs at a time per thread. */
static _Thread_local const struct profile *sorting;

static int entry_cmp(const void *a, const void *b) {
        const struct profile_entry *x = a, *y = b;
        const uint32_t *px = profile_path(sorting, x), *py = profile_path(sorting, y);

        if (x->hits != y->hits)
                return x->hits > y->hits ? -1 : 1;
        for (uint32_t i = 0; i < x->len && i < y->len; i++) {
                int c;

                if (px[i] == py[i])
                        continue;
                c = strcmp(sample_tree_name(sorting->tree, px[i]), sample_tree_name(sorting->tree, py[i]));
                if (c != 0)
                        return c;
        }
        return x->len < y->len ? -1 : x->len > y->len;
}

void profile_sort(struct profile *p) {
        if (p->n_entries == 0)
                return; /* qsort() wants a pointer even for nothing */
        sorting = p;
        qsort(p->entries, p->n_entries, sizeof *p->entries, entry_cmp);
        sorting = NULL;
}

int64_t profile_hits(const struct profile *p, const char *path) {
        for (size_t i = 0; i < p->n_entries; i++) {
                const struct profile_entry *e = &p->entries[i];
                const uint32_t *names = profile_path(p, e);
                const char *s = path;
                uint32_t j;

                for (j = 0; j < e->len; j++) {
                        const char *name = sample_tree_name(p->tree, names[j]);
                        size_t n = strlen(name);

                        if (strncmp(s, name, n) != 0 || (s[n] != ' ' && s[n] != '\0'))
                                break;
                        s += n;
                        if (*s == ' ')
                                s++;
                        else if (j + 1 < e->len)
                                break;
                }
                if (j == e->len && *s == '\0')
                        return (int64_t) e->hits;
        }
        return -1;
}

/* The names of NAMES below N_NAMES that PRESENT marks (a node has them) and ROOT stands for. */
static int roots_of(const struct name_table *names, size_t n_names, const bool *present, const char *root,
                    bool **ret, uint32_t *ret_first) {
        size_t len = strlen(root);
        _cleanup_free_ bool *roots = calloc(n_names + 1, sizeof *roots);
        uint32_t exact = name_table_find(names, root), first = NAME_NONE;
        int n = 0;

        if (!roots)
                return -ENOMEM;
        if (exact != NAME_NONE && exact < n_names && present[exact]) {
                roots[exact] = true;
                n = 1;
                first = exact;
        } else
                for (uint32_t name = 0; name < n_names; name++) {
                        const char *label = name_table_get(names, name);

                        if (present[name] && strncmp(label, root, len) == 0 && label[len] == ' ' &&
                            label[len + 1] == '(') {
                                roots[name] = true;
                                first = first == NAME_NONE ? name : first;
                                n++;
                        }
                }
        *ret = take_ptr(&roots);
        *ret_first = first;
        return n;
}

/* The names that T's nodes carry, as flags by name id (n_names + 1 of them), or NULL. */
static bool *tree_names_present(const struct sample_tree *t) {
        bool *present = calloc(name_table_size(t->names) + 1, sizeof *present);

        if (present)
                for (size_t i = 1; i < t->n_nodes; i++)
                        present[t->nodes[i].name] = true;
        return present;
}

/* The names that X has occurrences of, likewise. */
static bool *index_names_present(const struct tree_index *x) {
        bool *present = calloc(x->n_names + 1, sizeof *present);

        if (present)
                for (uint32_t name = 0; name < x->n_names; name++)
                        present[name] = x->occ_start[name + 1] > x->occ_start[name];
        return present;
}

int profile_roots(const struct sample_tree *t, const char *root, bool **ret, uint32_t *ret_first) {
        _cleanup_free_ bool *present = tree_names_present(t);

        if (!present)
                return -ENOMEM;
        return roots_of(t->names, name_table_size(t->names), present, root, ret, ret_first);
}

int profile_roots_index(const struct tree_index *x, const char *root, bool **ret, uint32_t *ret_first) {
        _cleanup_free_ bool *present = index_names_present(x);

        if (!present)
                return -ENOMEM;
        return roots_of(x->header->names, x->n_names, present, root, ret, ret_first);
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int similar_of(const struct name_table *names, size_t n_names, const bool *present, const char *part,
                      size_t max, char ***ret) {
        _cleanup_free_ const char **found = calloc(n_names + 1, sizeof *found);
        _cleanup_(strv_freep) char **v = NULL;
        size_t n = 0;
        int r;

        if (!found)
                return -ENOMEM;
        for (size_t i = 0; i < n_names; i++)
                if (present[i] && strstr(name_table_get(names, (uint32_t) i), part))
                        found[n++] = name_table_get(names, (uint32_t) i);
        qsort(found, n, sizeof *found, strcmp_ptr);
        for (size_t i = 0; i < n && i < max; i++) {
                r = strv_extend(&v, found[i]);
                if (r < 0)
                        return r;
        }
        *ret = take_ptr(&v);
        return (int) (n < max ? n : max);
}

int profile_similar_roots(const struct sample_tree *t, const char *part, size_t max, char ***ret) {
        _cleanup_free_ bool *present = tree_names_present(t);

        if (!present)
                return -ENOMEM;
        return similar_of(t->names, name_table_size(t->names), present, part, max, ret);
}

int profile_similar_roots_index(const struct tree_index *x, const char *part, size_t max, char ***ret) {
        _cleanup_free_ bool *present = index_names_present(x);

        if (!present)
                return -ENOMEM;
        return similar_of(x->header->names, x->n_names, present, part, max, ret);
}

#define Z95 1.959963984540054

void profile_interval(uint64_t hits, uint64_t total, double *ret_lo, double *ret_hi) {
        double n = (double) total, p, centre, half;

        if (total == 0) {
                *ret_lo = 0.0;
                *ret_hi = 1.0;
                return;
        }
        p = (double) hits / n;
        centre = (p + Z95 * Z95 / (2 * n)) / (1 + Z95 * Z95 / n);
        half = Z95 * sqrt(p * (1 - p) / n + Z95 * Z95 / (4 * n * n)) / (1 + Z95 * Z95 / n);
        *ret_lo = fmax(0.0, centre - half);
        *ret_hi = fmin(1.0, centre + half);
}

double profile_tree_error(const struct sample_tree *t, uint64_t hits, uint64_t total) {
        double e = profile_hits_error(hits, total);
        double w = profile_tree_weight(t);

        return w > 1 ? e * sqrt(w) : e;
}

double profile_tree_weight(const struct sample_tree *t) {
        /* Samples of unequal weights w: the variance of a sum of hits grows with the sum of w²,
         * so the bars widen by the square root of sum(w²) / sum(w), which for equal weights is
         * hits / samples. */
        if (t && t->total > 0 && t->info.hits_squared > 0)
                return t->info.hits_squared / (double) t->total;
        if (t && t->info.samples > 0 && t->info.samples < t->total)
                return (double) t->total / (double) t->info.samples;
        return 1;
}

double profile_hits_error(uint64_t hits, uint64_t total) {
        double p;

        if (total == 0)
                return 0.0;
        p = (double) hits / (double) total;
        return Z95 * sqrt((double) total * p * (1 - p));
}
