/* allocs: allocations of known sizes through known call paths, for the alloc-bytes and
 * alloc-count tests. Each round, through main -> allocs_round -> PATH:
 *
 *   small    3 MiB in 3,072 mallocs of 1 KiB
 *   big      1 MiB in 16 mallocs of 64 KiB
 *   zeroed   256 KiB in 512 callocs of 512 bytes
 *   array    256 KiB in 256 new char[1024] (operator new[] -> malloc)
 *   grow     255 KiB by realloc, a block grown from 1 KiB to 128 KiB by doubling: 8 calls
 *            whose new sizes sum to 255 KiB
 *
 * then everything is freed. Bytes: 4,863 KiB a round, shares 0.632 / 0.211 / 0.053 / 0.053 /
 * 0.052; calls: 3,864, shares 0.795 / 0.004 / 0.133 / 0.066 / 0.002.
 *
 *   allocs paths [ROUNDS]        the rounds above (default 100)
 *   allocs edges [wait]          malloc(0), realloc(p, 0), sizes near 2^64 that fail, calloc's
 *                                overflow, reallocarray, and every aligned allocator once; wait:
 *                                after a line on stdin (cppctl attach's test attaches first)
 *   allocs threads N [ROUNDS [wait]]  N threads at once, each doing ROUNDS rounds of 64
 *                                mallocs of 64 bytes and their frees (default 20); wait: as above
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

static void *keep[4096];
static unsigned n_keep;
static char *arrays[256];

extern "C" {

WORKLOAD_FUNCTION void small(void) {
        for (int i = 0; i < 3072; i++)
                keep[n_keep++] = malloc(1024);
        call_barrier();
}

WORKLOAD_FUNCTION void big(void) {
        for (int i = 0; i < 16; i++)
                keep[n_keep++] = malloc(65536);
        call_barrier();
}

WORKLOAD_FUNCTION void zeroed(void) {
        for (int i = 0; i < 512; i++)
                keep[n_keep++] = calloc(1, 512);
        call_barrier();
}

WORKLOAD_FUNCTION void array(void) {
        for (int i = 0; i < 256; i++)
                arrays[i] = new char[1024];
        call_barrier();
}

WORKLOAD_FUNCTION void grow(void) {
        void *p = NULL;

        for (size_t n = 1024; n <= 128 * 1024; n *= 2)
                p = realloc(p, n);
        keep[n_keep++] = p;
        call_barrier();
}

WORKLOAD_FUNCTION void allocs_round(void) {
        n_keep = 0;
        small();
        big();
        zeroed();
        array();
        grow();
        for (unsigned i = 0; i < n_keep; i++) {
                if (!keep[i]) {
                        fprintf(stderr, "allocs: out of memory\n");
                        exit(1);
                }
                free(keep[i]);
        }
        for (int i = 0; i < 256; i++)
                delete[] arrays[i];
        call_barrier();
}

}

/* Each thread its own blocks: 64 mallocs of 64 bytes a round, freed. */
static void *storm(void *arg) {
        unsigned long rounds = (unsigned long) arg;
        void *p[64];

        for (unsigned long r = 0; r < rounds; r++) {
                for (int i = 0; i < 64; i++)
                        p[i] = malloc(64);
                for (int i = 0; i < 64; i++)
                        free(p[i]);
        }
        return NULL;
}

/* A pause before each allocation of edges(), so that none of them is thinned away (each the only
 * sample of its millisecond). */
static void calm(void) {
        usleep(2000);
}

static int edges(void) {
        /* Sizes the compiler cannot see, so that it neither warns of them nor drops the calls. */
        volatile size_t huge = SIZE_MAX, half = SIZE_MAX / 2;
        void *p, *q = NULL;
        int bad = 0;

        /* After the runtimes' allocations at start, which the counter's overload thinning may
         * have met (intervals K calls long): calls far enough apart for it to calm down, and
         * to end the intervals drawn before. */
        for (int i = 0; i < 64; i++) {
                usleep(1000);
                free(malloc(8));
        }
        calm();
        p = malloc(0);
        bad |= !p;
        free(p);
        calm();
        p = malloc(16);
        bad |= realloc(p, 0) != NULL; /* glibc frees it */
        calm();
        bad |= malloc(huge) != NULL;
        calm();
        bad |= malloc(huge - 4096) != NULL;
        calm();
        bad |= calloc(half, 4) != NULL;
        calm();
        bad |= reallocarray(NULL, half, 4) != NULL;
        calm();
        p = reallocarray(NULL, 16, 64);
        bad |= !p;
        free(p);
        calm();
        p = aligned_alloc(64, 4096);
        bad |= !p || (uintptr_t) p % 64;
        free(p);
        calm();
        bad |= posix_memalign(&q, 4096, 8192) != 0 || (uintptr_t) q % 4096;
        free(q);
        calm();
        bad |= posix_memalign(&q, 3, 64) != EINVAL;
        calm();
        p = memalign(128, 1000);
        bad |= !p;
        free(p);
        calm();
        p = valloc(100);
        bad |= !p;
        free(p);
        calm();
        p = pvalloc(100);
        bad |= !p;
        free(p);
        if (bad)
                fprintf(stderr, "allocs edges: an allocator gave a wrong answer\n");
        return bad;
}

int main(int argc, char **argv) {
        unsigned long rounds, n;

        if (argc >= 2 && strcmp(argv[1], "paths") == 0) {
                workload_arg(argc, argv, 2, 100, &rounds);
                for (unsigned long r = 0; r < rounds; r++)
                        allocs_round();
                return 0;
        }
        if (argc >= 2 && strcmp(argv[1], "edges") == 0) {
                char c;

                /* read(), not stdio: no buffer allocated. */
                if (argc >= 3 && strcmp(argv[2], "wait") == 0 && read(0, &c, 1) != 1)
                        return 1;
                return edges();
        }
        if (argc >= 3 && strcmp(argv[1], "threads") == 0) {
                pthread_t t[256];

                workload_arg(argc, argv, 2, 8, &n);
                workload_arg(argc, argv, 3, 20, &rounds);
                if (argc >= 5 && strcmp(argv[4], "wait") == 0) {
                        char c;

                        if (read(0, &c, 1) != 1)
                                return 1;
                }
                if (n > 256)
                        n = 256;
                for (unsigned long i = 0; i < n; i++)
                        if (pthread_create(&t[i], NULL, storm, (void *) rounds) != 0)
                                return 1;
                for (unsigned long i = 0; i < n; i++)
                        pthread_join(t[i], NULL);
                return 0;
        }
        fprintf(stderr, "usage: allocs paths [ROUNDS] | edges [wait] | threads N [ROUNDS [wait]]\n");
        return 2;
}
