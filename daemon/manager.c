/* The manager: the daemon's loop and what hangs off it.
 *
 *   system collector's fd   -> handle its records (its ring reader thread fills the queue)
 *   flush timer (flush_interval)      -> write every collector's hits, one transaction each
 *   status timer (10 s)     -> STATUS= for systemd, samples/s
 *   retention timer (1 h, and after a flush when the store is over max_size) -> store_expire
 *   SIGTERM, SIGINT         -> stop collecting, store everything, exit
 *   SIGHUP                  -> reload the configuration
 *   the pusher's thread     -> each push_interval, profiles to the [fleet] receivers (ship/pusher.c)
 *   watchdog                -> sd-event sends WATCHDOG=1 itself (sd_event_set_watchdog)
 *
 * A flush that fails (a full disk) keeps the hits in memory for the next one and is said once,
 * not every time, and is tried again at most every MANAGER_FLUSH_RETRY_USEC; the store itself
 * is never left half-written (one transaction). A store that fails PRAGMA quick_check at start
 * is refused, not written into. */
#include "manager.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "namer.h"
#include "perf-event.h"
#include "read-line.h"
#include "session.h"
#include "strv.h"
#include "time-util.h"

static int on_collector(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        struct manager *m = userdata;
        int r = collector_drain(m->collector, MANAGER_DRAIN_BUDGET_NS);

        if (r < 0)
                log_warning_errno(r, "Cannot handle samples: %m");
        return 0;
}

void manager_collector_config(const struct manager *m, struct collector_config *ret) {
        *ret = (struct collector_config) COLLECTOR_CONFIG_DEFAULT;
        ret->unwind = m->config.unwind;
        ret->kernel = m->config.kernel;
        ret->jitter = !m->config.no_jitter;
        ret->every_event = m->config.every_event;
        ret->no_python = m->config.no_python;
        ret->realtime_reader = m->config.realtime_reader;
        ret->stack_size = m->config.stack_size;
        ret->ring_size = m->config.ring_size;
        ret->bucket_seconds = m->config.bucket / 1000000;
        ret->queue_size = m->config.queue_size;
        ret->function_frames = !m->config.lines;
}

/* The pushes' settings in C (ship/ sees no struct config), pointing into it. */
static void pushes_of(const struct config *c, struct pusher_config *ret) {
        *ret = (struct pusher_config) {
                .store_path = c->store_path,
                .credentials = c->push_credentials,
                .interval = c->push_interval,
                .bucket = c->bucket,
        };
        for (enum push_kind k = 0; k < _PUSH_KIND_MAX; k++)
                ret->url[k] = c->push_url[k];
}

/* The shipping settings in C, pointing into it. */
static void shipping_of(const struct config *c, struct shipper_config *ret) {
        *ret = (struct shipper_config) {
                .url = c->fleet_url,
                .credentials = c->fleet_credentials,
                .spool = c->fleet_spool,
                .spool_max = c->fleet_spool_max,
                .store_path = c->store_path,
        };
}

