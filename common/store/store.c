/* Opening the store: checking that the file is ours (PRAGMA application_id), at a schema we
 * know (PRAGMA user_version), creating a new one at the current schema or migrating an older one
 * forward, in one transaction, and WAL so that readers never block the writer. SQLite result
 * codes become negative errno here and nowhere else, so callers can tell a full disk from a
 * corrupt file from a missing one. */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store-internal.h"
#include "store-migrations.h"

/* The mode of a new store and, through SQLite, of its -wal and -shm files. */
#define STORE_FILE_MODE 0640

/* How long a writer waits for another writer's transaction before giving up with -EBUSY. */
#define STORE_BUSY_TIMEOUT_MS 10000

/* The words of the last failed store_open() in this thread, which frees its store. */
static _Thread_local char open_error[512];

int store_errno(struct store *s, int rc) {
        int sys;

        switch (rc & 0xff) {
        case SQLITE_OK:
        case SQLITE_ROW:
        case SQLITE_DONE:
                return 0;
        }
        if (s && s->db)
                snprintf(s->error, sizeof s->error, "%s", sqlite3_errmsg(s->db));
        else
                snprintf(s->error, sizeof s->error, "%s", sqlite3_errstr(rc));

        switch (rc & 0xff) {
        case SQLITE_NOMEM:
                return -ENOMEM;
        case SQLITE_FULL:
                return -ENOSPC;
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
        case SQLITE_FORMAT:
        case SQLITE_ERROR: /* SQL that fits our schema failed: the schema was edited */
        case SQLITE_SCHEMA:
        case SQLITE_MISMATCH:
                return -EBADMSG;
        case SQLITE_READONLY:
                return -EROFS;
        case SQLITE_PERM:
        case SQLITE_AUTH:
                return -EACCES;
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
                return -EBUSY;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_INTERRUPT:
                return -EINTR;
        case SQLITE_CONSTRAINT:
                return rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY ? -EEXIST :
                                                                                              -EINVAL;
        case SQLITE_CANTOPEN:
        case SQLITE_IOERR:
                sys = s && s->db ? sqlite3_system_errno(s->db) : 0;
                if (rc == SQLITE_IOERR_NOMEM)
                        return -ENOMEM;
                if (sys == ENOSPC || sys == EDQUOT)
                        return -ENOSPC;
                if (sys > 0)
                        return -sys;
                return (rc & 0xff) == SQLITE_CANTOPEN ? -ENOENT : -EIO;
        default:
                return -EIO;
        }
}

int store_stmt(struct store *s, enum store_stmt id, const char *sql, sqlite3_stmt **ret) {
        sqlite3_stmt *st = s->stmts[id];
        int rc;

        if (!st) {
                rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
                if (rc != SQLITE_OK)
                        return store_errno(s, rc);
                s->stmts[id] = st;
        } else {
                sqlite3_reset(st);
                sqlite3_clear_bindings(st);
        }
        *ret = st;
        return 0;
}

int store_set_cache(struct store *s, size_t bytes) {
        char sql[128];

        snprintf(sql, sizeof sql, "PRAGMA cache_size = -%zu; PRAGMA temp_store = MEMORY",
                 bytes / 1024); /* negative: in KiB */
        return store_exec(s, sql);
}

int store_step_done(struct store *s, sqlite3_stmt *st) {
        int rc = sqlite3_step(st);

        sqlite3_reset(st);
        return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : store_errno(s, rc);
}

int store_step_id(struct store *s, sqlite3_stmt *st, int64_t *ret) {
        int rc = sqlite3_step(st);

        if (rc == SQLITE_ROW) {
                *ret = sqlite3_column_int64(st, 0);
                sqlite3_reset(st);
                return 1;
        }
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? 0 : store_errno(s, rc);
}

