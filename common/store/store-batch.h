/* Adding millions of stack nodes and sample rows to a store in one transaction, many rows a
 * statement. */
#pragma once

#include <stdint.h>

#include "store.h"

struct store_batch;

/* Starts adding rows to S in S's transaction (store_begin()), during which nothing else adds
 * stacks to S. The triggers on samples are set aside until store_batch_finish(): the caller must
 * finish the batch or roll the transaction back, and adds no sample but through the batch
 * meanwhile. Returns 0 and sets *ret, or a negative errno. */
int store_batch_new(struct store *s, struct store_batch **ret);

/* Frees B; the rows not yet inserted are dropped (call store_batch_flush() to keep them).
 * Returns NULL. */
struct store_batch *store_batch_free(struct store_batch *b);
DEFINE_CLEANUP(struct store_batch *, store_batch_free);

/* Finds the stack node (PARENT_ID, FRAME_ID) (PARENT_ID 0: an outermost frame). Returns 1 and
 * sets *ret_id, 0 when there is none, or a negative errno. */
int store_batch_find_stack(struct store_batch *b, int64_t parent_id, int64_t frame_id, int64_t *ret_id);

/* Adds the stack node (PARENT_ID, FRAME_ID) at DEPTH (its parent's plus one), which the caller
 * knows is not in the store, and sets *ret_id to its id: the row may wait for more to be inserted
 * with it. Returns 0 or a negative errno (-EEXIST: the node was there, -E2BIG: ids past 32
 * bits). */
int store_batch_add_stack(struct store_batch *b, int64_t parent_id, int64_t frame_id, unsigned depth,
                          int64_t *ret_id);

/* store_add_samples(), the row possibly waiting for more. */
int store_batch_add_samples(struct store_batch *b, int64_t resource_id, int64_t bucket, int64_t thread_id,
                            int64_t stack_id, uint64_t hits, uint64_t samples, uint64_t hits_squared);

/* Inserts the rows that wait. Returns 0 or a negative errno. */
int store_batch_flush(struct store_batch *b);

/* Inserts the rows that wait and puts back what store_batch_new() set aside, counting the rows
 * added as one change of the store's generation. Returns 0 or a negative errno. */
int store_batch_finish(struct store_batch *b);
