/* The sample-tree store: one SQLite file (WAL) holding runs, resources, the stack trie,
 * processes and aggregated samples. store.c opens, checks and migrates it and translates SQLite
 * errors to negative errno; store-write.c adds rows in batches; store-read.c loads filtered
 * sample trees, through tree-load.c's steps, which the fleet store's loader shares. The schema is
 * in schemas/. */
#pragma once

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "sample-tree.h"
#include "strv.h"

/* PRAGMA application_id of a cppd store: "CPPD". */
#define STORE_APPLICATION_ID 0x43505044

enum store_mode {
        STORE_READ,  /* an existing store, read-only; never blocks a writer */
        STORE_WRITE, /* created if missing, migrated to the current schema */
};

struct store;

/* Opens the store at PATH. Returns 0 and sets *ret, or: -ENOENT if it does not exist (READ),
 * -EACCES without permission, -EBADMSG if the file is not a cppd store or is corrupt (WRITE
 * checks an existing store whole with store_check() before it writes anything: SQLite would
 * write on around the damage, and every reader after would see the mix),
 * -EPROTONOSUPPORT if a newer cppd wrote it, -EPROTO if READ finds an older schema it may not
 * upgrade (a reader that may write the file upgrades it first), -ENOSPC, -EIO, -ENOMEM. store_error() then has SQLite's words, if any. */
int store_open(const char *path, enum store_mode mode, struct store **ret);

/* Opens the SQLite file PATH read-only (SQLITE_OPEN_READONLY, with FLAGS) into *ret, as
 * store_open(STORE_READ) does, for readers of their own (cppctl sql): a WAL store whose -shm
 * cannot be made beside it (a directory the reader may not write, a read-only file system) is
 * opened immutable when its write-ahead log holds nothing. Returns an SQLite result code; *ret
 * is set whenever SQLite made a connection, for sqlite3_errmsg(), and the caller closes it. */
struct sqlite3;
int store_sqlite_open_read(const char *path, int flags, struct sqlite3 **ret);

/* Reads the store that connection DB (borrowed: store_close() leaves it open) has open as
 * 'main', for SQL functions that run inside someone else's connection. Returns 0 and sets *ret;
 * -EBADMSG if it is not a cppd store, -EPROTO/-EPROTONOSUPPORT if not at this cppd's schema. */
int store_wrap(struct sqlite3 *db, struct store **ret);
struct store *store_close(struct store *s);
DEFINE_CLEANUP(struct store *, store_close);

/* The last SQLite error message for this store, for logs; "" if none. With S NULL, the words
 * of this thread's last failed store_open(). */
const char *store_error(const struct store *s);
/* The schema version of the open store. */
unsigned store_version(const struct store *s);

/* Whether the row ID of TABLE ("run", "process" or "thread") is still there, after retention:
 * 1 or 0, or a negative errno. */
int store_row_exists(struct store *s, const char *table, int64_t id);

/* Reads every page of the store's tables and indexes (SQLite's PRAGMA quick_check, about a
 * second per 100 MiB), for a writer that must not write into a damaged file. Returns 0 if the
 * store is whole, -EBADMSG with store_error() saying what the check found first, or another
 * negative errno when it could not read. */
int store_check(struct store *s);

/* Transactions: every write happens inside one. store_begin() takes the write lock at once
 * (BEGIN IMMEDIATE), waiting up to the busy timeout for another writer. store_rollback() also
 * forgets every id cached since store_begin(). Return 0 or a negative errno. */
int store_begin(struct store *s);
int store_commit(struct store *s);
void store_rollback(struct store *s);

/* store_begin() for a transaction that adds millions of rows to a store that holds no stacks yet
 * and that no other connection has open (an import into a new store): the transaction writes the
 * store's file in place, with a rollback journal, where a WAL transaction writes every page twice
 * (to the log, then to the file at the checkpoint). Pages past the file's end, all but a few of
 * such a transaction's, need no journal. The journal is synced in full (a power cut loses the
 * transaction, never the store), and store_commit() or store_rollback() put the store back in
 * WAL mode; a crash leaves the journal, which the next writer (or reader who may write) rolls
 * back, and store_open() for writing puts WAL back. Once the transaction writes into the file,
 * a reader that opens the store waits for the commit (the busy timeout). Returns 1 for such a
 * transaction, 0 for an ordinary one (the store has stacks, or another connection has it open),
 * or a negative errno. */
int store_begin_bulk(struct store *s);

/* ---- writing (store-write.c); all inside a transaction ---- */

