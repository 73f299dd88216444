/* The stack sorter against a naive model (an array of stacks sorted by qsort and summed), on
 * random stacks with many repeats and shared prefixes, in memory and spilled to many runs; and a
 * few orders worked by hand. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "stack-sort.h"
#include "tap.h"

#define N 20000
#define MAX_DEPTH 12

struct model {
        uint32_t ids[MAX_DEPTH];
        size_t n;
        uint64_t count;
};

static uint64_t rng_state = 11;

static uint64_t rng(void) {
        rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
        return rng_state >> 33;
}

static int model_compare(const void *x, const void *y) {
        const struct model *a = x, *b = y;
        size_t n = a->n < b->n ? a->n : b->n;

        for (size_t i = 0; i < n; i++)
                if (a->ids[i] != b->ids[i])
                        return a->ids[i] < b->ids[i] ? -1 : 1;
        return a->n < b->n ? -1 : a->n > b->n;
}

/* Adds the model's stacks to a sorter of MEMORY bytes and compares what comes out. */
static void check(struct model *m, size_t n, size_t memory, const char *what) {
        _cleanup_free_ struct model *want = malloc(n * sizeof *want);
        struct stack_sort *s = stack_sort_new(memory);
        size_t n_want = 0, got = 0, wrong = 0, n_ids;
        const uint32_t *ids;
        uint64_t count;
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++)
                r = stack_sort_add(s, m[i].ids, m[i].n, m[i].count);
        ok(r == 0, "%s: every stack added", what);
        ok(stack_sort_added(s) == n, "%s: %zu added", what, n);

        memcpy(want, m, n * sizeof *want);
        qsort(want, n, sizeof *want, model_compare);
        for (size_t i = 0; i < n; i++) {
                if (n_want > 0 && model_compare(&want[n_want - 1], &want[i]) == 0)
                        want[n_want - 1].count += want[i].count;
                else
                        want[n_want++] = want[i];
        }
        while ((r = stack_sort_next(s, &ids, &n_ids, &count)) > 0) {
                if (got >= n_want || n_ids != want[got].n || count != want[got].count ||
                    memcmp(ids, want[got].ids, n_ids * sizeof *ids) != 0)
                        wrong++;
                got++;
        }
        ok(r == 0, "%s: read to the end", what);
        is_int(got, n_want, "%s: each distinct stack once", what);
        is_int(wrong, 0, "%s: in order, with the sums of their counts", what);
        ok(stack_sort_next(s, &ids, &n_ids, &count) == 0, "%s: and nothing after", what);
        stack_sort_free(s);
}

static void test_random(void) {
        static struct model m[N];

        for (size_t i = 0; i < N; i++) {
                /* few ids, shallow: repeats and stacks that are prefixes of others */
                m[i].n = 1 + rng() % MAX_DEPTH;
                for (size_t j = 0; j < m[i].n; j++)
                        m[i].ids[j] = j < 2 ? rng() % 3 : rng() % 4;
                m[i].count = i % 7 == 0 ? (UINT64_C(1) << 40) + i : 1 + rng() % 5;
        }
        check(m, N, 64 << 20, "in memory");
        check(m, N, 64 << 10, "spilled to runs");
        check(m, 0, 64 << 10, "nothing");

        /* ids of 32 bits, so that the index holds 3 of them (2 + 1) */
        for (size_t i = 0; i < N; i++)
                for (size_t j = 0; j < m[i].n; j++)
                        m[i].ids[j] = (uint32_t) (rng() % 4) * UINT32_C(0x55555555);
        check(m, N, 64 << 20, "ids of 32 bits, in memory");
        check(m, N, 64 << 10, "ids of 32 bits, spilled to runs");

        /* ids of 13 bits (6 in the index) under prefixes of 7 that few stacks share */
        for (size_t i = 0; i < N; i++)
                for (size_t j = 0; j < m[i].n; j++)
                        m[i].ids[j] = j < 7 ? 4000 + (uint32_t) (rng() % 2) : 1 + (uint32_t) (rng() % 8000);
        check(m, N, 64 << 20, "ids of 13 bits, in memory");
        check(m, N, 64 << 10, "ids of 13 bits, spilled to runs");
}

static void test_by_hand(void) {
        struct stack_sort *s = stack_sort_new(0); /* the least: a run per few records */
        const uint32_t *ids;
        size_t n;
        uint64_t count;

        stack_sort_add(s, (uint32_t[]) { 1, 2, 3 }, 3, 1);
        stack_sort_add(s, (uint32_t[]) { 1, 2 }, 2, 2);
        stack_sort_add(s, (uint32_t[]) { 0, 5 }, 2, 3);
        stack_sort_add(s, (uint32_t[]) { 1, 2, 3 }, 3, 4);
        stack_sort_add(s, (uint32_t[]) { 1 }, 1, 5);
        ok(stack_sort_next(s, &ids, &n, &count) == 1 && n == 2 && ids[0] == 0 && count == 3, "(0 5) first");
        ok(stack_sort_next(s, &ids, &n, &count) == 1 && n == 1 && ids[0] == 1 && count == 5,
           "(1) before the stacks it begins");
        ok(stack_sort_next(s, &ids, &n, &count) == 1 && n == 2 && count == 2, "(1 2)");
        ok(stack_sort_next(s, &ids, &n, &count) == 1 && n == 3 && ids[2] == 3 && count == 5,
           "(1 2 3) once, 1 + 4");
        ok(stack_sort_next(s, &ids, &n, &count) == 0, "the end");
        ok(stack_sort_add(s, (uint32_t[]) { 1 }, 1, 1) == -EINVAL, "no adds once reading");
        stack_sort_free(s);
}

int main(void) {
        test_random();
        test_by_hand();
        return tap_done();
}
