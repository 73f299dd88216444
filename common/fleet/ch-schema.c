/* The fleet schema in ClickHouse: schemas/clickhouse/NNNN-*.sql, embedded at build time. Each
 * statement is sent alone (ClickHouse's HTTP interface takes one per request) with {db} replaced
 * by the URL's database. A database made here gets every table and its version in
 * schema_version; an older one is upgraded by its writers (cppd's shipper, `cppctl merge -o`),
 * one migration at a time, each adding a row: the highest is the schema. Readers read the
 * versions they know (an older one from the raw samples only); a newer one is refused by name,
 * never altered behind its owners' backs.
 *
 * Version 2 adds the rollups, a table filled by a materialized view from every INSERT into
 * samples, and back-fills them from the samples already there. ClickHouse has no transactions,
 * and an INSERT's views are fixed when it starts: an INSERT under way while the view is made, or
 * while the back-fill reads, would be counted by neither or by both. So the upgrade stops the
 * writes for as long as it takes, and only the writes: it renames samples away (RENAME waits for
 * the INSERTs under way and makes the next ones fail, as a server down would: a shipper keeps
 * the batch and sends it again, its marker unwritten), puts a plain VIEW of the same rows in its
 * place (readers go on reading; a VIEW refuses INSERTs), makes the view of the rollups, back-fills
 * every row the renamed table holds, writes the version row and renames the table back. Every sample row is then either in the
 * back-fill (written before) or through the view (written after), never both. The RENAME is
 * also the upgrade's lock: of several cppd upgrading at once, one renames and the others find
 * the table gone and wait for their next try; one that renames it after the upgrade ended finds
 * the version written and renames it back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ch-client.h"
#include "ch-migrations.h"

unsigned ch_schema_current(void) {
        return n_ch_migrations ? ch_migrations[n_ch_migrations - 1].version : 0;
}

/* Sends each statement of SQL, {db} replaced by DB. */
static int run_statements(struct ch_client *c, const char *sql, const char *db) {
        const char *p = sql;

        while (*p) {
                _cleanup_(ch_buf_done) struct ch_buf stmt = {};
                const char *end = strstr(p, ";\n");
                size_t len = end ? (size_t) (end - p) : strlen(p);
                const char *s = p, *stop = p + len;
                int r;

                /* Statement text with {db} replaced and whole-line comments left out. */
                while (s < stop) {
                        const char *eol = memchr(s, '\n', stop - s) ?: stop;
                        const char *t = s;

                        while (t < eol && (*t == ' ' || *t == '\t'))
                                t++;
                        if (!(eol - t >= 2 && t[0] == '-' && t[1] == '-'))
                                for (const char *q = s; q < eol;) {
                                        if (eol - q >= 4 && memcmp(q, "{db}", 4) == 0) {
                                                if (ch_buf_append(&stmt, db, strlen(db)) < 0)
                                                        return -ENOMEM;
                                                q += 4;
                                        } else {
                                                if (ch_buf_append(&stmt, q, 1) < 0)
                                                        return -ENOMEM;
                                                q++;
                                        }
                                }
                        if (ch_buf_append(&stmt, "\n", 1) < 0)
                                return -ENOMEM;
                        s = eol + 1;
                }
                p = end ? end + 2 : stop;
                if (strspn(stmt.data ?: "", " \t\n") == stmt.len)
                        continue;
                r = ch_query(c, stmt.data, NULL, 0, CH_QUERY_NO_DB, NULL, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Reads the version, the highest in the table: 0 and *ret, -ENOENT without the table (or the
 * database), -EBADMSG for a table of no version. Hosts that found the database missing at once
 * each add the row, and each upgrade adds one, so copies and older versions do no harm. */
static int read_version(struct ch_client *c, unsigned *ret) {
        _cleanup_free_ char *out = NULL;
        unsigned long v;
        char *end;
        int r;

        r = ch_query(c, "SELECT max(version) FROM schema_version FORMAT TabSeparated", NULL, 0,
                     CH_QUERY_READONLY, &out, NULL);
        if (r < 0)
                return r;
        errno = 0;
        v = strtoul(out, &end, 10);
        if (end == out || errno || *end != '\n' || end[1] != 0 || v == 0 || v > UINT32_MAX)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int ch_schema_check(struct ch_client *c) {
        const struct ch_url *u = ch_client_url(c);
        char was[512];
        unsigned v = 0;
        int r;

        r = read_version(c, &v);
        if (r == -ENOENT) {
                snprintf(was, sizeof was, "%s", ch_client_error(c));
                return ch_client_set_error(c, r, "%s:%u has no cppd fleet database %s (%s)", u->host, u->port,
                                           u->db, was);
        }
        if (r == -EBADMSG)
                return ch_client_set_error(c, r, "%s.schema_version at %s:%u holds no version", u->db,
                                           u->host, u->port);
        if (r < 0)
                return r;
        if (v > ch_schema_current())
                return ch_client_set_error(
                        c, -EPROTO,
                        "%s at %s:%u holds fleet schema version %u; this cppd knows versions up to %u only",
                        u->db, u->host, u->port, v, ch_schema_current());
        ch_client_set_schema(c, v);
        return 0;
}

/* The engine of DB.samples: "MergeTree", "View" (an upgrade under way), "Distributed"... into
 * BUF; "" if there is no such table. Returns 0, or -ENOENT where the database's tables kept
 * being renamed as they were listed (another cppd upgrading), or ch_query()'s errors. */
static int samples_engine(struct ch_client *c, const char *db, char *buf, size_t size) {
        _cleanup_(ch_buf_done) struct ch_buf q = {};
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        int r;

        r = ch_buf_printf(&q, "SELECT engine FROM system.tables WHERE database = ");
        if (r >= 0)
                r = ch_buf_quote(&q, db);
        if (r >= 0)
                r = ch_buf_printf(&q, " AND name = 'samples' FORMAT TabSeparated");
        if (r < 0)
                return r;
        r = ch_query_tables(c, q.data, CH_QUERY_NO_DB | CH_QUERY_READONLY, &out, &len);
        if (r < 0)
                return r;
        if (len > 0 && out[len - 1] == '\n')
                out[--len] = 0;
        snprintf(buf, size, "%s", out ?: "");
        return 0;
}

/* The back-fill: the materialized view's SELECT of 0002-rollups.sql, over the renamed table.
 * tests/integration/test-fleet.py checks that the two give the same sums. */
static const char backfill_sql[] =
        "INSERT INTO {db}.samples_hourly SELECT resource, unit, "
        "toDateTime(intDiv(toUInt32(time), 3600) * 3600) AS hour, stack, period, toUInt8(pid > 0) AS busy, "
        "sum(hits) AS sum_hits, sum(samples) AS sum_samples, "
        "sum(if(hits_squared > 0, toFloat64(hits_squared), "
        "floor(toFloat64(hits) * hits / greatest(samples, 1)))) AS sum_squares "
        "FROM {db}.samples_upgrading GROUP BY resource, unit, hour, stack, period, busy\n";

/* Puts samples back after a failed step, as well as it can: unless the version row is written
 * (the rollups are whole then), the view of the rollups and a partial back-fill dropped; the
 * VIEW dropped, the table renamed back. */
static void rollups_undo(struct ch_client *c, const char *db, bool versioned) {
        char engine[64];

        if (!versioned) {
                (void) run_statements(c, "DROP TABLE IF EXISTS {db}.samples_hourly_mv\n", db);
                (void) run_statements(c, "DROP TABLE IF EXISTS {db}.samples_hourly\n", db);
        }
        if (samples_engine(c, db, engine, sizeof engine) < 0)
                return;
        if (streq(engine, "View"))
                (void) run_statements(c, "DROP TABLE {db}.samples\n", db);
        if (streq(engine, "View") || !*engine)
                (void) run_statements(c, "RENAME TABLE {db}.samples_upgrading TO {db}.samples\n", db);
}

static int add_version(struct ch_client *c, unsigned version) {
        const struct ch_url *u = ch_client_url(c);
        char sql[512];

        snprintf(sql, sizeof sql, "INSERT INTO %s.schema_version VALUES (%u, now())", u->db, version);
        return ch_query(c, sql, NULL, 0, CH_QUERY_NO_DB, NULL, NULL);
}

/* Version 1 -> 2, SQL being 0002-rollups.sql: the steps the opening comment gives, the version
 * row written while the writes are still stopped, so that a cppd that finds samples back in
 * place finds the version too. */
static int upgrade_rollups(struct ch_client *c, const char *sql) {
        const struct ch_url *u = ch_client_url(c);
        unsigned timeout = ch_client_timeout(c), v = 0;
        char engine[64], why[512];
        bool versioned = false;
        int r;

        r = samples_engine(c, u->db, engine, sizeof engine);
        if (r == -ENOENT)
                return ch_client_set_error(
                        c, -EBUSY, "%s at %s:%u is being upgraded to fleet schema version %u by another cppd",
                        u->db, u->host, u->port, CH_SCHEMA_ROLLUPS);
        if (r < 0)
                return r;
        if (streq(engine, "Distributed"))
                return ch_client_set_error(
                        c, -EPROTO,
                        "%s at %s:%u is sharded (Distributed tables) at fleet schema version 1: upgrade each "
                        "shard's tables as schemas/README.md (\"Upgrading to version 2\") says",
                        u->db, u->host, u->port);
        if (!streq(engine, "MergeTree"))
                return ch_client_set_error(
                        c, -EBUSY,
                        "%s at %s:%u is being upgraded to fleet schema version %u by another cppd, or an "
                        "upgrade stopped half-way (samples is %s; schemas/README.md, \"Upgrading to version 2\", "
                        "says how to finish it)",
                        u->db, u->host, u->port, CH_SCHEMA_ROLLUPS, *engine ? engine : "missing");

        /* The lock and the barrier: waits for the INSERTs under way, fails the next ones. */
        r = run_statements(c, "RENAME TABLE {db}.samples TO {db}.samples_upgrading\n", u->db);
        if (r == -ENOENT || r == -EEXIST)
                return ch_client_set_error(
                        c, -EBUSY, "%s at %s:%u is being upgraded to fleet schema version %u by another cppd",
                        u->db, u->host, u->port, CH_SCHEMA_ROLLUPS);
        if (r < 0)
                return r;
        /* Another cppd may have upgraded it between our reading the version and the RENAME. */
        r = read_version(c, &v);
        if (r >= 0 && v >= CH_SCHEMA_ROLLUPS)
                return run_statements(c, "RENAME TABLE {db}.samples_upgrading TO {db}.samples\n", u->db);
        /* What an earlier attempt may have left is dropped: nothing can write into it now. */
        if (r >= 0)
                r = run_statements(c, "CREATE VIEW {db}.samples AS SELECT * FROM {db}.samples_upgrading\n",
                                   u->db);
        if (r >= 0)
                r = run_statements(c, "DROP TABLE IF EXISTS {db}.samples_hourly_mv\n", u->db);
        if (r >= 0)
                r = run_statements(c, "DROP TABLE IF EXISTS {db}.samples_hourly\n", u->db);
        if (r >= 0)
                r = run_statements(c, sql, u->db);
        if (r >= 0) {
                /* the back-fill reads every sample row once: minutes over a big fleet */
                ch_client_set_timeout(c, timeout > 3600 ? timeout : 3600);
                r = run_statements(c, backfill_sql, u->db);
                ch_client_set_timeout(c, timeout);
        }
        if (r >= 0) {
                r = add_version(c, CH_SCHEMA_ROLLUPS);
                versioned = r >= 0;
        }
        if (r >= 0)
                r = run_statements(c, "DROP TABLE {db}.samples\n", u->db);
        if (r >= 0)
                r = run_statements(c, "RENAME TABLE {db}.samples_upgrading TO {db}.samples\n", u->db);
        if (r < 0) {
                snprintf(why, sizeof why, "%s", ch_client_error(c));
                rollups_undo(c, u->db, versioned);
                return ch_client_set_error(c, r, "upgrading %s at %s:%u to fleet schema version %u: %s",
                                           u->db, u->host, u->port, CH_SCHEMA_ROLLUPS, why);
        }
        return 0;
}

int ch_schema_create(struct ch_client *c) {
        const struct ch_url *u = ch_client_url(c);
        unsigned v = 0;
        int r;

        r = read_version(c, &v);
        if (r == -ENOENT) {
                for (unsigned i = 0; i < n_ch_migrations; i++) {
                        r = run_statements(c, ch_migrations[i].sql, u->db);
                        if (r < 0)
                                return r;
                }
                r = add_version(c, ch_schema_current());
                if (r < 0)
                        return r;
        } else if (r >= 0 && v < ch_schema_current()) {
                for (unsigned i = 0; i < n_ch_migrations; i++) {
                        const struct ch_migration *m = &ch_migrations[i];

                        if (m->version <= v)
                                continue;
                        if (m->version == CH_SCHEMA_ROLLUPS)
                                r = upgrade_rollups(c, m->sql); /* it adds the version row */
                        else {
                                r = run_statements(c, m->sql, u->db);
                                if (r >= 0)
                                        r = add_version(c, m->version);
                        }
                        if (r < 0)
                                return r;
                }
        } else if (r < 0 && r != -EBADMSG)
                return r;
        return ch_schema_check(c); /* and its words for a version table gone wrong */
}
