/* Profiles of several resources joined by call path: the rows of the paper's "where and why"
 * table (page faults beside CPU time), of --ratio, and of any comparison of two profiles. The
 * profiles must be of one kind over trees that share a name table, so that a path is the same
 * sequence of name ids in each. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "profile.h"

struct profile_join_row {
        uint32_t path; /* offset of the first name in profile_join.names */
        uint32_t len;
};

struct profile_join {
        size_t n_columns;
        const struct profile *const *columns; /* borrowed */
        struct profile_join_row *rows;
        size_t n_rows;
        uint32_t *names;      /* every row's path, concatenated */
        uint64_t *hits;       /* hits[row * n_columns + column]: 0 where a profile lacks the path */
        size_t n_omitted;     /* paths in no row: the columns' n_omitted summed... */
        bool omitted_partial; /* ...or, where a column left some unseen, at least this many */
};

/* Joins the entries of COLUMNS[0..n) (n >= 1; borrowed, they must outlive the join) by path.
 * Rows are sorted by the first column's hits, then the next's, most first, ties in path order.
 * The paths the columns omitted are counted as their sum (a path omitted in two columns is
 * counted twice: exact where at most one column omits any), and partial where one's are. The
 * caller that knows better sets n_omitted and omitted_partial after. Returns 0 and sets *ret,
 * or -ENOMEM. */
int profile_join(const struct profile *const *columns, size_t n, struct profile_join **ret);
struct profile_join *profile_join_free(struct profile_join *j);
DEFINE_CLEANUP(struct profile_join *, profile_join_free);

static inline const uint32_t *profile_join_path(const struct profile_join *j,
                                                const struct profile_join_row *r) {
        return j->names + r->path;
}

static inline uint64_t profile_join_hits(const struct profile_join *j, size_t row, size_t column) {
        return j->hits[row * j->n_columns + column];
}
