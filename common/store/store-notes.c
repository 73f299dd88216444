/* What a view's header says beyond the samples: how a resource was counted where that has a cost
 * to say (alloc-* by uprobes), the processes whose resource a run could not count
 * (run_resource.uncounted, schema version 7), and its Python frames (run_resource.python_*,
 * version 8). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store-internal.h"
#include "store.h"

int store_set_uncounted(struct store *s, int64_t run_id, int64_t resource_id, uint64_t n, const char *note) {
        sqlite3_stmt *st;
        int rc;

        rc = sqlite3_prepare_v2(s->db,
                                "UPDATE run_resource SET uncounted = ?, uncounted_note = ? "
                                "WHERE run_id = ? AND resource_id = ?",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, (int64_t) n);
        store_bind_text(st, 2, note ? note : "");
        sqlite3_bind_int64(st, 3, run_id);
        sqlite3_bind_int64(st, 4, resource_id);
        rc = store_step_done(s, st);
        sqlite3_finalize(st);
        return rc;
}

int store_set_python(struct store *s, int64_t run_id, int64_t resource_id, uint64_t samples, uint64_t cut,
                     uint64_t unreadable) {
        sqlite3_stmt *st;
        int rc;

        rc = sqlite3_prepare_v2(
                s->db,
                "UPDATE run_resource SET python_samples = ?, python_cut = ?, python_unreadable = ? "
                "WHERE run_id = ? AND resource_id = ?",
                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, (int64_t) samples);
        sqlite3_bind_int64(st, 2, (int64_t) cut);
        sqlite3_bind_int64(st, 3, (int64_t) unreadable);
        sqlite3_bind_int64(st, 4, run_id);
        sqlite3_bind_int64(st, 5, resource_id);
        rc = store_step_done(s, st);
        sqlite3_finalize(st);
        return rc;
}

int store_python_note(struct store *s, const struct store_filter *f, char **ret) {
        int64_t samples = 0, cut = 0, unreadable = 0;
        sqlite3_stmt *st;
        int rc;

        *ret = NULL;
        rc = sqlite3_prepare_v2(
                s->db,
                "SELECT sum(rr.python_samples), sum(rr.python_cut), sum(rr.python_unreadable) "
                "FROM run_resource AS rr JOIN resource AS r ON r.id = rr.resource_id "
                "WHERE r.name = ?1 AND (?2 = 0 OR rr.run_id = ?2) "
                "AND (?3 IS NULL OR rr.run_id IN (SELECT id FROM run WHERE host = ?3))",
                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return 0;
        store_bind_text(st, 1, f->resource);
        sqlite3_bind_int64(st, 2, f->run_id);
        store_bind_text(st, 3, f->host);
        if (sqlite3_step(st) == SQLITE_ROW) {
                samples = sqlite3_column_int64(st, 0);
                cut = sqlite3_column_int64(st, 1);
                unreadable = sqlite3_column_int64(st, 2);
        }
        sqlite3_finalize(st);
        if (samples <= 0)
                return 0;
        {
                char cut_text[96] = "", unreadable_text[96] = "";

                if (cut > 0)
                        snprintf(cut_text, sizeof cut_text,
                                 "; %" PRId64 " with their outermost Python frames cut (deeper than 64)",
                                 cut);
                if (unreadable > 0)
                        snprintf(unreadable_text, sizeof unreadable_text,
                                 "; %" PRId64 " frames unreadable ([python: unreadable])", unreadable);
                if (asprintf(ret,
                             "%s: Python frames in %" PRId64 " samples (CPython's, read at each sample)%s%s",
                             f->resource, samples, cut_text, unreadable_text) < 0) {
                        *ret = NULL;
                        return -ENOMEM;
                }
        }
        return 0;
}

int store_collect_note(struct store *s, const struct store_filter *f, char **ret) {
        sqlite3_stmt *st;
        int64_t n = 0;
        char *note = NULL, *cost = NULL, *missed = NULL;
        bool probed = false;
        int rc, r = 0;

        *ret = NULL;
        /* The runs load_header() reads: by run and host. */
        rc = sqlite3_prepare_v2(s->db,
                                "SELECT rr.uncounted, rr.uncounted_note, rr.event FROM run_resource AS rr "
                                "JOIN resource AS r ON r.id = rr.resource_id "
                                "WHERE r.name = ?1 AND (?2 = 0 OR rr.run_id = ?2) "
                                "AND (?3 IS NULL OR rr.run_id IN (SELECT id FROM run WHERE host = ?3)) "
                                "ORDER BY rr.run_id",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return 0; /* a store before version 7, read as it is: nothing to say */
        store_bind_text(st, 1, f->resource);
        sqlite3_bind_int64(st, 2, f->run_id);
        store_bind_text(st, 3, f->host);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const char *text = (const char *) sqlite3_column_text(st, 1);
                const char *event = (const char *) sqlite3_column_text(st, 2);

                n += sqlite3_column_int64(st, 0);
                probed |= event && strncmp(event, "uprobe:", 7) == 0;
                if (!note && sqlite3_column_int64(st, 0) > 0 && text && *text && !(note = strdup(text))) {
                        sqlite3_finalize(st);
                        return -ENOMEM;
                }
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE) {
                free(note);
                return store_errno(s, rc);
        }
        /* What it cost where it was counted by uprobes, and where it was not counted. */
        if (probed &&
            asprintf(&cost,
                     "%s: counted by uprobes on glibc's allocator: each allocation call of "
                     "a probed process trapped into the kernel (about 0.8 us)",
                     f->resource) < 0)
                cost = NULL, r = -ENOMEM;
        if (r >= 0 && n > 0 &&
            asprintf(&missed, "%s: not measured in %" PRId64 " process%s%s%s", f->resource, n,
                     n == 1 ? "" : "es", note ? ", " : "", note ? note : "") < 0)
                missed = NULL, r = -ENOMEM;
        if (r >= 0 && (cost || missed) &&
            asprintf(ret, "%s%s%s", cost ?: "", cost && missed ? "\n" : "", missed ?: "") < 0)
                *ret = NULL, r = -ENOMEM;
        free(note);
        free(cost);
        free(missed);
        return r;
}
