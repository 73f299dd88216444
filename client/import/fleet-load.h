/* The fleet loader: SQLite stores into a ClickHouse fleet store (cppctl merge), with errors
 * logged in words. */
#pragma once

#include "ch-client.h"

/* Loads every run and bucket of the SQLite store PATH into C as batches (ch-write.c): a batch
 * already there is left alone, so loading a store twice counts it once. Prints what it did.
 * Returns 0 or a negative errno after logging. */
int fleet_load_store(struct ch_client *c, const char *path);
