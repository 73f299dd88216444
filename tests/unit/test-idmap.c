/* The hash maps against plain arrays on random keys, and the name table's interning. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "name-table.h"
#include "tap.h"

#define N 100000

static uint64_t rng_state = 7;

static uint64_t rng(void) {
        rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
        return rng_state >> 11;
}

static void test_idmap(void) {
        _cleanup_(idmap_freep) struct idmap *m = idmap_new();
        static uint64_t keys[N], values[N];
        uint64_t *slot, k, v, sum = 0, want_sum = 0;
        size_t n_new = 0, wrong = 0, i = 0, seen = 0;

        for (size_t j = 0; j < N; j++) {
                keys[j] = rng() % (N / 2); /* many repeats */
                values[j] = j;
        }
        for (size_t j = 0; j < N; j++) {
                int r = idmap_put(m, keys[j], values[j], &slot);

                if (r == 1)
                        n_new++;
                else
                        *slot += 1;
        }
        ok(idmap_size(m) == n_new, "size counts distinct keys (%zu)", n_new);
        for (size_t j = 0; j < N; j++) {
                uint64_t first = UINT64_MAX, dups = 0;

                if (j % 97 != 0)
                        continue;
                for (size_t l = 0; l < N; l++)
                        if (keys[l] == keys[j]) {
                                if (first == UINT64_MAX)
                                        first = values[l];
                                else
                                        dups++;
                        }
                slot = idmap_get(m, keys[j]);
                wrong += !slot || *slot != first + dups;
        }
        ok(wrong == 0, "every sampled key holds its first value plus its repeats");
        ok(idmap_get(m, N) == NULL, "an absent key: NULL");
        while (idmap_next(m, &i, &k, &v)) {
                seen++;
                sum += k;
        }
        for (uint64_t key = 0; key < N / 2; key++)
                if (idmap_get(m, key))
                        want_sum += key;
        ok(seen == n_new && sum == want_sum, "iteration visits every key once");
        idmap_clear(m);
        ok(idmap_size(m) == 0 && idmap_get(m, keys[0]) == NULL, "clear empties it");
        ok(idmap_put(m, 0, 5, &slot) == 1 && *slot == 5, "key 0 is a key like any other");
}

static void test_name_table(void) {
        _cleanup_(name_table_freep) struct name_table *t = name_table_new();
        char buf[32], *long_name;
        size_t wrong = 0;

        for (int i = 0; i < 20000; i++) {
                snprintf(buf, sizeof buf, "name%d", i);
                wrong += name_table_intern(t, buf, strlen(buf)) != i;
        }
        ok(wrong == 0, "ids count up from 0 in order of first sight");
        ok(name_table_intern(t, "name17xyz", 6) == 17, "a prefix of a longer buffer is its own name");
        ok(name_table_find(t, "name19999") == 19999, "find");
        ok(name_table_find(t, "name20000") == NAME_NONE, "find of an absent name: NAME_NONE");
        ok(strcmp(name_table_get(t, 123), "name123") == 0, "get");
        ok(name_table_intern(t, "a\0b", 3) == -EINVAL, "a name with a NUL: -EINVAL");
        long_name = malloc(200000);
        memset(long_name, 'q', 199999);
        long_name[199999] = '\0';
        ok(name_table_intern(t, long_name, 199999) == 20000 &&
                   strcmp(name_table_get(t, 20000), long_name) == 0,
           "a name longer than an arena chunk");
        ok(strcmp(name_table_get(t, 5), "name5") == 0, "earlier names stay where they were");
        free(long_name);
}

static void test_reserve(void) {
        _cleanup_(idmap_freep) struct idmap *m = idmap_new();
        uint64_t *slot;
        size_t before;
        int wrong = 0;

        /* 300,000 keys: a table of 16 MiB, past the size that goes on huge pages. */
        ok(m && idmap_reserve(m, 300000) == 0, "reserve room for 300,000 keys");
        before = idmap_memory(m);
        for (uint64_t k = 0; k < 300000; k++)
                wrong += idmap_put(m, k * 7, k, &slot) != 1;
        ok(wrong == 0 && idmap_size(m) == 300000, "all inserted");
        ok(idmap_memory(m) == before, "without growing the table (%zu bytes)", before);
        for (uint64_t k = 0; k < 300000; k++)
                wrong += !idmap_get(m, k * 7) || *idmap_get(m, k * 7) != k;
        ok(wrong == 0, "and all found");
        ok(idmap_reserve(m, 10) == 0 && idmap_memory(m) == before, "a smaller reserve keeps the table");
        for (uint64_t k = 1; idmap_memory(m) == before; k += 7)
                idmap_put(m, k, k, &slot);
        ok(idmap_size(m) > 300000, "keys past the reserve grow it (at %zu keys)", idmap_size(m));
}

int main(void) {
        test_idmap();
        test_reserve();
        test_name_table();
        return tap_done();
}
