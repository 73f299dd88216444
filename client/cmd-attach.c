/* cppctl attach PID | --unit NAME: profiles a running process (its existing threads, each with
 * events of its own, and those it starts later) or a systemd unit's cgroup, until it exits,
 * --duration passes, or Ctrl-C.
 *
 * When cppd runs, the daemon does it (a session, stored in its store as a run of its own), so
 * unprivileged users can profile their own processes through it; --unit needs the daemon.
 * Without a daemon (or with --standalone) cppctl profiles here, as record does; it says so. */
#include "cppctl.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "control-client.h"
#include "log.h"
#include "parse-util.h"
#include "proc-util.h"
#include "standalone.h"
#include "strv.h"

/* The resources of A as the protocol's list: "cpu-time/10,event:cycles". */
static int resource_list(const struct recording_args *a, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = '\0';
        for (unsigned i = 0; i < a->n_specs; i++) {
                const struct recording_spec *s = &a->specs[i];
                uint64_t period = s->period ?: a->period;
                int k;

                if (period)
                        k = snprintf(buf + n, size - n, "%s%s%s/%" PRIu64, n ? "," : "",
                                     s->event ? "event:" : "", s->name, period);
                else
                        k = snprintf(buf + n, size - n, "%s%s%s", n ? "," : "", s->event ? "event:" : "",
                                     s->name);
                if (k < 0 || (size_t) k >= size - n)
                        return -ENOBUFS;
                n += k;
        }
        return 0;
}

/* Waits until the process (PIDFD, if >= 0) exits, DURATION seconds pass (if > 0), or SIGINT or
 * SIGTERM. */
