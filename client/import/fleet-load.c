/* cppctl merge into a fleet store: loading existing SQLite stores into ClickHouse, one batch per
 * run and time bucket, as cppd ships them: the marker row of each batch makes a second load of
 * the same store a no-op. The client comes from fleet_open() (source/fleet-open.c). */
#include "fleet-load.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "ch-write.h"
#include "fleet-open.h"
#include "log.h"
#include "store-error.h"

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
