/* Shipping the local store to ClickHouse ([fleet] url =).
 *
 * What goes: a batch is all sample rows of one closed time bucket of one run, with the stacks,
 * run and resources they need (ch_batch_build()); its key (host, run, bucket) makes sending it
 * twice count once (ch_batch_send()). A bucket is closed by the first flush that handled what
 * came MANAGER_CLOSE_MARGIN_SEC past its end: the manager then calls collector_close_buckets(),
 * after which later samples of it join the open bucket, so the store's rows of a closed bucket
 * are final.
 *
 * The main loop only notes, per run, which buckets are closed (shipper_closed(),
 * shipper_run_ended()): it never waits on the disk or the network. A thread of its own,
 * "cppd-fleet", does the rest over a read-only connection to the store of its own (SQLite's WAL lets it read
 * while the loop writes): it builds each closed bucket's batch (ch_batch_build(), tens to
 * hundreds of milliseconds for a busy bucket) and writes it to the spool (spool.c), then sends
 * the spooled batches oldest first over its own ClickHouse client, deletes each file once
 * ClickHouse has it, and while ClickHouse fails waits SHIPPER_BACKOFF_MIN_USEC, doubling to
 * SHIPPER_BACKOFF_MAX_USEC, before it sends again (spooling goes on meanwhile); the local store is
 * not touched either way. A failure is logged when it changes (another errno), and the recovery
 * once; cppctl status shows the last error in ClickHouse's words meanwhile.
 *
 * The bound: a batch that would take the spool past spool_max is not spooled, and counted (its
 * batches and hits, persisted). The newest is dropped rather than the oldest because the spool
 * then stays one unbroken stretch of history, sent in order, with no file deleted unsent while a
 * send of it may be under way; and what was dropped is still in the local store (within its
 * retention): `cppctl merge -o clickhouse://...` of the store fills the hole, counting what
 * arrived once. A batch file found damaged (its checksum) is never sent: it is set aside as
 * NAME.bad for a look, counted damaged (persisted), and the set-aside files count against
 * spool_max too, the oldest removed first when a new batch needs the room.
 *
 * What survives a restart, in the spool folder: the batch files, the damaged ones, and "state":
 * per run, the first bucket not spooled yet, and the drops and damaged batches. A run the state
 * still lists at start ended with the cppd before (it crashed, or was stopped before its last
 * bucket was spooled): its remaining buckets are spooled then. The state is written after the
 * files it accounts for, so a crash between them spools a batch twice at worst, which the key
 * makes harmless. The folder is reached through one descriptor, and every file cppd makes in it
 * is new (spool.c).
 *
 * Locking: everything the loop and the thread share is under s->lock: the runs (the loop adds
 * them and moves their closed bucket on, the thread moves their next bucket on and removes
 * ended ones once spooled), the queue of spooled files, the counters and the last error. The
 * thread holds the lock for no I/O. */
#include "shipper.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ch-client.h"
#include "ch-write.h"
#include "grow.h"
#include "log.h"
#include "read-line.h"
#include "spool.h"
#include "time-util.h"

#define STATE_FILE "state"
/* Version 2 adds the damaged batches' line; version 1 is read too. */
#define STATE_MAGIC "cppd-fleet-state 2"
#define STATE_MAGIC_1 "cppd-fleet-state 1"

struct shipper_run {
        int64_t id;
        int64_t next;   /* unix seconds: the first bucket not spooled yet */
        int64_t closed; /* the first bucket not closed yet; INT64_MAX once the run ended */
};

/* Spool files in order, oldest first: [head, n) are there, those before head are done with. */
struct file_queue {
        struct spool_entry *e;
        size_t head, n, cap;
        uint64_t bytes; /* of [head, n) */
};

struct shipper {
        char url[1024]; /* as configured: a user at most, never a password (config.c) */
        char spool[4096];
        char store_path[4096];
        int spool_fd; /* the spool folder's: every file in it is reached through it */
        uint64_t spool_max;
        struct ch_client *client; /* the thread's */
        struct store *store;      /* the thread's: read-only */

