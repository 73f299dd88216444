/* The cache of big trees' indexes, kept between views (index-cache.c): part of the SQLite
 * source, as a store file's identity is its key. */
#pragma once

#include <stdbool.h>

#include "source.h"
#include "store.h"

/* The index of S's tree for filter F, which must select a resource and nothing else: mapped
 * from the cache directory when it is current, else built from the store (and kept there if the
 * tree is big). Returns 0 and sets *ret, or store_load_tree()'s errors. */
int index_cache_load(struct store *s, const struct store_filter *f, bool inverted, struct view_data *ret);

/* Whether the cache can keep the indexes of S's resource F->resource (S has an identity, and
 * there is a cache directory): where it cannot, an index of every sample is built for each
 * view, in memory. */
bool index_cache_usable(struct store *s, const struct store_filter *f);

/* A new file, unnamed, in the cache directory, for an index to be laid out in rather than in
 * memory (tree_index_new_in()): a view's own index of a big filtered tree, or one on its way to
 * the cache. Returns its descriptor (the caller closes it), or -1 where there is no cache
 * directory to use: the index is then laid out in memory. */
int index_cache_scratch(void);
