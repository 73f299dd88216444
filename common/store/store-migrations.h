/* The schema migrations, embedded at build time from schemas/NNNN-*.sql by schemas/embed.py. */
#pragma once

struct store_migration {
        unsigned version; /* PRAGMA user_version after it ran */
        const char *name;
        const char *sql;
};

extern const struct store_migration store_migrations[];
extern const unsigned n_store_migrations;
