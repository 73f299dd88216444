/* The pushes to fleet profilers. Each receiver has a thread of its own, woken once per push
 * interval, which reads the interval's profiles from the store through a read-only connection
 * of its own (a WAL store lets it read while the loop's flushes write) and posts them, so that
 * the daemon's loop never waits on a receiver, a DNS lookup or a read of the store for them,
 * and no receiver waits on another: one that hangs (30 s a request) or is down falls behind on
 * its own while the others push every interval on time. Receivers in step share their loads of
 * the store (tree_acquire(): the first to reach an interval and resource loads it, the others
 * take that tree), so that they cost one load between them; one that lags loads its own.
 *
 * Intervals are [since, until) in unix seconds, until a multiple of push_interval (itself a
 * multiple of the store's bucket, config.c checks): a push covers whole buckets, each bucket
 * once. The first interval starts at the bucket the daemon started in. An interval is pushed
 * once the loop's flush has closed its buckets (pusher_set_stored(): samples of a closed bucket
 * handled later join the first open one, collector_close_buckets()), so what the store holds of
 * an interval pushed is final, and what a receiver gets is what `cppctl export` reads of that
 * interval later; PUSHER_GRACE_SEC past its end at the earliest.
 *
 * Each interval gives, per resource, one profile per systemd unit with samples in it and one
 * for the processes in no unit, each posted with the receiver's credentials' headers: one load
 * of the store per resource, with each unit's stacks below a node of its own
 * (store_filter.unit_roots), since reading the store's stack table is most of a load's cost. A
 * failed post is counted and not tried again: the local store keeps the samples, and `cppctl
 * export --since --until` gives them as the same pprof. Each receiver keeps its own place: the
 * interval it is in, and the profiles of it it got, which a reload hands to its successor.
 *
 * The counters and the last error per receiver are read by `cppctl status` from the loop's
 * thread, under a mutex. Failures are logged once per change of problem (refused, then HTTP
 * 500, then working again), not once per profile. */
#include "pusher.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "push-credentials.h"
#include "push-http.h"
#include "store.h"
#include "strv.h"
#include "utf8.h"

struct pusher;

/* Trees kept for the receivers to share, at most; each receiver holds one at a time. */
#define PUSHER_SHARED_TREES 4

/* A tree loaded for one interval and resource, which every receiver at that interval takes. */
struct shared_tree {
        char *resource; /* NULL: a free slot */
        int64_t since, until;
        struct sample_tree *tree; /* NULL while a receiver loads it */
        unsigned users;           /* receivers holding it */
        int64_t used;             /* unix seconds: its last use; kept a push interval after */
};

struct pusher_target {
        struct pusher *pusher;
        enum push_kind kind;
        char url[PUSH_URL_MAX];
        pthread_t thread;
        bool started;
        /* the thread's own; pusher_stop() reads them after the join */
        struct store *store;
        bool store_failing;
        int64_t since; /* unix seconds: the interval it pushes, or waits for */
        uint64_t done; /* profiles of that interval it got (or failed) */
        uint64_t skip; /* profiles of that interval it got before a reload */
        /* under the pusher's lock */
        uint64_t pushed, failed, intervals;
        int problem; /* the last push's: 0 worked, < 0 an errno, > 0 an HTTP status */
        char error[PUSHER_ERROR_MAX];
};

struct pusher {
        char store_path[4096];
        char credentials_path[4096];          /* "" for none */
        struct push_credentials *credentials; /* its headers; NULL: none */
        char host[256];
        int64_t interval, bucket; /* seconds: push_interval, bucket */
        struct pusher_target targets[_PUSH_KIND_MAX];
        unsigned n_targets;

        pthread_mutex_t lock; /* guards stored, stop, shared and the targets' counters and errors */
        pthread_cond_t wake;
        pthread_cond_t loaded; /* a shared tree was loaded, or its load failed */
        struct shared_tree shared[PUSHER_SHARED_TREES];
        int64_t stored; /* unix seconds: every sample before it is in the store */
        bool stop;      /* also read by push_http_post() while a request runs */
};

static int64_t now_seconds(void) {
        return (int64_t) time(NULL);
}

/* Notes how a push to T went (PROBLEM as struct pusher_target's, ERROR in words) and logs it
 * when the problem changed. */
