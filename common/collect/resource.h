/* THE resource table: every monotonic resource cppd can use as a clock (paper §1, §5.1), with
 * its gtick unit, its default sampling period and the events that measure it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum resource_kind {
        /* A perf software event counted in gticks: the kernel samples every period. */
        RESOURCE_SOFTWARE,
        /* A software event on time: gticks are milliseconds, the period is in nanoseconds. */
        RESOURCE_CLOCK,
        /* cpu-clock on the CPU plus the off-CPU intervals between a switch out and back in. */
        RESOURCE_REAL_TIME,
        /* A tracepoint: the kernel samples every period hits of it. */
        RESOURCE_TRACEPOINT,
        /* System-call exits sampled every time; the bytes they return are counted in user space
         * and a sample is kept at each crossing of a period boundary (paper §5.1). */
        RESOURCE_BYTES,
        /* A hardware event named through libpfm4; the first name that encodes is used. */
        RESOURCE_PFM,
        /* Counted in the program by a preloaded library (alloc-preload.h), which makes a system
         * call at each interval's end; config is the call's option. */
        RESOURCE_ALLOC,
};

struct resource {
        const char *name; /* what users type: "cpu-time" */
        const char *unit; /* what one gtick is: "1 ms of CPU time" */
        const char *description;
        uint64_t default_period; /* gticks between samples, chosen for low overhead */
        enum resource_kind kind;
        uint64_t config;           /* SOFTWARE, CLOCK: PERF_COUNT_SW_* */
        const char *const *events; /* TRACEPOINT, BYTES: "sys:name"; PFM: libpfm4 names */
};

extern const struct resource resource_table[];
extern const unsigned n_resource_table;

/* Returns the table's entry for NAME, or NULL. */
const struct resource *resource_find(const char *name);

/* Whether NAME may name a resource in a store: a known name, or a word of letters, digits and
 * ":_.-" (an event or tracepoint name), 1 to 128 bytes long. */
bool resource_name_valid(const char *name);
