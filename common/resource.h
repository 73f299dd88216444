/* THE resource table: every monotonic resource cppd can use as a clock (paper §1, §5.1), with
 * its gtick unit and default sampling period. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct resource {
        const char *name;               /* what users type: "cpu-time" */
        const char *unit;               /* what one gtick is: "1 ms of CPU time" */
        const char *description;
        uint64_t default_period;        /* gticks between samples, chosen for low overhead */
};

extern const struct resource resource_table[];
extern const unsigned n_resource_table;

/* Returns the table's entry for NAME, or NULL. */
const struct resource *resource_find(const char *name);

/* Whether NAME may name a resource in a store: a known name, or a word of letters, digits and
 * ":_.-" (an event or tracepoint name), 1 to 128 bytes long. */
bool resource_name_valid(const char *name);
