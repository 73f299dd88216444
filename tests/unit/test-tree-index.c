/* Tree indexes: the layout worked by hand on a small tree (preorder, sizes, freshness, names'
 * node lists, function and body hits), the file round trip (every view of a written and mapped
 * index equals the view of the tree it came from), files that must be refused (another key, a
 * truncated or altered one), and the inverted tree's index made from the downward index
 * (tree_index_invert()) against the one built from sample_tree_invert(): the same nodes, hits
 * and freshness by name, and every upward view of every root the same, on small trees and on
 * thousands of random stacks with recursion; and an index laid out in a file against the same in
 * memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "profile.h"
#include "tap.h"
#include "tree-index.h"

static const struct tree_index_key key = {
        .store_id = "0123456789abcdef0123456789abcdef",
        .dev = 1,
        .ino = 2,
        .generation = 3,
        .resource_id = 4,
        .token = "00112233aabbccdd",
};

/* The node at the end of "a;b;c" below the root, by names, or UINT32_MAX. */
static uint32_t find(const struct tree_index *x, const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        char *save = NULL;
        uint32_t node = 0;

        for (char *w = strtok_r(copy, ";", &save); w; w = strtok_r(NULL, ";", &save)) {
                uint32_t c = node + 1, end = node + tree_index_size(x, node), found = UINT32_MAX;

                for (; c < end; c += tree_index_size(x, c))
                        if (streq(name_table_get(x->header->names, x->nodes[c].name), w))
                                found = c;
                if (found == UINT32_MAX)
                        return UINT32_MAX;
                node = found;
        }
        return node;
}

static void test_layout(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;f;g;f;h 2\n"
                                                                              "main;f;k 3\n"
                                                                              "main;x;y 4\n"
                                                                              "main;x 1\n");
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        uint32_t f = NAME_NONE, n;

        if (tree_index_build(t, &x) < 0)
                abort();
        ok(x->n == t->n_nodes && x->max_depth == 5, "built: %u nodes, %u deep", x->n, x->max_depth);
        ok(tree_index_size(x, 0) == x->n && x->nodes[0].weight == 10,
           "the root's subtree is everything, 10 hits");
        n = find(x, "main;f");
        ok(n != UINT32_MAX && tree_index_size(x, n) == 5 && x->nodes[n].weight == 5,
           "(main f): 5 nodes, 5 hits");
        ok(tree_index_fresh(x, n), "(main f) is fresh: f recurs below it, but comes back to it, not above");
        n = find(x, "main;f;g");
        ok(n != UINT32_MAX && !tree_index_fresh(x, n),
           "(main f g) is not fresh: f, an ancestor, recurs in it");
        n = find(x, "main;f;g;f;h");
        ok(n != UINT32_MAX && tree_index_fresh(x, n), "(main f g f h) is fresh: a leaf no ancestor names");
        n = find(x, "main;x");
        ok(n != UINT32_MAX && tree_index_fresh(x, n) && tree_index_fresh(x, find(x, "main;x;y")),
           "(main x) and (main x y) are fresh");
        f = name_table_find(t->names, "f");
        ok(x->occ_start[f + 1] - x->occ_start[f] == 2 &&
                   x->occ[x->occ_start[f]] < x->occ[x->occ_start[f] + 1],
           "f labels two nodes, listed in preorder");
        ok(x->function_hits[f] == 5 && x->body_hits[f] == 0, "f: 5 hits once per sample, none in its body");
        ok(x->function_hits[name_table_find(t->names, "x")] == 5 &&
                   x->body_hits[name_table_find(t->names, "x")] == 1,
           "x: 5 hits, 1 in its body");
}

