/* A hash map from 64-bit keys to 64-bit values: the workhorse behind trie children, interned
 * call paths and the store writer's id caches. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

/* The one key value a map cannot hold: it marks empty slots. */
#define IDMAP_KEY_EMPTY UINT64_MAX

struct idmap;

/* Allocates an empty map. NULL: no memory. */
struct idmap *idmap_new(void);
struct idmap *idmap_free(struct idmap *m);
DEFINE_CLEANUP(struct idmap *, idmap_free);

/* Returns a pointer to KEY's value, valid until the next insertion, or NULL if absent. */
uint64_t *idmap_get(const struct idmap *m, uint64_t key);

/* Finds KEY or inserts it with value VALUE. Returns 1 and points *ret at the new value, 0 and
 * points *ret at the existing one, or -ENOMEM. The pointer is valid until the next insertion. */
int idmap_put(struct idmap *m, uint64_t key, uint64_t value, uint64_t **ret);

/* Makes room for N keys in all, so that inserting them rehashes nothing. Returns 0 or -ENOMEM. */
int idmap_reserve(struct idmap *m, size_t n);

size_t idmap_size(const struct idmap *m);
/* Bytes the map holds, for memory accounting. */
size_t idmap_memory(const struct idmap *m);
void idmap_clear(struct idmap *m);

/* Iteration: *i starts at 0; returns false when done. Order is unspecified. */
bool idmap_next(const struct idmap *m, size_t *i, uint64_t *ret_key, uint64_t *ret_value);

/* The key of a (32-bit, 32-bit) pair, e.g. (parent node, function). */
static inline uint64_t idmap_pair(uint32_t a, uint32_t b) {
        return (uint64_t) a << 32 | b;
}