static void note(struct pusher *p, struct pusher_target *t, int problem, const char *error) {
        char text[PUSHER_ERROR_MAX] = "";
        bool changed;

        /* It quotes the receiver's reply, bound for the journal and cppctl status: no control
         * character goes through. */
        if (error)
                utf8_escape(error, strlen(error), text, sizeof text);
        pthread_mutex_lock(&p->lock);
        changed = problem != t->problem;
        t->problem = problem;
        if (problem == 0) {
                t->pushed++;
                t->error[0] = '\0';
        } else {
                t->failed++;
                memcpy(t->error, text, sizeof t->error);
        }
        pthread_mutex_unlock(&p->lock);
        if (!changed)
                return;
        if (problem == 0)
                log_notice("Pushes to %s at %s work again", push_kind_name(t->kind), t->url);
        else
                log_error("Cannot push to %s at %s: %s; the profiles stay in the local store, and further "
                          "failures of this kind are counted in `cppctl status`",
                          push_kind_name(t->kind), t->url, text);
}

/* What a reply body says, in BUF: its first line; for an HTML page (proxies and servers answer
 * errors with one), its text without the tags, blanks collapsed. */
static const char *reply_text(const char *body, char *buf, size_t size) {
        size_t n = 0;
        bool tag = false, blank = false;

        body += strspn(body, " \t\r\n");
        if (!*body)
                return "(no body)";
        if (*body != '<') {
                n = MIN(strcspn(body, "\r\n"), size - 1);
                memcpy(buf, body, n);
                buf[n] = '\0';
                return buf;
        }
        for (const char *c = body; *c && n + 1 < size; c++) {
                if (*c == '<' || *c == '>') {
                        tag = *c == '<';
                        blank = blank || n > 0;
                } else if (tag)
                        continue;
                else if (strchr(" \t\r\n", *c))
                        blank = n > 0;
                else {
                        if (blank && n + 2 < size)
                                buf[n++] = ' ';
                        blank = false;
                        buf[n++] = *c;
                }
        }
        buf[n] = '\0';
        return n > 0 ? buf : "(an HTML page without text)";
}

static void post(struct pusher_target *t, const struct push_profile *profile) {
        struct pusher *p = t->pusher;
        struct push_request req = {};
        struct push_http_reply reply;
        const char *headers[PUSH_CREDENTIALS_MAX_HEADERS];
        char error[PUSHER_ERROR_MAX], text[128];
        int r;

        r = push_request_build(t->kind, t->url, profile, &req);
        if (r < 0) {
                snprintf(error, sizeof error, "cannot build the request: %s", strerror(-r));
                note(p, t, r, error);
                t->done++;
                return;
        }
        for (unsigned i = 0; p->credentials && i < p->credentials->n_headers[t->kind]; i++)
                headers[i] = p->credentials->headers[t->kind][i];
        r = push_http_post(&(struct push_http_request) { .url = req.url,
                                                         .content_type = req.content_type,
                                                         .body = req.body,
                                                         .size = req.size,
                                                         .cancel = &p->stop,
                                                         .headers = headers,
                                                         .n_headers = p->credentials ?
                                                                 p->credentials->n_headers[t->kind] :
                                                                 0 },
                           &reply);
        push_request_done(&req);
        if (r == -ECANCELED)
                return; /* stopping: neither pushed nor failed */
        t->done++;      /* only this thread writes it; pusher_stop() reads it after the join */
        if (r < 0) {
                snprintf(error, sizeof error, "%s (%.120s)",
                         r == -ECONNREFUSED         ? "connection refused" :
                                 r == -EHOSTUNREACH ? "host not found or unreachable" :
                                 r == -ETIMEDOUT    ? "timed out" :
                                                      strerror(-r),
                         reply.error);
                note(p, t, r, error);
        } else if (reply.status < 200 || reply.status > 299) {
                snprintf(error, sizeof error, "HTTP %ld: %s", reply.status,
                         reply_text(reply.body, text, sizeof text));
                note(p, t, (int) reply.status, error);
        } else
                note(p, t, 0, NULL);
}

/* Empties slot S, handing its tree to *FREE (NULL if it has none) to be freed without the lock.
 * Under lock. */
static void shared_clear(struct shared_tree *s, struct sample_tree **free_tree) {
        *free_tree = s->tree;
        free(s->resource);
        *s = (struct shared_tree) {};
}

/* Sets *ret to the tree of RESOURCE in [SINCE, UNTIL), every unit's stacks below a node of its
 * own (unit_roots): the one another receiver loaded or loads now, else one T loads and shares
 * from then on. Sets *ret_slot for tree_release() (-1: T's alone: no slot was free). Returns 0
 * or store_load_tree()'s errors. */