/* The text of every view of X (upward ones of INV) and of the tree T, compared. */
static bool same_views(struct sample_tree *t, const struct tree_index *x, const struct tree_index *inv,
                       double threshold) {
        for (uint32_t name = 0; name < x->n_names; name++) {
                const char *root = name_table_get(x->header->names, name);
                uint64_t min_hits = profile_min_hits(t->total, threshold);
                _cleanup_(profile_freep) struct profile *a = NULL, *b = NULL, *c = NULL, *d = NULL;

                if (profile_down(t, root, min_hits, &a) != 0 ||
                    profile_down_index(x, root, min_hits, &b) != 0 ||
                    profile_up(t, root, min_hits, &c) != 0 || profile_up_index(inv, root, min_hits, &d) != 0)
                        return false;
                if (profile_n_paths(a) != profile_n_paths(b) || profile_n_paths(c) != profile_n_paths(d))
                        return false;
                for (size_t i = 0; i < profile_n_paths(a); i++)
                        if (a->entries[i].hits != b->entries[i].hits ||
                            a->entries[i].len != b->entries[i].len ||
                            memcmp(profile_path(a, &a->entries[i]), profile_path(b, &b->entries[i]),
                                   a->entries[i].len * sizeof(uint32_t)) != 0)
                                return false;
                for (size_t i = 0; i < profile_n_paths(c); i++)
                        if (c->entries[i].hits != d->entries[i].hits ||
                            c->entries[i].len != d->entries[i].len)
                                return false;
        }
        {
                _cleanup_(profile_freep) struct profile *a = NULL, *b = NULL, *c = NULL, *d = NULL;

                if (profile_function(t, 0, &a) != 0 || profile_function_index(x, 0, &b) != 0 ||
                    profile_body(t, 0, &c) != 0 || profile_body_index(x, 0, &d) != 0 ||
                    profile_n_paths(a) != profile_n_paths(b) || profile_n_paths(c) != profile_n_paths(d))
                        return false;
                for (size_t i = 0; i < profile_n_paths(a); i++)
                        if (a->entries[i].hits != b->entries[i].hits)
                                return false;
        }
        return true;
}

/* Writes X under K to a new file; returns its fd (open for reading), or -1. */
static int written(const struct tree_index *x, const struct tree_index_key *k) {
        char path[] = "/tmp/test-tree-index-XXXXXX";
        int fd = mkstemp(path);

        unlink(path);
        if (fd < 0 || tree_index_write(x, k, fd) < 0)
                return -1;
        return fd;
}

static void test_file(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(forms_folded), *inv = NULL;
        _cleanup_(tree_index_freep) struct tree_index *built = NULL, *built_inv = NULL, *x = NULL, *y = NULL;
        struct tree_index_key up = key, other = key;
        struct stat st;
        int fd, fd_inv;

        up.inverted = true;
        ok(sample_tree_set_resource(t, "cpu-time", "1 ms of CPU time") == 0 &&
                   tree_index_build(t, &built) == 0 && sample_tree_invert(t, &inv) == 0 &&
                   tree_index_build(inv, &built_inv) == 0,
           "forms: the tree and its inverse");
        fd = written(built, &key);
        fd_inv = written(built_inv, &up);
        ok(fd >= 0 && fd_inv >= 0, "written");
        ok(tree_index_open(fd, &key, &x) == 0 && tree_index_open(fd_inv, &up, &y) == 0, "mapped back");
        ok(x && y && x->n == built->n && x->header->total == t->total &&
                   streq(x->header->info.resource, "cpu-time") &&
                   streq(x->header->info.unit, "1 ms of CPU time"),
           "with its header: %u nodes, %llu hits, %s", x ? x->n : 0,
           x ? (unsigned long long) x->header->total : 0ULL, x ? x->header->info.resource : "");
        ok(x && y && same_views(t, x, y, 0) && same_views(t, x, y, 0.1),
           "every view, of every root, at thresholds 0 "
           "and 10%%, as the tree's own");

        other.generation++;
        ok(tree_index_open(fd, &other, &y) == -ESTALE, "another generation of the store: -ESTALE");
        other = key;
        other.ino++;
        ok(tree_index_open(fd, &other, &y) == -ESTALE, "a copy of the store (another inode): -ESTALE");
        ok(tree_index_open(fd, &up, &y) == -ESTALE,
           "the downward index asked for as the upward one: -ESTALE");
        other = key;
        other.token[0] = other.token[0] == 'a' ? 'b' : 'a';
        ok(tree_index_open(fd, &other, &y) == -ESTALE,
           "a copy of the store with alike changes (another token): "
           "-ESTALE");
        {
                char c;

                /* A flipped bit in a name (past the 216-byte header), then in a weight: the
                 * checksum sees both. */
                ok(fstat(fd, &st) == 0 && pread(fd, &c, 1, 240) == 1 &&
                           (c ^= 1, pwrite(fd, &c, 1, 240)) == 1 && tree_index_open(fd, &key, &y) == -EBADMSG,
                   "a flipped bit in the strings: -EBADMSG");
                c ^= 1;
                y = tree_index_free(y); /* the upward index, mapped above */
                ok(pwrite(fd, &c, 1, 240) == 1 && tree_index_open(fd, &key, &y) == 0,
                   "flipped back: good again");
                y = tree_index_free(y);
                ok(pread(fd, &c, 1, st.st_size - 20) == 1 &&
                           (c ^= 0x10, pwrite(fd, &c, 1, st.st_size - 20)) == 1 &&
                           tree_index_open(fd, &key, &y) == -EBADMSG,
                   "a flipped bit in the arrays: -EBADMSG");
        }

        ok(fstat(fd, &st) == 0 && ftruncate(fd, st.st_size - 8) == 0 &&
                   tree_index_open(fd, &key, &y) == -EBADMSG,
           "truncated: -EBADMSG");
        ok(pwrite(fd, "XXXX", 4, 0) == 4 && tree_index_open(fd, &key, &y) == -EBADMSG,
           "another magic: -EBADMSG");
        close(fd);
        close(fd_inv);
}

