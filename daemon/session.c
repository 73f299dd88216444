/* Sessions. Each has its own collector, opened per task (inherited) or per cgroup, with its own
 * ring reader; its records are handled on the daemon's loop when its reader's fd polls
 * readable, and flushed with the system collector's. A duration timer, the process's pidfd
 * (its exit) or a detach request ends it: a last drain, a final flush that ends its run, and
 * its events are closed. */
#include "session.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "parse-util.h"
#include "unit.h"

static int on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        struct session *s = userdata;
        int r = collector_drain(s->collector, s->drain_budget_ns);

        if (r < 0)
                log_warning_errno(r, "session %" PRIu64 " (%s): cannot handle its samples: %m", s->id,
                                  s->target);
        return 0;
}

static int on_end(sd_event_source *src, uint64_t usec, void *userdata) {
        session_end(userdata);
        return 0;
}

static int on_process_exit(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        session_end(userdata);
        return 0;
}

/* Adds the resources of LIST ("cpu-time/1,page-faults") to C. Sets *ret_what on an unknown one. */
static int add_resources(struct collector *c, const char *list, const char **ret_what) {
        _cleanup_free_ char *copy = strdup(list);
        static _Thread_local char bad[128];
        char *save = NULL;
        int r;

        if (!copy)
                return -ENOMEM;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *slash = strrchr(item, '/');
                bool event = startswith(item, "event:");
                uint64_t period = 0;

                if (slash) {
                        *slash = '\0';
                        if (safe_atou64_range(slash + 1, 1, INT64_MAX, &period) < 0)
                                return -EINVAL;
                }
                r = collector_add_resource(c, event ? item + 6 : item, event, period);
                if (r < 0) {
                        snprintf(bad, sizeof bad, "%s", item);
                        *ret_what = bad;
                        return r == -EEXIST ? -EINVAL : r;
                }
        }
        return 0;
}

static struct session *session_free(struct session *s) {
        if (!s)
                return NULL;
        sd_event_source_disable_unref(s->io);
        sd_event_source_disable_unref(s->timer);
        sd_event_source_disable_unref(s->exit_watch);
        if (s->pidfd >= 0)
                close(s->pidfd);
        collector_free(s->collector);
        free(s);
        return NULL;
}
DEFINE_CLEANUP(struct session *, session_free);

int session_start(const struct session_settings *settings, const struct session_request *req,
                  struct session **ret, const char **ret_what) {
        _cleanup_(session_freep) struct session *s = NULL;
        struct collector_config config;
        _cleanup_close_ int cgroup = -1;
        uint32_t unsupported = 0;
        const char *failed = NULL;
        char path[4096];
        int r;

        *ret_what = NULL;
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->pidfd = -1;
        s->on_end = settings->on_end;
        s->userdata = settings->userdata;
        s->owner = req->owner;
        s->id = settings->id;
        s->drain_budget_ns = settings->drain_budget_ns;
        sd_event_now(settings->event, CLOCK_MONOTONIC, &s->started_usec);

        config = settings->collector;
        config.unwind = req->unwind;
        r = collector_new(&config, settings->store, &s->collector);
        if (r < 0)
                return r;
        if (req->resources)
                r = add_resources(s->collector, req->resources, ret_what);
        else
                for (unsigned i = 0; r >= 0 && i < settings->n_resources; i++)
                        r = collector_add_resource(s->collector, settings->resources[i].name,
                                                   settings->resources[i].event,
                                                   settings->resources[i].period);
        if (r < 0)
                return r;

        if (req->unit) {
                const char *root = unit_cgroup_root();

                if (!root)
                        return -ENOENT;
                cgroup = unit_open_cgroup(root, req->unit, path, sizeof path);
                if (cgroup < 0)
                        return cgroup;
                snprintf(s->target, sizeof s->target, "unit %s", req->unit);
                collector_set_run(s->collector, "attach", s->target);
                r = collector_attach_cgroup(s->collector, cgroup, &unsupported, &failed);
        } else {
                char comm_path[64], comm[32] = "";
                FILE *f;

                s->pidfd = syscall(SYS_pidfd_open, req->pid, 0);
                if (s->pidfd < 0)
                        return -errno;
                snprintf(comm_path, sizeof comm_path, "/proc/%d/comm", (int) req->pid);
                f = fopen(comm_path, "re");
                if (f) {
                        if (fgets(comm, sizeof comm, f))
                                comm[strcspn(comm, "\n")] = '\0';
                        fclose(f);
                }
                snprintf(s->target, sizeof s->target, "pid %d (%s)", (int) req->pid, comm);
                collector_set_run(s->collector, "attach", s->target);
                r = collector_attach(s->collector, req->pid, false, &unsupported, &failed);
        }
        if (r < 0 && collector_alloc_why(s->collector)) {
                /* alloc-*'s uprobes: why, in words, outliving the collector. */
                static char why[200];

                snprintf(why, sizeof why, "%s", collector_alloc_why(s->collector));
                *ret_what = why;
                return -ENOEXEC;
        }
        if (r < 0) {
                *ret_what = failed;
                return r;
        }

        r = sd_event_add_io(settings->event, &s->io, collector_fd(s->collector), EPOLLIN, on_io, s);
        if (r < 0)
                return r;
        if (req->duration > 0) {
                r = sd_event_add_time_relative(settings->event, &s->timer, CLOCK_MONOTONIC,
                                               (uint64_t) (req->duration * 1e6), 1000, on_end, s);
                if (r < 0)
                        return r;
        }
        if (s->pidfd >= 0) {
                r = sd_event_add_io(settings->event, &s->exit_watch, s->pidfd, EPOLLIN, on_process_exit, s);
                if (r < 0)
                        return r;
        }
        /* A first flush makes the run's row, so the client can name it at once. */
        r = collector_flush(s->collector, false);
        if (r < 0)
                return r;
        if (req->unit)
                snprintf(path, sizeof path, "CPPD_UNIT=%s", req->unit);
        else
                snprintf(path, sizeof path, "CPPD_PID=%d", (int) req->pid);
        log_full_field(LOG_INFO, 0, path, "session %" PRIu64 ": profiling %s", s->id, s->target);
        *ret = take_ptr(&s);
        return 0;
}

int session_end(struct session *s) {
        int r;

        collector_stop(s->collector);
        r = collector_drain(s->collector, 0);
        if (r >= 0)
                r = collector_flush(s->collector, true);
        if (r < 0)
                log_warning_errno(r, "session %" PRIu64 " (%s): its last samples could not be stored: %m",
                                  s->id, s->target);
        else
                log_info("session %" PRIu64 " (%s) ended: run %" PRId64, s->id, s->target,
                         collector_run_id(s->collector));
        if (s->on_end)
                s->on_end(s, s->userdata);
        session_free(s);
        return r;
}

int64_t session_run_id(const struct session *s) {
        return collector_run_id(s->collector);
}
