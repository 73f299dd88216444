/* A ClickHouse client over its HTTP interface (libcurl): clickhouse:// URLs, credentials files,
 * queries with an optional body (INSERT data), errors in words. ch-schema.c creates and checks
 * the fleet schema (schemas/clickhouse/), ch-write.c builds and sends batches, ch-read.c loads
 * sample trees. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

#define CH_URL_SCHEME "clickhouse://"
#define CH_DEFAULT_PORT 8123
/* The longest host, user and database names a URL may carry. */
#define CH_NAME_MAX 255
/* The most bytes one answer held whole (ch_query()) may hold: a query that aggregates to
 * distinct stacks answers with one line per stack, far below this. An answer handed over a line
 * at a time (ch_query_lines()) has no bound but its lines': CH_LINE_MAX bytes each. */
#define CH_ANSWER_MAX (UINT64_C(1) << 30)
#define CH_LINE_MAX (16u << 20)
/* Bytes of an error's answer kept for its message (the rest is read and dropped). */
#define CH_ERROR_BODY_MAX (64u << 10)
/* Seconds to connect, and for a whole request unless ch_client_set_timeout() says otherwise. */
#define CH_CONNECT_TIMEOUT_S 10
#define CH_REQUEST_TIMEOUT_S 300
/* The longest credentials file (a user and a password line). */
#define CH_CREDENTIALS_MAX 4096
/* The environment variable naming cppctl's credentials file (cppd reads [fleet] credentials). */
#define CH_CREDENTIALS_ENV "CPPD_CLICKHOUSE_CREDENTIALS"

/* A parsed clickhouse://[USER@]HOST[:PORT]/DB. Strings owned (ch_url_done()). */
struct ch_url {
        char *user; /* NULL: none in the URL */
        char *host; /* a name, an IPv4 address, or an IPv6 address without its brackets */
        uint16_t port;
        char *db;
};

/* Whether S is meant as a ClickHouse URL (starts with clickhouse://), for the places that take
 * a store path or a URL. */
bool ch_url_is(const char *s);

/* Parses S. Returns 0 and fills *ret; -EINVAL with *ret_why (static text, may be NULL) saying
 * what is wrong: another scheme, no host, no database, a bad port, a database name that is not
 * [A-Za-z0-9_]+ (it is put in SQL). */
int ch_url_parse(const char *s, struct ch_url *ret, const char **ret_why);
void ch_url_done(struct ch_url *u);

struct ch_client;

/* Opens a client for URL, with the user and password of the credentials file CREDENTIALS
 * (NULL: none; the URL's user, or ClickHouse's "default", without a password). The file holds
 * the user on its first line and the password on its second (a first line left empty keeps the
 * URL's user); it must be a regular file of the reader's own (its effective uid) that neither
 * group nor others may read or write, as it holds a password, and it is opened without waiting
 * on a FIFO (read_open()). Nothing is sent yet. Returns 0 and sets *ret; -EINVAL for a bad URL,
 * -ENOENT/-EACCES for an unreadable credentials file, -EISDIR/-EBADFD for one that is not a
 * regular file, -EPERM for one of another user or that others may read, -EBADMSG for one that
 * is not two lines; ch_client_error(*ret) or, on failure, *ret_why (static or thread-local
 * text) says what. */
int ch_client_open(const char *url, const char *credentials, struct ch_client **ret, const char **ret_why);
struct ch_client *ch_client_free(struct ch_client *c);
DEFINE_CLEANUP(struct ch_client *, ch_client_free);

/* The URL's parts, for messages and for SQL. */
const struct ch_url *ch_client_url(const struct ch_client *c);

/* The last error in words ("Cannot reach ClickHouse at HOST:PORT: connection refused",
 * "ClickHouse at HOST:PORT answered 404: Code: 81, ... Database x doesn't exist"), control
 * characters escaped as \xNN; "" if none. */
const char *ch_client_error(const struct ch_client *c);

/* Sets the client's error to the formatted text, for the fleet files that find problems of
 * their own, with its control characters escaped (utf8_escape()): it may quote what a server
 * sent. Returns R. */
