/* Naming after the fact for the reports. Names found now change stacks (one frame becomes a
 * chain with its inlined functions). The views load their trees through a namer: each frame
 * stored as an address that debug info found now names is replaced by its chain as the tree is
 * built (store-read.c), and the store is read as it is. `cppctl sql` reads the tables
 * themselves, so for it the store is copied (SQLite's backup API, page by page) to a temporary
 * file, the names are written into the copy exactly as `cppctl symbolize` writes them into a
 * store, and the copy is read instead: a read and a write of the store, only when something is
 * named. `cppctl symbolize` writes the names once, after which neither looks again. A store
 * where nothing more can be named costs one read of its stack table (store_unnamed_modules())
 * and, per module with frames stored as addresses, one look for its debug info per command. */
#include "source-names.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debuginfo-find.h"
#include "log.h"

static struct late_names *cache;
static bool debug_dirs_given;

static void cache_free(void) {
        cache = late_names_free(cache);
}

int source_names_add_debug_dir(const char *dir) {
        int r = debuginfo_find_add_root(dir);

        debug_dirs_given = true;
        if (r < 0)
                return log_error_errno(r, "--debug-dir %s: %s", dir,
                                       r == -EINVAL ? "a path with ':' cannot be a debug root" :
                                                      strerror(-r));
        return 0;
}

static bool disabled;

void source_names_disable(void) {
        disabled = true;
}

bool source_names_enabled(void) {
        const char *off = getenv("CPPD_NO_LATE_NAMES");

        return !disabled && (!off || !streq(off, "1"));
}

int source_names_cache(struct late_names **ret) {
        if (!cache) {
                int r = late_names_new(true, &cache);

                if (r < 0)
                        return r;
                atexit(cache_free);
        }
        *ret = cache;
        return 0;
}

/* Whether the user asked for debug info from somewhere (--debug-dir, $DEBUGINFOD_URLS): then a
 * module not found is worth a warning; otherwise the header's share of unsymbolized frames says
 * enough, and every view of a store of stripped libraries would repeat the same lines. */
static bool asked(void) {
        const char *urls = getenv("DEBUGINFOD_URLS");

        return debug_dirs_given || (urls && urls[strspn(urls, " \t")] != '\0');
}

void source_names_report(struct late_names *ln) {
        if (!asked())
                return;
        for (size_t i = 0; i < ln->n_modules; i++) {
                struct late_names_module *m = &ln->modules[i];
                char status[32];
                const char *why;

                if (m->reported || m->module)
                        continue;
                m->reported = true;
                why = late_names_strerror(m);
                if (m->error == -ENOENT || m->error == -ENOKEY || m->error == -ESTALE ||
                    m->error == -EBADMSG || m->server_error)
                        log_warning("%s%s%s: frames left as addresses: %s%s", m->path,
                                    m->build_id[0] ? " build id " : "", m->build_id, why,
                                    late_names_http(m, status, sizeof status));
                else
                        log_warning("%s build id %s: frames left as addresses: %s (%s)", m->path, m->build_id,
                                    why, strerror(-m->error));
        }
}

const char *source_names_note(void) {
        static char note[512];
        const struct late_names_module *first = NULL;
        size_t more = 0;

        for (size_t i = 0; cache && i < cache->n_modules; i++) {
                const struct late_names_module *m = &cache->modules[i];

                if (m->module || !m->path_replaced)
                        continue;
                if (first)
                        more++;
                else
                        first = m;
        }
        if (!first)
                return NULL;
        snprintf(note, sizeof note,
                 "frames of %s left as addresses: the file there now has another build than the one recorded "
                 "(%.12s...)%s",
                 first->path, first->build_id, more ? " and more modules likewise" : "");
        return note;
}

void source_names_remove_copy(const char *path) {
        char other[4096];

        if (!path)
                return;
        (void) unlink(path);
        snprintf(other, sizeof other, "%s-wal", path);
        (void) unlink(other);
        snprintf(other, sizeof other, "%s-shm", path);
        (void) unlink(other);
}

