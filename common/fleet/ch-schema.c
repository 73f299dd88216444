/* The fleet schema in ClickHouse: schemas/clickhouse/NNNN-*.sql, embedded at build time. Each
 * statement is sent alone (ClickHouse's HTTP interface takes one per request) with {db} replaced
 * by the URL's database. A database made here gets every table and one schema_version row; a
 * database already there must hold the version these sources know, else readers and writers
 * would disagree on columns: another version is refused by name, never altered behind its
 * owners' backs. */
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

/* Reads the version: 0 and *ret, -ENOENT without the table (or the database), -EBADMSG for a
 * table of no version or several. Hosts that found the database missing at once each add the
 * row, so copies of one version are one version. */
static int read_version(struct ch_client *c, unsigned *ret) {
        _cleanup_free_ char *out = NULL;
        unsigned long v;
        char *end;
        int r;

        r = ch_query(c, "SELECT DISTINCT version FROM schema_version FORMAT TabSeparated", NULL, 0,
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
                return ch_client_set_error(c, r, "%s.schema_version at %s:%u does not hold one version",
                                           u->db, u->host, u->port);
        if (r < 0)
                return r;
        if (v != ch_schema_current())
                return ch_client_set_error(
                        c, -EPROTO,
                        "%s at %s:%u holds fleet schema version %u; this cppd knows version %u only", u->db,
                        u->host, u->port, v, ch_schema_current());
        return 0;
}

int ch_schema_create(struct ch_client *c) {
        const struct ch_url *u = ch_client_url(c);
        unsigned v = 0;
        char sql[512];
        int r;

        r = read_version(c, &v);
        if (r == -ENOENT) {
                for (unsigned i = 0; i < n_ch_migrations; i++) {
                        r = run_statements(c, ch_migrations[i].sql, u->db);
                        if (r < 0)
                                return r;
                }
                snprintf(sql, sizeof sql, "INSERT INTO %s.schema_version VALUES (%u, now())", u->db,
                         ch_schema_current());
                r = ch_query(c, sql, NULL, 0, CH_QUERY_NO_DB, NULL, NULL);
                if (r < 0)
                        return r;
        } else if (r < 0 && r != -EBADMSG)
                return r;
        return ch_schema_check(c); /* and its words for a version table gone wrong */
}