/* A shrunk tree (no map of children) takes more stacks as if it had never been shrunk. */
static void test_shrink(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *a = tree_from_folded(forms_folded);
        _cleanup_(sample_tree_freep) struct sample_tree *b = tree_from_folded(forms_folded);
        uint32_t names[3];
        int64_t na, nb = 0;
        size_t n_before = a->n_nodes;

        sample_tree_shrink(b);
        ok(!b->children && b->n_nodes == n_before, "shrunk: no map of children, the same nodes");
        names[0] = name_table_intern(a->names, "main", 4);
        names[1] = name_table_intern(a->names, "db_read_record", 14);
        names[2] = name_table_intern(a->names, "new_leaf", 8);
        na = sample_tree_add(a, names, 3, 5);
        for (size_t i = 0; i < 3; i++)
                names[i] = name_table_intern(b->names, sample_tree_name(a, names[i]),
                                             strlen(sample_tree_name(a, names[i])));
        nb = sample_tree_add(b, names, 3, 5);
        ok(na > 0 && na == nb && a->n_nodes == b->n_nodes, "then a stack lands on the same node (%lld)",
           (long long) nb);
        nb = sample_tree_add(b, names, 2, 1);
        na = sample_tree_add(a,
                             (uint32_t[]) { name_table_find(a->names, "main"),
                                            name_table_find(a->names, "db_read_record") },
                             2, 1);
        ok(na == nb && a->n_nodes == b->n_nodes, "and an old path is found, not made again");
}

/* A random tree of N stacks over 60 names, with recursion (a name may repeat down a stack) and
 * leaves without hits, by a fixed generator. */
static struct sample_tree *random_tree(size_t n, uint64_t seed) {
        struct sample_tree *t = sample_tree_new(NULL);
        uint32_t ids[60], path[40];
        char name[16];

        if (!t)
                abort();
        for (int i = 0; i < 60; i++) {
                snprintf(name, sizeof name, "fn_%d", i);
                ids[i] = name_table_intern(t->names, name, strlen(name));
        }
        for (size_t k = 0; k < n; k++) {
                size_t depth;

                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                depth = 1 + (seed >> 33) % 30;
                path[0] = ids[0];
                for (size_t d = 1; d < depth; d++) {
                        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                        /* near the root few names, deeper many: shared prefixes, and repeats */
                        path[d] = ids[(seed >> 33) % (d < 3 ? 4 : 60)];
                }
                if (sample_tree_add(t, path, depth, (seed >> 40) % 7 == 0 ? 0 : 1 + (seed >> 45) % 50) < 0)
                        abort();
        }
        sample_tree_weigh(t);
        return t;
}

