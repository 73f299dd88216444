/* libcppd-alloc.so: counts a program's allocations for `cppctl record -e alloc-bytes` and
 * `alloc-count`, preloaded into the command (LD_PRELOAD) as heaptrack's library is.
 *
 * A uprobe traps into the kernel at every call (about 0.8 µs here, 25 times what a malloc
 * costs); counting in the process costs a few nanoseconds. Each thread counts its own bytes and
 * calls down from an interval drawn at random (geometric: every byte, every call, ends an
 * interval with probability 1/P, independently of the others, so an allocation of n bytes ends
 * n/P intervals on average whatever came before it), and an allocation that ends some makes one
 * system call that cppd samples with the allocation's stack and the count as its weight
 * (alloc-preload.h). Only allocations that succeed count: bytes allocated, not asked for.
 *
 * Interposed: malloc, calloc, realloc (its new size), reallocarray, aligned_alloc,
 * posix_memalign, memalign, valloc, pvalloc; C++'s operator new in all its forms allocates
 * through these in libstdc++. free is interposed only to recognise the few blocks handed out
 * while dlsym() itself allocates, before the allocator after this library is known.
 *
 * Nothing here may allocate, take a lock or touch errno on the counting path. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "alloc-preload.h"

#define EXPORT __attribute__((visibility("default")))
#define ALWAYS_INLINE inline __attribute__((always_inline))

/* The allocator after this library (glibc's, or one preloaded after it). */
static struct {
        void *(*malloc)(size_t);
        void *(*calloc)(size_t, size_t);
        void *(*realloc)(void *, size_t);
        void *(*reallocarray)(void *, size_t, size_t);
        void (*free)(void *);
        void *(*aligned_alloc)(size_t, size_t);
        int (*posix_memalign)(void **, size_t, size_t);
        void *(*memalign)(size_t, size_t);
        void *(*valloc)(size_t);
        void *(*pvalloc)(size_t);
} next;
static bool resolving;

/* Blocks for dlsym()'s own allocations while next is being found; never freed. Each has its
 * size in the 16 bytes before it (a realloc of one copies it out). */
static _Alignas(64) char arena[16384];
static size_t arena_used;

/* Mean periods (0: not counted), fixed periods, and the thinning budget, from the environment. */
static uint64_t period[2];
static bool fixed;
static uint64_t budget; /* samples a window (1 ms) the process may make before it thins */

enum {
        BYTES,
        CALLS
};

/* Overload thinning, for the whole process, as cppd's kernel programs thin a storm: past the
 * window's budget the intervals are drawn K times as long, K doubling (at most 2^16), and each
 * sample weighs K times its periods; a window under a quarter of the budget halves K. Each
 * interval keeps the K it was drawn with, so a sample's weight is exact whatever K does since.
 * The window is a millisecond, and the budget under half of what the kernel lets one event
 * sample in a tick (perf_event_max_sample_rate / HZ): past that it stops sampling until the next
 * tick, and the weights of what it did not sample would be lost without a trace. */
#define WINDOW_NS 1000000ULL
#define MAX_SHIFT 16
static uint64_t window_start, window_count;
static unsigned shift; /* K = 1 << shift */

struct counter {
        uint64_t left[2]; /* bytes, calls to the end of the current interval; 0: none drawn */
        uint64_t k[2];    /* the K the current interval was drawn with */
        uint64_t seq[2];  /* the thread's samples so far: a gap tells cppd of samples the
                           * kernel dropped (its throttling leaves no other trace) */
        uint64_t rng;
};
static __thread struct counter counter __attribute__((tls_model("initial-exec")));

static void *arena_alloc(size_t n) {
        size_t need = 16 + ((n + 15) & ~(size_t) 15);
        char *p;

        if (n > sizeof arena || need > sizeof arena - __atomic_load_n(&arena_used, __ATOMIC_RELAXED))
                return NULL;
        p = arena + __atomic_fetch_add(&arena_used, need, __ATOMIC_RELAXED);
        if (p + need > arena + sizeof arena)
                return NULL;
        memcpy(p, &n, sizeof n);
        return p + 16;
}

