/* What every report shares (report/): the exit codes, the report options (struct query_args)
 * and their parser, loading through a source (source/), the output guard (never a report over
 * a store) and the rendering of a profile in the chosen format. */
#pragma once

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "profile.h"
#include "render.h"
#include "sample-tree.h"
#include "source.h"
#include "store.h"

/* Exit codes, documented in cppctl --help and the README. */
enum {
        EXIT_OK = 0,
        EXIT_FAILURE_ = 1, /* an error, reported on stderr */
        EXIT_USAGE = 2,    /* bad options or arguments */
        EXIT_EMPTY = 3,    /* the request was valid but matched nothing (a root in no sample) */
};

/* Options common to the report commands. */
struct query_args {
        const char *db;              /* a SQLite store, or a clickhouse:// URL */
        const char *credentials;     /* --credentials FILE, for a clickhouse:// URL */
        const char *resource;        /* NULL: the store's only resource, or cpu-time */
        char **resources;            /* -r A,B or --ratio A/B: every resource named, in order
                                         * (NULL without -r); resource is the first */
        char *resource_owned;        /* the store's only resource when none was named */
        bool ratio;                  /* --ratio: resources[0] per resources[1] */
        const char *output;          /* -o FILE; NULL: stdout */
        const char *root;            /* down and up only */
        double threshold;            /* fraction of the total */
        struct store_filter filter;  /* run, unit, pid, comm, exe, time window, granularity */
        regex_t focus, ignore, hide; /* compiled when the filter points at them */
        const struct render_format *format;
        bool format_set;    /* --format or --json given */
        bool threshold_set; /* --threshold given */
};

#define QUERY_THRESHOLD_DEFAULT 0.01

enum {
        QUERY_NEEDS_ROOT = 1 << 0,     /* --root F or an argument, required */
        QUERY_TAKES_ROOT = 1 << 1,     /* --root F or an argument, optional */
        QUERY_MANY_RESOURCES = 1 << 2, /* -r A,B and --ratio A/B */
};

/* Refuses Q's format unless it draws WHAT (RENDER_* flags of render.h), naming those that do.
 * Returns 0 or -EINVAL after reporting. */
int query_check_format(const struct query_args *q, const char *name, unsigned what);

/* Opens PATH to write a report into (made if missing, emptied if not; symbolic links followed),
 * unless it is a store: a file that starts as an SQLite database or its write-ahead log does, or
 * the file STORE (may be NULL) names. -o means one thing in every command: a report's file; no
 * report is ever written over a store. Returns 0 and sets *ret; -EEXIST for a store, left as it
 * was; or the negative errno of open(). */
int output_open(const char *path, const char *store, FILE **ret);
/* Reports output_open()'s error R for PATH. Returns R. */
int log_output_error(int r, const char *path);

/* Opens Q's output (-o FILE, or stdout) for writing, through output_open() with Q's store.
 * Returns a stream or NULL after reporting. */
FILE *query_output(const struct query_args *q);
/* Flushes and closes OUT (unless stdout), reporting a write error R or one at closing. Returns
 * an exit status. */
int query_output_close(const struct query_args *q, FILE *out, int r);

/* Parses the report options of ARGV for command NAME (USAGE: its synopsis and description).
 * Returns 1 to go on, 0 if --help was printed, or a negative errno after reporting the error. */
int query_args_parse(struct query_args *q, int argc, char **argv, const char *name, const char *usage,
                     unsigned flags);

/* A command's own options and arguments beside the report options (cppctl diff's --view and its
 * two stores). Each getopt_long() entry's val is QUERY_EXTRA_OPTION or above. */
struct query_extra {
        const struct option *options; /* ends with an entry of NULL name */
        const char *help;             /* their lines of --help, each ending in a newline */
        bool arguments;               /* hand PARSE the arguments after the options too */
        /* Called with an option's val and argument, or with val 0 and each argument. Returns 0, or
         * a negative errno after reporting. */
        int (*parse)(void *userdata, int val, const char *arg);
        void *userdata;
};
#define QUERY_EXTRA_OPTION 0x100

/* As query_args_parse(), with EXTRA's options and arguments (EXTRA may be NULL). */
int query_args_parse_extra(struct query_args *q, int argc, char **argv, const char *name, const char *usage,
                           unsigned flags, const struct query_extra *extra);

/* Frees what query_args_parse() allocated in Q (which must be zeroed or parsed). For
 * _cleanup_(query_args_done). */
void query_args_done(struct query_args *q);

/* Opens Q's store, picks the resource and loads its sample tree, reporting any error in words
 * a user can act on. Returns 0 and sets *ret, or a negative errno after reporting (-ENODATA: no
 * sample matches the filters). */
int query_load(struct query_args *q, struct sample_tree **ret);

/* The index of the tree Q selects (of its INVERTED tree, for upward views), through
 * source_load_index(): mapped from a store file's cache of big trees' indexes when Q has no
 * filter, else laid out from the store's stacks (in a file of the cache directory, where there is
 * one). Errors are logged as query_load()'s; returns 0 or a
 * negative errno. */
int query_load_index(struct query_args *q, bool inverted, struct view_data *ret);

/* As query_load(), with the labels interned in NAMES (see store_load_tree_shared()), so that
 * trees of two stores compare by name id. */
int query_load_shared(struct query_args *q, struct name_table *names, struct sample_tree **ret);

/* As query_load_index(), for every resource of Q->resources (the downward trees, or the
 * INVERTED ones): RET[0..*ret_n) (malloc()ed; each done with view_data_done(), then freed).
 * -ENODATA only if no resource has samples matching the filters; a resource without is an empty
 * index. */
int query_load_indexes(struct query_args *q, bool inverted, struct view_data **ret, size_t *ret_n);

/* As query_load(), for every resource of Q->resources, with one shared name table (*ret_names,
 * freed after the trees) so that paths compare by id. -ENODATA only if no resource has samples
 * matching the filters; a resource without is an empty tree. */
int query_load_many(struct query_args *q, struct name_table **ret_names, struct sample_tree ***ret_trees,
                    size_t *ret_n);

/* The exit status for a negative errno R from the helpers above: EXIT_USAGE for -EINVAL (they
 * use it only for bad options), EXIT_EMPTY for -ENODATA (no sample matches the filters), else
 * EXIT_FAILURE_; EXIT_OK for R >= 0. */
int exit_status(int r);

/* Renders P in Q's format and threshold to stdout. Returns an exit status. */
int query_render_profile(const struct query_args *q, const struct profile *p);

/* For a root that labels no sample: renders KIND's empty profile of T, says so on stderr with
 * the names of T's nodes (or, with X, of the index X's) that contain ROOT, and returns EXIT_EMPTY. */
int query_missing_root(const struct query_args *q, enum profile_kind kind, struct sample_tree *t,
                       const struct tree_index *x);