        pthread_t thread;
        bool thread_started;
        pthread_mutex_t lock;
        pthread_cond_t changed; /* runs, queue, stopping, or the thread's state */
        /* under lock */
        struct shipper_run runs[SHIPPER_MAX_RUNS];
        unsigned n_runs;
        bool state_changed;       /* a run added, a batch damaged: write the state */
        bool too_many_said;       /* "more than SHIPPER_MAX_RUNS runs" said */
        uint64_t spool_after;     /* CLOCK_MONOTONIC µs: after a failure to spool, not before */
        int spool_error;          /* the last failure to spool, said once; 0 once it works */
        int64_t spool_error_time; /* unix seconds */
        char spool_error_text[SHIPPER_ERROR_MAX];
        /* A batch did not fit: the ones after it are dropped too, until a batch leaves the
         * spool (or it is empty), so that what it holds stays one unbroken stretch of buckets. */
        bool full;
        bool full_said;                      /* "the spool is full" said, until a batch is spooled again */
        bool too_big_said;                   /* "a batch is bigger than the whole spool" said */
        uint64_t spool_usec, spool_cpu_usec; /* time building and spooling batches: wall, CPU */
        struct file_queue queue;             /* batches waiting to be sent */
        struct file_queue bad;               /* damaged batches set aside (.bad) */
        uint64_t sent, dropped, dropped_hits, damaged;
        int64_t last_success, last_error_time;
        char last_error[SHIPPER_ERROR_MAX];
        bool failing;  /* the last try to send failed */
        bool stopping; /* the thread ends at its next look */
};

static uint64_t now_mono_usec(void) {
        return now_ns(CLOCK_MONOTONIC) / 1000;
}

/* ---- state ---- */

struct state {
        struct shipper_run runs[SHIPPER_MAX_RUNS];
        unsigned n_runs;
        uint64_t dropped, dropped_hits, damaged;
};

static int write_state(FILE *w, void *userdata) {
        const struct state *st = userdata;

        fprintf(w, STATE_MAGIC "\ndropped %" PRIu64 " %" PRIu64 "\ndamaged %" PRIu64 "\n", st->dropped,
                st->dropped_hits, st->damaged);
        for (unsigned i = 0; i < st->n_runs; i++)
                fprintf(w, "run %" PRId64 " %" PRId64 "\n", st->runs[i].id, st->runs[i].next);
        return 0;
}

/* Writes the state file (runs, drops, damaged batches), whole or not at all, as a new file of
 * the spool folder (spool_write_file()). Called by the thread. */
static int state_save(struct shipper *s) {
        _cleanup_free_ struct state *st = malloc(sizeof *st);
        int r;

        if (!st)
                return -ENOMEM;
        pthread_mutex_lock(&s->lock);
        st->dropped = s->dropped;
        st->dropped_hits = s->dropped_hits;
        st->damaged = s->damaged;
        st->n_runs = s->n_runs;
        memcpy(st->runs, s->runs, s->n_runs * sizeof *s->runs);
        s->state_changed = false;
        pthread_mutex_unlock(&s->lock);
        r = spool_write_file(s->spool_fd, STATE_FILE, write_state, st);
        if (r < 0)
                log_warning_errno(r, "Cannot write %s/" STATE_FILE ": %m", s->spool);
        return r;
}

/* Reads the state file: 0 (also when there is none yet), -EBADMSG for one that does not parse,
 * or read_open()'s errors for one that is not a regular file (a link is not followed). */
