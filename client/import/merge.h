/* cppctl merge's copying of stores into a SQLite store or a ClickHouse fleet store (merge.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct merge_args {
        const char *db;          /* the store merged into, or a clickhouse:// URL */
        const char *credentials; /* --credentials FILE, for a URL */
        const char *output;      /* the last -o, which must be a clickhouse:// URL; NULL: none */
        char **inputs;           /* borrowed from argv */
        size_t n_inputs;
};

/* Copies A's inputs into A->db, saying what it did. Returns 0; -EINVAL after reporting an
 * input that is the output or is named twice, or an -o that names a file; or another negative
 * errno after reporting (what was copied before stays). */
int merge_stores(const struct merge_args *a);
