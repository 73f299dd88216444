/* What libcppd-alloc.so (alloc-preload.c) and the collector share: how the preloaded library
 * tells the kernel, and through it cppd, that an allocation ends an interval of alloc-bytes or
 * alloc-count.
 *
 * The library counts each thread's allocations in the process itself (bytes, and calls), with
 * intervals drawn at random. An allocation that ends one or more intervals makes one system
 * call, prctl(OPTION, HITS, K, SEQ), which no kernel knows (it returns EINVAL at once): cppd samples
 * that call at the tracepoint syscalls:sys_enter_prctl, kept to its OPTION by a filter, with the
 * stack of that moment (the allocation's) and HITS, the periods the intervals it ended stand
 * for, as its weight; K is the overload thinning the process was under (1 in K kept: intervals
 * drawn K times as long); SEQ counts the thread's calls for OPTION from 1, so that cppd sees the
 * samples the kernel dropped without a trace (its throttling past perf_event_max_sample_rate /
 * HZ in a tick) as gaps. HITS 0 is a status: K is then the REASON why the process's allocations
 * are not counted (SEQ 0). */
#pragma once

#define ALLOC_PRELOAD_LIBRARY "libcppd-alloc.so"

/* The prctl options: 'cppb', 'cppc'. */
#define ALLOC_OPTION_BYTES 0x63707062
#define ALLOC_OPTION_CALLS 0x63707063
#define ALLOC_STR_(x) #x
#define ALLOC_STR(x) ALLOC_STR_(x)

/* Environment of the recorded command: each resource's mean period (bytes; calls), absent or 0
 * for a resource not recorded; ALLOC_ENV_FIXED=1 for fixed periods (--no-jitter). */
#define ALLOC_ENV_BYTES "CPPD_ALLOC_BYTES"
#define ALLOC_ENV_CALLS "CPPD_ALLOC_CALLS"
#define ALLOC_ENV_FIXED "CPPD_ALLOC_FIXED"
/* Samples the process may make in 1 ms before it thins (absent or 0: never). */
#define ALLOC_ENV_BUDGET "CPPD_ALLOC_BUDGET"

/* REASONs of a status call (HITS 0). */
enum alloc_status {
        /* malloc is not the library's: the program has an allocator of its own (statically
         * linked jemalloc, tcmalloc, Rust's), found before the preloaded library. */
        ALLOC_STATUS_OWN_ALLOCATOR = 1,
};
