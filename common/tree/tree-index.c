/* Tree indexes: building one from a sample tree, and the file that keeps it.
 *
 * Building is one depth-first walk that numbers the nodes in preorder and, on the way, keeps per
 * name the depth of its nearest ancestor carrying it: a node whose name an ancestor carries
 * "repeats" at that depth, and a subtree is fresh when nothing in it repeats at or above the
 * subtree's own root. Sizes and freshness are summed up in one backward pass over the preorder
 * numbers, names' node lists are a counting sort, and function hits come from the same walk
 * (a name counts at its outermost occurrence on each stack).
 *
 * The file: a fixed header (the key it was built under, the counts, the profile header's
 * numbers, a checksum), then the strings (resource, unit, every name, NUL-terminated), then the
 * arrays as they lie in memory, each 8-byte aligned. Its size follows from the counts and must
 * match. The checksum covers every byte (its own field read as 0): a flipped bit in a name or a
 * weight would otherwise be shown as the store's. It is xxHash64's round on four lanes of 8-byte
 * words, a few GB/s, so checking it costs a fraction of the load it saves. It is summed a window
 * at a time, each let go of once summed, and walks let go of what they passed now and then
 * (tree_index_trim()): a mapped index's pages are the page cache's, and a view of a 300 MB index
 * keeps mapped only the few MiB it reads at once. MADV_RANDOM: views read scattered nodes. */
#include "tree-index.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a read of a mapped node may map around it: a large folio of the page cache. */
#define FOLIO_BYTES ((uintptr_t) 2 << 20)

#define MAGIC "CPPDTIX"
#define VERSION \
        6 /* 2: leaves marked in occ; 3: names demangled, the store's token, a checksum; 4: sampling and \
           * the sum of squared hits in the header; 5: frames named later; 6: the stacks' nodes */

struct file_header {
        char magic[8];
        uint32_t version;
        uint32_t inverted;
        char store_id[40];
        uint64_t dev, ino;
        int64_t generation, resource_id;
        uint32_t n, n_names, max_depth, n_stacks;
        uint64_t total, period, samples, lost, frames, frames_unsymbolized;
        uint64_t periods_fixed, thinned; /* bit 0: fixed; bit 1: random */
        double hits_squared;
        uint64_t frames_named_later, modules_named_later;
        uint64_t strings_size; /* bytes, a multiple of 8 */
        char token[24];        /* the key's store_state.token */
        uint64_t checksum;     /* of the whole file, this field read as 0 */
};

_Static_assert(sizeof(struct file_header) % 8 == 0, "the strings start 8-byte aligned");

/* xxHash64's primes. */
#define P1 UINT64_C(0x9E3779B185EBCA87)
#define P2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define P3 UINT64_C(0x165667B19E3779F9)

struct checksum {
        uint64_t lane[4];
        uint64_t n; /* words so far */
};

static uint64_t rotl(uint64_t x, int r) {
        return (x << r) | (x >> (64 - r));
}

static void checksum_init(struct checksum *c) {
        *c = (struct checksum) { .lane = { P1 + P2, P2, 0, -P1 } };
}

/* Adds SIZE bytes (a multiple of 8) at DATA. */
static void checksum_add(struct checksum *c, const void *data, size_t size) {
        const uint8_t *p = data;

        for (size_t i = 0; i + 8 <= size; i += 8) {
                uint64_t w, *lane = &c->lane[c->n++ & 3];

                memcpy(&w, p + i, 8);
                *lane = rotl(*lane + w * P2, 31) * P1;
        }
}

static uint64_t checksum_end(const struct checksum *c) {
        uint64_t h = rotl(c->lane[0], 1) + rotl(c->lane[1], 7) + rotl(c->lane[2], 12) + rotl(c->lane[3], 18);

        h ^= c->n;
        h ^= h >> 33;
        h *= P2;
        h ^= h >> 29;
        h *= P3;
        return h ^ (h >> 32);
}

/* The checksum of SIZE bytes at DATA as tree_index_checksum() says; with DROP (DATA a page-aligned
 * shared mapping of a file), each window of CHECKSUM_WINDOW bytes is dropped from the mapping once
 * summed, so that checking an index costs a window of memory, not the file: the pages stay in the
 * page cache, and a view maps back the few it reads. */
#define CHECKSUM_WINDOW (UINT64_C(8) << 20)

