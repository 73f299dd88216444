/* On-demand sessions: a process (and its threads and children) or a unit's cgroup profiled
 * with resources and periods of its own, for a duration, as a run of its own in the store. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "collector.h"

struct manager;

struct session_request {
        pid_t pid;                      /* 0 if a unit */
        const char *unit;               /* NULL if a pid */
        const char *resources;          /* "cpu-time/1,page-faults" or NULL for the daemon's */
        enum unwind_mode unwind;
        double duration;                /* seconds; 0: until the process exits, or detach */
        uid_t owner;                    /* who asked: may detach it */
};

struct session {
        uint64_t id;
        struct manager *manager;
        struct collector *collector;
        sd_event_source *io, *timer, *exit_watch;
        int pidfd;
        uid_t owner;
        char target[300];               /* "pid 1234 (nginx)" or "unit nginx.service" */
        uint64_t started_usec;
        bool ended;
};

/* Starts a session. Returns 0 and sets *ret, or a negative errno: -ESRCH (no such process),
 * -ENOENT (no such unit running, or an unknown resource: *ret_what says which), -EINVAL, -EACCES
 * and -EPERM from the kernel, -ENODEV (nothing countable). */
int session_start(struct manager *m, const struct session_request *req, struct session **ret, const char **ret_what);

/* Ends S: stops its collector, stores the rest, ends its run, and removes it from the manager.
 * Returns the flush's result. Frees S. */
int session_end(struct session *s);

int64_t session_run_id(const struct session *s);
