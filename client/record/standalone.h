/* What cppctl record and attach share: their options, the collector's setup with errors a user
 * can act on, the loop that reads the rings until the target is done, and the summary. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collector.h"

#define RECORDING_MAX_SPECS 32

struct recording_spec {
        const char *name;
        uint64_t period; /* 0: the default */
        bool event;      /* --event: a raw event name, not a resource */
};

struct recording_args {
        const char *db;
        struct recording_spec specs[RECORDING_MAX_SPECS];
        unsigned n_specs;
        uint64_t period; /* --period: for specs without one */
        struct collector_config config;
        bool quiet;
        double duration;    /* attach: seconds, 0 = until the process exits or Ctrl-C */
        const char *unit;   /* attach --unit */
        const char *socket; /* attach: the daemon's control socket; NULL: default */
        bool standalone;    /* attach: never through the daemon */
};

/* Parses the options shared by record and attach from ARGV (stopping at the first non-option,
 * or after "--"). EXTRA_HELP is the command's usage line and description. Returns 1 to go on,
 * 0 after --help, or -EINVAL after reporting. Sets *ret_optind. */
int recording_parse(struct recording_args *a, int argc, char **argv, const char *name, const char *usage,
                    bool attach, int *ret_optind);

struct recording;

/* Opens the store and sets up the collector for A (adding every resource, reporting unknown
 * ones). Returns 0 and sets *ret, or an exit status after reporting. */
int recording_new(const struct recording_args *a, const char *kind, const char *command,
                  struct recording **ret);
struct recording *recording_free(struct recording *r);
DEFINE_CLEANUP(struct recording *, recording_free);

/* Blocks SIGINT, SIGTERM and SIGCHLD, which recording_run() reads from a signalfd; before a
 * child is forked, so that none is missed (the child unblocks them). */
void recording_block_signals(void);

/* Opens the events for PID (see collector_attach()), reporting unsupported resources as
 * warnings and failures with advice. Returns 0 or an exit status. */
int recording_attach(struct recording *r, pid_t pid, bool enable_on_exec);

/* Reads the rings until DONE says the target is finished, a signal ends it (SIGINT, SIGTERM),
 * or the duration passes; CHILD, if > 0, is a child to reap (its wait status goes to
 * *ret_status); PIDFD, if >= 0, becomes readable when an attached process exits. Flushes to the
 * store every few seconds and at the end. Returns 0 or an exit status. */
int recording_run(struct recording *r, pid_t child, int pidfd, int *ret_status);

/* The environment of the command record starts: for alloc-bytes or alloc-count, this one with
 * the allocation counter (alloc-preload.h) first in LD_PRELOAD and each one's period; *ret NULL
 * when neither is recorded (the command keeps this environment). 0, or a negative errno after
 * reporting (the library not found). */
int recording_environment(const struct recording *r, char ***ret);

/* Prints what was recorded and the top of the function profile; warns of processes whose
 * allocations could not be counted. */
void recording_summary(struct recording *r, const char *what);

/* Prints the top of the function profile of RESOURCE in RUN of STORE (named DB). */
void recording_print_top(struct store *store, const char *db, int64_t run, const char *resource);