static uint64_t checksum_of(const void *data, size_t size, bool drop) {
        const uint8_t *p = data;
        struct file_header h;
        struct checksum c;

        checksum_init(&c);
        if (size < sizeof h)
                return 0;
        memcpy(&h, data, sizeof h);
        h.checksum = 0;
        checksum_add(&c, &h, sizeof h);
        for (size_t at = sizeof h; at < size;) {
                size_t end = MIN(size, (at / CHECKSUM_WINDOW + 1) * CHECKSUM_WINDOW);

                checksum_add(&c, p + at, end - at);
                /* advice only: a mapping that keeps its pages is checked all the same */
                if (drop)
                        (void) madvise((void *) (p + at / CHECKSUM_WINDOW * CHECKSUM_WINDOW),
                                       end - at / CHECKSUM_WINDOW * CHECKSUM_WINDOW, MADV_DONTNEED);
                at = end;
        }
        return checksum_end(&c);
}

uint64_t tree_index_checksum(const void *data, size_t size) {
        return checksum_of(data, size, false);
}

void tree_index_seal(void *data, size_t size) {
        uint64_t sum = tree_index_checksum(data, size);

        if (size >= sizeof(struct file_header))
                memcpy((uint8_t *) data + offsetof(struct file_header, checksum), &sum, sizeof sum);
}

/* Where each array lies in an index of N nodes, N_NAMES names and N_STACKS stacks, after HEAD
 * bytes. The stacks come last: a built index has them in memory of their own. */
struct arrays {
        uint64_t nodes, function_hits, body_hits, occ_start, occ, stacks, end;
};

static int layout_of(uint64_t head, uint64_t n, uint64_t n_names, uint64_t n_stacks, struct arrays *ret) {
        if (n == 0 || n > TREE_INDEX_MAX_NODES || n_names >= UINT32_MAX || n_stacks >= UINT32_MAX ||
            head % 8 != 0)
                return -EBADMSG;
        ret->nodes = head;
        ret->function_hits = ret->nodes + n * sizeof(struct tree_index_node);
        ret->body_hits = ret->function_hits + n_names * 8;
        ret->occ_start = ret->body_hits + n_names * 8;
        ret->occ = ret->occ_start + ((n_names + 1) * 4 + 7) / 8 * 8;
        ret->stacks = ret->occ + (n * 4 + 7) / 8 * 8;
        ret->end = ret->stacks + n_stacks * sizeof(struct tree_index_stack);
        return 0;
}

static void point_arrays(struct tree_index *x, uint8_t *base, const struct arrays *l) {
        x->nodes = (const struct tree_index_node *) (base + l->nodes);
        x->function_hits = (const uint64_t *) (base + l->function_hits);
        x->body_hits = (const uint64_t *) (base + l->body_hits);
        x->occ_start = (const uint32_t *) (base + l->occ_start);
        x->occ = (const uint32_t *) (base + l->occ);
        x->stacks = (const struct tree_index_stack *) (base + l->stacks);
}

struct tree_index *tree_index_free(struct tree_index *x) {
        if (!x)
                return NULL;
        if (x->own_header)
                sample_tree_free(x->header);
        if (x->map)
                munmap(x->map, x->map_size);
        free(x->memory);
        free(x->own_stacks);
        free(x);
        return NULL;
}

void tree_index_trim(const struct tree_index *x) {
        /* advice only: pages that stay mapped are read all the same. An index that small may
         * stay mapped whole: each madvise() flushes the TLB, tens of µs in a VM, and walks call
         * this every few dozen nodes (a store of 100k stacks: 75,000 calls, 15 s of system time
         * on a paravirtualized VM). */
        if (x->map && x->map_size > TREE_INDEX_TRIM_MIN)
                (void) madvise(x->map, x->map_size, MADV_DONTNEED);
}

/* Lets go of the mapped pages of nodes LO..HI of X and of the large folios (2 MiB) around them. */
static void trim_nodes(const struct tree_index *x, uint32_t lo, uint32_t hi) {
        uintptr_t map = (uintptr_t) x->map, end = map + x->map_size, page = (uintptr_t) sysconf(_SC_PAGESIZE);
        uintptr_t from = (uintptr_t) &x->nodes[lo], to = (uintptr_t) &x->nodes[hi + 1];

        from = from - map > FOLIO_BYTES ? from - FOLIO_BYTES : map;
        to = end - to > FOLIO_BYTES ? to + FOLIO_BYTES : end;
        from &= ~(page - 1);
        if (to > from)
                (void) madvise((void *) from, to - from, MADV_DONTNEED);
}

