/* Interned strings: each distinct name gets a small dense id, so trees and call paths compare
 * and hash integers instead of strings. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

#define NAME_NONE UINT32_MAX

struct name_table;

/* NULL: no memory. */
struct name_table *name_table_new(void);
struct name_table *name_table_free(struct name_table *t);
DEFINE_CLEANUP(struct name_table *, name_table_free);

/* Returns the id of the LEN bytes at S (which need not be NUL-terminated), adding them if new;
 * -ENOMEM; -EINVAL if they hold a NUL; -E2BIG past NAME_TABLE_MAX entries. Ids count up from 0 in order of first sight. */
int64_t name_table_intern(struct name_table *t, const char *s, size_t len);

/* Returns the id of S, or NAME_NONE if S was never interned. */
uint32_t name_table_find(const struct name_table *t, const char *s);

/* Returns the NUL-terminated name of ID, valid as long as the table. ID must exist. */
const char *name_table_get(const struct name_table *t, uint32_t id);

size_t name_table_size(const struct name_table *t);