static int tree_acquire(struct pusher_target *t, const char *resource, int64_t since, int64_t until,
                        struct sample_tree **ret, int *ret_slot) {
        struct pusher *p = t->pusher;
        struct store_filter f = {
                .resource = resource,
                .since = since,
                .until = until,
                .has_since = true,
                .has_until = true,
                .unit_roots = true,
        };
        struct sample_tree *tree = NULL, *stale[PUSHER_SHARED_TREES] = {};
        struct shared_tree *s = NULL;
        int slot = -1, lru = -1, r;

        pthread_mutex_lock(&p->lock);
        for (unsigned i = 0; i < PUSHER_SHARED_TREES;) {
                s = &p->shared[i];
                if (!s->resource || s->since != since || s->until != until || !streq(s->resource, resource)) {
                        i++;
                        continue;
                }
                if (!s->tree) { /* another receiver loads it: look again once it is done */
                        pthread_cond_wait(&p->loaded, &p->lock);
                        i = 0;
                        continue;
                }
                s->users++;
                s->used = now_seconds();
                *ret = s->tree;
                *ret_slot = (int) i;
                pthread_mutex_unlock(&p->lock);
                return 0;
        }
        /* Trees unused for a push interval go. Then a free slot, else the one unused longest. */
        for (unsigned i = 0; i < PUSHER_SHARED_TREES; i++) {
                s = &p->shared[i];
                if (s->resource && s->tree && s->users == 0 && s->used + p->interval < now_seconds())
                        shared_clear(s, &stale[i]);
                if (!s->resource && slot < 0)
                        slot = (int) i;
        }
        for (unsigned i = 0; i < PUSHER_SHARED_TREES && slot < 0; i++) {
                s = &p->shared[i];
                if (s->tree && s->users == 0 && (lru < 0 || s->used < p->shared[lru].used))
                        lru = (int) i;
        }
        if (slot < 0 && lru >= 0) {
                shared_clear(&p->shared[lru], &stale[lru]);
                slot = lru;
        }
        if (slot >= 0) {
                s = &p->shared[slot];
                *s = (struct shared_tree) {
                        .resource = strdup(resource), .since = since, .until = until, .users = 1
                };
                if (!s->resource)
                        slot = -1;
        }
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < PUSHER_SHARED_TREES; i++)
                sample_tree_free(stale[i]);

        r = store_load_tree(t->store, &f, &tree);
        if (slot >= 0) {
                pthread_mutex_lock(&p->lock);
                s = &p->shared[slot];
                if (r < 0)
                        shared_clear(s, &stale[0]); /* its tree is NULL */
                else {
                        s->tree = tree;
                        s->used = now_seconds();
                }
                pthread_cond_broadcast(&p->loaded);
                pthread_mutex_unlock(&p->lock);
        }
        if (r < 0)
                return r;
        *ret = tree;
        *ret_slot = slot;
        return 0;
}

/* Done with the tree of SLOT (-1: TREE, T's alone). */
static void tree_release(struct pusher_target *t, struct sample_tree *tree, int slot) {
        struct pusher *p = t->pusher;

        if (slot < 0) {
                sample_tree_free(tree);
                return;
        }
        pthread_mutex_lock(&p->lock);
        p->shared[slot].users--;
        p->shared[slot].used = now_seconds();
        pthread_mutex_unlock(&p->lock);
}

/* Posts the profiles of RESOURCE in [SINCE, UNTIL), one per unit, to T's receiver: each unit's
 * subtree of the interval's tree a profile. */
static int push_resource(struct pusher_target *t, const char *resource, int64_t since, int64_t until) {
        struct pusher *p = t->pusher;
        struct sample_tree *tree;
        int slot, r;

        r = tree_acquire(t, resource, since, until, &tree, &slot);
        if (r < 0)
                return r;
        for (uint32_t u = tree->nodes[SAMPLE_TREE_ROOT].first_child;
             u != SAMPLE_TREE_NONE && !__atomic_load_n(&p->stop, __ATOMIC_RELAXED);
             u = tree->nodes[u].next_sibling) {
                const char *unit = sample_tree_name(tree, tree->nodes[u].name);

                if (tree->nodes[u].weight == 0)
                        continue;
                /* Got before a reload, in the same order: the store holds the same. */
                if (t->skip > 0) {
                        t->skip--;
                        t->done++;
                        continue;
                }
                post(t,
                     &(struct push_profile) { .host = p->host,
                                              .unit = unit[0] ? unit : NULL,
                                              .resource = resource,
                                              .since = since,
                                              .until = until,
                                              .tree = tree,
                                              .top = u });
        }
        tree_release(t, tree, slot);
        return 0;
}

