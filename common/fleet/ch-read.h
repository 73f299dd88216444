/* Reading the fleet store: the resources it holds and filtered sample trees, exactly as
 * store-read.c loads them from a SQLite store, so that every view over clickhouse:// equals the
 * same view over the merged SQLite stores. */
#pragma once

#include "ch-client.h"
#include "name-table.h"
#include "sample-tree.h"
#include "store.h"

/* Returns the number of resources with samples and sets *ret to a NULL-terminated, sorted array
 * of their names (strv_free()), or ch_query()'s errors. */
int ch_list_resources(struct ch_client *c, char ***ret);

/* 1 if some stack keeps a call site (an address or a source line), 0 if none, or a negative
 * errno: as store_has_call_sites(). */
int ch_has_call_sites(struct ch_client *c);

/* Loads the samples F selects into a sample tree, as store_load_tree_shared() does: ClickHouse
 * filters the samples and sums them per (stack, period); the stacks that remain are fetched once
 * by hash; the labels, --focus/--ignore/--hide, inline folding, demangling and the weighting of
 * periods by their gcd are tree-load.c's steps, the ones store-read.c takes. NAMES: as for
 * store_load_tree_shared() (NULL: the tree's own). Returns 0 and sets *ret; -ENOENT if the fleet
 * has no such resource; -EBADMSG for an answer that does not parse or rows that do not hold
 * together; -EOVERFLOW past 2^63 hits; ch_query()'s errors. */
int ch_load_tree_shared(struct ch_client *c, const struct store_filter *f, struct name_table *names,
                        struct sample_tree **ret);