void tree_index_touch(const struct tree_index *x, struct tree_index_window *w, uint32_t node) {
        size_t last = w->n - 1;

        /* A small index stays mapped whole, as for tree_index_trim(). */
        if (!x->map || x->map_size <= TREE_INDEX_TRIM_MIN)
                return;
        if (w->n > 0 && node + TREE_INDEX_NEAR >= w->lo[last] && node <= w->hi[last] + TREE_INDEX_NEAR) {
                w->span += node < w->lo[last] ? w->lo[last] - node :
                        node > w->hi[last]    ? node - w->hi[last] :
                                                0;
                w->lo[last] = MIN(w->lo[last], node);
                w->hi[last] = MAX(w->hi[last], node);
                if (w->span < TREE_INDEX_WINDOW_NODES)
                        return;
                tree_index_let_go(x, w);
                return;
        }
        if (w->n == TREE_INDEX_RANGES)
                tree_index_let_go(x, w);
        w->lo[w->n] = w->hi[w->n] = node;
        w->n++;
}

void tree_index_let_go(const struct tree_index *x, struct tree_index_window *w) {
        for (size_t i = 0; i < w->n; i++)
                trim_nodes(x, w->lo[i], w->hi[i]);
        w->n = 0;
        w->span = 0;
}

struct tree_index *tree_index_new(size_t n, size_t n_names) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        struct arrays l;

        if (n > TREE_INDEX_MAX_NODES || layout_of(0, n, n_names, 0, &l) < 0)
                return NULL;
        x = calloc(1, sizeof *x);
        if (!x)
                return NULL;
        x->memory = calloc(1, l.end);
        if (!x->memory)
                return NULL;
        point_arrays(x, x->memory, &l);
        x->n = n;
        x->n_names = n_names;
        return take_ptr(&x);
}

int tree_index_new_in(size_t n, size_t n_names, int fd, struct tree_index **ret) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        uint64_t page, at;
        struct arrays l;
        struct stat st;

        if (fd < 0) {
                x = tree_index_new(n, n_names);
                if (!x)
                        return n > TREE_INDEX_MAX_NODES ? -E2BIG : -ENOMEM;
                *ret = take_ptr(&x);
                return 0;
        }
        if (n > TREE_INDEX_MAX_NODES || layout_of(0, n, n_names, 0, &l) < 0)
                return -E2BIG;
        if (fstat(fd, &st) < 0)
                return -errno;
        page = (uint64_t) sysconf(_SC_PAGESIZE);
        at = ((uint64_t) st.st_size + page - 1) / page * page;
        x = calloc(1, sizeof *x);
        if (!x)
                return -ENOMEM;
        /* Past the end of what the file holds, so the arrays start zeroed, as calloc()'s do. The
         * blocks are reserved: a page of a sparse file that the disk has no room for when it is
         * first written would kill the process (SIGBUS), where a full disk here lays the index
         * out in memory. */
        if (posix_fallocate(fd, (off_t) at, (off_t) l.end) != 0) {
                x = tree_index_free(x);
                return tree_index_new_in(n, n_names, -1, ret);
        }
        x->map = mmap(NULL, l.end, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t) at);
        if (x->map == MAP_FAILED) {
                x->map = NULL;
                return -errno;
        }
        x->map_size = l.end;
        point_arrays(x, x->map, &l);
        x->n = n;
        x->n_names = n_names;
        *ret = take_ptr(&x);
        return 0;
}

/* Scratch of the build: per preorder number, the parent's number, the depth, and the
 * shallowest depth at which something in the subtree repeats (UINT32_MAX: nowhere). */
struct build {
        uint32_t *parent, *depth, *repeat, *saved_last;
        uint32_t *stack, *path, *active, *last;
};

static void build_done(struct build *b) {
        free(b->parent);
        free(b->depth);
        free(b->repeat);
        free(b->saved_last);
        free(b->stack);
        free(b->path);
        free(b->active);
        free(b->last);
}