static void wait_for_end(int pidfd, double duration) {
        _cleanup_close_ int sfd = -1;
        struct timespec start, now;
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                struct pollfd p[2] = { { .fd = sfd, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
                int timeout = -1;

                if (duration > 0) {
                        double left;

                        clock_gettime(CLOCK_MONOTONIC, &now);
                        left = duration - (now.tv_sec - start.tv_sec) - (now.tv_nsec - start.tv_nsec) / 1e9;
                        if (left <= 0)
                                return;
                        timeout = (int) (left * 1000) + 1;
                }
                if (poll(p, pidfd >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR)
                        return;
                if ((p[0].revents & POLLIN) || (pidfd >= 0 && (p[1].revents & POLLIN)))
                        return;
        }
}

/* Profiles through the daemon. Returns an exit status, or -ENOENT when no daemon listens. */
static int attach_via_daemon(const struct recording_args *a, pid_t pid, int pidfd) {
        const char *path = control_socket_path(a->socket);
        char resources[1024], pid_s[16], duration[32];
        struct control_reply reply, done;
        const struct protocol_message *m;
        _cleanup_free_ char *run_s = NULL, *id = NULL, *store = NULL, *target = NULL;
        int64_t run;
        int r;

        if (resource_list(a, resources, sizeof resources) < 0) {
                log_error("too many resources");
                return EXIT_USAGE;
        }
        if (!a->config.function_frames && !a->quiet)
                log_notice("--lines: cppd keeps frames as its [store] granularity says (cppd.conf); "
                           "--standalone keeps call sites here");
        snprintf(pid_s, sizeof pid_s, "%d", (int) pid);
        snprintf(duration, sizeof duration, "%g", a->duration);
        r = control_call(path, "attach",
                         (const char *const[]) { a->unit ? "unit" : "pid", a->unit ?: pid_s, "resources",
                                                 resources, "unwind",
                                                 a->config.unwind == UNWIND_FP ? "fp" : "dwarf", "duration",
                                                 a->duration > 0 ? duration : NULL, NULL },
                         &reply);
        if (r == -ENOENT || r == -ECONNREFUSED)
                return -ENOENT;
        if (r == -ETIMEDOUT) {
                log_error("%s: cppd did not answer within %u s: it is stopped, stuck or overloaded "
                          "(--standalone profiles without it)",
                          path, control_timeout_ms("attach") / 1000);
                return EXIT_FAILURE_;
        }
        if (r < 0) {
                log_error_errno(r, "%s: %m", path);
                return EXIT_FAILURE_;
        }
        if (reply.error < 0) {
                r = reply.error == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_;
                log_error("cppd: %s", reply.message);
                control_reply_done(&reply);
                return r;
        }
        m = reply.n_lines > 0 ? &reply.lines[0] : NULL;
        id = strdup(m ? protocol_get(m, "id") ?: "?" : "?");
        run_s = strdup(m ? protocol_get(m, "run") ?: "0" : "0");
        store = strdup(m ? protocol_get(m, "store") ?: "" : "");
        target = strdup(m ? protocol_get(m, "target") ?: "" : "");
        control_reply_done(&reply);
        if (!id || !run_s || !store || !target) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        if (!a->quiet)
                log_info("cppd session %s: profiling %s into %s, run %s%s", id, target, store, run_s,
                         isatty(STDERR_FILENO) ? "; Ctrl-C to stop" : "");

        wait_for_end(pidfd, a->duration);

        /* The daemon ends a session itself when its process exits or its time is up: then the
         * session is gone, which is fine. */
        r = control_call(path, "detach", (const char *const[]) { "id", id, NULL }, &done);
        if (r < 0)
                log_warning_errno(r, "Cannot end session %s: %m; 'cppctl detach %s' ends it", id, id);
        else if (done.error < 0 && done.error != -ENOENT)
                log_warning("cppd: %s", done.message);
        control_reply_done(&done);

        if (!a->quiet && safe_atou64(run_s, (uint64_t *) &run) == 0) {
                _cleanup_(store_closep) struct store *s = NULL;
                _cleanup_(strv_freep) char **names = NULL;

                printf("Recorded %s through cppd: run %" PRId64 " in %s\n", target, run, store);
                if (store_open(store, STORE_READ, &s) < 0 || store_list_resources(s, &names) <= 0)
                        printf("('cppctl functions --run %" PRId64
                               " --db %s' shows it, for those who may read the store.)\n",
                               run, store);
                else
                        recording_print_top(s, store, run, a->specs[0].name);
        }
        return EXIT_OK;
}

int cmd_attach(int argc, char **argv, const struct verb *verb) {
        _cleanup_(recording_freep) struct recording *rec = NULL;
        _cleanup_close_ int pidfd = -1;
        struct recording_args a;
        char what[64], comm_path[64], comm[32] = "";
        int optind_, status = 0, r;
        uint64_t pid = 0;
        FILE *f;

        r = recording_parse(&a, argc, argv, "attach",
                            "Usage: cppctl attach [OPTIONS] PID\n"
                            "       cppctl attach [OPTIONS] --unit NAME.service\n\n"
                            "Samples the stacks of process PID and its threads (or of a systemd unit's\n"
                            "processes) every PERIOD gticks of each resource until it exits, --duration\n"
                            "passes, or Ctrl-C; stores the samples and prints the top of the function\n"
                            "profile. Through the cppd daemon when it runs, else here.",
                            true, &optind_);
        if (r <= 0)
                return exit_status(r);
        if (a.unit ? optind_ != argc :
                     (optind_ + 1 != argc || safe_atou64_range(argv[optind_], 1, INT32_MAX, &pid) < 0)) {
                log_error("attach needs one process id, or --unit NAME");
                return EXIT_USAGE;
        }
        if (pid) {
                pidfd = syscall(SYS_pidfd_open, (pid_t) pid, 0);
                if (pidfd < 0 && errno == ESRCH) {
                        log_error("no process %" PRIu64, pid);
                        return EXIT_FAILURE_;
                }
                if (proc_is_zombie((pid_t) pid)) {
                        log_error("process %" PRIu64
                                  " has exited (a zombie its parent has not reaped): nothing "
                                  "is left to profile",
                                  pid);
                        return EXIT_FAILURE_;
                }
        }
        recording_block_signals();

        if (!a.standalone) {
                r = attach_via_daemon(&a, pid, pidfd);
                if (r != -ENOENT)
                        return r;
                if (a.unit) {
                        log_error("attach --unit needs the cppd daemon, and none listens on %s",
                                  control_socket_path(a.socket));
                        return EXIT_FAILURE_;
                }
                if (!a.quiet)
                        log_notice("no cppd listens on %s: profiling standalone",
                                   control_socket_path(a.socket));
        }

        snprintf(comm_path, sizeof comm_path, "/proc/%" PRIu64 "/comm", pid);
        f = fopen(comm_path, "re");
        if (f) {
                if (fgets(comm, sizeof comm, f))
                        comm[strcspn(comm, "\n")] = '\0';
                fclose(f);
        }
        snprintf(what, sizeof what, "pid %" PRIu64 " (%s)", pid, comm);

        r = recording_new(&a, "attach", what, &rec);
        if (r != EXIT_OK)
                return r;
        r = recording_attach(rec, pid, false);
        if (r != EXIT_OK)
                return r;
        if (!a.quiet && isatty(STDERR_FILENO))
                log_info("attached to %s; Ctrl-C to stop", what);
        r = recording_run(rec, 0, pidfd, &status);
        if (r != EXIT_OK)
                return r;
        recording_summary(rec, what);
        return EXIT_OK;
}
