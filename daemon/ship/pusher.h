/* The pushes to fleet profilers ([fleet] pyroscope, parca, otlp): a thread per receiver, so that
 * the daemon's loop never waits on the network, nor one receiver on another (pusher.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cleanup.h"
#include "push-request.h"

/* Seconds after an interval's end before it is pushed, at least: the loop's flush says when the
 * store holds it (pusher_set_stored()), and a flush takes a moment to commit. */
#define PUSHER_GRACE_SEC 1
/* Bytes of a failure's description kept for `cppctl status`. */
#define PUSHER_ERROR_MAX 200

struct pusher;

/* What a pusher pushes, as the configuration says ([fleet]'s push keys, [store]'s path and
 * bucket). The strings are the caller's: read during the call, never kept. */
struct pusher_config {
        const char *store_path;
        const char *url[_PUSH_KIND_MAX]; /* base URL by push_kind; "" for none */
        const char *credentials;         /* headers file (push-credentials.h); "" for none */
        uint64_t interval;               /* µs, whole seconds, a multiple of bucket */
        uint64_t bucket;                 /* µs, whole seconds: the store's time bucket */
};

/* What `cppctl status` shows of one receiver. */
struct pusher_target_stats {
        enum push_kind kind;
        const char *url;              /* the pusher's own: valid while it lives */
        uint64_t pushed, failed;      /* profiles the receiver took (2xx), and those it did not */
        uint64_t intervals;           /* intervals it went through, profiles or none */
        char error[PUSHER_ERROR_MAX]; /* the last failure, while failing; "" when the last worked */
};

/* Where a pusher left off (pusher_stop()), for the one that replaces it on a reload. By
 * push_kind: the receiver, the first interval it had not wholly pushed (0: no such receiver)
 * and how many of that interval's profiles it got. */
struct pusher_resume {
        char url[_PUSH_KIND_MAX][PUSH_URL_MAX];
        int64_t since[_PUSH_KIND_MAX];
        uint64_t done[_PUSH_KIND_MAX];
};

/* Starts pushing the profiles of C's store to C's receivers every C->interval, each receiver
 * in a thread of its own, from where RESUME says (NULL: from the interval that holds now on): a
 * receiver goes on from the interval its kind's was in, and skips the profiles of it that it got
 * when its URL is the same; a receiver of a kind new to the configuration starts where the most
 * advanced one was. Returns 0 and sets *ret; -ENOMEM, -EIO (libcurl), or pthread's errno, after
 * logging why. */
int pusher_new(const struct pusher_config *c, const struct pusher_resume *resume, struct pusher **ret);

/* Stops P's thread (as pusher_free() does) and says where it left off in *ret. */
void pusher_stop(struct pusher *p, struct pusher_resume *ret);

/* Stops the thread, aborting a request in flight: the interval being pushed is left in part
 * (pusher_stop() says how far it got). NULL is fine. */
struct pusher *pusher_free(struct pusher *p);
DEFINE_CLEANUP(struct pusher *, pusher_free);

/* Tells P that the buckets before unix second STORED are closed and stored (the loop's flush):
 * the store's rows of them are final, and an interval is pushed only once it is. */
void pusher_set_stored(struct pusher *p, int64_t stored);

/* Whether pusher P pushes what C says (receivers, interval, store): a reload that changes none
 * of them keeps it. */
bool pusher_same_config(const struct pusher *p, const struct pusher_config *c);

/* The number of receivers, and the stats of the Ith. */
unsigned pusher_n_targets(const struct pusher *p);
void pusher_target_stats(struct pusher *p, unsigned i, struct pusher_target_stats *ret);