int store_bind_text(sqlite3_stmt *st, int i, const char *text) {
        return text ? sqlite3_bind_text(st, i, text, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

int store_exec(struct store *s, const char *sql) {
        return store_errno(s, sqlite3_exec(s->db, sql, NULL, NULL, NULL));
}

int store_query_int(struct store *s, const char *sql, int64_t *ret) {
        sqlite3_stmt *st;
        int rc, r;

        rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        r = store_step_id(s, st, ret);
        sqlite3_finalize(st);
        if (r == 0)
                *ret = 0;
        return r < 0 ? r : 0;
}

/* Reads the header fields. Returns 1 if the database has no schema at all (a new or empty
 * file), 0 otherwise, or a negative errno (-EBADMSG for a file that is not SQLite). */
static int read_header(struct store *s, int64_t *ret_app, int64_t *ret_version) {
        int64_t n_objects = 0;
        int r;

        r = store_query_int(s, "PRAGMA application_id", ret_app);
        if (r < 0)
                return r;
        r = store_query_int(s, "PRAGMA user_version", ret_version);
        if (r < 0)
                return r;
        r = store_query_int(s, "SELECT count(*) FROM sqlite_schema", &n_objects);
        if (r < 0)
                return r;
        return n_objects == 0;
}

static int migrate(struct store *s) {
        int64_t app, version;
        char sql[128];
        int r;

        r = store_exec(s, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        /* Read again under the write lock: another process may have migrated meanwhile. */
        r = read_header(s, &app, &version);
        if (r < 0)
                goto fail;
        if (r == 0 && app != STORE_APPLICATION_ID) {
                r = -EBADMSG;
                goto fail;
        }
        if (r > 0) {
                /* A new store: the current schema at once, so that its text (sqlite3's .schema)
                 * reads as written, each comment beside its column. */
                r = store_exec(s, store_schema);
                if (r < 0)
                        goto fail;
                version = store_migrations[n_store_migrations - 1].version;
                snprintf(sql, sizeof sql, "PRAGMA user_version = %u", (unsigned) version);
                r = store_exec(s, sql);
                if (r < 0)
                        goto fail;
        }
        for (unsigned i = 0; i < n_store_migrations; i++) {
                const struct store_migration *m = &store_migrations[i];

                if (m->version <= version)
                        continue;
                r = store_exec(s, m->sql);
                if (r < 0)
                        goto fail;
                snprintf(sql, sizeof sql, "PRAGMA user_version = %u", m->version);
                r = store_exec(s, sql);
                if (r < 0)
                        goto fail;
        }
        snprintf(sql, sizeof sql, "PRAGMA application_id = %d", STORE_APPLICATION_ID);
        r = store_exec(s, sql);
        if (r < 0)
                goto fail;
        r = store_exec(s, "COMMIT");
        if (r < 0)
                goto fail;
        return 0;
fail:
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

/* The cleanup of a store that failed to open: keep its words for store_error(NULL). */
static void store_close_failedp(struct store **s) {
        if (*s)
                snprintf(open_error, sizeof open_error, "%s", (*s)->error);
        *s = store_close(*s);
}

bool store_wal_has_frames(const char *path) {
        _cleanup_free_ char *wal = NULL;
        struct stat st;

        if (asprintf(&wal, "%s-wal", path) < 0)
                return true; /* no memory: do not guess that it is empty */
        return stat(wal, &st) == 0 && st.st_size > 0;
}

bool store_journal_is_hot(const char *path) {
        _cleanup_free_ char *journal = NULL;
        struct stat st;

        if (asprintf(&journal, "%s-journal", path) < 0)
                return true; /* no memory: do not guess that there is none */
        return stat(journal, &st) == 0 && st.st_size > 0;
}

char *store_plain_path(const char *path) {
        char *p;

        if (strncmp(path, "file:", 5) != 0)
                return strdup(path);
        return asprintf(&p, "./%s", path) < 0 ? NULL : p;
}

char *store_immutable_uri(const char *path) {
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(path);
        char *uri = malloc(5 + 3 * n + sizeof "?immutable=1"), *p;

        if (!uri)
                return NULL;
        p = stpcpy(uri, "file:");
        for (const unsigned char *c = (const unsigned char *) path; *c; c++)
                if ((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
                    strchr("/._~-", *c))
                        *p++ = (char) *c;
                else {
                        *p++ = '%';
                        *p++ = hex[*c >> 4];
                        *p++ = hex[*c & 15];
                }
        strcpy(p, "?immutable=1");
        return uri;
}

int store_sqlite_open_read(const char *path, int flags, sqlite3 **ret) {
        _cleanup_free_ char *uri = NULL;
        sqlite3 *db = NULL;
        int rc;

        flags |= SQLITE_OPEN_READONLY;
        rc = sqlite3_open_v2(path, &db, flags, NULL);
        /* A store in rollback-journal mode for a bulk import (store_begin_bulk()) is locked while
         * the import writes its file: wait for it, as for any writer. */
        if (rc == SQLITE_OK)
                sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
        /* SQLite opens lazily: the first read is where a WAL store needs its -shm. */
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
        if (rc == SQLITE_OK || ((rc & 0xff) != SQLITE_READONLY && (rc & 0xff) != SQLITE_CANTOPEN) ||
            access(path, R_OK) < 0 || store_wal_has_frames(path) || store_journal_is_hot(path)) {
                *ret = db;
                return rc;
        }
        /* A WAL store whose -shm cannot be made: its directory is not ours to write (the packaged
         * /var/lib/cppd for group cppd) or the file system is read-only. With no writer there
         * (no -wal frames) the file itself is the whole store: read it as immutable, without
         * the -shm or locks. A writer that starts meanwhile is not seen. */
        sqlite3_close_v2(db);
        db = NULL;
        uri = store_immutable_uri(path);
        if (!uri)
                return SQLITE_NOMEM;
        rc = sqlite3_open_v2(uri, &db, flags | SQLITE_OPEN_URI, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_exec(db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
        *ret = db;
        return rc;
}

int store_open(const char *path, enum store_mode mode, struct store **ret) {
        _cleanup_(store_close_failedp) struct store *s = NULL;
        unsigned latest = store_migrations[n_store_migrations - 1].version;
        int64_t app, version;
        struct stat st;
        int flags, r;

        open_error[0] = '\0';
        if (mode == STORE_READ && stat(path, &st) < 0)
                return -errno;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
                return -EBADMSG; /* a directory or a device is not a store */

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->mode = mode;
        /* A new store is made 0640 whatever the umask: profiles show what runs on a host. SQLite
         * gives the -wal and -shm files the database's mode. */
        if (mode == STORE_WRITE) {
                int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, STORE_FILE_MODE);

                if (fd >= 0) {
                        (void) fchmod(fd, STORE_FILE_MODE);
                        close(fd);
                } else if (errno != EEXIST)
                        return -errno;
        }
        flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
        if (mode == STORE_READ)
                r = store_sqlite_open_read(path, flags, &s->db);
        else {
                /* URIs on, for store_merge()'s ATTACH of a store it may only read (immutable);
                 * the path itself is never taken for one. */
                _cleanup_free_ char *plain = store_plain_path(path);

                if (!plain)
                        return -ENOMEM;
                r = sqlite3_open_v2(plain, &s->db,
                                    flags | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                                    NULL);
        }
        if (r != SQLITE_OK && mode == STORE_READ && s->db && store_wal_has_frames(path) &&
            ((r & 0xff) == SQLITE_READONLY || (r & 0xff) == SQLITE_CANTOPEN)) {
                /* Say why in words: the bare SQLite error blames a write nobody asked for. */
                r = store_errno(s, r);
                snprintf(
                        s->error, sizeof s->error,
                        "cannot be read from here: its write-ahead log (%s-wal) holds "
                        "changes that only a reader who may write beside the store can see (start its writer, "
                        "or read as its owner)",
                        path);
                return r == -ENOENT ? -EROFS : r;
        }
        if (r != SQLITE_OK && mode == STORE_READ && s->db && store_journal_is_hot(path) &&
            ((r & 0xff) == SQLITE_READONLY || (r & 0xff) == SQLITE_CANTOPEN)) {
                r = store_errno(s, r);
                snprintf(s->error, sizeof s->error,
                         "cannot be read from here: a write to it was interrupted, and its journal "
                         "(%s-journal) must be rolled back by a reader who may write beside the store "
                         "(start its writer, or read as its owner)",
                         path);
                return r == -ENOENT ? -EROFS : r;
        }
        if (r != SQLITE_OK)
                return store_errno(s, r);
        sqlite3_extended_result_codes(s->db, 1);
        sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS);

        /* SQLite opens a file it may not write read-only without a word: say so before the first
         * write fails as something else (on a read-only file system, "cannot open"). */
        if (mode == STORE_WRITE && sqlite3_db_readonly(s->db, "main") == 1) {
                snprintf(s->error, sizeof s->error,
                         "read-only to this user (the file, or its file system); "
                         "nothing was changed");
                return -EROFS;
        }
        r = read_header(s, &app, &version);
        if (r < 0)
                return r;
        if (r == 0 && app != STORE_APPLICATION_ID) {
                snprintf(s->error, sizeof s->error, "the file is a SQLite database, but not a cppd store");
                return -EBADMSG;
        }
        if (r > 0 && mode == STORE_READ) {
                snprintf(s->error, sizeof s->error, "the file is empty");
                return -EBADMSG;
        }
        if (version > latest) {
                snprintf(s->error, sizeof s->error, "schema version %lld, newer than %u", (long long) version,
                         latest);
                return -EPROTONOSUPPORT;
        }
        if (r == 0 && mode == STORE_WRITE) {
                /* Before the first write, migrations included; readers refuse what they read of
                 * a damaged store, so a writer must not add to it. */
                r = store_check(s);
                if (r < 0)
                        return r;
        }
        if (version < latest) {
                if (mode == STORE_READ) {
                        struct store *w = NULL;

                        /* A reader that may write upgrades the store on the way: open it for
                         * writing once (which migrates), then as asked. */
                        s = store_close(s);
                        if (access(path, W_OK) == 0 && store_open(path, STORE_WRITE, &w) == 0) {
                                store_close(w);
                                return store_open(path, STORE_READ, ret);
                        }
                        snprintf(open_error, sizeof open_error,
                                 "schema version %lld, older than %u, and "
                                 "the store is not writable to upgrade it",
                                 (long long) version, latest);
                        return -EPROTO;
                }
                if (version == 0) {
                        /* A new store: let retention give pages back (set before any table). */
                        r = store_exec(s, "PRAGMA auto_vacuum = INCREMENTAL");
                        if (r < 0)
                                return r;
                }
                r = migrate(s);
                if (r < 0)
                        return r;
        }
        if (mode == STORE_WRITE) {
                /* WAL: readers see the last commit and never wait for the writer. NORMAL sync is
                 * durable against crashes of the process; a power cut may lose the last
                 * transaction, never consistency. */
                r = store_exec(s, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
                if (r < 0)
                        return r;
                s->keys = name_table_new();
                s->modules = idmap_new();
                s->functions = idmap_new();
                s->frames = idmap_new();
                s->stacks = idmap_new();
                if (!s->keys || !s->modules || !s->functions || !s->frames || !s->stacks)
                        return -ENOMEM;
        }
        s->version = latest;
        *ret = take_ptr(&s);
        return 0;
}

struct store *store_close(struct store *s) {
        if (!s)
                return NULL;
        if (s->in_transaction)
                store_rollback(s);
        for (unsigned i = 0; i < _STMT_MAX; i++)
                sqlite3_finalize(s->stmts[i]);
        if (!s->borrowed)
                sqlite3_close_v2(s->db);
        name_table_free(s->keys);
        idmap_free(s->modules);
        idmap_free(s->functions);
        idmap_free(s->frames);
        idmap_free(s->stacks);
        free(s);
        return NULL;
}

void store_forget_caches(struct store *s) {
        if (!s->modules)
                return;
        idmap_clear(s->modules);
        idmap_clear(s->functions);
        idmap_clear(s->frames);
        idmap_clear(s->stacks);
}

int store_wrap(sqlite3 *db, struct store **ret) {
        unsigned latest = store_migrations[n_store_migrations - 1].version;
        _cleanup_(store_closep) struct store *s = calloc(1, sizeof *s);
        int64_t app, version;
        int r;

        if (!s)
                return -ENOMEM;
        s->db = db;
        s->borrowed = true;
        s->mode = STORE_READ;
        r = read_header(s, &app, &version);
        if (r < 0)
                return r;
        if (r > 0 || app != STORE_APPLICATION_ID)
                return -EBADMSG;
        if (version != latest)
                return version > latest ? -EPROTONOSUPPORT : -EPROTO;
        s->version = version;
        *ret = take_ptr(&s);
        return 0;
}

const char *store_error(const struct store *s) {
        return s ? s->error : open_error;
}

unsigned store_version(const struct store *s) {
        return s->version;
}

int store_row_exists(struct store *s, const char *table, int64_t id) {
        sqlite3_stmt *st;
        char sql[64];
        int rc;

        if (strcmp(table, "run") != 0 && strcmp(table, "process") != 0 && strcmp(table, "thread") != 0)
                return -EINVAL;
        snprintf(sql, sizeof sql, "SELECT 1 FROM %s WHERE id = ?", table);
        rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        sqlite3_bind_int64(st, 1, id);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc == SQLITE_ROW)
                return 1;
        return rc == SQLITE_DONE ? 0 : store_errno(s, rc);
}

int store_check(struct store *s) {
        sqlite3_stmt *st;
        const char *first;
        int rc, r = 0;

        rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(1)", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        /* One row, "ok" or the first problem found; a file too damaged to walk fails the step. */
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                first = (const char *) sqlite3_column_text(st, 0);
                if (!first || strcmp(first, "ok") != 0) {
                        /* One line for logs: "*** in database main ***\nPage 3: ..." -> "page 3: ..." */
                        if (first && strncmp(first, "*** in database main ***\n", 25) == 0)
                                first += 25;
                        snprintf(s->error, sizeof s->error, "%s", first ?: "the check gave no answer");
                        for (char *p = s->error; *p; p++)
                                if (*p == '\n')
                                        *p = ' ';
                        r = -EBADMSG;
                }
        } else
                r = store_errno(s, rc);
        sqlite3_finalize(st);
        return r;
}

/* After store_begin_bulk()'s transaction: back to WAL mode, as store_open() left the store. Where
 * that fails (a reader has come meanwhile and holds its lock past the busy timeout), the store
 * stays in rollback-journal mode, whole and readable, until its next writer's store_open(). */
static void store_back_to_wal(struct store *s) {
        if (!s->journaled)
                return;
        s->journaled = false;
        (void) sqlite3_exec(s->db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", NULL, NULL,
                            NULL);
}

int store_begin(struct store *s) {
        int r;

        if (s->mode != STORE_WRITE)
                return -EROFS;
        r = store_exec(s, "BEGIN IMMEDIATE");
        if (r < 0)
                return r;
        s->in_transaction = true;
        return 0;
}

int store_begin_bulk(struct store *s) {
        int64_t has_stacks;
        sqlite3_stmt *st;
        int rc, r;

        if (s->mode != STORE_WRITE)
                return -EROFS;
        r = store_query_int(s, "SELECT EXISTS (SELECT 1 FROM stack)", &has_stacks);
        if (r < 0)
                return r;
        if (has_stacks)
                return store_begin(s);
        /* Leaving WAL mode takes the file's exclusive lock at once, without the busy handler: it
         * fails while another connection has the store open, however idle. A connection that
         * comes between here and BEGIN finds a store in rollback-journal mode, which it reads and
         * writes as well: only the waiting of readers differs. */
        rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = DELETE", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        rc = sqlite3_step(st);
        s->journaled = rc == SQLITE_ROW && sqlite3_column_text(st, 0) &&
                strcmp((const char *) sqlite3_column_text(st, 0), "delete") == 0;
        sqlite3_finalize(st);
        if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED || (rc == SQLITE_ROW && !s->journaled))
                return store_begin(s);
        if (rc != SQLITE_ROW)
                return store_errno(s, rc);
        r = store_exec(s, "PRAGMA synchronous = FULL");
        if (r >= 0)
                r = store_begin(s);
        if (r < 0) {
                store_back_to_wal(s);
                return r;
        }
        return 1;
}

int store_commit(struct store *s) {
        int r = store_exec(s, "COMMIT");

        if (r < 0) {
                store_rollback(s);
                return r;
        }
        s->in_transaction = false;
        store_back_to_wal(s);
        return 0;
}

void store_rollback(struct store *s) {
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        s->in_transaction = false;
        store_back_to_wal(s);
        /* Ids handed out in the transaction no longer exist. The name strings may stay. */
        store_forget_caches(s);
}

int store_identity(struct store *s, struct store_identity *ret) {
        struct store_identity id = {};
        const char *path = sqlite3_db_filename(s->db, "main");
        sqlite3_stmt *st = NULL;
        struct stat stat_buf;
        int rc;

        rc = sqlite3_prepare_v2(s->db, "SELECT uuid, generation, token FROM store_state WHERE id = 1", -1,
                                &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
                const char *uuid = (const char *) sqlite3_column_text(st, 0);
                const char *token = (const char *) sqlite3_column_text(st, 2);

                if (!uuid || strlen(uuid) >= sizeof id.uuid ||
                    strspn(uuid, "0123456789abcdef") != strlen(uuid) || !token ||
                    strlen(token) >= sizeof id.token || strspn(token, "0123456789abcdef") != strlen(token)) {
                        sqlite3_finalize(st);
                        return -EBADMSG;
                }
                strcpy(id.uuid, uuid);
                strcpy(id.token, token);
                id.generation = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        if (rc == SQLITE_DONE)
                return -EBADMSG;
        if (rc != SQLITE_ROW)
                return store_errno(s, rc);
        if (!path || !*path || stat(path, &stat_buf) < 0)
                return path && *path ? -errno : -ENOENT;
        id.dev = stat_buf.st_dev;
        id.ino = stat_buf.st_ino;
        *ret = id;
        return 0;
}

int store_resource_id(struct store *s, const char *name, int64_t *ret) {
        sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(s->db, "SELECT id FROM resource WHERE name = ?", -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        store_bind_text(st, 1, name);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                *ret = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        if (rc == SQLITE_DONE)
                return -ENOENT;
        return rc == SQLITE_ROW ? 0 : store_errno(s, rc);
}

int store_has_call_sites(struct store *s) {
        sqlite3_stmt *st = NULL;
        int rc, has = 0;

        rc = sqlite3_prepare_v2(s->db,
                                "SELECT EXISTS (SELECT 1 FROM frame WHERE address IS NOT NULL "
                                "OR line IS NOT NULL)",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
                return store_errno(s, rc);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW)
                has = sqlite3_column_int(st, 0) != 0;
        sqlite3_finalize(st);
        return rc == SQLITE_ROW ? has : store_errno(s, rc);
}
