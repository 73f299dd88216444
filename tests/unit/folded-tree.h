/* Test helper: a sample tree from folded text, "main;f;g 2\nmain;g 1\n". Aborts the test on
 * malformed text, which is the test's own bug. */
#pragma once

#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "sample-tree.h"

static inline struct sample_tree *tree_from_folded(const char *text) {
        static struct folded_frame frames[FOLDED_MAX_FRAMES];
        struct sample_tree *t = sample_tree_new(NULL);
        uint32_t names[FOLDED_MAX_FRAMES];

        if (!t)
                abort();
        while (*text) {
                const char *nl = strchr(text, '\n');
                size_t len = nl ? (size_t) (nl - text + 1) : strlen(text), n;
                uint64_t count;
                int r = folded_parse_line(text, len, frames, &n, &count);

                if (r < 0)
                        abort();
                if (r > 0) {
                        for (size_t i = 0; i < n; i++) {
                                int64_t id = name_table_intern(t->names, frames[i].name, frames[i].len);

                                if (id < 0)
                                        abort();
                                names[i] = id;
                        }
                        if (sample_tree_add(t, names, n, count) < 0)
                                abort();
                        t->info.samples += count;
                }
                text += len;
        }
        sample_tree_weigh(t);
        return t;
}

/* As tree_from_folded(), for RESOURCE counted in gticks of UNIT, sampled every PERIOD. */
static inline struct sample_tree *tree_of_resource(const char *folded, const char *resource, const char *unit,
                                                   uint64_t period) {
        struct sample_tree *t = tree_from_folded(folded);

        if (sample_tree_set_resource(t, resource, unit) < 0)
                abort();
        t->info.period = period;
        return t;
}
