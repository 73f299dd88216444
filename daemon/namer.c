/* The naming thread. The collector names frames from what this machine holds, on its sampling
 * path, and never asks the network (debuginfo-find.c): a server that is slow or gone would cost
 * samples. What it stored as addresses is named here instead, by a thread of its own, with a
 * store connection of its own: every NAMER_INTERVAL_SEC (sooner when woken), a pass lists the
 * modules whose frames that samples reach are addresses, finds each one's debug info once
 * (late-names.c: locally, then from the servers, each fetch bounded in time and bytes, and none
 * after a server error in the same cache), and writes the names in one transaction
 * (store-rename.c), which extends the stack trie and moves sample rows, never deleting a row the
 * collector's caches point at. The write lock is held only for the rename, and a flush waits
 * for it as for any writer. The cache of modules is dropped every NAMER_FORGET_SEC, so that a
 * module missing then is asked for again. A module not found is logged once per cache. */
#include "namer.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "debuginfod-fetch.h"
#include "late-names.h"
#include "log.h"
#include "store.h"

struct namer {
        char *store_path;
        pthread_t thread;
        bool started;
        pthread_mutex_t lock; /* guards stop, woken, stats */
        pthread_cond_t wake;
        bool stop, woken;
        struct namer_stats stats;
};

static uint64_t now_sec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec;
}

/* Waits for the next pass: the interval, a wake-up or a stop. Returns whether to go on. */
static bool wait_for_pass(struct namer *n) {
        struct timespec until;
        bool go;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += NAMER_INTERVAL_SEC;
        pthread_mutex_lock(&n->lock);
        while (!n->stop && !n->woken)
                if (pthread_cond_timedwait(&n->wake, &n->lock, &until) == ETIMEDOUT)
                        break;
        n->woken = false;
        go = !n->stop;
        pthread_mutex_unlock(&n->lock);
        return go;
}

/* Each module not found, once per cache, at debug level (a host runs hundreds of stripped
 * binaries that no server has); what the servers did wrong, at notice level, once per cache. */
static void log_missing(struct late_names *ln) {
        for (size_t i = 0; i < ln->n_modules; i++) {
                struct late_names_module *m = &ln->modules[i];
                char status[32];

                if (m->reported || m->module)
                        continue;
                m->reported = true;
                log_full_errno(m->server_error && m->asked_servers ? LOG_NOTICE : LOG_DEBUG, 0,
                               "%s%s%s: frames stay addresses: %s%s", m->path,
                               m->build_id[0] ? " build id " : "", m->build_id, late_names_strerror(m),
                               late_names_http(m, status, sizeof status));
        }
}

static void *run(void *userdata) {
        struct namer *n = userdata;
        _cleanup_(late_names_freep) struct late_names *ln = NULL;
        _cleanup_(store_closep) struct store *s = NULL;
        uint64_t made = 0;

        while (wait_for_pass(n)) {
                struct late_names_stats st = {};
                int r = 0;

                if (!s && (r = store_open(n->store_path, STORE_WRITE, &s)) < 0)
                        log_warning_errno(r, "Naming: cannot open %s: %m%s%s", n->store_path,
                                          *store_error(NULL) ? ": " : "", store_error(NULL));
                if (r >= 0 && (!ln || now_sec() - made >= NAMER_FORGET_SEC)) {
                        ln = late_names_free(ln);
                        r = late_names_new(true, &ln);
                        if (r >= 0) {
                                ln->cancel = &n->stop;
                                ln->max_fetches = NAMER_MAX_FETCHES;
                                ln->max_fetch_bytes = NAMER_MAX_FETCH_BYTES;
                        }
                        made = now_sec();
                }
                if (r >= 0) {
                        /* rows the daemon's retention deleted may be in this connection's caches */
                        store_forget_caches(s);
                        r = late_names_apply(ln, s, true, &st);
                        log_missing(ln);
                        if (r < 0) {
                                log_warning_errno(r, "Naming: cannot write names into %s: %m%s%s",
                                                  n->store_path, *store_error(s) ? ": " : "", store_error(s));
                                s = store_close(s); /* opened afresh next pass */
                        } else if (st.frames_named > 0)
                                log_info("Named %" PRIu64 " frames stored as addresses, in %" PRIu64
                                         " modules",
                                         st.frames_named, st.modules_named);
                }
                pthread_mutex_lock(&n->lock);
                n->stats.passes++;
                n->stats.frames_named += st.frames_named;
                n->stats.modules_missing = st.modules_missing;
                n->stats.last_error = r < 0 ? r : 0;
                pthread_mutex_unlock(&n->lock);
        }
        return NULL;
}

int namer_new(const char *store_path, const char *urls, struct namer **ret) {
        struct namer *n = calloc(1, sizeof *n);
        int r;

        if (!n)
                return -ENOMEM;
        pthread_mutex_init(&n->lock, NULL);
        pthread_cond_init(&n->wake, NULL);
        n->store_path = strdup(store_path);
        if (!n->store_path) {
                namer_free(n);
                return -ENOMEM;
        }
        /* libdebuginfod reads its servers and bounds from the environment: set now, before the
         * thread (and while no other thread of ours reads it), never again. */
        if (setenv("DEBUGINFOD_URLS", urls, 1) < 0 || debuginfod_fetch_setup_env() < 0) {
                namer_free(n);
                return -ENOMEM;
        }
        r = -pthread_create(&n->thread, NULL, run, n);
        if (r < 0) {
                namer_free(n);
                return r;
        }
        n->started = true;
        *ret = n;
        return 0;
}

void namer_wake(struct namer *n) {
        pthread_mutex_lock(&n->lock);
        n->woken = true;
        pthread_cond_signal(&n->wake);
        pthread_mutex_unlock(&n->lock);
}

void namer_get_stats(struct namer *n, struct namer_stats *ret) {
        pthread_mutex_lock(&n->lock);
        *ret = n->stats;
        pthread_mutex_unlock(&n->lock);
}

struct namer *namer_free(struct namer *n) {
        if (!n)
                return NULL;
        if (n->started) {
                pthread_mutex_lock(&n->lock);
                __atomic_store_n(&n->stop, true, __ATOMIC_RELAXED);
                pthread_cond_signal(&n->wake);
                pthread_mutex_unlock(&n->lock);
                pthread_join(n->thread, NULL);
        }
        pthread_cond_destroy(&n->wake);
        pthread_mutex_destroy(&n->lock);
        free(n->store_path);
        free(n);
        return NULL;
}
