/* Fuzz target: a tree index file from the cache directory (client/source/index-cache.c), which a
 * damaged disk, a killed writer or another program may have left as anything. tree_index_open()
 * checks the checksum and the sizes; the views check each node they use. Each input is tried
 * twice: as it is (the checksum must refuse what it does not match), and sealed with its own
 * checksum, so that the mutations reach the checks behind it. Opened without a key (so that any
 * key the input holds is taken), then every view of it: each name as the root of a downward and
 * an upward profile at two thresholds, the function and body profiles, the walk of its stacks
 * (folded exports), its tree pruned at 1% (the tree's formats at a threshold), and the index
 * laid out from it with every stack it keeps reached (a filtered view, tree_index_select()). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "profile.h"
#include "tree-index.h"

static int count_stack(const struct tree_index *x, const uint32_t *path, size_t depth, uint64_t self,
                       void *userdata) {
        *(size_t *) userdata += depth;
        return 0;
}

/* The index of a filtered view laid out from X (tree_index_select()), every stack X keeps
 * reached, some with no hits, and its function profile. */
static void selected(const struct tree_index *x) {
        struct tree_index_hit *hits = malloc((x->n_stacks ? x->n_stacks : 1) * sizeof *hits);
        struct sample_tree *header = sample_tree_new(NULL);
        struct tree_index *y = NULL;
        struct profile *p = NULL;

        if (!hits || !header)
                abort();
        for (uint32_t i = 0; i < x->n_stacks; i++)
                hits[i] = (struct tree_index_hit) {
                        .down = x->stacks[i].down,
                        .down_end = x->stacks[i].down_end,
                        .node = x->stacks[i].node,
                        .hits = i % 3,
                };
        for (uint32_t i = 0; i < x->n_names; i++) {
                const char *name = name_table_get(x->header->names, i);

                if (name_table_intern(header->names, name, strlen(name)) < 0)
                        abort();
        }
        if (tree_index_select(x, header, hits, x->n_stacks, -1, &y) == 0) {
                if (profile_function_index(y, 0, &p) == 0)
                        p = profile_free(p);
                tree_index_free(y);
        }
        free(hits);
}

static void views(const uint8_t *data, size_t size) {
        struct tree_index *x = NULL;
        int fd = memfd_create("fuzz-tree-index", MFD_CLOEXEC);

        if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t) size))
                abort(); /* the harness cannot do its job: not a finding */
        if (tree_index_open(fd, NULL, &x) == 0) {
                struct profile *p = NULL;

                for (uint32_t name = 0; name < x->n_names && name < 64; name++) {
                        const char *root = name_table_get(x->header->names, name);

                        for (uint64_t min_hits = 0; min_hits < 2; min_hits++) {
                                if (profile_down_index(x, root, min_hits * (x->header->total / 10), &p) == 0)
                                        p = profile_free(p);
                                if (profile_up_index(x, root, min_hits * (x->header->total / 10), &p) == 0)
                                        p = profile_free(p);
                        }
                }
                if (profile_function_index(x, 0, &p) == 0)
                        p = profile_free(p);
                if (profile_body_index(x, 0, &p) == 0)
                        p = profile_free(p);
                {
                        struct sample_tree *t = NULL;
                        size_t frames = 0;

                        (void) tree_index_each_stack(x, count_stack, &frames);
                        if (tree_index_prune(x, 0.01, &t) == 0)
                                sample_tree_free(t);
                }
                selected(x);
                tree_index_free(x);
        }
        close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *sealed;

        views(data, size);
        if (size % 8 != 0)
                return 0; /* no checksum can make it whole */
        sealed = malloc(size ? size : 1);
        if (!sealed)
                abort();
        memcpy(sealed, data, size);
        tree_index_seal(sealed, size);
        views(sealed, size);
        free(sealed);
        return 0;
}