/* Copies the store at DB into the new file PATH. Returns 0 or a negative errno. */
static int copy_store(const char *db, const char *path) {
        sqlite3 *from = NULL, *to = NULL;
        sqlite3_backup *b;
        int rc;

        rc = store_sqlite_open_read(db, 0, &from);
        if (rc == SQLITE_OK)
                rc = sqlite3_open_v2(path, &to, SQLITE_OPEN_READWRITE, NULL);
        if (rc == SQLITE_OK) {
                b = sqlite3_backup_init(to, "main", from, "main");
                if (!b)
                        rc = sqlite3_errcode(to);
                else {
                        rc = sqlite3_backup_step(b, -1);
                        rc = sqlite3_backup_finish(b) == SQLITE_OK && rc == SQLITE_DONE ? SQLITE_OK : rc;
                }
        }
        sqlite3_close(from);
        sqlite3_close(to);
        return rc == SQLITE_OK ? 0 : rc == SQLITE_FULL ? -ENOSPC : rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

/* Looks for names of the frames S holds as addresses, once per module (the process's cache, into
 * *ret_ln): 1 if some can be named, 0 if none (or naming is off), or a negative errno after
 * saying why. */
static int nameable(const char *db, struct store *s, struct late_names **ret_ln,
                    struct late_names_stats *ret) {
        struct late_names *ln;
        int r;

        if (!source_names_enabled())
                return 0;
        r = source_names_cache(&ln);
        if (r < 0)
                return log_error_errno(r, "Out of memory");
        *ret_ln = ln;
        r = late_names_apply(ln, s, false, ret);
        source_names_report(ln);
        if (r < 0)
                return log_warning_errno(r, "%s: cannot look for names of frames stored as addresses: %s", db,
                                         store_error(s));
        return ret->frames_named > 0;
}

int source_names_namer(const char *db, struct store *s, const struct store_namer **ret) {
        static struct store_namer namer = { .name = late_names_name };
        struct late_names_stats stats;
        struct late_names *ln;
        int r;

        *ret = NULL;
        r = nameable(db, s, &ln, &stats);
        if (r <= 0)
                return r;
        namer.userdata = ln;
        *ret = &namer;
        return 0;
}

int source_names_copy(const char *db, struct store *s, char **ret) {
        _cleanup_(store_closep) struct store *w = NULL;
        _cleanup_free_ char *path = NULL;
        struct late_names_stats stats;
        struct late_names *ln;
        uint64_t live, file;
        const char *tmp = getenv("TMPDIR");
        int fd, r;

        *ret = NULL;
        r = nameable(db, s, &ln, &stats);
        if (r <= 0)
                return r;

        if (asprintf(&path, "%s/cppctl-named-XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0)
                return log_error_errno(ENOMEM, "Out of memory");
        fd = mkstemp(path);
        if (fd < 0)
                return log_warning_errno(errno,
                                         "Cannot make a named copy of %s in %s: %m (frames stay addresses)",
                                         db, tmp && *tmp ? tmp : "/tmp");
        close(fd);
        r = copy_store(db, path);
        if (r >= 0)
                r = store_open(path, STORE_WRITE, &w);
        if (r >= 0)
                r = late_names_apply(ln, w, true, &stats);
        if (r < 0) {
                log_warning_errno(
                        r, "Cannot write the names found into a copy of %s: %s (frames stay addresses)", db,
                        w ? store_error(w) : strerror(-r));
                source_names_remove_copy(path);
                return r;
        }
        /* Big stores are copied at every view until the names are in them: say how to stop it. */
        if (store_size(w, &live, &file) >= 0 && file >= SOURCE_NAMES_HINT_BYTES)
                log_notice("%s: %" PRIu64 " frames named from debug info found now, in a copy of the store; "
                           "'cppctl symbolize --db %s' writes them into it, and views then read it as it is",
                           db, stats.frames_named, db);
        *ret = take_ptr(&path);
        return 0;
}
