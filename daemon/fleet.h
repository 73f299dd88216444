/* Shipping to the fleet store: the closed time buckets of the local store, one batch per run and
 * bucket, written to a spool on disk and sent from there to ClickHouse by a thread of their own
 * ([fleet] in cppd.conf; fleet.c says how). The main loop only reads the local store and writes
 * spool files; it never waits on the network. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "store.h"

/* The sender's pause after a failure doubles from the first to the last while ClickHouse fails. */
#define FLEET_BACKOFF_MIN_USEC (1000000ULL)
#define FLEET_BACKOFF_MAX_USEC (60 * 1000000ULL)
/* At stop, how long the sender may go on emptying the spool before the daemon exits (what is
 * left goes at the next start). */
#define FLEET_STOP_DRAIN_USEC (5 * 1000000ULL)
/* Seconds one request to ClickHouse may take: a stop waits for the request in flight. */
#define FLEET_REQUEST_TIMEOUT_S 30
/* Runs whose shipping is followed at once (the system run and on-demand sessions). */
#define FLEET_MAX_RUNS 1100
/* Bytes of the last error kept for cppctl status. */
#define FLEET_ERROR_MAX 512
/* Bytes of one spool file at most: a batch is one bucket of one run. */
#define FLEET_BATCH_MAX (UINT64_C(1) << 30)

struct fleet;

/* What cppctl status shows. Times are unix seconds, 0 for never. */
struct fleet_status {
        char url[1024]; /* as configured: a user at most, never a password */
        char spool[4096];
        uint64_t spool_max;
        uint64_t sent;                       /* batches ClickHouse took since cppd started */
        uint64_t pending, pending_bytes;     /* files waiting in the spool */
        uint64_t dropped, dropped_hits;      /* batches not spooled (the spool was full), persisted */
        uint64_t spool_usec, spool_cpu_usec; /* the loop's time building and spooling: wall, CPU */
        int64_t last_success;
        int64_t last_error_time;
        char last_error[FLEET_ERROR_MAX]; /* "" after a success */
};

/* Opens the spool of CONFIG (making its folder 0700), reads its state and the batches left in
 * it, opens the ClickHouse client (nothing is sent yet). Returns 0 and sets *ret (NULL when no
 * url is configured), or a negative errno after logging why (a bad url or credentials file, a
 * spool that cannot be made). */
int fleet_new(const struct config *config, struct fleet **ret);

/* Spools what runs of an earlier cppd left unshipped (they ended with it), then starts the
 * sender. Returns 0 or a negative errno after logging. */
int fleet_start(struct fleet *f, struct store *store);

/* Spools the buckets of run RUN_ID before OPEN_BUCKET (unix seconds: the first bucket the run
 * may still write, collector_close_buckets()) that are not spooled yet. Failures are logged
 * and tried again at the next call. */
void fleet_closed(struct fleet *f, struct store *store, int64_t run_id, int64_t open_bucket);

/* Spools every bucket of run RUN_ID not spooled yet: the run has ended. */
void fleet_run_ended(struct fleet *f, struct store *store, int64_t run_id);

/* Fills *ret. */
void fleet_status(struct fleet *f, struct fleet_status *ret);

/* Lets the sender empty the spool for at most FLEET_STOP_DRAIN_USEC, stops it and frees F.
 * What is still spooled stays for the next start. NULL is fine. */
struct fleet *fleet_free(struct fleet *f);
