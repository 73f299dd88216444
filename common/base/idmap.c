/* Open addressing with linear probing over one array of (key, value) slots, kept at most 1/2
 * full so that probes stay short. A slot holds its key and value side by side, so that a lookup
 * costs one cache miss, not two: trie building and the call path algorithm are bound by these
 * misses. Keys come from ids we assign (dense, sequential), so they are scrambled with a 64-bit
 * finalizer before use as a slot index. Lookups far outnumber inserts and nothing is ever
 * deleted one at a time (maps are cleared or freed whole), which is why there are no
 * tombstones. */
#include "idmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Tables this big are allocated on a huge page boundary and marked for transparent huge pages:
 * filling a fresh table touches every page once, and on a VM each 4 KiB first touch is a
 * costly fault (a third of a view's time over a million distinct stacks, before this). */
#define HUGE_TABLE_BYTES (2u << 20)

struct slot {
        uint64_t key; /* IDMAP_KEY_EMPTY where free */
        uint64_t value;
};

struct idmap {
        struct slot *slots;
        size_t n;    /* keys held */
        size_t mask; /* capacity - 1; capacity is a power of two, or 0 */
};

static inline uint64_t mix64(uint64_t x) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ULL;
        x ^= x >> 33;
        return x;
}

struct idmap *idmap_new(void) {
        return calloc(1, sizeof(struct idmap));
}

struct idmap *idmap_free(struct idmap *m) {
        if (!m)
                return NULL;
        free(m->slots);
        free(m);
        return NULL;
}

uint64_t *idmap_get(const struct idmap *m, uint64_t key) {
        if (m->n == 0)
                return NULL;
        for (size_t i = mix64(key) & m->mask;; i = (i + 1) & m->mask) {
                struct slot *s = &m->slots[i];

                if (s->key == key)
                        return &s->value;
                if (s->key == IDMAP_KEY_EMPTY)
                        return NULL;
        }
}

static struct slot *slots_alloc(size_t cap) {
        size_t bytes = cap * sizeof(struct slot);
        struct slot *slots;

        if (bytes < HUGE_TABLE_BYTES)
                return malloc(bytes);
        slots = aligned_alloc(HUGE_TABLE_BYTES, bytes); /* bytes: a power of two */
        if (slots)
                (void) madvise(slots, bytes, MADV_HUGEPAGE);
        return slots;
}

static int idmap_rehash(struct idmap *m, size_t cap) {
        struct slot *slots = slots_alloc(cap);

        if (!slots)
                return -ENOMEM;
        memset(slots, 0xff, cap * sizeof *slots); /* every key IDMAP_KEY_EMPTY */
        for (size_t j = 0; m->mask && j <= m->mask; j++) {
                size_t i;

                if (m->slots[j].key == IDMAP_KEY_EMPTY)
                        continue;
                for (i = mix64(m->slots[j].key) & (cap - 1); slots[i].key != IDMAP_KEY_EMPTY;
                     i = (i + 1) & (cap - 1))
                        ;
                slots[i] = m->slots[j];
        }
        free(m->slots);
        m->slots = slots;
        m->mask = cap - 1;
        return 0;
}

int idmap_put(struct idmap *m, uint64_t key, uint64_t value, uint64_t **ret) {
        struct slot *s;
        size_t i;
        int r;

        if (m->mask == 0 || (m->n + 1) * 2 > m->mask + 1) {
                r = idmap_rehash(m, m->mask ? (m->mask + 1) * 2 : 64);
                if (r < 0)
                        return r;
        }
        for (i = mix64(key) & m->mask; (s = &m->slots[i])->key != IDMAP_KEY_EMPTY; i = (i + 1) & m->mask)
                if (s->key == key) {
                        *ret = &s->value;
                        return 0;
                }
        *s = (struct slot) { key, value };
        m->n++;
        *ret = &s->value;
        return 1;
}

int idmap_reserve(struct idmap *m, size_t n) {
        size_t cap = 64;

        while (cap < 2 * n)
                cap *= 2;
        return cap > m->mask + 1 || m->mask == 0 ? idmap_rehash(m, cap) : 0;
}

size_t idmap_size(const struct idmap *m) {
        return m->n;
}

size_t idmap_memory(const struct idmap *m) {
        return sizeof *m + (m->mask ? (m->mask + 1) * sizeof(struct slot) : 0);
}

void idmap_clear(struct idmap *m) {
        if (m->mask)
                memset(m->slots, 0xff, (m->mask + 1) * sizeof *m->slots);
        m->n = 0;
}

bool idmap_next(const struct idmap *m, size_t *i, uint64_t *ret_key, uint64_t *ret_value) {
        for (; m->mask && *i <= m->mask; (*i)++)
                if (m->slots[*i].key != IDMAP_KEY_EMPTY) {
                        *ret_key = m->slots[*i].key;
                        *ret_value = m->slots[*i].value;
                        (*i)++;
                        return true;
                }
        return false;
}