/* Per name: its nodes, those fresh, those leaves, and the hits of each. */
static bool same_by_name(const struct tree_index *a, const struct tree_index *b) {
        if (a->n != b->n || a->n_names != b->n_names || a->max_depth != b->max_depth ||
            a->nodes[0].weight != b->nodes[0].weight)
                return false;
        for (uint32_t name = 0; name < a->n_names; name++) {
                uint64_t fa = 0, fb = 0, la = 0, lb = 0, wa = 0, wb = 0;

                if (a->function_hits[name] != b->function_hits[name] ||
                    a->body_hits[name] != b->body_hits[name] ||
                    a->occ_start[name + 1] != b->occ_start[name + 1])
                        return false;
                for (uint32_t i = a->occ_start[name]; i < a->occ_start[name + 1]; i++) {
                        uint32_t na = a->occ[i] & ~TREE_INDEX_LEAF, nb = b->occ[i] & ~TREE_INDEX_LEAF;

                        fa += tree_index_fresh(a, na);
                        fb += tree_index_fresh(b, nb);
                        la += (a->occ[i] & TREE_INDEX_LEAF) != 0;
                        lb += (b->occ[i] & TREE_INDEX_LEAF) != 0;
                        wa += a->nodes[na].weight;
                        wb += b->nodes[nb].weight;
                }
                if (fa != fb || la != lb || wa != wb)
                        return false;
        }
        return true;
}

/* Every upward view of every root of A and B at THRESHOLD: the same paths, by name ids (the
 * same in both), the same hits, the same omissions. */
static bool same_up_views(const struct tree_index *a, const struct tree_index *b, double threshold) {
        for (uint32_t name = 0; name < a->n_names; name++) {
                const char *root = name_table_get(a->header->names, name);
                uint64_t min_hits = profile_min_hits(a->header->total, threshold);
                _cleanup_(profile_freep) struct profile *p = NULL, *q = NULL;
                int ra = profile_up_index(a, root, min_hits, &p),
                    rb = profile_up_index(b, root, min_hits, &q);

                if (ra != rb)
                        return false;
                if (ra < 0)
                        continue;
                if (profile_n_paths(p) != profile_n_paths(q) || p->n_omitted != q->n_omitted ||
                    p->omitted_partial != q->omitted_partial)
                        return false;
                for (size_t i = 0; i < profile_n_paths(p); i++)
                        if (p->entries[i].hits != q->entries[i].hits ||
                            p->entries[i].len != q->entries[i].len ||
                            memcmp(profile_path(p, &p->entries[i]), profile_path(q, &q->entries[i]),
                                   p->entries[i].len * sizeof(uint32_t)) != 0)
                                return false;
        }
        return true;
}

static void check_invert(struct sample_tree *t, const char *what) {
        _cleanup_(sample_tree_freep) struct sample_tree *inv = NULL;
        _cleanup_(tree_index_freep) struct tree_index *down = NULL, *old = NULL, *made = NULL, *mapped = NULL;
        struct tree_index_key up = key;
        int fd;

        up.inverted = true;
        if (sample_tree_set_resource(t, "cpu-time", "1 ms of CPU time") < 0 ||
            tree_index_build(t, &down) < 0 || sample_tree_invert(t, &inv) < 0 ||
            tree_index_build(inv, &old) < 0)
                abort();
        ok(tree_index_invert(take_ptr(&down), -1, &made) == 0, "%s: inverted from the downward index", what);
        if (!made)
                return;
        ok(same_by_name(old, made), "%s: %u nodes as sample_tree_invert()'s %u, alike by name", what, made->n,
           old->n);
        ok(made->header->total == old->header->total &&
                   made->header->info.samples == old->header->info.samples &&
                   streq(made->header->info.resource, "cpu-time"),
           "%s: the same header", what);
        ok(same_up_views(old, made, 0) && same_up_views(old, made, 0.001) && same_up_views(old, made, 0.02) &&
                   same_up_views(old, made, 0.1),
           "%s: every upward view of every root, at thresholds 0, 0.1%%, 2%% and 10%%, the same", what);
        fd = written(made, &up);
        ok(fd >= 0 && tree_index_open(fd, &up, &mapped) == 0 && same_up_views(old, mapped, 0.01),
           "%s: written and mapped back, the same", what);
        if (fd >= 0)
                close(fd);
}