/* Creates the system-wide collector for the configuration and opens its events. */
static int start_collector(struct manager *m) {
        struct collector_config cc;
        struct collector_resource_stats rs;
        const char *failed = NULL;
        char field[160];
        int r;

        manager_collector_config(m, &cc);
        /* [alloc]: the units whose processes' allocations are counted (read as the events open). */
        m->alloc_units = strv_free(m->alloc_units);
        if (m->config.alloc_units[0]) {
                _cleanup_free_ char *units = strdup(m->config.alloc_units);
                char *save = NULL;

                if (!units)
                        return log_error_errno(ENOMEM, "Out of memory");
                for (char *u = strtok_r(units, " ", &save); u; u = strtok_r(NULL, " ", &save))
                        if (strv_extend(&m->alloc_units, u) < 0)
                                return log_error_errno(ENOMEM, "Out of memory");
                cc.alloc_units = m->alloc_units;
                cc.alloc_max_processes = m->config.alloc_max_processes;
        }
        r = collector_new(&cc, m->store, &m->collector);
        if (r < 0)
                return log_error_errno(r, "Cannot create the collector: %m");
        collector_set_run(m->collector, "daemon", "cppd");
        for (unsigned i = 0; i < m->config.n_resources; i++) {
                const struct config_resource *res = &m->config.resources[i];

                r = collector_add_resource(m->collector, res->name, res->event, res->period);
                if (r < 0) {
                        snprintf(field, sizeof field, "CPPD_RESOURCE=%s", res->name);
                        return log_full_field(LOG_ERR, r, field, "Cannot add resource %s: %s", res->name,
                                              r == -ENODEV ? "tracefs is not mounted" : strerror(-r));
                }
        }
        for (unsigned i = 0; m->alloc_units && i < m->config.n_alloc_resources; i++) {
                const struct config_resource *res = &m->config.alloc_resources[i];

                r = collector_add_resource(m->collector, res->name, false, res->period);
                if (r < 0)
                        return log_error_errno(r, "Cannot add resource %s: %s", res->name,
                                               r == -ERANGE ? "its period is past 64 MiB" : strerror(-r));
        }
        r = collector_attach_system(m->collector, &m->unsupported, &failed);
        if (r < 0 && collector_alloc_why(m->collector))
                return log_error_errno(r, "Cannot count allocations in [alloc] units: %s",
                                       collector_alloc_why(m->collector));
        for (unsigned i = 0; i < collector_n_resources(m->collector); i++)
                if (m->unsupported & (1u << i)) {
                        collector_resource_stats(m->collector, i, &rs);
                        snprintf(field, sizeof field, "CPPD_RESOURCE=%s", rs.name);
                        log_full_field(LOG_WARNING, 0, field,
                                       "%s: not counted on this machine (%s); "
                                       "the other resources go on",
                                       rs.name,
                                       rs.unnamed ? "libpfm4 knows no such event for this CPU" :
                                                    perf_event_hint(-ENOENT));
                }
        if (r < 0)
                return log_error_errno(r, "Cannot profile the system%s%s: %s", failed ? " for " : "",
                                       failed ?: "", perf_event_hint(r));
        r = sd_event_add_io(m->event, &m->collector_source, collector_fd(m->collector), EPOLLIN, on_collector,
                            m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the collector: %m");
        /* The run's row now, so that status and queries can name it from the start. */
        (void) manager_flush(m);
        return 0;
}

/* Stops the system collector and stores what it has, ending its run. */
static int stop_collector(struct manager *m) {
        int r = 0;

        if (!m->collector)
                return 0;
        m->collector_source = sd_event_source_disable_unref(m->collector_source);
        collector_stop(m->collector);
        r = collector_drain(m->collector, 0);
        if (r >= 0)
                r = collector_flush(m->collector, true);
        if (r < 0)
                log_error_errno(r, "The last samples could not be stored: %m");
        else
                for (unsigned i = 0; i < collector_n_resources(m->collector); i++) {
                        struct collector_resource_stats rs;

                        collector_resource_stats(m->collector, i, &rs);
                        if (rs.active)
                                log_info("Run %" PRId64 " ended: %s: %" PRIu64 " hits in %" PRIu64 " samples "
                                         "stored, %" PRIu64 " lost",
                                         collector_run_id(m->collector), rs.name, rs.hits, rs.samples,
                                         rs.lost);
                        if (rs.active && rs.uncounted)
                                log_warning("Run %" PRId64 " ended: %s: not measured in %" PRIu64
                                            " process%s, %s (pid %" PRIu32 ") the first: %s",
                                            collector_run_id(m->collector), rs.name, rs.uncounted,
                                            rs.uncounted == 1 ? "" : "es", rs.uncounted_comm,
                                            rs.uncounted_pid, rs.uncounted_why ?: "an allocator of its own");
                }
        if (r >= 0)
                shipper_run_ended(m->shipper, collector_run_id(m->collector));
        m->collector = collector_free(m->collector);
        return r < 0 ? r : 0;
}

int manager_catch_up(struct manager *m) {
        uint64_t end = now_ns(CLOCK_MONOTONIC) + MANAGER_CATCH_UP_NS, now;
        int r = 0;

        if (m->collector)
                r = collector_catch_up(m->collector, MANAGER_CATCH_UP_NS);
        for (unsigned i = 0; i < m->n_sessions && r >= 0; i++) {
                now = now_ns(CLOCK_MONOTONIC);
                r = now < end ? collector_catch_up(m->sessions[i]->collector, end - now) : -ETIMEDOUT;
        }
        if (r == -ETIMEDOUT)
                log_notice(
                        "Handling samples lags more than %llu s behind the kernel: a flush stores what was "
                        "handled",
                        MANAGER_CATCH_UP_NS / 1000000000ULL);
        return r;
}

int manager_flush(struct manager *m) {
        uint64_t start = now_ns(CLOCK_MONOTONIC) / 1000, end;
        int r = 0, q;

        if (m->collector)
                r = collector_flush(m->collector, false);
        for (unsigned i = 0; i < m->n_sessions; i++) {
                q = collector_flush(m->sessions[i]->collector, false);
                if (r >= 0 && q < 0)
                        r = q;
        }
        if (r < 0) {
                m->flush_failures++;
                if (!m->store_failing)
                        log_error_errno(r,
                                        "Cannot write to the store %s (%s): the samples stay in memory "
                                        "and are written when it works again",
                                        m->config.store_path,
                                        r == -ENOSPC ? "the disk is full" : strerror(-r));
                m->store_failing = true;
                return r;
        }
        /* The buckets before what was handled (now less the lag, less a margin for records still
         * in the kernel's rings, which the lag does not see) are in the store for good: closed,
         * so that a sample of them handled later joins the first open bucket, and what the store
         * holds of a closed bucket is what the shipper (ship/shipper.c) sends and the pusher posts. The
         * margin keeps such late samples rare; the closing makes them harmless. */
        if (m->shipper || m->pusher) {
                struct collector_stats st = {};
                int64_t wall, floor = 0;

                if (m->collector)
                        collector_get_stats(m->collector, &st);
                wall = time(NULL) - (int64_t) (st.lag_ns / 1000000000) - MANAGER_CLOSE_MARGIN_SEC;

                if (m->collector)
                        floor = collector_close_buckets(m->collector, wall);
                if (m->shipper && m->collector)
                        shipper_closed(m->shipper, collector_run_id(m->collector), floor);
                for (unsigned i = 0; i < m->n_sessions; i++) {
                        int64_t b = collector_close_buckets(m->sessions[i]->collector, wall);

                        if (m->shipper)
                                shipper_closed(m->shipper, session_run_id(m->sessions[i]), b);
                }
                if (m->pusher && m->collector)
                        pusher_set_stored(m->pusher, floor);
        }
        end = now_ns(CLOCK_MONOTONIC) / 1000;
        m->flushes++;
        m->flush_usec_last = end > start ? end - start : 0;
        if (m->flush_usec_last > m->flush_usec_max)
                m->flush_usec_max = m->flush_usec_last;
        if (m->store_failing)
                log_notice("The store %s works again", m->config.store_path);
        m->store_failing = false;
        return 0;
}

void manager_forget_store_ids(struct manager *m) {
        if (m->collector)
                collector_forget_store_ids(m->collector);
        for (unsigned i = 0; i < m->n_sessions; i++)
                collector_forget_store_ids(m->sessions[i]->collector);
}

void manager_expire(struct manager *m) {
        int64_t cutoff = m->config.retention ? time(NULL) - (int64_t) (m->config.retention / 1000000) : 0;
        uint64_t deleted = 0;
        int r;

        r = store_expire(m->store, cutoff, m->config.max_size, &deleted);
        if (r < 0) {
                log_warning_errno(r, "Retention failed on %s: %m", m->config.store_path);
                return;
        }
        manager_forget_store_ids(m);
        if (deleted)
                log_info("Retention: %" PRIu64 " sample rows older than the limits removed", deleted);
}

/* A timer added by sd_event_add_time_relative() is one-shot: sd-event turns it off once it has
 * fired, and setting a new time does not turn it back on. */
static void rearm(sd_event_source *src, uint64_t usec) {
        sd_event_source_set_time_relative(src, usec);
        sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

static int on_flush(sd_event_source *src, uint64_t usec, void *userdata) {
        struct manager *m = userdata;
        uint64_t live, file;

        if (manager_flush(m) >= 0 && m->config.max_size && store_size(m->store, &live, &file) >= 0 &&
            live > m->config.max_size)
                manager_expire(m);
        /* What a burst grew (the queue, the aggregates) is freed among long-lived small blocks,
         * and glibc returns such free pages to the kernel only when asked; the modules' mapped
         * files stay resident once read. Each page given back faults in again at its next use
         * (a microsecond or two on a VM), so not at every flush. */
        if (now_ns(CLOCK_MONOTONIC) / 1000 - m->trimmed_usec >= MANAGER_TRIM_INTERVAL_USEC) {
                if (m->collector)
                        collector_release_memory(m->collector);
                for (unsigned i = 0; i < m->n_sessions; i++)
                        collector_release_memory(m->sessions[i]->collector);
                malloc_trim(0);
                m->trimmed_usec = now_ns(CLOCK_MONOTONIC) / 1000;
        }
        /* While the store fails, not more often than MANAGER_FLUSH_RETRY_USEC. */
        rearm(src,
              m->store_failing && m->config.flush_interval < MANAGER_FLUSH_RETRY_USEC ?
                      MANAGER_FLUSH_RETRY_USEC :
                      m->config.flush_interval);
        return 0;
}

static int on_retention(sd_event_source *src, uint64_t usec, void *userdata) {
        manager_expire(userdata);
        rearm(src, MANAGER_RETENTION_INTERVAL_USEC);
        return 0;
}

static void notify_status(struct manager *m, bool ready) {
        struct collector_stats st;
        uint64_t now;

        if (!m->collector)
                return;
        collector_get_stats(m->collector, &st);
        sd_event_now(m->event, CLOCK_MONOTONIC, &now);
        for (unsigned i = 0; i < collector_n_resources(m->collector); i++) {
                struct collector_resource_stats rs;

                collector_resource_stats(m->collector, i, &rs);
                if (m->last_status_usec && now > m->last_status_usec &&
                    rs.samples >= m->last_resource_samples[i])
                        m->resource_rate[i] = (double) (rs.samples - m->last_resource_samples[i]) * 1e6 /
                                (double) (now - m->last_status_usec);
                m->last_resource_samples[i] = rs.samples;
        }
        if (m->last_status_usec && now > m->last_status_usec && st.samples >= m->last_samples)
                m->samples_per_second =
                        (double) (st.samples - m->last_samples) * 1e6 / (double) (now - m->last_status_usec);
        m->last_samples = st.samples;
        m->last_status_usec = now;
        sd_notifyf(false,
                   "%sSTATUS=Profiling %u resources system-wide; %.0f samples/s, %" PRIu64 " lost, "
                   "%u sessions",
                   ready ? "READY=1\n" : "",
                   collector_n_resources(m->collector) - __builtin_popcount(m->unsupported),
                   m->samples_per_second, st.lost, m->n_sessions);
}

static int on_status(sd_event_source *src, uint64_t usec, void *userdata) {
        notify_status(userdata, false);
        rearm(src, MANAGER_STATUS_INTERVAL_USEC);
        return 0;
}

static int on_sigterm(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata) {
        struct manager *m = userdata;

        sd_notify(false, "STOPPING=1\nSTATUS=Storing the last samples");
        sd_event_exit(m->event, 0);
        return 0;
}

static int on_sighup(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata) {
        (void) manager_reload(userdata);
        return 0;
}

static int open_store(struct manager *m) {
        char dir[4096], *slash;
        mode_t old;
        int r;

        /* The store says where every program spent its time: only root and the group read it. */
        snprintf(dir, sizeof dir, "%s", m->config.store_path);
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                (void) mkdir(dir, 0750);
        }
        old = umask(0027);
        r = store_open(m->config.store_path, STORE_WRITE, &m->store);
        umask(old);
        /* store_open() refuses a damaged store before it writes anything (store_check()). */
        if (r < 0)
                return log_error_errno(r, "Cannot open the store %s: %s%s%s", m->config.store_path,
                                       r == -EBADMSG ? "not a cppd store, or damaged; left untouched" :
                                                       strerror(-r),
                                       *store_error(NULL) ? ": " : "", store_error(NULL));
        return 0;
}

int manager_reload(struct manager *m) {
        struct pusher_resume resume = {};
        struct pusher_config pc;
        struct config c;
        char error[256];
        unsigned line;
        int r;

        /* Whatever is wrong with the file, the configuration in use goes on: a reload that fell
         * back on the defaults would profile other resources into another store. */
        r = config_load(m->config_path, &c, &line, error, sizeof error);
        if (r == -EBADMSG)
                return log_error_errno(r, "%s:%u: %s; the configuration in use stays", m->config_path, line,
                                       error);
        if (r == -ENOENT || r == -ENODATA || r == -ESTALE)
                return log_error_errno(r, "Cannot reload: %s %s; the configuration in use stays",
                                       m->config_path,
                                       r == -ENOENT          ? "does not exist (being replaced?)" :
                                               r == -ENODATA ? "is empty (being written?)" :
                                                               "changed while it was read");
        if (r < 0)
                return log_error_errno(r, "Cannot read %s: %s; the configuration in use stays",
                                       m->config_path, read_strerror(r));
        if (!streq(c.socket_path, m->config.socket_path))
                log_warning("The control socket moves to %s at the next restart", c.socket_path);
        sd_notify(false, "RELOADING=1\nSTATUS=Reloading the configuration");
        /* A new run with the new resources and periods; the old run ends with its samples. */
        r = stop_collector(m);
        if (r < 0)
                return r;
        if (!streq(c.store_path, m->config.store_path)) {
                for (unsigned i = m->n_sessions; i > 0; i--)
                        session_end(m->sessions[i - 1]);
                m->store = store_close(m->store);
        }
        memcpy(c.socket_path, m->config.socket_path, sizeof c.socket_path);
        /* The pushes go on from the first interval not pushed, unless they are what changed. */
        pushes_of(&c, &pc);
        if (m->pusher && !pusher_same_config(m->pusher, &pc)) {
                pusher_stop(m->pusher, &resume);
                m->pusher = pusher_free(m->pusher);
        }
        /* The shipping thread keeps its client, spool and store connection till the restart. */
        if (!streq(c.fleet_url, m->config.fleet_url) ||
            !streq(c.fleet_credentials, m->config.fleet_credentials) ||
            !streq(c.fleet_spool, m->config.fleet_spool) || c.fleet_spool_max != m->config.fleet_spool_max ||
            (m->shipper && !streq(c.store_path, m->config.store_path)))
                log_warning("[fleet] changes, and shipping a new store, take effect at the next restart");
        memcpy(c.fleet_url, m->config.fleet_url, sizeof c.fleet_url);
        memcpy(c.fleet_credentials, m->config.fleet_credentials, sizeof c.fleet_credentials);
        memcpy(c.fleet_spool, m->config.fleet_spool, sizeof c.fleet_spool);
        c.fleet_spool_max = m->config.fleet_spool_max;
        m->config = c;
        if (!m->store) {
                r = open_store(m);
                if (r < 0)
                        return r;
        }
        m->last_status_usec = m->last_samples = 0;
        memset(m->last_resource_samples, 0, sizeof m->last_resource_samples);
        memset(m->resource_rate, 0, sizeof m->resource_rate);
        r = start_collector(m);
        if (r < 0)
                return r;
        /* Profiling goes on without the pushes when they cannot start (their credentials): the
         * error is logged, and the next reload tries again. */
        pushes_of(&m->config, &pc);
        if (!m->pusher && config_pushes(&m->config) && pusher_new(&pc, &resume, &m->pusher) < 0)
                log_error("The pushes to fleet profilers stop until a reload can start them");
        rearm(m->flush_timer, m->config.flush_interval);
        notify_status(m, true);
        log_info("Configuration reloaded from %s", m->config_path);
        return 0;
}

int manager_new(const char *config_path, bool required, struct manager **ret) {
        struct shipper_config sc;
        struct manager *m;
        char error[256];
        unsigned line;
        int r;

        m = calloc(1, sizeof *m);
        if (!m)
                return log_error_errno(ENOMEM, "Out of memory");
        snprintf(m->config_path, sizeof m->config_path, "%s", config_path);
        r = config_load(config_path, &m->config, &line, error, sizeof error);
        if (r == -EBADMSG) {
                log_error("%s:%u: %s", config_path, line, error);
                goto fail;
        }
        if (r == -ENOENT && required) {
                log_error("%s does not exist: cppd does not start on the defaults when given a configuration",
                          config_path);
                goto fail;
        }
        if (r == -ENOENT || r == -ENODATA) {
                /* No /etc/cppd/cppd.conf, or a file that is empty on purpose: the defaults. */
                log_info("%s %s: the built-in defaults", config_path,
                         r == -ENOENT ? "does not exist" : "is empty");
                config_defaults(&m->config);
        } else if (r == -ESTALE) {
                log_error("%s changed while it was read: start again once it is written", config_path);
                goto fail;
        } else if (r < 0) {
                log_error_errno(r, "Cannot read %s: %s", config_path, read_strerror(r));
                goto fail;
        }
        /* Only the default group can be missing (a group named in the file must exist). */
        if (m->config.group[0] && m->config.gid == CONFIG_NO_GID)
                log_notice("There is no group %s on this machine: only root may query cppd", m->config.group);

        r = sd_event_default(&m->event);
        if (r < 0)
                goto fail;
        /* The signals are blocked since main() began (manager_stop_pending()). */
        if ((r = sd_event_add_signal(m->event, NULL, SIGTERM, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGINT, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m)) < 0)
                goto fail;
        (void) sd_event_set_watchdog(m->event, true);
        sd_event_now(m->event, CLOCK_MONOTONIC, &m->started_usec);

        r = open_store(m);
        if (r < 0)
                goto fail;
        if (manager_stop_pending()) {
                r = -ECANCELED;
                goto fail;
        }
        shipping_of(&m->config, &sc);
        r = shipper_new(&sc, &m->shipper);
        if (r < 0)
                goto fail;
        *ret = m;
        return 0;
fail:
        manager_free(m);
        return r < 0 ? r : -EINVAL;
}

bool manager_stop_pending(void) {
        sigset_t pending;

        return sigpending(&pending) == 0 &&
                (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
}

int manager_start(struct manager *m) {
        int r;

        /* First: it sets the environment libdebuginfod reads, before any other thread runs. */
        if (m->config.debuginfod[0]) {
                r = namer_new(m->config.store_path, m->config.debuginfod, &m->namer);
                if (r < 0)
                        return log_error_errno(r, "Cannot start naming from %s: %m", m->config.debuginfod);
        }
        r = shipper_start(m->shipper);
        if (r < 0)
                return r;
        if (manager_stop_pending())
                return -ECANCELED;
        r = start_collector(m);
        if (r < 0)
                return r;
        if (manager_stop_pending())
                return -ECANCELED;
        if (config_pushes(&m->config)) {
                struct pusher_config pc;

                pushes_of(&m->config, &pc);
                r = pusher_new(&pc, NULL, &m->pusher);
                if (r < 0)
                        return r;
        }
        if ((r = sd_event_add_time_relative(m->event, &m->flush_timer, CLOCK_MONOTONIC,
                                            m->config.flush_interval, 10000, on_flush, m)) < 0 ||
            (r = sd_event_add_time_relative(m->event, &m->status_timer, CLOCK_MONOTONIC,
                                            MANAGER_STATUS_INTERVAL_USEC, 1000000, on_status, m)) < 0 ||
            (r = sd_event_add_time_relative(m->event, &m->retention_timer, CLOCK_MONOTONIC, 60 * 1000000ULL,
                                            1000000, on_retention, m)) < 0)
                return r;
        return 0;
}

static void on_session_end(struct session *s, void *userdata) {
        struct manager *m = userdata;

        shipper_run_ended(m->shipper, session_run_id(s));
        for (unsigned i = 0; i < m->n_sessions; i++)
                if (m->sessions[i] == s) {
                        m->sessions[i] = m->sessions[--m->n_sessions];
                        break;
                }
}

int manager_start_session(struct manager *m, const struct session_request *req, struct session **ret,
                          const char **ret_what) {
        struct session_settings settings = {
                .event = m->event,
                .store = m->store,
                .resources = m->config.resources,
                .n_resources = m->config.n_resources,
                .drain_budget_ns = MANAGER_DRAIN_BUDGET_NS,
                .on_end = on_session_end,
                .userdata = m,
        };
        struct session *s;
        int r;

        *ret_what = NULL;
        if (m->n_sessions >= m->config.max_sessions || m->n_sessions >= MANAGER_MAX_SESSIONS)
                return -EBUSY;
        settings.id = ++m->next_session_id;
        manager_collector_config(m, &settings.collector);
        r = session_start(&settings, req, &s, ret_what);
        if (r < 0)
                return r;
        m->sessions[m->n_sessions++] = s;
        *ret = s;
        return 0;
}

int manager_run(struct manager *m) {
        int r;

        sd_notifyf(false, "MAINPID=%d", (int) getpid());
        notify_status(m, true);
        log_info("Profiling the system: store %s, control socket %s", m->config.store_path,
                 m->config.socket_path);
        r = sd_event_loop(m->event);
        for (unsigned i = m->n_sessions; i > 0; i--)
                session_end(m->sessions[i - 1]);
        if (stop_collector(m) < 0 && r >= 0)
                r = -EIO;
        return r;
}

struct manager *manager_free(struct manager *m) {
        if (!m)
                return NULL;
        pusher_free(m->pusher); /* before the store it reads */
        namer_free(m->namer);
        strv_free(m->alloc_units);
        for (unsigned i = m->n_sessions; i > 0; i--)
                session_end(m->sessions[i - 1]);
        sd_event_source_disable_unref(m->collector_source);
        collector_free(m->collector);
        sd_event_source_disable_unref(m->flush_timer);
        sd_event_source_disable_unref(m->status_timer);
        sd_event_source_disable_unref(m->retention_timer);
        shipper_free(m->shipper);
        store_close(m->store);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}
