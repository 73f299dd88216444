/* The ClickHouse fleet schema, embedded at build time from schemas/clickhouse/NNNN-*.sql by
 * schemas/embed.py --prefix ch. */
#pragma once

struct ch_migration {
        unsigned version; /* schema_version.version after it ran */
        const char *name;
        const char *sql; /* statements ending in ';' at the end of a line; {db}: the database */
};

extern const struct ch_migration ch_migrations[];
extern const unsigned n_ch_migrations;