struct store_run {
        const char *kind; /* 'import', 'record', 'attach', 'daemon' */
        const char *command;
        const char *source;
        const char *unwind; /* 'fp', 'dwarf' or NULL */
        int64_t started;    /* unix seconds */
        const char *host;   /* NULL: this machine's (uname -n) */
};

/* Adds a run (kernel and version, and the host unless RUN names one, filled in here). Returns 0
 * and sets *ret_id. */
int store_add_run(struct store *s, const struct store_run *run, int64_t *ret_id);
int store_end_run(struct store *s, int64_t run_id, int64_t ended);

/* Finds or adds resource NAME (with UNIT, for a new one) and records it for RUN_ID with
 * EVENT (may be NULL) and PERIOD. Returns 0 and sets *ret_id to the resource's id; -EEXIST if
 * the run already has the resource with another period. */
int store_add_run_resource(struct store *s, int64_t run_id, const char *name, const char *unit,
                           const char *event, uint64_t period, int64_t *ret_id);
/* Adds N to the samples lost for (run, resource). */
int store_add_lost(struct store *s, int64_t run_id, int64_t resource_id, uint64_t n);
/* Says how (run, resource) drew its intervals: RANDOM or fixed, and the most it was THINNED
 * under load (1 kept in THINNED). Returns 0 or a negative errno. */
int store_set_sampling(struct store *s, int64_t run_id, int64_t resource_id, bool random, uint64_t thinned);

/* Says that N processes of (run, resource) could not be counted, NOTE naming the first and why
 * ("ownmalloc (pid 812) the first: an allocator of its own"). Returns 0 or a negative errno
 * (store-notes.c). */
int store_set_uncounted(struct store *s, int64_t run_id, int64_t resource_id, uint64_t n, const char *note);

/* Says that SAMPLES samples of (run, resource) carried Python frames, CUT of them with their
 * outermost Python frames cut, and that UNREADABLE Python frames could not be read. Returns 0 or a
 * negative errno (store-notes.c). */
int store_set_python(struct store *s, int64_t run_id, int64_t resource_id, uint64_t samples, uint64_t cut,
                     uint64_t unreadable);

int store_add_process(struct store *s, int64_t run_id, int64_t pid, const char *comm, const char *exe,
                      const char *unit, int64_t started, int64_t *ret_id);
int store_add_thread(struct store *s, int64_t process_id, int64_t tid, const char *comm, int64_t *ret_id);

/* Find-or-add lookups, cached in memory for the life of the transaction and beyond. Ids fit in
 * 32 bits (-E2BIG otherwise), so callers may key their own maps with them. MODULE_ID 0 means
 * unknown; ADDRESS < 0, FILE NULL and LINE 0 mean unknown; PARENT 0 means an outermost frame. */
int store_module_id(struct store *s, const char *path, const char *build_id, int64_t *ret_id);
int store_function_id(struct store *s, const char *name, int64_t module_id, bool unknown, int64_t *ret_id);
int store_frame_id(struct store *s, int64_t function_id, int64_t address, const char *file, unsigned line,
                   bool inlined, int64_t *ret_id);
int store_stack_id(struct store *s, int64_t parent_id, int64_t frame_id, int64_t *ret_id);

/* For a writer of transactions of millions of rows: lets S's connection keep up to BYTES of the
 * store's pages in memory (SQLite's default: 2 MiB), and each statement's undo journal too,
 * which SQLite would otherwise write to a temporary file, page by page, once it is past 64 KiB.
 * Returns 0 or a negative errno. */
int store_set_cache(struct store *s, size_t bytes);

/* Adds HITS, SAMPLES and HITS_SQUARED (the sum of each sample's hits squared; 0: unknown, each
 * sample then weighs hits/samples) to the row (resource, bucket, thread, stack). */
int store_add_samples(struct store *s, int64_t resource_id, int64_t bucket, int64_t thread_id,
                      int64_t stack_id, uint64_t hits, uint64_t samples, uint64_t hits_squared);

/* ---- reading (store-read.c) ---- */

struct store_namer; /* store-rename.h */

enum store_granularity {
        STORE_BY_FUNCTION, /* frames labelled by function name */
        STORE_BY_LINE,     /* by call site: "name (file.c:42)" (paper §7.1's wish) */
        STORE_BY_MODULE,   /* by the module's file name: "libc.so.6" */
};