int ch_client_set_error(struct ch_client *c, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Seconds a whole request may take (0: no limit). */
void ch_client_set_timeout(struct ch_client *c, unsigned seconds);
unsigned ch_client_timeout(const struct ch_client *c);

/* The schema version from which the database holds the rollups (samples_hourly, filled by a
 * materialized view: schemas/clickhouse/0002-rollups.sql). */
#define CH_SCHEMA_ROLLUPS 2

/* The version ch_schema_check() read (it sets it); readers use the rollups only in a database
 * that has them. */
void ch_client_set_schema(struct ch_client *c, unsigned version);
/* USE false: every question is answered from the raw samples (tests and benchmarks compare the
 * two paths; the default is true). */
void ch_client_set_rollups(struct ch_client *c, bool use);
/* Whether readers may answer from the rollups: the database has them and they are not turned
 * off. */
bool ch_client_rollups(const struct ch_client *c);

enum {
        CH_QUERY_READONLY = 1 << 0,    /* readonly=1: ClickHouse refuses anything that writes */
        CH_QUERY_NO_DB = 1 << 1,       /* not in the URL's database (CREATE DATABASE) */
        CH_QUERY_NAMES_TYPES = 1 << 2, /* answer without a FORMAT clause as TabSeparated with a line
                                        * of column names and one of their types first */
        CH_QUERY_ONE_BLOCK = 1 << 3,   /* an INSERT's rows as one block however many (ClickHouse cuts
                                        * them every max_insert_block_size rows, 1,048,576) */
};

/* Runs SQL over HTTP POST, with BODY (LEN bytes; NULL: none) after it as the data of an INSERT.
 * With RET non-NULL, sets *ret to the answer (NUL-terminated, *ret_len bytes without the NUL;
 * free()). Returns 0; -ECONNREFUSED, -EHOSTUNREACH (unknown host), -ETIMEDOUT when ClickHouse
 * cannot be reached or does not answer in time; -ENOENT for a database or table that does not
 * exist, -EACCES for a refused user or password, -EROFS for a write refused as read-only,
 * -EINVAL for SQL ClickHouse cannot parse, -EIO for any other error status, -EFBIG for an
 * answer past CH_ANSWER_MAX, -ENOMEM. ch_client_error() has the words, with ClickHouse's own. */
int ch_query(struct ch_client *c, const char *sql, const char *body, size_t len, unsigned flags, char **ret,
             size_t *ret_len);

/* As ch_query() without a body, for a query of system.tables: ClickHouse 18.16 fails one with
 * UNKNOWN_TABLE when a table is renamed while it lists them (9 of 3,000 lists beside a loop of
 * RENAMEs: another cppd upgrading the fleet schema), so it is asked again, up to
 * CH_TABLES_TRIES times. -ENOENT after them: the tables kept changing. */
#define CH_TABLES_TRIES 5
int ch_query_tables(struct ch_client *c, const char *sql, unsigned flags, char **ret, size_t *ret_len);

/* As ch_query() without a body, for answers of any size: calls LINE for each line of the answer
 * (its newline replaced by a NUL; LEN bytes before it) as it arrives, so that the answer is never
 * held whole: memory stays within a line, CH_LINE_MAX bytes (-EFBIG, with the error in words,
 * past it). LINE returns 0, or a negative errno that stops the transfer and is returned. The
 * server holds the answer until its query ends (wait_end_of_query), so no line comes from a
 * query that fails. */
int ch_query_lines(struct ch_client *c, const char *sql, unsigned flags,
                   int (*line)(char *line, size_t len, void *userdata), void *userdata);

/* Runs the query Q (read-only; FORMAT TabSeparated added) and calls ROW with each line's
 * N_FIELDS fields (at most 16), unescaped in place, as the answer streams in: an answer is never
 * held whole. Returns 0; -EBADMSG for a line of another number of fields or a bad escape; ROW's
 * error, which stops the transfer; or ch_query_lines()'s errors. */
struct ch_buf; /* below */
int ch_query_rows(struct ch_client *c, struct ch_buf *q, int n_fields,
                  int (*row)(char **fields, void *userdata), void *userdata);

/* A decimal field of an answer into *RET: 0, or -EBADMSG for anything else (a sign, for the
 * unsigned one; out of range). */
int ch_parse_u64(const char *s, uint64_t *ret);
int ch_parse_i64(const char *s, int64_t *ret);

/* ---- the schema (ch-schema.c) ---- */

/* The schema version these sources write and read (schemas/clickhouse/NNNN-*.sql). */
unsigned ch_schema_current(void);

/* Creates the database and the tables that are missing, records the version in a new
 * database, upgrades an older one (each migration in turn, the rollups back-filled: ch-schema.c
 * says how no sample is lost or counted twice while hosts ship), then checks it as
 * ch_schema_check() does. Returns 0; -EBUSY while another cppd upgrades it (or an upgrade
 * stopped half-way); -EPROTO for a sharded database (Distributed tables), whose shards are
 * upgraded by hand; or a negative errno, with ch_client_error() in words. */
int ch_schema_create(struct ch_client *c);

/* Checks that the database holds a fleet schema these sources read: ch_schema_current() or an
 * older version (read from the raw samples only, without rollups), and records it in C.
 * Returns 0; -ENOENT if the database or its schema_version table is missing; -EPROTO if it
 * holds a newer version (ch_client_error() names both); or ch_query()'s errors. */
int ch_schema_check(struct ch_client *c);

/* ---- text for SQL and for TabSeparated bodies ---- */

/* A growing string for SQL and request bodies: DATA is malloc()ed and NUL-terminated (NULL
 * while empty); LEN bytes without the NUL. The appenders return 0 or -ENOMEM. */
struct ch_buf {
        char *data;
        size_t len, cap;
};
int ch_buf_append(struct ch_buf *b, const char *s, size_t len);
int ch_buf_printf(struct ch_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends S (NULL: "") as a quoted SQL string literal: '...' with the escapes below. */
int ch_buf_quote(struct ch_buf *b, const char *s);
/* Appends S escaped for a TabSeparated field: \\ \t \n \r \0 \b \f and ' as ClickHouse reads
 * them back. */
int ch_buf_tsv(struct ch_buf *b, const char *s);
/* Takes the string out of B (NULL if empty), leaving B empty. */
char *ch_buf_steal(struct ch_buf *b, size_t *ret_len);
void ch_buf_done(struct ch_buf *b);

/* Unescapes the TabSeparated field [S, S+LEN) in place into a NUL-terminated string. Returns
 * its length, or -EBADMSG for an escape ClickHouse does not write. */
int ch_tsv_unescape(char *s, size_t len);
