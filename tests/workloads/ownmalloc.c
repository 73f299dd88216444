/* ownmalloc: a program with an allocator of its own, linked in (as a program built with a
 * static jemalloc or tcmalloc is): malloc and its kin are found in the executable before any
 * preloaded library, so cppd's allocation counter never sees its allocations, and must say so.
 * A bump allocator over a static arena; free does nothing.
 *
 * Usage: ownmalloc [N [SECONDS]]: N (default 1000) allocations of 1 KiB, then a sleep of SECONDS
 * (default 0: cppctl attach's test attaches to it). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

static _Alignas(64) char arena[64 << 20];
static size_t used;

void *malloc(size_t n) {
        size_t at = (used + 15) & ~(size_t) 15;

        if (n > sizeof arena - at)
                return NULL;
        used = at + n;
        return arena + at;
}

void *calloc(size_t k, size_t n) {
        size_t bytes;

        if (__builtin_mul_overflow(k, n, &bytes))
                return NULL;
        return malloc(bytes); /* the arena is zero and never reused */
}

void *realloc(void *p, size_t n) {
        void *q = malloc(n);

        if (q && p)
                memcpy(q, p, n); /* the arena goes on past any block: reads stay inside it */
        return q;
}

void free(void *p) {
        (void) p;
}

int main(int argc, char **argv) {
        unsigned long n, seconds;
        volatile char *p = NULL;

        workload_arg(argc, argv, 1, 1000, &n);
        workload_arg(argc, argv, 2, 0, &seconds);
        for (unsigned long i = 0; i < n; i++) {
                p = malloc(1024);
                if (!p)
                        return 1;
                p[0] = 1;
        }
        sleep((unsigned) seconds);
        return 0;
}
