/* The pushes to fleet profilers ([fleet] pyroscope, parca, otlp): a thread of their own, so that
 * the daemon's loop never waits on the network (pusher.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cleanup.h"
#include "config.h"
#include "push-request.h"

/* Seconds after an interval's end before it is pushed, at least: the loop's flush says when the
 * store holds it (pusher_set_stored()), and a flush takes a moment to commit. */
#define PUSHER_GRACE_SEC 1
/* Bytes of a failure's description kept for `cppctl status`. */
#define PUSHER_ERROR_MAX 200

struct pusher;

/* What `cppctl status` shows of one receiver. */
struct pusher_target_stats {
        enum push_kind kind;
        const char *url;              /* the pusher's own: valid while it lives */
        uint64_t pushed, failed;      /* profiles the receiver took (2xx), and those it did not */
        uint64_t intervals;           /* intervals pushed, profiles or none */
        char error[PUSHER_ERROR_MAX]; /* the last failure, while failing; "" when the last worked */
};

/* Starts pushing the profiles of C's store to C's receivers every push_interval, from the
 * interval that holds unix second SINCE (0: now) on. Returns 0 and sets *ret; -ENOMEM, -EIO
 * (libcurl), or pthread's errno, after logging why. */
int pusher_new(const struct config *c, int64_t since, struct pusher **ret);

/* Stops the thread, aborting a request in flight: the interval being pushed is left in part
 * (pusher_next_since() still names it). NULL is fine. */
struct pusher *pusher_free(struct pusher *p);
DEFINE_CLEANUP(struct pusher *, pusher_free);

/* Tells P that every sample before unix second STORED is in the store (the loop's flush): an
 * interval is pushed only once it is. */
void pusher_set_stored(struct pusher *p, int64_t stored);

/* Whether pusher P pushes what C says (receivers, interval, store): a reload that changes none
 * of them keeps it. */
bool pusher_same_config(const struct pusher *p, const struct config *c);

/* The start (unix seconds) of the first interval not yet pushed: where a pusher replacing P
 * begins. */
int64_t pusher_next_since(struct pusher *p);

/* The number of receivers, and the stats of the Ith. */
unsigned pusher_n_targets(const struct pusher *p);
void pusher_target_stats(struct pusher *p, unsigned i, struct pusher_target_stats *ret);
