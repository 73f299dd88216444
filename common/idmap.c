/* Open addressing with linear probing over parallel key and value arrays, kept at most 1/2 full
 * so that probes stay short. Keys come from ids we assign (dense, sequential), so they are
 * scrambled with a 64-bit finalizer before use as a slot index. Lookups far outnumber inserts
 * and nothing is ever deleted one at a time (maps are cleared or freed whole), which is why
 * there are no tombstones. */
#include "idmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct idmap {
        uint64_t *keys;         /* IDMAP_KEY_EMPTY where free */
        uint64_t *values;
        size_t n;               /* keys held */
        size_t mask;            /* capacity - 1; capacity is a power of two, or 0 */
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
        free(m->keys);
        free(m->values);
        free(m);
        return NULL;
}

uint64_t *idmap_get(const struct idmap *m, uint64_t key) {
        if (m->n == 0)
                return NULL;
        for (size_t i = mix64(key) & m->mask;; i = (i + 1) & m->mask) {
                if (m->keys[i] == key)
                        return &m->values[i];
                if (m->keys[i] == IDMAP_KEY_EMPTY)
                        return NULL;
        }
}

static int idmap_grow(struct idmap *m) {
        size_t cap = m->mask ? (m->mask + 1) * 2 : 64;
        uint64_t *keys, *values;

        keys = malloc(cap * sizeof *keys);
        values = malloc(cap * sizeof *values);
        if (!keys || !values) {
                free(keys);
                free(values);
                return -ENOMEM;
        }
        memset(keys, 0xff, cap * sizeof *keys);         /* all IDMAP_KEY_EMPTY */

        for (size_t j = 0; m->mask && j <= m->mask; j++) {
                size_t i;

                if (m->keys[j] == IDMAP_KEY_EMPTY)
                        continue;
                for (i = mix64(m->keys[j]) & (cap - 1); keys[i] != IDMAP_KEY_EMPTY; i = (i + 1) & (cap - 1))
                        ;
                keys[i] = m->keys[j];
                values[i] = m->values[j];
        }
        free(m->keys);
        free(m->values);
        m->keys = keys;
        m->values = values;
        m->mask = cap - 1;
        return 0;
}

int idmap_put(struct idmap *m, uint64_t key, uint64_t value, uint64_t **ret) {
        size_t i;
        int r;

        if (m->mask == 0 || (m->n + 1) * 2 > m->mask + 1) {
                r = idmap_grow(m);
                if (r < 0)
                        return r;
        }
        for (i = mix64(key) & m->mask; m->keys[i] != IDMAP_KEY_EMPTY; i = (i + 1) & m->mask)
                if (m->keys[i] == key) {
                        *ret = &m->values[i];
                        return 0;
                }
        m->keys[i] = key;
        m->values[i] = value;
        m->n++;
        *ret = &m->values[i];
        return 1;
}

size_t idmap_size(const struct idmap *m) {
        return m->n;
}

size_t idmap_memory(const struct idmap *m) {
        return sizeof *m + (m->mask ? (m->mask + 1) * 2 * sizeof(uint64_t) : 0);
}

void idmap_clear(struct idmap *m) {
        if (m->mask)
                memset(m->keys, 0xff, (m->mask + 1) * sizeof *m->keys);
        m->n = 0;
}

bool idmap_next(const struct idmap *m, size_t *i, uint64_t *ret_key, uint64_t *ret_value) {
        for (; m->mask && *i <= m->mask; (*i)++)
                if (m->keys[*i] != IDMAP_KEY_EMPTY) {
                        *ret_key = m->keys[*i];
                        *ret_value = m->values[*i];
                        (*i)++;
                        return true;
                }
        return false;
}