static int state_load(struct shipper *s) {
        _cleanup_fclose_ FILE *in = NULL;
        char line[256];
        int fd, r = 0;

        fd = read_open(s->spool_fd, STATE_FILE, READ_NOFOLLOW, NULL);
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return fd;
        in = fdopen(fd, "re");
        if (!in) {
                close(fd);
                return -ENOMEM;
        }
        if (!fgets(line, sizeof line, in) ||
            !(streq(line, STATE_MAGIC "\n") || streq(line, STATE_MAGIC_1 "\n")))
                r = -EBADMSG;
        while (r == 0 && fgets(line, sizeof line, in)) {
                struct shipper_run run;
                int n = 0;

                if (sscanf(line, "dropped %" SCNu64 " %" SCNu64 "\n%n", &s->dropped, &s->dropped_hits, &n) ==
                            2 &&
                    line[n] == '\0')
                        continue;
                if (sscanf(line, "damaged %" SCNu64 "\n%n", &s->damaged, &n) == 1 && line[n] == '\0')
                        continue;
                if (sscanf(line, "run %" SCNd64 " %" SCNd64 "\n%n", &run.id, &run.next, &n) == 2 &&
                    line[n] == '\0' && run.id > 0 && s->n_runs < SHIPPER_MAX_RUNS) {
                        run.closed = INT64_MAX; /* it ended with the cppd before */
                        s->runs[s->n_runs++] = run;
                        continue;
                }
                r = -EBADMSG;
        }
        return r;
}

/* ---- spooling (the thread) ---- */

/* Appends a file to Q. Under lock. */
static int queue_push(struct file_queue *q, const char *name, uint64_t bytes) {
        int r;

        /* Full, and what is done with sits before head: move the rest down rather than grow. */
        if (q->n == q->cap && q->head > 0) {
                memmove(q->e, q->e + q->head, (q->n - q->head) * sizeof *q->e);
                q->n -= q->head;
                q->head = 0;
        }
        r = GROW(q->e, q->cap, q->n + 1);
        if (r < 0)
                return r;
        snprintf(q->e[q->n].name, SPOOL_NAME_MAX, "%s", name);
        q->e[q->n++].bytes = bytes;
        q->bytes += bytes;
        return 0;
}

/* Done with the oldest file of Q. Under lock. */
static void queue_pop(struct file_queue *q) {
        q->bytes -= q->e[q->head++].bytes;
        if (q->head == q->n)
                q->head = q->n = 0;
}

/* Removes the oldest damaged batches set aside until NEED more bytes fit under spool_max, or
 * none is left. Called by the thread, and at the start, without the lock. */
static void make_room(struct shipper *s, uint64_t need) {
        for (;;) {
                struct spool_entry e;

                pthread_mutex_lock(&s->lock);
                if (s->bad.head == s->bad.n || s->queue.bytes + s->bad.bytes + need <= s->spool_max) {
                        pthread_mutex_unlock(&s->lock);
                        return;
                }
                e = s->bad.e[s->bad.head];
                queue_pop(&s->bad);
                pthread_mutex_unlock(&s->lock);
                if (unlinkat(s->spool_fd, e.name, 0) < 0 && errno != ENOENT)
                        log_warning_errno(errno, "Cannot remove the damaged spool file %s/%s: %m", s->spool,
                                          e.name);
                else
                        log_notice("Removed %s/%s, the oldest damaged batch set aside (%" PRIu64
                                   " bytes), to make room in the spool",
                                   s->spool, e.name, e.bytes);
        }
}

/* Builds and spools the batch of BUCKET of RUN_ID, or counts it dropped when the spool is full.
 * Returns 0 when done either way, or a negative errno (tried again later). */