int tree_index_build(struct sample_tree *t, struct tree_index **ret) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        _cleanup_(build_done) struct build b = {};
        size_t n = t->n_nodes, n_names = name_table_size(t->names), sp = 0, pd = 0, k = 0;
        struct tree_index_node *nodes;
        uint32_t *occ_start, *occ;
        uint64_t *function_hits, *body_hits;
        struct arrays l;
        int r;

        if (n > TREE_INDEX_MAX_NODES)
                return -E2BIG;
        r = layout_of(0, n, n_names, 0, &l);
        if (r < 0)
                return r;
        sample_tree_weigh(t);
        x = tree_index_new(n, n_names);
        if (!x)
                return -ENOMEM;
        b.parent = malloc(n * sizeof *b.parent);
        b.depth = malloc(n * sizeof *b.depth);
        b.repeat = malloc(n * sizeof *b.repeat);
        b.saved_last = malloc(n * sizeof *b.saved_last);
        b.stack = malloc(2 * n * sizeof *b.stack); /* each node: enter, leave */
        b.path = malloc((n + 1) * sizeof *b.path);
        b.active = calloc(n_names + 1, sizeof *b.active);
        b.last = calloc(n_names + 1, sizeof *b.last);
        if (!b.parent || !b.depth || !b.repeat || !b.saved_last || !b.stack || !b.path || !b.active ||
            !b.last)
                return -ENOMEM;
        nodes = (struct tree_index_node *) x->nodes;
        function_hits = (uint64_t *) x->function_hits;
        body_hits = (uint64_t *) x->body_hits;
        occ_start = (uint32_t *) x->occ_start;
        occ = (uint32_t *) x->occ;
        x->header = t;

        /* Preorder walk; a node is pushed twice, the second time (top bit) to leave it. Node ids
         * fit in 31 bits (TREE_INDEX_MAX_NODES). Depths are 1 and up below the root, so a last
         * depth of 0 means "no ancestor carries the name". */
        b.stack[sp++] = SAMPLE_TREE_ROOT;
        while (sp > 0) {
                uint32_t node = b.stack[--sp], name, i;
                const struct sample_tree_node *s;

                if (node & 0x80000000u) {
                        i = b.path[--pd];
                        name = nodes[i].name;
                        if (i > 0) {
                                b.last[name] = b.saved_last[i];
                                b.active[name]--;
                        }
                        continue;
                }
                s = &t->nodes[node];
                i = k++;
                name = s->name;
                nodes[i] = (struct tree_index_node) { .name = name, .size = 1, .weight = s->weight };
                b.parent[i] = pd > 0 ? b.path[pd - 1] : 0;
                b.depth[i] = pd;
                x->max_depth = MAX(x->max_depth, (uint32_t) pd);
                b.repeat[i] = UINT32_MAX;
                if (i > 0) {
                        if (b.last[name] > 0)
                                b.repeat[i] = b.last[name];
                        b.saved_last[i] = b.last[name];
                        b.last[name] = pd;
                        if (b.active[name]++ == 0)
                                function_hits[name] += s->weight;
                        body_hits[name] += s->self;
                        occ_start[name + 1]++;
                }
                b.path[pd++] = i;
                b.stack[sp++] = node | 0x80000000u;
                for (uint32_t c = s->first_child; c != SAMPLE_TREE_NONE; c = t->nodes[c].next_sibling)
                        b.stack[sp++] = c;
        }

        /* Sizes and repeats summed into parents, children (higher numbers) first. */
        for (size_t i = n - 1; i > 0; i--) {
                uint32_t p = b.parent[i];

                nodes[p].size += nodes[i].size;
                b.repeat[p] = MIN(b.repeat[p], b.repeat[i]);
                if (b.repeat[i] == UINT32_MAX || b.repeat[i] >= b.depth[i])
                        nodes[i].size |= TREE_INDEX_FRESH;
        }

        /* Each name's nodes, in preorder: a counting sort. */
        for (size_t name = 0; name < n_names; name++)
                occ_start[name + 1] += occ_start[name];
        {
                _cleanup_free_ uint32_t *fill = malloc((n_names + 1) * sizeof *fill);

                if (!fill)
                        return -ENOMEM;
                memcpy(fill, occ_start, (n_names + 1) * sizeof *fill);
                for (size_t i = 1; i < n; i++)
                        occ[fill[nodes[i].name]++] = i | (tree_index_size(x, i) == 1 ? TREE_INDEX_LEAF : 0);
        }
        *ret = take_ptr(&x);
        return 0;
}