struct store_filter {
        const char *resource;      /* required */
        int64_t run_id;            /* 0: every run */
        const char *unit;          /* systemd unit; NULL: any */
        bool unit_roots;           /* every stack below a first frame naming its process's
                                    * unit ("" for none): one load for the profiles of all
                                    * units (the daemon's pushes) */
        int64_t pid;               /* 0: any */
        bool no_idle;              /* leave out the idle task, pid 0 ("swapper") */
        const char *comm;          /* process or thread name; NULL: any */
        const char *exe;           /* executable path, or its file name; NULL: any */
        const char *host;          /* run.host, the machine that collected; NULL: any */
        int64_t since, until;      /* unix seconds, [since, until) of time buckets, where set */
        bool has_since, has_until; /* false: that side is open (0 is a time like any other) */
        enum store_granularity by;
        bool fold_inline;      /* drop inline frames (their hits go to the caller) */
        bool raw_names;        /* C++ and Rust names as stored, not demangled */
        bool labels;           /* a view needs its labels' binaries and stored names (pprof's
                                * mappings): not from a cached index, which keeps neither */
        const regex_t *focus;  /* keep only stacks with a frame matching (pprof's -focus) */
        const regex_t *ignore; /* drop stacks with a frame matching (-ignore) */
        const regex_t *hide;   /* drop matching frames, keep the samples (-hide) */
        /* names frames stored as addresses from debug info found now, as the tree is loaded
         * (store-read.c, and the fleet store's common/fleet/ch-read.c): the store is read as it
         * is, never copied nor written; NULL: none */
        const struct store_namer *namer;
};

/* Loads the samples of F into a sample tree of function names with its header info. Returns 0
 * and sets *ret; -ENOENT if the store has no such resource; -ENOMEM; -EBADMSG if the stack
 * table is inconsistent. */
int store_load_tree(struct store *s, const struct store_filter *f, struct sample_tree **ret);

/* The tree index (tree-index.h) of the tree store_load_tree() would load for F, laid out from the
 * stored stacks that F's samples end on (tree_index_from_paths()) without a sample tree: the
 * stack table's links by id (8 bytes a stored stack), each sampled stack's labels (4 bytes a
 * frame), then the index; with a file FD, the labels and then the index are laid out in it, past
 * what it holds, and let go of as they are written (tree_index_new_in()), else in memory (FD < 0,
 * or a disk too full to reserve their room). Its header (names, total, info) is its own. Returns 0 and sets
 * *ret; store_load_tree()'s errors; -EOPNOTSUPP for unit_roots; tree_index_new_in()'s errors. */
struct tree_index; /* tree-index.h */
int store_load_index(struct store *s, const struct store_filter *f, int fd, struct tree_index **ret);

/* The tree index store_load_index() would lay out for F, a filter of samples alone (its labels
 * those of the store's index: by function, demangled, nothing hidden, focused or ignored, no
 * namer), laid out from ALL, the store's index of every sample of F's resource, downward or
 * inverted (its inverted index: the index tree_index_invert() would make of the downward one),
 * rather than from the store's stacks: F's sample rows, each stack found in ALL's stacks, and
 * tree_index_select(). In the file FD or in memory, as store_load_index() says. Returns 0 and
 * sets *ret; -EAGAIN where ALL cannot tell that tree (it has no stacks, or frames named later
 * that the header counts, or lacks a stack or path F reaches): lay it out from the store;
 * store_load_tree()'s errors. */
int store_select_index(struct store *s, const struct store_filter *f, const struct tree_index *all, int fd,
                       struct tree_index **ret);

/* As store_load_tree(), with the labels interned in NAMES (borrowed; it must outlive the tree),
 * so that trees of several resources share one name table and compare by id. */
int store_load_tree_shared(struct store *s, const struct store_filter *f, struct name_table *names,
                           struct sample_tree **ret);

/* What the header says of how F's runs counted F's resource, beyond the samples (malloc()ed;
 * NULL in *RET: nothing): that it was by uprobes, and what that cost, and the processes they
 * could not count ("alloc-bytes: not measured in 2 processes, ownmalloc (pid 812) the first:
 * ..."). Returns 0 or a negative errno (store-notes.c). */
int store_collect_note(struct store *s, const struct store_filter *f, char **ret);

/* What F's runs' Python frames were, for the header: "cpu-time: Python frames in 812 samples
 * ..." (malloc()ed), or NULL in *RET: none (or a store before version 8). Returns 0 or -ENOMEM
 * (store-notes.c). */
int store_python_note(struct store *s, const struct store_filter *f, char **ret);

/* ---- merging (store-write.c) ---- */

/* What store_merge() copied. */
struct store_merge_stats {
        uint64_t runs, samples; /* rows of run and sample added */
        uint64_t stacks_new;    /* stack rows the store did not have yet */
};

