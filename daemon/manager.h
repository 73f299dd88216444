/* The daemon's state: its configuration, the event loop, the store, the system-wide collector
 * and the on-demand sessions, which it keeps. One instance, driven by sd-event on one thread
 * (each collector's ring reader has a thread of its own). The control socket (control.c) sits
 * above it and calls it; the manager knows nothing of the socket. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "collector.h"
#include "config.h"
#include "pusher.h"
#include "session.h"
#include "shipper.h"
#include "store.h"

#define MANAGER_MAX_SESSIONS 1024
/* Longest the loop spends on samples before it looks at its timers (the flush) again. */
#define MANAGER_DRAIN_BUDGET_NS (50ULL * 1000 * 1000)
/* Longest a flush asked for waits to catch up with the rings: well under WatchdogSec=. */
#define MANAGER_CATCH_UP_NS (5ULL * 1000 * 1000 * 1000)
/* How often STATUS= and the retention check run. */
#define MANAGER_STATUS_INTERVAL_USEC (10 * 1000000ULL)
#define MANAGER_RETENTION_INTERVAL_USEC (3600 * 1000000ULL)
/* While the store fails, the flush timer tries again at most this often: a failed flush does all
 * its work before the disk says no, and the loop must keep draining the rings meanwhile. */
#define MANAGER_FLUSH_RETRY_USEC (2 * 1000000ULL)
/* Seconds a flush leaves open behind what was handled: time buckets close (and go to the fleet
 * store and the fleet profilers) this much later (manager_flush()). */
#define MANAGER_CLOSE_MARGIN_SEC 3
/* Free memory is given back to the kernel at most this often (malloc_trim()). */
#define MANAGER_TRIM_INTERVAL_USEC (15 * 1000000ULL)

struct manager {
        struct config config;
        char config_path[4096];
        sd_event *event;
        struct store *store;
        struct shipper *shipper;     /* shipping to ClickHouse; NULL without [fleet] url */
        struct collector *collector; /* the system-wide one */
        sd_event_source *collector_source;
        sd_event_source *flush_timer, *status_timer, *retention_timer;
        uint32_t unsupported;                           /* resources this machine cannot count */
        struct pusher *pusher;                          /* [fleet] pushes; NULL: none configured */
        struct session *sessions[MANAGER_MAX_SESSIONS]; /* ours: removed as each ends */
        unsigned n_sessions;
        uint64_t next_session_id;
        uint64_t started_usec;
        bool store_failing;    /* the last flush failed: said once */
        uint64_t trimmed_usec; /* CLOCK_MONOTONIC of the last malloc_trim() */
        uint64_t flush_failures;
        uint64_t flushes, flush_usec_last, flush_usec_max; /* successful ones, how long they took */
        uint64_t last_samples, last_status_usec;           /* for rates in STATUS= */
        double samples_per_second;
        uint64_t last_resource_samples[COLLECTOR_MAX_RESOURCES];
        double resource_rate[COLLECTOR_MAX_RESOURCES]; /* samples/s per resource */
        struct namer *namer; /* [symbols] debuginfod: names frames stored as addresses; NULL: off */
        char **alloc_units;  /* [alloc] units, split, as the system collector was given them */
};

/* Whether a SIGTERM or SIGINT waits. main() blocks them (and SIGHUP) before anything else, so
 * that every thread inherits the block and the loop's signalfd gets them once it runs; until
 * then each step of the start looks here between steps, so that a stop asked during a slow one
 * (a big store's check, thousands of perf events to open) ends the start at the next. */
bool manager_stop_pending(void);

/* Loads CONFIG_PATH, makes the event loop and opens the store. Without the file, the built-in
 * defaults unless REQUIRED (a path given on the command line: a typo must not profile into the
 * default store). Returns 0 and sets *ret; -ECANCELED when a stop came meanwhile
 * (manager_stop_pending()); or a negative errno after logging why. */
int manager_new(const char *config_path, bool required, struct manager **ret);

/* Starts system-wide collection and the timers (flush, status, retention). Returns 0;
 * -ECANCELED when a stop came meanwhile; or a negative errno after logging why. */
int manager_start(struct manager *m);

/* Ends every session, stops collecting, closes the store. NULL is fine. */
struct manager *manager_free(struct manager *m);

/* Starts an on-demand session for REQ and keeps it until it ends. Returns 0 and sets *ret (ours,
 * valid until session_end() or its own end), -EBUSY past max_sessions, or session_start()'s
 * errors (*ret_what as it says). */
int manager_start_session(struct manager *m, const struct session_request *req, struct session **ret,
                          const char **ret_what);

/* Runs the event loop until SIGTERM or SIGINT; flushes everything before returning. Returns 0 or
 * a negative errno. */
int manager_run(struct manager *m);

/* Flushes the system collector and every session to the store. Returns 0 or the first error. */
int manager_flush(struct manager *m);

/* Handles, in every collector, what the kernel wrote before the call, for at most
 * MANAGER_CATCH_UP_NS in all (the loop waits meanwhile): before a flush asked for, so that it
 * stores everything up to now however far handling lags. Returns 0, -ETIMEDOUT (what was
 * handled stays handled), or a collector's error. */
int manager_catch_up(struct manager *m);

/* Re-reads the configuration; on an error keeps the old one, and so when the file is missing,
 * empty or changed while read (being replaced: config_load()). Returns 0 or a negative errno. */
int manager_reload(struct manager *m);

/* Runs retention now (after a flush). */
void manager_expire(struct manager *m);

/* The collector settings of the configuration, for the system collector and sessions. */
void manager_collector_config(const struct manager *m, struct collector_config *ret);

/* Tells every collector that store ids it cached may be gone. */
void manager_forget_store_ids(struct manager *m);