static bool in_arena(const void *p) {
        return (const char *) p >= arena && (const char *) p < arena + sizeof arena;
}

static void resolve(void) {
        resolving = true;
        next.malloc = dlsym(RTLD_NEXT, "malloc");
        next.calloc = dlsym(RTLD_NEXT, "calloc");
        next.realloc = dlsym(RTLD_NEXT, "realloc");
        next.reallocarray = dlsym(RTLD_NEXT, "reallocarray");
        next.free = dlsym(RTLD_NEXT, "free");
        next.aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
        next.posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
        next.memalign = dlsym(RTLD_NEXT, "memalign");
        next.valloc = dlsym(RTLD_NEXT, "valloc");
        next.pvalloc = dlsym(RTLD_NEXT, "pvalloc");
        resolving = false;
}

/* The system call cppd samples (alloc-preload.h). On x86-64 a macro, so that the instruction
 * lies in the interposed function itself, the sample's innermost frame (an inlined function
 * would show as a frame of its own). errno stays as it was. */
#if defined(__x86_64__)
#define TELL(opt, hits, reason, seq) \
        do { \
                long ret_; \
                register long r10_ __asm__("r10") = (long) (seq); \
                register long r8_ __asm__("r8") = 0; \
                __asm__ volatile("syscall" \
                                 : "=a"(ret_) \
                                 : "0"((long) SYS_prctl), "D"((unsigned long) (opt)), \
                                   "S"((unsigned long) (hits)), "d"((unsigned long) (reason)), "r"(r10_), \
                                   "r"(r8_) \
                                 : "rcx", "r11", "memory"); \
                (void) ret_; \
        } while (0)
#else
#define TELL(opt, hits, reason, seq) \
        do { \
                int saved_ = errno; \
                (void) syscall(SYS_prctl, (unsigned long) (opt), (unsigned long) (hits), \
                               (unsigned long) (reason), (unsigned long) (seq), 0UL); \
                errno = saved_; \
        } while (0)
#endif

