/* What store.c, store-write.c and store-read.c share: the connection, its cached prepared
 * statements and the writer's id caches. Not for other files. */
#pragma once

#include <sqlite3.h>

#include "idmap.h"
#include "name-table.h"
#include "store.h"

enum store_stmt {
        STMT_ADD_RUN,
        STMT_END_RUN,
        STMT_FIND_RESOURCE,
        STMT_ADD_RESOURCE,
        STMT_FIND_RUN_RESOURCE,
        STMT_ADD_RUN_RESOURCE,
        STMT_ADD_LOST,
        STMT_SET_SAMPLING,
        STMT_ADD_PROCESS,
        STMT_ADD_THREAD,
        STMT_FIND_MODULE,
        STMT_ADD_MODULE,
        STMT_FIND_FUNCTION,
        STMT_ADD_FUNCTION,
        STMT_FIND_FRAME,
        STMT_ADD_FRAME,
        STMT_FIND_STACK,
        STMT_ADD_STACK,
        STMT_ADD_NEW_STACK,
        STMT_ADD_NEW_STACKS,
        STMT_ADD_SAMPLES_ONE,
        STMT_ADD_SAMPLES_BATCH,
        STMT_ADD_SAMPLES,
        _STMT_MAX,
};

struct store {
        sqlite3 *db;
        bool borrowed; /* store_wrap(): someone else's connection */
        enum store_mode mode;
        unsigned version;
        bool in_transaction;
        bool journaled;  /* store_begin_bulk(): in rollback-journal mode until the end */
        char error[512]; /* the last SQLite message */
        sqlite3_stmt *stmts[_STMT_MAX];

        /* Writer caches: database ids by key. Kept across transactions (the rows are committed),
         * dropped on rollback (they may not be). */
        struct name_table *keys; /* strings that key the maps below */
        struct idmap *modules;   /* key("path\x1f" "build_id") -> id */
        struct idmap *functions; /* pair(key(name), module id) -> id, unknown in bit 63 */
        struct idmap *frames;    /* function id -> id, frames without a location */
        struct idmap *stacks;    /* pair(parent id, frame id) -> id */
};

/* Translates SQLite result RC to 0 or a negative errno and keeps the message in s->error. */
int store_errno(struct store *s, int rc);

/* Returns S's cached statement ID, preparing it from SQL the first time, reset and with its
 * bindings cleared. Returns 0 and sets *ret, or a negative errno. */
int store_stmt(struct store *s, enum store_stmt id, const char *sql, sqlite3_stmt **ret);

/* Steps a statement that returns no row (or ignores it). Returns 0 or a negative errno. */
int store_step_done(struct store *s, sqlite3_stmt *st);

/* Steps a statement expected to return at most one row with an integer in column 0. Returns 1
 * and sets *ret for a row, 0 for none, or a negative errno. */
int store_step_id(struct store *s, sqlite3_stmt *st, int64_t *ret);

/* Runs SQL (one or more statements, no rows wanted). Returns 0 or a negative errno. */
int store_exec(struct store *s, const char *sql);

/* Runs SQL, which selects one integer (a PRAGMA, a count), into *ret (0 if no row). Returns 0
 * or a negative errno. */
int store_query_int(struct store *s, const char *sql, int64_t *ret);

/* Binds TEXT or NULL. */
int store_bind_text(sqlite3_stmt *st, int i, const char *text);

/* Whether PATH's write-ahead log holds anything: frames a reader must see through the -shm
 * index, which only someone who may write beside the store can make. */
bool store_wal_has_frames(const char *path);
/* Whether PATH has a rollback journal with anything in it (store_begin_bulk() interrupted): the
 * file's pages are then not all the store's, until someone who may write beside it rolls the
 * journal back. */
bool store_journal_is_hot(const char *path);
/* PATH as an SQLite URI with "?immutable=1", every byte outside [A-Za-z0-9/._~-] escaped; and
 * PATH as a connection with URIs on takes it as a file name ("file:x" becomes "./file:x").
 * Both malloc()ed, or NULL: no memory. */
char *store_immutable_uri(const char *path);
char *store_plain_path(const char *path);