static int push_interval(struct pusher_target *t, int64_t since, int64_t until) {
        _cleanup_(strv_freep) char **resources = NULL;
        int r;

        if (!t->store) {
                r = store_open(t->pusher->store_path, STORE_READ, &t->store);
                if (r < 0)
                        return r;
        }
        r = store_list_resources(t->store, &resources);
        if (r < 0)
                return r;
        for (char **res = resources; *res; res++) {
                r = push_resource(t, *res, since, until);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Waits until unix second UNTIL + PUSHER_GRACE_SEC has come and the store holds every sample
 * before UNTIL, or until asked to stop. Returns whether to go on. */
static bool wait_for_interval(struct pusher *p, int64_t until) {
        bool stop;

        pthread_mutex_lock(&p->lock);
        while (!p->stop && (now_seconds() < until + PUSHER_GRACE_SEC || p->stored < until)) {
                /* The flush that moves p->stored does not signal: a second is soon enough. */
                struct timespec ts = { .tv_sec = now_seconds() + 1 };

                (void) pthread_cond_timedwait(&p->wake, &p->lock, &ts);
        }
        stop = p->stop;
        pthread_mutex_unlock(&p->lock);
        return !stop;
}

/* A receiver's thread: its intervals one after the other. */
static void *run(void *userdata) {
        struct pusher_target *t = userdata;
        struct pusher *p = t->pusher;

        for (;;) {
                int64_t since = t->since, until = (since / p->interval + 1) * p->interval;
                int r;

                if (!wait_for_interval(p, until))
                        break;
                t->done = 0;
                r = push_interval(t, since, until);
                /* Stopped in the middle: the interval stays the next, its progress in done. */
                if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED))
                        break;
                /* Done with it (whatever failed): a pusher stopped before the next interval
                 * begins tells its successor to skip nothing. */
                t->done = t->skip = 0;
                if (r < 0 && !t->store_failing)
                        log_error_errno(r,
                                        "Cannot read the profiles to push to %s from %s: %m%s%s; the next "
                                        "interval tries again",
                                        push_kind_name(t->kind), p->store_path,
                                        *store_error(t->store) ? ": " : "", store_error(t->store));
                else if (r >= 0 && t->store_failing)
                        log_notice("The profiles to push to %s can be read from %s again",
                                   push_kind_name(t->kind), p->store_path);
                t->store_failing = r < 0;
                if (r < 0)
                        t->store = store_close(t->store); /* opened afresh next time */
                t->since = until;
                pthread_mutex_lock(&p->lock);
                t->intervals++;
                pthread_mutex_unlock(&p->lock);
        }
        return NULL;
}

int pusher_new(const struct pusher_config *c, const struct pusher_resume *resume, struct pusher **ret) {
        _cleanup_(pusher_freep) struct pusher *p = NULL;
        int64_t start = 0;
        int r;

        p = calloc(1, sizeof *p);
        if (!p)
                return log_error_errno(ENOMEM, "Out of memory");
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->wake, NULL);
        pthread_cond_init(&p->loaded, NULL);
        snprintf(p->store_path, sizeof p->store_path, "%s", c->store_path);
        snprintf(p->credentials_path, sizeof p->credentials_path, "%s", c->credentials);
        if (p->credentials_path[0]) {
                char error[256] = "";
                unsigned line = 0;

                p->credentials = malloc(sizeof *p->credentials);
                if (!p->credentials)
                        return log_error_errno(ENOMEM, "Out of memory");
                r = push_credentials_load(p->credentials_path, p->credentials, &line, error, sizeof error);
                if (r == -EBADMSG)
                        return log_error_errno(r, "%s:%u: %s", p->credentials_path, line, error);
                if (r == -EPERM)
                        return log_error_errno(r, "Refusing the push credentials %s: %s", p->credentials_path,
                                               error);
                if (r == -EFBIG)
                        return log_error_errno(r, "The push credentials %s are over %d bytes",
                                               p->credentials_path, PUSH_CREDENTIALS_MAX_SIZE);
                if (r < 0)
                        return log_error_errno(r, "Cannot read the push credentials %s: %m",
                                               p->credentials_path);
        }
        if (gethostname(p->host, sizeof p->host) < 0)
                return log_error_errno(errno, "Cannot read the host name: %m");
        p->host[sizeof p->host - 1] = '\0';
        p->interval = (int64_t) (c->interval / 1000000);
        p->bucket = (int64_t) (c->bucket / 1000000);
        /* A receiver kept by a reload goes on where it was; one of a new URL from where its kind's
         * was (the interval it was in), skipping nothing; one of a new kind from where the most
         * advanced was, or from the bucket that holds now. */
        for (enum push_kind k = 0; resume && k < _PUSH_KIND_MAX; k++)
                start = MAX(start, resume->since[k]);
        if (start == 0)
                start = now_seconds();
        for (enum push_kind k = 0; k < _PUSH_KIND_MAX; k++)
                if (c->url[k][0]) {
                        struct pusher_target *t = &p->targets[p->n_targets++];

                        t->pusher = p;
                        t->kind = k;
                        snprintf(t->url, sizeof t->url, "%s", c->url[k]);
                        t->since = (resume && resume->since[k] > 0 ? resume->since[k] : start) / p->bucket *
                                p->bucket;
                        if (resume && resume->since[k] > 0 && streq(resume->url[k], t->url))
                                t->skip = resume->done[k];
                }
        if (push_http_init() < 0)
                return log_error_errno(EIO, "Cannot initialize libcurl for the pushes");
        for (unsigned i = 0; i < p->n_targets; i++) {
                struct pusher_target *t = &p->targets[i];
                char name[16];

                r = pthread_create(&t->thread, NULL, run, t);
                if (r != 0)
                        return log_error_errno(r, "Cannot start the push thread for %s: %m",
                                               push_kind_name(t->kind));
                t->started = true;
                /* Its CPU time apart in top and /proc: "cppd-push-pyro" and such (15 bytes). */
                snprintf(name, sizeof name, "cppd-push-%.4s", push_kind_name(t->kind));
                (void) pthread_setname_np(t->thread, name);
                log_info("Pushing profiles to %s at %s every %" PRId64 " s", push_kind_name(t->kind), t->url,
                         p->interval);
        }
        *ret = take_ptr(&p);
        return 0;
}