static int spool_bucket(struct shipper *s, int64_t run_id, int64_t bucket) {
        _cleanup_(ch_batch_freep) struct ch_batch *b = NULL;
        char name[SPOOL_NAME_MAX];
        uint64_t size;
        bool full, said;
        int r;

        r = ch_batch_build(s->store, run_id, bucket, NULL, &b);
        if (r < 0)
                return r;
        size = spool_size(b);
        if (size <= s->spool_max)
                make_room(s, size);
        pthread_mutex_lock(&s->lock);
        if (size > s->spool_max) {
                /* No spool state makes room for it: dropped, and said apart from "full". */
                s->dropped++;
                s->dropped_hits += b->hits;
                said = s->too_big_said;
                s->too_big_said = true;
                pthread_mutex_unlock(&s->lock);
                if (!said)
                        log_error("The batch of run %" PRId64 ", bucket %" PRId64 " is %" PRIu64
                                  " bytes, more than the whole fleet spool (spool_max %" PRIu64
                                  "): dropped and counted, as all such (raise spool_max)",
                                  run_id, bucket, size, s->spool_max);
                return 0;
        }
        /* An empty spool takes what fits: nothing in it could leave to end a latch. */
        full = (s->full && s->queue.bytes > 0) || s->queue.bytes + s->bad.bytes + size > s->spool_max;
        if (full) {
                s->dropped++;
                s->dropped_hits += b->hits;
        }
        s->full = full;
        said = s->full_said;
        s->full_said = full;
        pthread_mutex_unlock(&s->lock);
        if (full && !said)
                log_error("The fleet spool %s is full (spool_max %" PRIu64 " bytes): batches are dropped "
                          "and counted until ClickHouse %s takes the waiting ones",
                          s->spool, s->spool_max, s->url);
        if (full)
                return 0;
        if (said)
                log_notice("The fleet spool %s takes batches again", s->spool);
        r = spool_write(s->spool_fd, b, name);
        if (r < 0)
                return r;
        pthread_mutex_lock(&s->lock);
        r = queue_push(&s->queue, name, size);
        pthread_mutex_unlock(&s->lock);
        return r;
}

/* Spools the buckets of RUN in [run->next, run->closed), moving run->next on (RUN is the
 * thread's copy). Returns 0 or the first error (the buckets before it are spooled). */
static int spool_run(struct shipper *s, struct shipper_run *run) {
        _cleanup_free_ struct store_bucket *b = NULL;
        size_t n = 0;
        int r;

        r = store_run_buckets(s->store, run->id, run->next, run->closed, &b, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = spool_bucket(s, run->id, b[i].bucket);
                if (r == -EBADMSG || r == -ENOENT) {
                        /* The store's rows of it do not hold together (or its run is gone):
                         * trying again cannot help, and must not hold up the buckets after it. */
                        log_error_errno(r,
                                        "Run %" PRId64 ", bucket %" PRId64
                                        " cannot be shipped (%s): counted dropped",
                                        run->id, b[i].bucket,
                                        r == -ENOENT ? "its run is gone" : "its rows do not hold together");
                        pthread_mutex_lock(&s->lock);
                        s->dropped++;
                        s->dropped_hits += b[i].hits;
                        pthread_mutex_unlock(&s->lock);
                } else if (r < 0)
                        return r;
                run->next = b[i].bucket + 1;
        }
        run->next = run->closed;
        return 0;
}

/* The index of a run with closed buckets not spooled yet, or -1. Under lock. */
static int spool_work(struct shipper *s) {
        if (now_mono_usec() < s->spool_after)
                return -1;
        for (unsigned i = 0; i < s->n_runs; i++)
                if (s->runs[i].next < s->runs[i].closed)
                        return i;
        return -1;
}

/* Spools what run I has closed. Called and returns under lock, which it drops meanwhile. */
static void spool_step(struct shipper *s, unsigned i) {
        struct shipper_run run = s->runs[i];
        uint64_t start = now_mono_usec(), cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) / 1000;
        int r, said;

        pthread_mutex_unlock(&s->lock);
        r = spool_run(s, &run);
        pthread_mutex_lock(&s->lock);
        s->spool_usec += now_mono_usec() - start;
        s->spool_cpu_usec += now_ns(CLOCK_THREAD_CPUTIME_ID) / 1000 - cpu;
        /* The loop may have moved runs around (added, closed more): find it again. */
        for (i = 0; i < s->n_runs && s->runs[i].id != run.id; i++)
                ;
        if (i < s->n_runs) {
                s->runs[i].next = run.next;
                /* Ended before this step began, and all of it spooled: done. (Ended since, the
                 * buckets after what this step saw closed are still to go.) */
                if (r >= 0 && run.closed == INT64_MAX)
                        s->runs[i] = s->runs[--s->n_runs];
        }
        said = s->spool_error;
        s->spool_error = r < 0 ? r : 0;
        s->spool_after = r < 0 ? now_mono_usec() + SHIPPER_SPOOL_RETRY_USEC : 0;
        /* cppctl status shows it while it lasts: the buckets wait in the store meanwhile. */
        if (r < 0) {
                s->spool_error_time = time(NULL);
                snprintf(s->spool_error_text, sizeof s->spool_error_text,
                         "cannot spool run %" PRId64 "'s buckets in %.300s: %s", run.id, s->spool,
                         r == -ENOSPC ? "the disk is full" : strerror(-r));
        } else
                s->spool_error_text[0] = '\0';
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);

        if (r < 0 && r != said)
                log_error_errno(r,
                                "Cannot spool run %" PRId64
                                "'s buckets for ClickHouse in %s: %s; tried again "
                                "in %llu s",
                                run.id, s->spool, r == -ENOSPC ? "the disk is full" : strerror(-r),
                                SHIPPER_SPOOL_RETRY_USEC / 1000000);
        else if (r >= 0 && said)
                log_notice("Spooling for ClickHouse works again");
        (void) state_save(s);
        pthread_mutex_lock(&s->lock);
}

