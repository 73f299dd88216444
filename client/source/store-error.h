/* A SQLite store's errors in words a user can act on, for every command that opens one. */
#pragma once

#include "store.h"

/* Reports a failure R to open or read store PATH (R from store_open() or a read; S may be NULL:
 * its store_error() adds SQLite's words). Returns R, or -EIO for the errors it explains. */
int log_store_error(int r, const char *path, const struct store *s);