static void stop_threads(struct pusher *p) {
        pthread_mutex_lock(&p->lock);
        __atomic_store_n(&p->stop, true, __ATOMIC_RELAXED);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < p->n_targets; i++)
                if (p->targets[i].started) {
                        pthread_join(p->targets[i].thread, NULL);
                        p->targets[i].started = false;
                }
}

void pusher_stop(struct pusher *p, struct pusher_resume *ret) {
        stop_threads(p);
        *ret = (struct pusher_resume) {};
        for (unsigned i = 0; i < p->n_targets; i++) {
                const struct pusher_target *t = &p->targets[i];

                snprintf(ret->url[t->kind], sizeof ret->url[t->kind], "%s", t->url);
                ret->since[t->kind] = t->since;
                /* Not reached yet in the resumed interval: what this pusher was told to skip. */
                ret->done[t->kind] = t->done + t->skip;
        }
}

struct pusher *pusher_free(struct pusher *p) {
        if (!p)
                return NULL;
        stop_threads(p);
        for (unsigned i = 0; i < p->n_targets; i++)
                store_close(p->targets[i].store);
        for (unsigned i = 0; i < PUSHER_SHARED_TREES; i++) {
                struct sample_tree *tree;

                shared_clear(&p->shared[i], &tree);
                sample_tree_free(tree);
        }
        if (p->credentials)
                explicit_bzero(p->credentials, sizeof *p->credentials);
        free(p->credentials);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->loaded);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
}

bool pusher_same_config(const struct pusher *p, const struct pusher_config *c) {
        unsigned n = 0;

        /* With credentials, a reload reads them again: they may be what changed. */
        if (!streq(p->store_path, c->store_path) || p->credentials_path[0] || c->credentials[0] ||
            p->interval != (int64_t) (c->interval / 1000000) || p->bucket != (int64_t) (c->bucket / 1000000))
                return false;
        for (enum push_kind k = 0; k < _PUSH_KIND_MAX; k++)
                if (c->url[k][0]) {
                        if (n >= p->n_targets || p->targets[n].kind != k ||
                            !streq(p->targets[n].url, c->url[k]))
                                return false;
                        n++;
                }
        return n == p->n_targets;
}

void pusher_set_stored(struct pusher *p, int64_t stored) {
        pthread_mutex_lock(&p->lock);
        if (stored > p->stored)
                p->stored = stored;
        pthread_mutex_unlock(&p->lock);
}

unsigned pusher_n_targets(const struct pusher *p) {
        return p->n_targets;
}

void pusher_target_stats(struct pusher *p, unsigned i, struct pusher_target_stats *ret) {
        const struct pusher_target *t = &p->targets[i];

        pthread_mutex_lock(&p->lock);
        *ret = (struct pusher_target_stats) {
                .kind = t->kind,
                .url = t->url,
                .pushed = t->pushed,
                .failed = t->failed,
                .intervals = t->intervals,
        };
        memcpy(ret->error, t->error, sizeof ret->error);
        pthread_mutex_unlock(&p->lock);
}
