/* Which time buckets a run has samples in, for shipping them one by one (the daemon's fleet
 * spool). One query per call over the bucket index (schemas/0002-buckets.sql), grouped by
 * bucket; a call covers the buckets closed since the last one, so a handful of rows. */
#include "store.h"

#include <errno.h>
#include <stdlib.h>

#include "grow.h"
#include "store-internal.h"

int store_run_buckets(struct store *s, int64_t run_id, int64_t from, int64_t until, struct store_bucket **ret,
                      size_t *ret_n) {
        _cleanup_free_ struct store_bucket *b = NULL;
        sqlite3_stmt *st = NULL;
        size_t n = 0, cap = 0;
        int rc;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT s.bucket, count(*), sum(s.hits) FROM sample AS s "
                                "JOIN thread AS t ON t.id = s.thread_id "
                                "JOIN process AS p ON p.id = t.process_id "
                                "WHERE s.bucket >= ?1 AND s.bucket < ?2 AND p.run_id = ?3 "
                                "GROUP BY s.bucket ORDER BY s.bucket",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, from);
        sqlite3_bind_int64(st, 2, until);
        sqlite3_bind_int64(st, 3, run_id);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                if (GROW(b, cap, n + 1) < 0) {
                        sqlite3_finalize(st);
                        return -ENOMEM;
                }
                b[n++] = (struct store_bucket) {
                        .bucket = sqlite3_column_int64(st, 0),
                        .rows = (uint64_t) sqlite3_column_int64(st, 1),
                        .hits = (uint64_t) sqlite3_column_int64(st, 2),
                };
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
                return store_errno(s, rc);
        *ret = take_ptr(&b);
        *ret_n = n;
        return 0;
}
