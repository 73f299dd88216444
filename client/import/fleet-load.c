/* cppctl and the fleet store: opening a clickhouse:// URL (credentials from a file named by
 * --credentials or $CPPD_CLICKHOUSE_CREDENTIALS, never from the command line) and loading
 * existing SQLite stores into it, one batch per run and time bucket, as cppd ships them: the
 * marker row of each batch makes a second load of the same store a no-op. */
#include "fleet-load.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ch-write.h"
#include "cppctl.h"
#include "log.h"
#include "url-util.h"

const char *fleet_credentials(const char *arg) {
        const char *e;

        if (arg)
                return arg;
        e = getenv(CH_CREDENTIALS_ENV);
        return e && *e ? e : NULL;
}

int log_fleet_error(int r, struct ch_client *c) {
        const char *why = c ? ch_client_error(c) : "";

        return log_error_errno(r, "%s", *why ? why : "ClickHouse: %m");
}

int fleet_open(const char *url, const char *credentials, bool create, struct ch_client **ret) {
        _cleanup_(ch_client_freep) struct ch_client *c = NULL;
        const char *why = NULL;
        char shown[1024];
        int r;

        r = ch_client_open(url, credentials, &c, &why);
        if (r == -EINVAL)
                return log_error_errno(r, "%s: %s (expected clickhouse://[USER@]HOST[:PORT]/DB)",
                                       url_redact(url, shown, sizeof shown), why ?: "bad URL");
        if (r == -ENOMEM)
                return log_error_errno(r, "Out of memory");
        if (r < 0)
                return log_error_errno(r, "%s", why ?: "Cannot open the ClickHouse credentials: %m");
        r = create ? ch_schema_create(c) : ch_schema_check(c);
        if (r < 0)
                return log_fleet_error(r, c);
        *ret = take_ptr(&c);
        return 0;
}

int fleet_load_store(struct ch_client *c, const char *path) {
        _cleanup_(store_closep) struct store *s = NULL;
        _cleanup_free_ struct ch_bucket *buckets = NULL;
        const struct ch_url *u = ch_client_url(c);
        uint64_t sent = 0, there = 0, rows = 0, hits = 0;
        size_t n = 0;
        int r;

        r = store_open(path, STORE_READ, &s);
        if (r < 0)
                return log_store_error(r, path, s);
        r = ch_store_buckets(s, 0, &buckets, &n);
        if (r < 0)
                return log_store_error(r, path, s);
        for (size_t i = 0; i < n; i++) {
                _cleanup_(ch_batch_freep) struct ch_batch *b = NULL;

                r = ch_batch_build(s, buckets[i].run, buckets[i].bucket, NULL, &b);
                if (r < 0) {
                        log_store_error(r, path, s);
                        return log_error_errno(r,
                                               "%s: cannot read run %" PRId64 " bucket %" PRId64 "; %" PRIu64
                                               " batches of it were loaded before",
                                               path, buckets[i].run, buckets[i].bucket, sent);
                }
                r = ch_batch_send(c, b);
                if (r < 0) {
                        log_fleet_error(r, c);
                        return log_error_errno(r,
                                               "%s: %" PRIu64
                                               " of %zu batches loaded into %s; loading it again "
                                               "sends the rest, and counts none twice",
                                               path, sent + there, n, u->db);
                }
                if (r > 0) {
                        sent++;
                        rows += b->rows;
                        hits += b->hits;
                } else
                        there++;
        }
        printf("Loaded %s into %s at %s:%u: %" PRIu64 " batch%s sent (%" PRIu64 " sample rows, %" PRIu64
               " hits), %" PRIu64 " already there.\n",
               path, u->db, u->host, u->port, sent, sent == 1 ? "" : "es", rows, hits, there);
        return 0;
}
