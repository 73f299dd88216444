/* Shipping to the fleet store: the closed time buckets of the local store, one batch per run and
 * bucket, written to a spool on disk and sent from there to ClickHouse by a thread of their own
 * ([fleet] in cppd.conf; shipper.c says how). The main loop only says which buckets closed; it
 * never waits on the disk or the network for shipping. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* The sender's pause after a failure doubles from the first to the last while ClickHouse fails. */
#define SHIPPER_BACKOFF_MIN_USEC (1000000ULL)
#define SHIPPER_BACKOFF_MAX_USEC (60 * 1000000ULL)
/* At stop, how long the sender may go on emptying the spool before the daemon exits (what is
 * left goes at the next start). */
#define SHIPPER_STOP_DRAIN_USEC (5 * 1000000ULL)
/* At stop, how long the thread may take to spool what the runs closed (a local read and write;
 * what is left is spooled at the next start). */
#define SHIPPER_STOP_SPOOL_USEC (30 * 1000000ULL)
/* After a failure to spool (a full disk), the next try. */
#define SHIPPER_SPOOL_RETRY_USEC (2 * 1000000ULL)
/* Seconds one request to ClickHouse may take: a stop waits for the request in flight. */
#define SHIPPER_REQUEST_TIMEOUT_S 30
/* Runs whose shipping is followed at once (the system run and on-demand sessions). */
#define SHIPPER_MAX_RUNS 1100
/* Bytes of the last error kept for cppctl status. */
#define SHIPPER_ERROR_MAX 512
/* Bytes of one spool file at most: a batch is one bucket of one run. */
#define SHIPPER_BATCH_MAX (UINT64_C(1) << 30)

struct shipper;

/* Where a shipper ships from and to, as the configuration says ([fleet]'s url, credentials,
 * spool and spool_max; [store]'s path). The strings are the caller's: read during the call,
 * never kept. */
struct shipper_config {
        const char *url;         /* clickhouse://[USER@]HOST[:PORT]/DB; "" ships nothing */
        const char *credentials; /* a file: user, then password; "" for none */
        const char *spool;       /* the spool folder */
        uint64_t spool_max;      /* bytes of batches waiting in the spool */
        const char *store_path;
};

/* What cppctl status shows. Times are unix seconds, 0 for never. */
struct shipper_status {
        char url[1024]; /* as configured: a user at most, never a password */
        char spool[4096];
        uint64_t spool_max;
        uint64_t sent;                       /* batches ClickHouse took since cppd started */
        uint64_t pending, pending_bytes;     /* files waiting in the spool */
        uint64_t dropped, dropped_hits;      /* batches not spooled (the spool was full), persisted */
        uint64_t damaged;                    /* batch files found damaged, never sent, persisted */
        uint64_t set_aside, set_aside_bytes; /* the damaged ones still in the spool (.bad) */
        int64_t spool_error_time;            /* the failure to spool that lasts; 0: none */
        char spool_error[SHIPPER_ERROR_MAX];
        uint64_t spool_usec, spool_cpu_usec; /* the thread's time building and spooling: wall, CPU */
        int64_t last_success;
        int64_t last_error_time;
        char last_error[SHIPPER_ERROR_MAX]; /* "" after a success */
};

/* Opens the spool of CONFIG (making its folder 0700; refusing one of another user or that others
 * may write, spool_open()), reads its state and the batches left in it, opens the ClickHouse
 * client (nothing is sent yet). Returns 0 and sets *ret (NULL when no url is configured), or a
 * negative errno after logging why (a bad url or credentials file, a spool that cannot be made
 * or is refused). */
int shipper_new(const struct shipper_config *config, struct shipper **ret);

/* Opens a read-only connection to the store (made by then) and starts the thread, which
 * spools first what runs of an earlier cppd left unspooled (they ended with it). Returns 0 or a
 * negative errno after logging. */
int shipper_start(struct shipper *s);

/* Notes that run RUN_ID has closed the buckets before OPEN_BUCKET (unix seconds: the first bucket
 * it may still write, collector_close_buckets()); the thread spools them. Takes a lock, does no
 * I/O. */
void shipper_closed(struct shipper *s, int64_t run_id, int64_t open_bucket);

/* Notes that run RUN_ID has ended: every bucket of it is closed. */
void shipper_run_ended(struct shipper *s, int64_t run_id);

/* Fills *ret. */
void shipper_status(struct shipper *s, struct shipper_status *ret);

/* Lets the thread spool what the runs closed (at most SHIPPER_STOP_SPOOL_USEC) and send for at most
 * SHIPPER_STOP_DRAIN_USEC more, stops it and frees S. What is still spooled, or still to spool,
 * goes at the next start. NULL is fine. */
struct shipper *shipper_free(struct shipper *s);