/* ---- sending (the thread) ---- */

enum outcome {
        OUTCOME_SENT,    /* ClickHouse has the batch (now, or had it) */
        OUTCOME_GONE,    /* no such file: a duplicate entry, sent already */
        OUTCOME_DAMAGED, /* not a whole batch: moved aside */
        OUTCOME_FAILED,  /* try again later: WHY says why */
};

/* Sends the spool file NAME. Returns its outcome; for OUTCOME_FAILED, writes the reason in
 * words to WHY (SHIPPER_ERROR_MAX bytes) and sets *ret_error to the errno. */
static enum outcome send_file(struct shipper *s, const char *name, bool *schema_ok, char *why,
                              int *ret_error) {
        _cleanup_(ch_batch_freep) struct ch_batch *b = NULL;
        int r;

        r = spool_read(s->spool_fd, name, SHIPPER_BATCH_MAX, &b);
        if (r == -ENOENT)
                return OUTCOME_GONE;
        if (r == -EBADMSG || r == -EFBIG)
                return OUTCOME_DAMAGED;
        if (r < 0) {
                snprintf(why, SHIPPER_ERROR_MAX, "cannot read %.300s/%.100s: %s", s->spool, name,
                         strerror(-r));
                *ret_error = r;
                return OUTCOME_FAILED;
        }
        /* Once per connection that worked: it creates the tables in a new database, and refuses
         * a database of another schema version before anything is written into it. */
        if (!*schema_ok) {
                r = ch_schema_create(s->client);
                if (r >= 0)
                        *schema_ok = true;
        }
        if (r >= 0)
                r = ch_batch_send(s->client, b);
        if (r < 0) {
                const char *words = ch_client_error(s->client);

                *schema_ok = false; /* ClickHouse may come back empty, or be another one */
                snprintf(why, SHIPPER_ERROR_MAX, "%s", words && *words ? words : strerror(-r));
                *ret_error = r;
                return OUTCOME_FAILED;
        }
        return OUTCOME_SENT;
}

/* Sends the oldest spooled batch. Called and returns under lock, which it drops meanwhile.
 * Returns the failure's errno, or 0. */
