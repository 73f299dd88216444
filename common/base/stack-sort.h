/* Stacks (sequences of 32-bit ids, root first) with counts, sorted and summed in bounded memory:
 * runs sorted in memory, spilled to a temporary file, merged. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

/* The most ids one stack may hold: as many frames as a folded line (folded.h). */
#define STACK_SORT_MAX_IDS 8192

struct stack_sort;

/* Allocates a sorter that holds at most about MEMORY bytes of stacks before it spills a sorted run
 * to a temporary file in $TMPDIR (else /tmp). NULL: no memory. */
struct stack_sort *stack_sort_new(size_t memory);

/* Frees S and its temporary file (NULL: nothing); returns NULL. */
struct stack_sort *stack_sort_free(struct stack_sort *s);
DEFINE_CLEANUP(struct stack_sort *, stack_sort_free);

/* Adds the stack IDS[0..n) (0 < n <= STACK_SORT_MAX_IDS) with COUNT. Returns 0, -ENOMEM, or the
 * negative errno of a failed write of a run (-ENOSPC: the temporary file's disk is full). Not
 * after stack_sort_next(). */
int stack_sort_add(struct stack_sort *s, const uint32_t *ids, size_t n, uint64_t count);

/* Returns the stacks added, in order (ids compared one by one from the root; a stack before the
 * stacks it is a prefix of), each distinct stack once with the sum of its counts (the caller
 * bounds the sums): 1 and sets *ret_ids (valid until the next call), *ret_n and *ret_count; 0
 * when all were returned; or a negative errno (a failed read of the temporary file). In this
 * order the stacks that begin with any one prefix come one after the other. */
int stack_sort_next(struct stack_sort *s, const uint32_t **ret_ids, size_t *ret_n, uint64_t *ret_count);

/* The stacks added so far, counting repeats. */
uint64_t stack_sort_added(const struct stack_sort *s);
