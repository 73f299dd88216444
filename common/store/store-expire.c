/* Retention: deleting old samples and what only they needed. Samples go by time bucket (the
 * index sample_bucket makes the oldest cheap to find). The trie of stacks is pruned to the nodes
 * that some sample ends at or passes through: a recursive walk up from the sampled nodes marks
 * them. Frames, functions and modules follow by reference; threads and processes without
 * samples go too (a collector that still runs them adds them again, once told to forget its
 * cached ids). The live size is the pages in use, not the file: freed pages are reused, and given
 * back to the file system where auto_vacuum is incremental (every store made by cppd). */
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "store-internal.h"

/* While shrinking for size, stop at this share of the bound, so that the next flushes do not
 * start the work over at once. */
#define EXPIRE_TARGET_PERCENT 90

static int live_bytes(struct store *s, uint64_t *ret) {
        int64_t pages, free_pages, page_size;
        int r;

        r = store_query_int(s, "PRAGMA page_count", &pages);
        if (r >= 0)
                r = store_query_int(s, "PRAGMA freelist_count", &free_pages);
        if (r >= 0)
                r = store_query_int(s, "PRAGMA page_size", &page_size);
        if (r < 0)
                return r;
        *ret = (uint64_t) (pages - free_pages) * (uint64_t) page_size;
        return 0;
}

static int delete_before(struct store *s, int64_t bucket, uint64_t *deleted) {
        sqlite3_stmt *st;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db, "DELETE FROM sample WHERE bucket < ?", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, bucket);
        r = store_step_done(s, st);
        sqlite3_finalize(st);
        if (r >= 0)
                *deleted += sqlite3_changes(s->db);
        return r;
}

/* Deletes every row that no sample needs. */
static int collect_garbage(struct store *s) {
        static const char *const steps[] = {
                "WITH RECURSIVE live (id) AS ("
                "    SELECT DISTINCT stack_id FROM sample"
                "    UNION SELECT st.parent_id FROM stack AS st JOIN live ON st.id = live.id"
                "          WHERE st.parent_id IS NOT NULL) "
                "DELETE FROM stack WHERE id NOT IN (SELECT id FROM live)",
                "DELETE FROM frame WHERE id NOT IN (SELECT frame_id FROM stack)",
                "DELETE FROM function WHERE id NOT IN (SELECT function_id FROM frame)",
                "DELETE FROM module WHERE id NOT IN (SELECT module_id FROM function WHERE module_id IS NOT NULL)",
                "DELETE FROM thread WHERE id NOT IN (SELECT DISTINCT thread_id FROM sample)",
                "DELETE FROM process WHERE id NOT IN (SELECT process_id FROM thread)",
        };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                r = store_exec(s, steps[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

int store_expire(struct store *s, int64_t cutoff, uint64_t max_bytes, uint64_t *ret_deleted) {
        uint64_t deleted = 0, live;
        int64_t oldest;
        int r;

        r = store_begin(s);
        if (r < 0)
                return r;
        if (cutoff > 0)
                r = delete_before(s, cutoff, &deleted);
        if (r >= 0 && deleted > 0)
                r = collect_garbage(s);
        while (r >= 0 && max_bytes > 0) {
                r = live_bytes(s, &live);
                if (r < 0 || live <= max_bytes * EXPIRE_TARGET_PERCENT / 100)
                        break;
                r = store_query_int(s, "SELECT ifnull(min(bucket), -1) FROM sample", &oldest);
                if (r < 0 || oldest < 0)
                        break; /* nothing left to delete: the bound is below the metadata */
                r = delete_before(s, oldest + 1, &deleted);
                if (r >= 0)
                        r = collect_garbage(s);
        }
        if (r >= 0)
                r = store_commit(s);
        if (r < 0) {
                store_rollback(s);
                return r;
        }
        store_forget_caches(s);
        /* Outside the transaction: hand freed pages back, where auto_vacuum allows. */
        (void) store_exec(s, "PRAGMA incremental_vacuum");
        *ret_deleted = deleted;
        return 0;
}

int store_size(struct store *s, uint64_t *ret_live, uint64_t *ret_file) {
        const char *path = sqlite3_db_filename(s->db, "main");
        char wal[4096];
        struct stat st;
        uint64_t file = 0;
        int r;

        r = live_bytes(s, ret_live);
        if (r < 0)
                return r;
        if (path && stat(path, &st) == 0)
                file += st.st_size;
        if (path && (size_t) snprintf(wal, sizeof wal, "%s-wal", path) < sizeof wal && stat(wal, &st) == 0)
                file += st.st_size;
        *ret_file = file;
        return 0;
}