static uint64_t next_random(struct counter *t) {
        if (t->rng == 0) {
                /* First use in this thread: seeded from its id, its TLS address and the clock. */
                struct timespec ts;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                t->rng = (uint64_t) syscall(SYS_gettid) * 0x9e3779b97f4a7c15ULL ^ (uintptr_t) t ^
                        ((uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec);
                t->rng |= 1;
        }
        t->rng ^= t->rng >> 12;
        t->rng ^= t->rng << 25;
        t->rng ^= t->rng >> 27;
        return t->rng * 0x2545f4914f6cdd1dULL;
}

/* An interval of resource R, from the K in force: geometric of mean K P (at least 1), or K P
 * itself with fixed periods. */
static uint64_t draw(struct counter *t, int r) {
        uint64_t k = (uint64_t) 1 << __atomic_load_n(&shift, __ATOMIC_RELAXED), mean = period[r] * k;
        double u, x;

        t->k[r] = k;
        if (fixed || mean == 1)
                return mean;
        u = (double) ((next_random(t) >> 11) + 1) * 0x1.0p-53; /* (0, 1] */
        x = ceil(log(u) / log1p(-1.0 / (double) mean));
        return x < 1 ? 1 : x >= 0x1.0p63 ? (uint64_t) 1 << 63 : (uint64_t) x;
}

/* A sample made: counts it toward the window's budget, and thins (or stops thinning) the
 * intervals drawn from now on. */
static void note_sample(void) {
        struct timespec ts;
        uint64_t now, start, n;

        if (!budget)
                return;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now = (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
        start = __atomic_load_n(&window_start, __ATOMIC_RELAXED);
        if (now - start >= WINDOW_NS &&
            __atomic_compare_exchange_n(&window_start, &start, now, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
                /* A calm window halves K, and so does each window since in which none came. */
                uint64_t calm = (now - start) / WINDOW_NS, s = __atomic_load_n(&shift, __ATOMIC_RELAXED);

                n = __atomic_exchange_n(&window_count, 0, __ATOMIC_RELAXED);
                if (n < budget / 4 && s > 0)
                        __atomic_store_n(&shift, s > calm ? s - calm : 0, __ATOMIC_RELAXED);
        }
        if (__atomic_add_fetch(&window_count, 1, __ATOMIC_RELAXED) >= budget) {
                __atomic_store_n(&window_count, 0, __ATOMIC_RELAXED);
                if (__atomic_load_n(&shift, __ATOMIC_RELAXED) < MAX_SHIFT)
                        __atomic_add_fetch(&shift, 1, __ATOMIC_RELAXED);
        }
}

/* An allocation of N bytes at or past the end of the thread's interval of alloc-bytes: the
 * periods the intervals it ends stand for (each its K). One far past its interval's end (sizes
 * near 2^64 that succeeded: address space reserved) counts the mean number of the rest. Not
 * inlined: rare, and its code must not be taken for the innermost frame of the stack. */
static __attribute__((noinline)) uint64_t ended(struct counter *t, uint64_t n) {
        uint64_t weight = 0;

        while (n >= t->left[BYTES]) {
                n -= t->left[BYTES];
                weight += t->k[BYTES];
                if (n / 64 > period[BYTES] * t->k[BYTES]) {
                        weight += n / period[BYTES];
                        n %= period[BYTES];
                }
                t->left[BYTES] = draw(t, BYTES);
        }
        t->left[BYTES] -= n;
        note_sample();
        return weight;
}

/* A call that ends the thread's interval of alloc-count: the periods it stands for. */
static __attribute__((noinline)) uint64_t ended_call(struct counter *t) {
        uint64_t weight = t->k[CALLS];

        t->left[CALLS] = draw(t, CALLS);
        note_sample();
        return weight;
}

/* Counts a successful allocation of N bytes: *RET_BYTES and *RET_CALLS the periods of
 * alloc-bytes and alloc-count it ends (0 for none). */
static ALWAYS_INLINE void count(uint64_t n, uint64_t *ret_bytes, uint64_t *ret_calls) {
        struct counter *t = &counter;

        *ret_bytes = *ret_calls = 0;
        if (period[BYTES]) {
                if (t->left[BYTES] == 0)
                        t->left[BYTES] = draw(t, BYTES);
                if (__builtin_expect(n < t->left[BYTES], 1))
                        t->left[BYTES] -= n;
                else
                        *ret_bytes = ended(t, n);
        }
        if (period[CALLS]) {
                if (t->left[CALLS] == 0)
                        t->left[CALLS] = draw(t, CALLS);
                if (__builtin_expect(--t->left[CALLS] == 0, 0))
                        *ret_calls = ended_call(t);
        }
}

/* In each interposed function, after a successful allocation of N bytes. The K in force goes
 * along, for the header's "thinned to 1 in K". */
#define COUNT(n) \
        do { \
                uint64_t bytes_, calls_; \
                count((n), &bytes_, &calls_); \
                if (__builtin_expect(bytes_ != 0, 0)) \
                        TELL(ALLOC_OPTION_BYTES, bytes_, counter.k[BYTES], ++counter.seq[BYTES]); \
                if (__builtin_expect(calls_ != 0, 0)) \
                        TELL(ALLOC_OPTION_CALLS, calls_, counter.k[CALLS], ++counter.seq[CALLS]); \
        } while (0)

static void reseed_child(void) {
        counter.rng = 0;
        counter.seq[0] = counter.seq[1] = 0;
}

/* A block of the arena grown: copied out to one of the allocator's. */
static void *arena_realloc(void *old, size_t n) {
        size_t had;
        void *p;

        memcpy(&had, (char *) old - 16, sizeof had);
        if (!next.malloc)
                resolve();
        p = next.malloc ? next.malloc(n) : NULL;
        if (p)
                memcpy(p, old, had < n ? had : n);
        return p;
}

/* init() asks whether the program's malloc is this one: set while it calls it. */
static __thread bool probing __attribute__((tls_model("initial-exec")));
static __thread bool probed __attribute__((tls_model("initial-exec")));

/* The interposed functions, under their own names (the innermost frame of every sample). */
EXPORT void *malloc(size_t n) {
        void *p;

        if (!next.malloc) {
                if (resolving)
                        return arena_alloc(n);
                resolve();
        }
        if (__builtin_expect(probing, 0)) {
                probed = true;
                return next.malloc(n);
        }
        p = next.malloc(n);
        if (p)
                COUNT(n);
        return p;
}

EXPORT void *calloc(size_t k, size_t n) {
        void *p;

        if (!next.calloc) {
                if (resolving)
                        return __builtin_mul_overflow(k, n, &n) ? NULL : arena_alloc(n); /* zeroed */
                resolve();
        }
        p = next.calloc(k, n);
        if (p)
                COUNT((uint64_t) k * n);
        return p;
}

EXPORT void *realloc(void *old, size_t n) {
        void *p;

        if (in_arena(old))
                return arena_realloc(old, n);
        if (!next.realloc)
                resolve();
        p = next.realloc(old, n);
        if (p)
                COUNT(n);
        return p;
}

EXPORT void *reallocarray(void *old, size_t k, size_t n) {
        size_t bytes;
        void *p;

        if (__builtin_mul_overflow(k, n, &bytes)) {
                errno = ENOMEM;
                return NULL;
        }
        if (in_arena(old))
                return arena_realloc(old, bytes);
        if (!next.realloc)
                resolve();
        p = next.realloc(old, bytes);
        if (p)
                COUNT(bytes);
        return p;
}

EXPORT void free(void *p) {
        if (in_arena(p))
                return;
        if (!next.free)
                resolve();
        next.free(p);
}

EXPORT void *aligned_alloc(size_t align, size_t n) {
        void *p;

        if (!next.aligned_alloc)
                resolve();
        p = next.aligned_alloc(align, n);
        if (p)
                COUNT(n);
        return p;
}

EXPORT int posix_memalign(void **ret, size_t align, size_t n) {
        int r;

        if (!next.posix_memalign)
                resolve();
        r = next.posix_memalign(ret, align, n);
        if (r == 0)
                COUNT(n);
        return r;
}

EXPORT void *memalign(size_t align, size_t n) {
        void *p;

        if (!next.memalign)
                resolve();
        p = next.memalign(align, n);
        if (p)
                COUNT(n);
        return p;
}

EXPORT void *valloc(size_t n) {
        void *p;

        if (!next.valloc)
                resolve();
        p = next.valloc(n);
        if (p)
                COUNT(n);
        return p;
}

EXPORT void *pvalloc(size_t n) {
        void *p;

        if (!next.pvalloc)
                resolve();
        p = next.pvalloc(n);
        if (p)
                COUNT(n);
        return p;
}

__attribute__((constructor)) static void init(void) {
        const char *names[2] = { ALLOC_ENV_BYTES, ALLOC_ENV_CALLS }, *v;
        void *(*m)(size_t);

        for (int r = 0; r < 2; r++) {
                v = getenv(names[r]);
                period[r] = v ? strtoull(v, NULL, 10) : 0;
        }
        v = getenv(ALLOC_ENV_FIXED);
        fixed = v && strcmp(v, "1") == 0;
        v = getenv(ALLOC_ENV_BUDGET);
        budget = v ? strtoull(v, NULL, 10) : 0;
        if (!next.malloc)
                resolve();
        (void) pthread_atfork(NULL, NULL, reseed_child);
        /* A program with an allocator of its own (in the executable, or preloaded before this
         * library) never calls these: cppd says its allocations were not counted. The malloc
         * the program's lookups find is called to see: its address alone does not tell, since
         * an executable that takes malloc's address has a stub of its own, which leads here. */
        m = (void *(*) (size_t)) dlsym(RTLD_DEFAULT, "malloc");
        probing = true;
        if (m)
                free(m(1));
        probing = false;
        if (!probed) {
                if (period[BYTES])
                        TELL(ALLOC_OPTION_BYTES, 0, ALLOC_STATUS_OWN_ALLOCATOR, 0);
                if (period[CALLS])
                        TELL(ALLOC_OPTION_CALLS, 0, ALLOC_STATUS_OWN_ALLOCATOR, 0);
        }
}