static int write_all(int fd, const void *buf, size_t size) {
        const uint8_t *p = buf;

        while (size > 0) {
                ssize_t k = write(fd, p, size);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                size -= k;
        }
        return 0;
}

/* Adds X's arrays, SIZE bytes from its nodes on, to SUM, or writes them to FD, a window at a
 * time: a mapped index (one laid out in a file, tree_index_new_in()) lets go of each window once
 * done, so that keeping an index of 300 MB costs a window of memory, not the index. Returns 0 or
 * write()'s negative errno. */
static int arrays_pass(const struct tree_index *x, size_t size, struct checksum *sum, int fd) {
        const uint8_t *p = (const uint8_t *) x->nodes;

        for (size_t at = 0; at < size; at += CHECKSUM_WINDOW) {
                size_t k = MIN(size - at, CHECKSUM_WINDOW);
                int r = 0;

                if (sum)
                        checksum_add(sum, p + at, k);
                else
                        r = write_all(fd, p + at, k);
                if (r < 0)
                        return r;
                tree_index_trim(x);
        }
        return 0;
}

int tree_index_write(const struct tree_index *x, const struct tree_index_key *key, int fd) {
        const struct sample_tree *t = x->header;
        _cleanup_free_ char *strings = NULL;
        struct file_header h = {
                .magic = MAGIC,
                .version = VERSION,
                .inverted = key->inverted,
                .dev = key->dev,
                .ino = key->ino,
                .generation = key->generation,
                .resource_id = key->resource_id,
                .n = x->n,
                .n_names = x->n_names,
                .max_depth = x->max_depth,
                .n_stacks = x->n_stacks,
                .total = t->total,
                .period = t->info.period,
                .samples = t->info.samples,
                .lost = t->info.lost,
                .frames = t->info.frames,
                .frames_unsymbolized = t->info.frames_unsymbolized,
                .periods_fixed = t->info.periods_fixed | (uint64_t) t->info.periods_random << 1,
                .thinned = t->info.thinned,
                .hits_squared = t->info.hits_squared,
                .frames_named_later = t->info.frames_named_later,
                .modules_named_later = t->info.modules_named_later,
        };
        const char *resource = t->info.resource ?: "", *unit = t->info.unit ?: "";
        size_t size = strlen(resource) + strlen(unit) + 2, at = 0;
        struct checksum sum;
        struct arrays l;
        int r;

        snprintf(h.store_id, sizeof h.store_id, "%s", key->store_id);
        snprintf(h.token, sizeof h.token, "%s", key->token);
        for (uint32_t i = 0; i < x->n_names; i++)
                size += strlen(name_table_get(t->names, i)) + 1;
        h.strings_size = (size + 7) / 8 * 8;
        strings = calloc(1, h.strings_size);
        if (!strings)
                return -ENOMEM;
        at = stpcpy(strings, resource) - strings + 1;
        at = stpcpy(strings + at, unit) - strings + 1;
        for (uint32_t i = 0; i < x->n_names; i++)
                at = stpcpy(strings + at, name_table_get(t->names, i)) - strings + 1;

        r = layout_of(sizeof h + h.strings_size, x->n, x->n_names, x->n_stacks, &l);
        if (r < 0)
                return r;
        /* The arrays but the stacks lie in one block in the layout's order, whether built or
         * mapped; the stacks, wherever they are, follow. */
        checksum_init(&sum);
        checksum_add(&sum, &h, sizeof h);
        checksum_add(&sum, strings, h.strings_size);
        (void) arrays_pass(x, l.stacks - l.nodes, &sum, -1);
        checksum_add(&sum, x->stacks, l.end - l.stacks);
        h.checksum = checksum_end(&sum);
        r = write_all(fd, &h, sizeof h);
        if (r >= 0)
                r = write_all(fd, strings, h.strings_size);
        if (r >= 0)
                r = arrays_pass(x, l.stacks - l.nodes, NULL, fd);
        if (r >= 0)
                r = write_all(fd, x->stacks, l.end - l.stacks);
        return r;
}

