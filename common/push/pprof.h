/* pprof's profile format (pprof.c): sample trees in, gzipped Profile bytes out. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "name-table.h"
#include "sample-tree.h"
#include "tree-index.h"

/* Encodes TREES (N of them, one sample type each, in that order) as a gzipped pprof Profile, as
 * pprof.c's opening comment lays out. TIME_NANOS and DURATION_NANOS (unix ns; 0: unset) say
 * what time the profile covers. The same trees and times give the same bytes. Returns 0 and
 * sets *ret (malloc()ed, the caller frees it) and *ret_size, or -ENOMEM, -E2BIG. */
int pprof_encode(struct sample_tree *const *trees, size_t n, int64_t time_nanos, int64_t duration_nanos,
                 uint8_t **ret, size_t *ret_size);

/* As pprof_encode() for one tree, with only the stacks below node TOP, as if TOP were the root:
 * a unit's profile out of a tree of all units (store_filter.unit_roots). */
int pprof_encode_below(const struct sample_tree *t, uint32_t top, int64_t time_nanos, int64_t duration_nanos,
                       uint8_t **ret, size_t *ret_size);

/* Writes to F what pprof_encode() makes of the one tree that X indexes (no time set), as X is
 * walked (tree_index_each_stack(), twice: the functions and binaries first, then the samples,
 * packed and gzipped as they come), so that the tree is never loaded nor the Profile held. X's
 * header must know its labels' binaries and stored names (an index laid out from the store, not
 * a cached one). Returns 0, -ENOMEM, -E2BIG past 4 GiB before compression (nothing written
 * then), -EIO, or -EBADMSG for an index that does not add up. */
int pprof_write_index(FILE *f, const struct tree_index *x);

/* As pprof_write_index(), for the N trees XS[0..n) index (one sample type each, in that order),
 * what pprof_encode() makes of them: their stacks are merged as they are walked side by side
 * (tree_index_stacks_next()), each index's in the same order of names, so that no tree and no
 * merged tree is held: memory is the functions, binaries and one stack per index. Returns as
 * pprof_write_index() does, or -EINVAL for N 0. */
int pprof_write_indexes(FILE *f, const struct tree_index *const *xs, size_t n);

/* Gzips DATA[0..SIZE) into *ret (malloc()ed) and *ret_size. Deflate's gzip wrapper (window bits
 * 15 + 16) writes a header with no name and no time, so the bytes depend on DATA alone. Returns
 * 0, -ENOMEM, -E2BIG past 4 GiB, or -EIO. */
int pprof_gzip(const uint8_t *data, size_t size, uint8_t **ret, size_t *ret_size);

/* The strings of STRINGS as a protobuf string table must hold them: well-formed UTF-8, each byte
 * that starts no character replaced by U+FFFD (a symbol, a perf-PID.map line or a folded file
 * may hold any bytes, and a receiver that checks, as Go's protobuf does, refuses the whole
 * message for one such name). Sets *ret to name_table_size() pointers, into STRINGS where a
 * string is well-formed already, to copies elsewhere; pprof_string_table_free() frees them.
 * Returns 0 or -ENOMEM. */
int pprof_string_table(const struct name_table *strings, char ***ret);
void pprof_string_table_free(const struct name_table *strings, char **table);

/* pprof's name for the gtick UNIT of a resource: "1 ms of CPU time" -> "milliseconds", "bytes";
 * "count" for the rest (pprof reads a unit such as "1 page fault" as a number to print after
 * the value). */
const char *pprof_unit(const char *unit);

/* A resource's sample type name: alloc-bytes and alloc-count as Go's heap profiles name them
 * (alloc_space, alloc_objects), others as they are. */
const char *pprof_type(const char *resource);
