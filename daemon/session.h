/* On-demand sessions: a process (and its threads and children) or a unit's cgroup profiled
 * with resources and periods of its own, for a duration, as a run of its own in the store.
 * A session knows nothing of the manager: it gets the daemon's settings as values and tells
 * whoever keeps it of its end through a callback (the manager keeps the list of sessions). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "collector.h"
#include "config.h"

struct session;

struct session_request {
        pid_t pid;             /* 0 if a unit */
        const char *unit;      /* NULL if a pid */
        const char *resources; /* "cpu-time/1,page-faults" or NULL for the daemon's */
        enum unwind_mode unwind;
        double duration; /* seconds; 0: until the process exits, or detach */
        uid_t owner;     /* who asked: may detach it */
};

/* What a session takes from the daemon. */
struct session_settings {
        uint64_t id;
        sd_event *event; /* the loop its records, timer and process exit are handled on */
        struct store *store;
        struct collector_config collector;       /* the request's unwind mode replaces this one's */
        const struct config_resource *resources; /* for a request that names none */
        unsigned n_resources;
        uint64_t drain_budget_ns; /* longest one turn of the loop spends on its samples */
        /* Called as the session ends, however it ends, before it is freed. */
        void (*on_end)(struct session *s, void *userdata);
        void *userdata;
};

struct session {
        uint64_t id;
        void (*on_end)(struct session *s, void *userdata);
        void *userdata;
        uint64_t drain_budget_ns;
        struct collector *collector;
        sd_event_source *io, *timer, *exit_watch;
        int pidfd;
        uid_t owner;
        char target[300]; /* "pid 1234 (nginx)" or "unit nginx.service" */
        uint64_t started_usec;
        bool ended;
};

/* Starts a session with SETTINGS (copied). Returns 0 and sets *ret, or a negative errno: -ESRCH
 * (no such process), -ENOENT (no such unit running, or an unknown resource: *ret_what says
 * which), -EINVAL, -EACCES and -EPERM from the kernel, -ENODEV (nothing countable), -ENOEXEC
 * (alloc-*: the target's allocations cannot be counted; *ret_what says why, until the next
 * call). */
int session_start(const struct session_settings *settings, const struct session_request *req,
                  struct session **ret, const char **ret_what);

/* Ends S: stops its collector, stores the rest, ends its run, and calls its on_end. Returns the
 * flush's result. Frees S. */
int session_end(struct session *s);

int64_t session_run_id(const struct session *s);