static int send_step(struct shipper *s, int *said, bool *schema_ok) {
        char why[SHIPPER_ERROR_MAX] = "", bad[SPOOL_NAME_MAX] = "";
        struct spool_entry e = s->queue.e[s->queue.head];
        enum outcome o;
        int error = 0, r;

        pthread_mutex_unlock(&s->lock);
        o = send_file(s, e.name, schema_ok, why, &error);
        switch (o) {
        case OUTCOME_SENT:
                (void) unlinkat(s->spool_fd, e.name, 0);
                if (*said)
                        log_notice("ClickHouse %s takes batches again", s->url);
                *said = 0;
                break;
        case OUTCOME_GONE:
                break;
        case OUTCOME_DAMAGED:
                /* The disk damaged it: kept aside for a look, never half sent; the local store
                 * still has its rows (cppctl merge -o can send them). */
                r = spool_set_aside(s->spool_fd, e.name, bad);
                if (r < 0) {
                        (void) unlinkat(s->spool_fd, e.name, 0);
                        log_error("Spool file %s/%s is not a whole batch: removed (cannot set it aside: %s), "
                                  "not sent, counted damaged",
                                  s->spool, e.name, strerror(-r));
                } else
                        log_error("Spool file %s/%s is not a whole batch: set aside as %s, not sent, counted "
                                  "damaged",
                                  s->spool, e.name, bad);
                break;
        case OUTCOME_FAILED:
                if (error != *said)
                        log_error("Cannot ship to ClickHouse %s: %s; batches wait in %s and are sent when it "
                                  "works again",
                                  s->url, why, s->spool);
                *said = error;
                break;
        }

        pthread_mutex_lock(&s->lock);
        if (o == OUTCOME_FAILED) {
                s->failing = true;
                s->last_error_time = time(NULL);
                memcpy(s->last_error, why, sizeof why);
        } else {
                queue_pop(&s->queue);
                s->full = false;
                if (o == OUTCOME_SENT) {
                        s->sent++;
                        s->last_success = time(NULL);
                        s->failing = false;
                        s->last_error[0] = '\0';
                } else if (o == OUTCOME_DAMAGED) {
                        s->damaged++;
                        s->state_changed = true; /* the state counts it */
                        /* Out of memory, it counts against spool_max from the next start. */
                        if (bad[0])
                                (void) queue_push(&s->bad, bad, e.bytes);
                }
        }
        pthread_cond_broadcast(&s->changed);
        return o == OUTCOME_FAILED ? error : 0;
}

