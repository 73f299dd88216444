/* Opening a ClickHouse fleet store from the command line: the credentials file, the client
 * with its schema checked, and the client's errors in words. Readers (source-clickhouse.c)
 * and writers (cppctl merge's fleet loader) share it. */
#pragma once

#include <stdbool.h>

#include "ch-client.h"

/* The credentials file for a ClickHouse URL: ARG (--credentials FILE) if given, else
 * $CPPD_CLICKHOUSE_CREDENTIALS, else NULL (no password). */
const char *fleet_credentials(const char *arg);

/* Opens a client for URL with CREDENTIALS (a file, may be NULL). CREATE: make the database and
 * its tables if missing (writers); else the schema must be there (readers). Checks the schema
 * version either way. Returns 0 and sets *ret, or a negative errno after logging. */
int fleet_open(const char *url, const char *credentials, bool create, struct ch_client **ret);

/* Logs the client's last error R. Returns R. */
int log_fleet_error(int r, struct ch_client *c);
