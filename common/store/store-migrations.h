/* The store's schema, embedded at build time by schemas/embed.py: the migrations from
 * schemas/NNNN-*.sql, which bring an older store to the current version, and the current schema
 * from schemas/schema.sql, which a new store is created with. */
#pragma once

struct store_migration {
        unsigned version; /* PRAGMA user_version after it ran */
        const char *name;
        const char *sql;
};

extern const struct store_migration store_migrations[];
extern const unsigned n_store_migrations;
extern const char store_schema[]; /* at the version of the last migration */
