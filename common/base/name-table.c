/* Interned strings. The bytes live in 64 KiB arena chunks (a longer string gets a chunk of its
 * own), so a name's pointer never moves once handed out; an array maps id -> pointer and an
 * open-addressing index of ids, probed linearly and kept at most half full, maps bytes -> id;
 * each id's hash and length, side by side, are compared before its bytes are.
 * Names are added once and looked up many times (once per frame of every sample), and never
 * removed. */
#include "name-table.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define ARENA_CHUNK (64 * 1024)
#define NAME_TABLE_MAX (UINT32_MAX / 4)

struct arena_chunk {
        struct arena_chunk *next;
        size_t used, size;
        char data[];
};

struct name_table {
        char **names; /* id -> string */
        /* id -> hash | length << 32 (at most UINT32_MAX), so growing the index does not rehash
         * bytes and a probe reads the name only where both match */
        uint64_t *keys;
        size_t n, cap;
        uint32_t *index; /* slot -> id, NAME_NONE where free */
        size_t mask;
        struct arena_chunk *chunks;
};

/* Eight bytes at a time (a name of a frame is a dozen or more: FNV-1a's byte at a time was a
 * third of a lookup), each word mixed in by a multiply and a shift, then the whole finished as
 * splitmix64 does, so that the low bits the index keeps depend on every byte. */
static uint32_t hash_bytes(const char *s, size_t len) {
        uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ len, w;
        size_t i = 0;

        for (; i + 8 <= len; i += 8) {
                memcpy(&w, s + i, 8);
                h = (h ^ w) * UINT64_C(0xbf58476d1ce4e5b9);
                h ^= h >> 31;
        }
        if (i < len) {
                w = 0;
                memcpy(&w, s + i, len - i);
                h = (h ^ w) * UINT64_C(0xbf58476d1ce4e5b9);
                h ^= h >> 31;
        }
        h *= UINT64_C(0x94d049bb133111eb);
        return (uint32_t) (h ^ (h >> 32));
}

struct name_table *name_table_new(void) {
        return calloc(1, sizeof(struct name_table));
}

struct name_table *name_table_free(struct name_table *t) {
        if (!t)
                return NULL;
        while (t->chunks) {
                struct arena_chunk *c = t->chunks;

                t->chunks = c->next;
                free(c);
        }
        free(t->names);
        free(t->keys);
        free(t->index);
        free(t);
        return NULL;
}

static char *arena_copy(struct name_table *t, const char *s, size_t len) {
        struct arena_chunk *c = t->chunks;
        char *p;

        if (!c || c->size - c->used < len + 1) {
                size_t size = MAX((size_t) ARENA_CHUNK, len + 1);

                c = malloc(sizeof *c + size);
                if (!c)
                        return NULL;
                c->size = size;
                c->used = 0;
                /* A chunk made for one long string goes behind the current one, which may
                 * still have room for short names. */
                if (size > ARENA_CHUNK && t->chunks) {
                        c->next = t->chunks->next;
                        t->chunks->next = c;
                } else {
                        c->next = t->chunks;
                        t->chunks = c;
                }
        }
        p = c->data + c->used;
        memcpy(p, s, len);
        p[len] = '\0';
        c->used += len + 1;
        return p;
}

static int index_grow(struct name_table *t) {
        size_t cap = t->mask ? (t->mask + 1) * 2 : 256;
        uint32_t *index = malloc(cap * sizeof *index);

        if (!index)
                return -ENOMEM;
        memset(index, 0xff, cap * sizeof *index);
        for (size_t id = 0; id < t->n; id++) {
                size_t i;

                for (i = (uint32_t) t->keys[id] & (cap - 1); index[i] != NAME_NONE; i = (i + 1) & (cap - 1))
                        ;
                index[i] = id;
        }
        free(t->index);
        t->index = index;
        t->mask = cap - 1;
        return 0;
}

static uint64_t name_key(uint32_t h, size_t len) {
        return h | (uint64_t) (len < UINT32_MAX ? len : UINT32_MAX) << 32;
}

static size_t index_find(const struct name_table *t, const char *s, size_t len, uint32_t h) {
        const uint64_t key = name_key(h, len);
        size_t i;

        for (i = h & t->mask; t->index[i] != NAME_NONE; i = (i + 1) & t->mask) {
                uint32_t id = t->index[i];

                /* The same length (below the cap): the name has LEN bytes to compare. */
                if (t->keys[id] == key &&
                    (len < UINT32_MAX ? memcmp(t->names[id], s, len) == 0 :
                                        strncmp(t->names[id], s, len) == 0 && t->names[id][len] == '\0'))
                        break;
        }
        return i;
}

int64_t name_table_intern(struct name_table *t, const char *s, size_t len) {
        uint32_t h = hash_bytes(s, len);
        size_t slot;
        char *copy;
        int r;

        if (memchr(s, '\0', len))
                return -EINVAL; /* names are C strings */
        if (t->mask == 0 || (t->n + 1) * 2 > t->mask + 1) {
                r = index_grow(t);
                if (r < 0)
                        return r;
        }
        slot = index_find(t, s, len, h);
        if (t->index[slot] != NAME_NONE)
                return t->index[slot];

        if (t->n >= NAME_TABLE_MAX)
                return -E2BIG;
        if (t->n == t->cap) {
                size_t cap = t->cap, cap_keys = t->cap; /* the two arrays grow alike */

                r = GROW(t->names, cap, t->n + 1);
                if (r < 0)
                        return r;
                r = GROW(t->keys, cap_keys, t->n + 1);
                if (r < 0)
                        return r;
                t->cap = cap;
        }
        copy = arena_copy(t, s, len);
        if (!copy)
                return -ENOMEM;
        t->names[t->n] = copy;
        t->keys[t->n] = name_key(h, len);
        t->index[slot] = t->n;
        return t->n++;
}

uint32_t name_table_find(const struct name_table *t, const char *s) {
        size_t len = strlen(s);

        if (t->n == 0)
                return NAME_NONE;
        return t->index[index_find(t, s, len, hash_bytes(s, len))];
}

const char *name_table_get(const struct name_table *t, uint32_t id) {
        assert(id < t->n);
        return t->names[id];
}

size_t name_table_size(const struct name_table *t) {
        return t->n;
}