/* The most gticks of one resource a store holds: its hits times their run's period, summed over
 * every run. Writers refuse what would pass it, so that every sum a view takes (a path's hits,
 * a tree's total, both sides of a diff) fits in a signed 64-bit integer with room to spare.
 * 2^62 is 146 years of CPU time counted in nanoseconds. */
#define STORE_MAX_GTICKS (UINT64_C(1) << 62)

/* The gticks of resource NAME that S holds (0 if it has none), saturated at UINT64_MAX, summed
 * in floating point so that a store written past the bound is measured, not refused. Reads
 * every sample of the resource. Returns 0 and sets *ret, or a negative errno. */
int store_resource_gticks(struct store *s, const char *name, uint64_t *ret);

/* Copies every run of the cppd store at PATH into S, with its resources, processes, threads,
 * samples and the stacks, frames, functions and modules they need, in one transaction: runs,
 * processes and threads get new ids; resources, modules, functions, frames and stacks are found
 * by content (as the writers find them) and added only when missing; run.host stays. PATH must
 * not be S's own file (the caller checks); it is only read, through ATTACH. Open it
 * with store_open() first for errors in words. Returns 0 and fills *ret (may be NULL), or, with S
 * as it was: -EEXIST if a run of PATH is already in S (same host, kind, start, command, source,
 * kernel, version and unwinder: merged before), *ret_run (may be NULL) then set to its id in PATH;
 * -EBADMSG if PATH is damaged or its rows do not hold together; -EOVERFLOW if a resource of S
 * would hold more than STORE_MAX_GTICKS (its name in store_error()); -EPROTO or -EPROTONOSUPPORT if
 * its schema is older or newer than S's; -E2BIG past 32-bit ids; -ENOSPC,
 * -EBUSY, -ENOMEM. */
int store_merge(struct store *s, const char *path, struct store_merge_stats *ret, int64_t *ret_run);

/* Retention. Deletes the samples of time buckets before CUTOFF (unix seconds; 0: none by age)
 * and then, while the store's live size exceeds MAX_BYTES (0: no bound), those of the oldest
 * bucket; then every row no sample needs any more (stacks, frames, functions, modules,
 * threads, processes), and gives freed pages back to the file system where the store allows
 * (auto_vacuum). In one transaction. Every id cached by writers may be gone after: call
 * store_forget_caches() and tell collectors. Sets *ret_deleted to the sample rows deleted. */
int store_expire(struct store *s, int64_t cutoff, uint64_t max_bytes, uint64_t *ret_deleted);

/* Forgets the writer's id caches (after store_expire(), or rows deleted by someone else). */
void store_forget_caches(struct store *s);

/* The bytes of the store's pages in use (not free pages), and of the file with its WAL. */
int store_size(struct store *s, uint64_t *ret_live, uint64_t *ret_file);

/* Returns the number of resources with samples and sets *ret to a NULL-terminated array of
 * their names, sorted (free with strv_free()). */
int store_list_resources(struct store *s, char ***ret);

/* What tells this store, as it is now, from any other: caches of what was derived from it
 * (tree indexes) are keyed by it. */
struct store_identity {
        char uuid[33];      /* store_state.uuid: random, made with the store */
        int64_t generation; /* store_state.generation: bumped by every change */
        char token[17];     /* store_state.token: drawn at random by every change, so
                                         * that copies which took alike changes differ */
        uint64_t dev, ino;  /* the file, so that a copy is another store */
};

/* Fills *ret. Returns 0, -EBADMSG for a store without a sane store_state row, or an errno of
 * stat(2) on the store's file. */
int store_identity(struct store *s, struct store_identity *ret);

/* One time bucket of one run: its sample rows and their hits. */
struct store_bucket {
        int64_t bucket; /* unix seconds, the bucket's start */
        uint64_t rows, hits;
};

/* The buckets in [FROM, UNTIL) in which run RUN_ID has samples, oldest first. Returns 0 and
 * sets *ret (free(); NULL when none) and *ret_n, or a negative errno. */
int store_run_buckets(struct store *s, int64_t run_id, int64_t from, int64_t until, struct store_bucket **ret,
                      size_t *ret_n);

/* The id of resource NAME: 0 with *ret set, -ENOENT if the store has none of that name. */
int store_resource_id(struct store *s, const char *name, int64_t *ret);

/* 1 if some frame of the store keeps its call site (an address or a source line), 0 if every
 * frame is a function (stored by function, or imported from folded stacks), or a negative
 * errno. */
int store_has_call_sites(struct store *s);
