/* The SQL functions over the store (sql-ext.c): downward, upward, functions, body. */
#pragma once

struct sqlite3;

/* Registers them on DB. Returns an SQLite result code. */
int sql_ext_register(struct sqlite3 *db);

/* Their names. */
static const char *const sql_ext_tables[] = { "downward", "upward", "functions", "body" };