/* Interns the strings section's names into a new header tree. Returns 0 or -EBADMSG, -ENOMEM. */
static int read_header(struct tree_index *x, const struct file_header *h, const char *strings) {
        const char *p = strings, *end = strings + h->strings_size, *resource, *unit;
        struct sample_tree *t;

        resource = p;
        p = memchr(p, '\0', end - p);
        if (!p)
                return -EBADMSG;
        unit = ++p;
        p = p < end ? memchr(p, '\0', end - p) : NULL;
        if (!p)
                return -EBADMSG;
        p++;
        t = x->header = sample_tree_new(NULL);
        if (!t)
                return -ENOMEM;
        x->own_header = true;
        if (sample_tree_set_resource(t, resource, unit) < 0)
                return -ENOMEM;
        for (uint32_t i = 0; i < h->n_names; i++) {
                const char *z = p < end ? memchr(p, '\0', end - p) : NULL;
                int64_t id;

                if (!z)
                        return -EBADMSG;
                id = name_table_intern(t->names, p, z - p);
                if (id == -ENOMEM)
                        return -ENOMEM;
                if (id != (int64_t) i)
                        return -EBADMSG; /* a name twice, or one the table refuses */
                p = z + 1;
        }
        /* The header tree has the root alone, holding every hit, so that it weighs right. */
        t->nodes[SAMPLE_TREE_ROOT].self = h->total;
        t->nodes[SAMPLE_TREE_ROOT].weight = h->total;
        t->total = h->total;
        t->weighed = true;
        t->info.period = h->period;
        t->info.samples = h->samples;
        t->info.lost = h->lost;
        t->info.frames = h->frames;
        t->info.frames_unsymbolized = h->frames_unsymbolized;
        t->info.periods_fixed = h->periods_fixed & 1;
        t->info.periods_random = (h->periods_fixed & 2) != 0;
        t->info.thinned = h->thinned;
        t->info.hits_squared = h->hits_squared;
        t->info.frames_named_later = h->frames_named_later;
        t->info.modules_named_later = h->modules_named_later;
        return 0;
}

int tree_index_open(int fd, const struct tree_index_key *key, struct tree_index **ret) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        const struct file_header *h;
        struct arrays l;
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        if ((uint64_t) st.st_size < sizeof *h)
                return -EBADMSG;
        x = calloc(1, sizeof *x);
        if (!x)
                return -ENOMEM;
        x->map = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (x->map == MAP_FAILED) {
                x->map = NULL;
                return -errno;
        }
        x->map_size = st.st_size;
        (void) madvise(x->map, st.st_size, MADV_RANDOM);
        h = x->map;
        if (memcmp(h->magic, MAGIC, sizeof h->magic) != 0 || h->version != VERSION)
                return -EBADMSG;
        if (key &&
            (strncmp(h->store_id, key->store_id, sizeof h->store_id) != 0 || h->dev != key->dev ||
             h->ino != key->ino || h->generation != key->generation ||
             strncmp(h->token, key->token, sizeof h->token) != 0 || h->resource_id != key->resource_id ||
             h->inverted != (uint32_t) key->inverted))
                return -ESTALE;
        /* Every byte, before any is believed (sizes first: the sum reads words). */
        if (st.st_size % 8 != 0 || checksum_of(x->map, st.st_size, true) != h->checksum)
                return -EBADMSG;
        if (h->strings_size % 8 != 0 || h->strings_size > (uint64_t) st.st_size ||
            layout_of(sizeof *h + h->strings_size, h->n, h->n_names, h->n_stacks, &l) < 0 ||
            l.end != (uint64_t) st.st_size || h->max_depth >= h->n)
                return -EBADMSG;
        point_arrays(x, x->map, &l);
        x->n = h->n;
        x->n_names = h->n_names;
        x->max_depth = h->max_depth;
        x->n_stacks = h->n_stacks;
        x->inverted = h->inverted != 0;
        /* The root's subtree is the whole index: walks step within it, checking each child
         * against its parent's end. */
        if (tree_index_size(x, 0) != x->n)
                return -EBADMSG;
        /* Names' node lists must be ranges of occ: views index by them. */
        if (x->occ_start[0] != 0 || x->occ_start[x->n_names] != x->n - 1)
                return -EBADMSG;
        for (uint32_t i = 0; i < x->n_names; i++)
                if (x->occ_start[i] > x->occ_start[i + 1])
                        return -EBADMSG;
        r = read_header(x, h, (const char *) x->map + sizeof *h);
        if (r < 0)
                return r;
        *ret = take_ptr(&x);
        return 0;
}