static void test_invert(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *forms = tree_from_folded(forms_folded);
        _cleanup_(sample_tree_freep) struct sample_tree *small = tree_from_folded("main;f;g;f;h 2\n"
                                                                                  "main;f;k 3\n"
                                                                                  "main;x;y 4\n"
                                                                                  "main;x 1\n");
        _cleanup_(sample_tree_freep) struct sample_tree *big = random_tree(5000, 1);
        _cleanup_(sample_tree_freep) struct sample_tree *root_only = sample_tree_new(NULL);

        check_invert(forms, "forms");
        check_invert(small, "a small tree");
        check_invert(big, "5,000 random stacks");
        {
                _cleanup_(tree_index_freep) struct tree_index *down = NULL, *made = NULL;

                ok(root_only && tree_index_build(root_only, &down) == 0 &&
                           tree_index_invert(take_ptr(&down), -1, &made) == 0 && made->n == 1,
                   "no samples: the root alone");
        }
}

/* The same index laid out in memory and in a file (tree_index_new_in()), which lets go of its
 * pages as it lays them out: byte for byte the same arrays, over enough stacks and nodes that
 * pages are let go of and come back many times. */
static void test_in_file(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = random_tree(20000, 7);
        _cleanup_(tree_index_freep) struct tree_index *down = NULL, *down2 = NULL, *a = NULL, *b = NULL;
        char path[] = "/tmp/test-tree-index-XXXXXX";
        int fd = mkstemp(path);
        static const char before[5000] = { 'x' };
        size_t by_name;

        /* what the file holds already stays: the index goes past it */
        if (fd < 0 || write(fd, before, sizeof before) != (ssize_t) sizeof before)
                abort();
        unlink(path);
        if (tree_index_build(t, &down) < 0 || tree_index_build(t, &down2) < 0)
                abort();
        ok(tree_index_invert(take_ptr(&down), -1, &a) == 0 &&
                   tree_index_invert(take_ptr(&down2), fd, &b) == 0,
           "inverted into memory and into a file");
        if (!a || !b) {
                close(fd);
                return;
        }
        by_name = a->n_names * sizeof(uint64_t);
        ok(b->map && !b->memory && a->n > 100000 && a->n == b->n && a->n_names == b->n_names &&
                   a->max_depth == b->max_depth,
           "in the file: %u nodes, as in memory", b->n);
        ok(memcmp(a->nodes, b->nodes, a->n * sizeof *a->nodes) == 0 &&
                   memcmp(a->occ, b->occ, (a->n - 1) * sizeof *a->occ) == 0 &&
                   memcmp(a->occ_start, b->occ_start, (a->n_names + 1) * sizeof *a->occ_start) == 0 &&
                   memcmp(a->function_hits, b->function_hits, by_name) == 0 &&
                   memcmp(a->body_hits, b->body_hits, by_name) == 0,
           "nodes, node lists and hits by name byte for byte the same");
        /* What tree_index_trim() does to an index past TREE_INDEX_TRIM_MIN. */
        (void) madvise(b->map, b->map_size, MADV_DONTNEED);
        ok(same_up_views(a, b, 0.001), "every upward view the same, read back after its pages went");
        {
                char head[sizeof before];

                ok(pread(fd, head, sizeof head, 0) == (ssize_t) sizeof head &&
                           memcmp(head, before, sizeof head) == 0,
                   "and what the file held before is as it was");
        }
        close(fd);
}

int main(void) {
        test_layout();
        test_file();
        test_shrink();
        test_invert();
        test_in_file();
        return tap_done();
}