static void *sender(void *userdata) {
        struct shipper *s = userdata;
        uint64_t backoff = 0, send_after = 0;
        bool schema_ok = false;
        int said = 0; /* the failure logged last; 0: none */

        pthread_mutex_lock(&s->lock);
        for (;;) {
                uint64_t now, wake = UINT64_MAX;
                int i = spool_work(s);

                /* Spooling first: it needs no ClickHouse, and a stop waits for it. */
                if (i >= 0) {
                        spool_step(s, i);
                        continue;
                }
                if (s->state_changed) {
                        pthread_mutex_unlock(&s->lock);
                        (void) state_save(s);
                        pthread_mutex_lock(&s->lock);
                        continue;
                }
                if (s->stopping)
                        break;
                now = now_mono_usec();
                if (s->queue.head < s->queue.n && now >= send_after) {
                        if (send_step(s, &said, &schema_ok) < 0) {
                                backoff = backoff ? backoff * 2 : SHIPPER_BACKOFF_MIN_USEC;
                                if (backoff > SHIPPER_BACKOFF_MAX_USEC)
                                        backoff = SHIPPER_BACKOFF_MAX_USEC;
                                send_after = now_mono_usec() + backoff;
                        } else
                                backoff = send_after = 0;
                        continue;
                }
                /* Nothing to do now: wait for the loop, the stop, or the next try. */
                if (s->queue.head < s->queue.n)
                        wake = send_after;
                if (s->spool_after && s->spool_after < wake)
                        wake = s->spool_after;
                if (wake == UINT64_MAX)
                        pthread_cond_wait(&s->changed, &s->lock);
                else {
                        struct timespec ts = { wake / 1000000, wake % 1000000 * 1000 };

                        pthread_cond_timedwait(&s->changed, &s->lock, &ts);
                }
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/* ---- the loop's side ---- */

void shipper_closed(struct shipper *s, int64_t run_id, int64_t open_bucket) {
        struct shipper_run *run = NULL;
        bool too_many = false;

        if (!s || run_id <= 0)
                return;
        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < s->n_runs && !run; i++)
                if (s->runs[i].id == run_id)
                        run = &s->runs[i];
        if (!run && s->n_runs < SHIPPER_MAX_RUNS) {
                /* A run new to us: the thread lists it in the state before any of it is spooled,
                 * so that a crash now leaves its buckets to the next start. */
                run = &s->runs[s->n_runs++];
                *run = (struct shipper_run) { .id = run_id };
                s->state_changed = true;
        }
        if (run && open_bucket > run->closed) {
                run->closed = open_bucket;
                pthread_cond_broadcast(&s->changed);
        }
        too_many = !run && !s->too_many_said;
        s->too_many_said = s->too_many_said || too_many;
        pthread_mutex_unlock(&s->lock);
        if (too_many)
                log_warning("More than %d runs to ship at once: run %" PRId64
                            " and later ones are not shipped",
                            SHIPPER_MAX_RUNS, run_id);
}

void shipper_run_ended(struct shipper *s, int64_t run_id) {
        if (!s || run_id <= 0)
                return;
        pthread_mutex_lock(&s->lock);
        for (unsigned i = 0; i < s->n_runs; i++)
                if (s->runs[i].id == run_id) {
                        s->runs[i].closed = INT64_MAX;
                        pthread_cond_broadcast(&s->changed);
                        break;
                }
        pthread_mutex_unlock(&s->lock);
}

/* ---- life ---- */

int shipper_new(const struct shipper_config *config, struct shipper **ret) {
        _cleanup_free_ struct spool_entry *entries = NULL;
        struct shipper *s;
        pthread_condattr_t ca;
        const char *why = NULL;
        char error[512];
        size_t n = 0;
        int r;

        *ret = NULL;
        if (!config->url[0])
                return 0;
        s = calloc(1, sizeof *s);
        if (!s)
                return log_error_errno(ENOMEM, "Out of memory");
        snprintf(s->url, sizeof s->url, "%s", config->url);
        snprintf(s->spool, sizeof s->spool, "%s", config->spool);
        snprintf(s->store_path, sizeof s->store_path, "%s", config->store_path);
        s->spool_fd = -1;
        s->spool_max = config->spool_max;
        pthread_mutex_init(&s->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&s->changed, &ca);
        pthread_condattr_destroy(&ca);

        r = ch_client_open(config->url, config->credentials[0] ? config->credentials : NULL, &s->client,
                           &why);
        if (r < 0) {
                log_error_errno(r, "[fleet] url %s%s%s: %s", config->url,
                                config->credentials[0] ? ", credentials " : "", config->credentials,
                                why ?: strerror(-r));
                goto fail;
        }
        ch_client_set_timeout(s->client, SHIPPER_REQUEST_TIMEOUT_S);
        r = spool_open(s->spool, &s->spool_fd, error, sizeof error);
        if (r < 0) {
                log_error_errno(r, "Refusing the fleet spool %s: %s", s->spool, error);
                goto fail;
        }
        r = state_load(s);
        if (r < 0) {
                log_error_errno(r, "Cannot read %s/" STATE_FILE ": %s", s->spool,
                                r == -EBADMSG ? "not a cppd fleet state (remove it to start over)" :
                                                read_strerror(r));
                goto fail;
        }
        r = spool_list(s->spool_fd, &entries, &n);
        if (r < 0) {
                log_error_errno(r, "Cannot list the fleet spool %s: %m", s->spool);
                goto fail;
        }
        for (size_t i = 0; i < n && r >= 0; i++)
                r = queue_push(entries[i].damaged ? &s->bad : &s->queue, entries[i].name, entries[i].bytes);
        if (r < 0) {
                log_error_errno(r, "Out of memory");
                goto fail;
        }
        if (s->queue.n)
                log_info("%zu batches wait in the fleet spool %s (%" PRIu64 " bytes)", s->queue.n, s->spool,
                         s->queue.bytes);
        /* A spool_max lowered since, or batches left at the last stop: the set-aside files go
         * first, so that the spool is within its bound from the start. */
        make_room(s, 0);
        if (s->bad.n - s->bad.head)
                log_notice("%zu damaged batches are set aside in the fleet spool %s (%" PRIu64
                           " bytes, counted against spool_max): the oldest go when a batch needs the room",
                           s->bad.n - s->bad.head, s->spool, s->bad.bytes);
        *ret = s;
        return 0;
fail:
        shipper_free(s);
        return r;
}

int shipper_start(struct shipper *s) {
        int r;

        if (!s)
                return 0;
        /* A connection of the thread's own, read-only: it reads while the loop writes. */
        r = store_open(s->store_path, STORE_READ, &s->store);
        if (r < 0)
                return log_error_errno(r, "Cannot read the store %s for shipping: %m", s->store_path);
        r = -pthread_create(&s->thread, NULL, sender, s);
        if (r < 0)
                return log_error_errno(r, "Cannot start the fleet sender: %m");
        s->thread_started = true;
        (void) pthread_setname_np(s->thread, "cppd-fleet"); /* its CPU time in top -H and benchmarks */
        log_info("Shipping closed time buckets to ClickHouse %s through the spool %s", s->url, s->spool);
        return 0;
}

void shipper_status(struct shipper *s, struct shipper_status *ret) {
        *ret = (struct shipper_status) { .spool_max = s->spool_max };
        snprintf(ret->url, sizeof ret->url, "%s", s->url);
        snprintf(ret->spool, sizeof ret->spool, "%s", s->spool);
        pthread_mutex_lock(&s->lock);
        ret->spool_usec = s->spool_usec;
        ret->spool_cpu_usec = s->spool_cpu_usec;
        ret->sent = s->sent;
        ret->pending = s->queue.n - s->queue.head;
        ret->pending_bytes = s->queue.bytes;
        ret->dropped = s->dropped;
        ret->dropped_hits = s->dropped_hits;
        ret->damaged = s->damaged;
        ret->set_aside = s->bad.n - s->bad.head;
        ret->set_aside_bytes = s->bad.bytes;
        ret->spool_error_time = s->spool_error ? s->spool_error_time : 0;
        memcpy(ret->spool_error, s->spool_error_text, sizeof ret->spool_error);
        ret->last_success = s->last_success;
        ret->last_error_time = s->last_error_time;
        memcpy(ret->last_error, s->last_error, sizeof ret->last_error);
        pthread_mutex_unlock(&s->lock);
}

/* Whether closed buckets wait to be spooled (and spooling does not fail). Under lock. */
static bool spool_waits(struct shipper *s) {
        if (s->spool_error)
                return false;
        for (unsigned i = 0; i < s->n_runs; i++)
                if (s->runs[i].next < s->runs[i].closed)
                        return true;
        return false;
}

struct shipper *shipper_free(struct shipper *s) {
        if (!s)
                return NULL;
        if (s->thread_started) {
                uint64_t until = now_mono_usec() + SHIPPER_STOP_SPOOL_USEC;
                struct timespec ts = { until / 1000000, until % 1000000 * 1000 };

                pthread_mutex_lock(&s->lock);
                /* What the runs closed goes to disk first (a local read and write), then the
                 * sender has a little while to empty the spool. */
                while (spool_waits(s) && now_mono_usec() < until)
                        pthread_cond_timedwait(&s->changed, &s->lock, &ts);
                until = now_mono_usec() + SHIPPER_STOP_DRAIN_USEC;
                ts = (struct timespec) { until / 1000000, until % 1000000 * 1000 };
                while (s->queue.head < s->queue.n && !s->failing && now_mono_usec() < until)
                        pthread_cond_timedwait(&s->changed, &s->lock, &ts);
                if (s->queue.head < s->queue.n)
                        log_notice("%zu batches stay in the fleet spool %s for the next start",
                                   s->queue.n - s->queue.head, s->spool);
                s->stopping = true;
                pthread_cond_broadcast(&s->changed);
                pthread_mutex_unlock(&s->lock);
                pthread_join(s->thread, NULL);
        }
        store_close(s->store);
        ch_client_free(s->client);
        free(s->queue.e);
        free(s->bad.e);
        safe_close_fd(s->spool_fd);
        pthread_cond_destroy(&s->changed);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}
