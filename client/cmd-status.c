/* cppctl status: what the daemon profiles, its rates and losses, its store and its memory;
 * cppctl sessions: the on-demand sessions; cppctl detach ID: ends one. All through the control
 * socket. */
#include "cppctl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control-client.h"
#include "log.h"
#include "parse-util.h"

/* Parses --socket and --help for a command taking ARGS positional arguments. Returns 1 to go on,
 * 0 after help, or -EINVAL. */
static int parse_common(int argc, char **argv, const char *usage, int n_args, const char **ret_socket) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "socket", required_argument, NULL, 's' },
                                                 {} };
        int c;

        *ret_socket = NULL;
        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("%s\n\nOptions:\n"
                               "      --socket PATH      the daemon's control socket (default: $CPPD_SOCKET or " CPPCTL_DEFAULT_SOCKET
                               ")\n"
                               "  -h, --help             this help\n",
                               usage);
                        return 0;
                case 's':
                        *ret_socket = optarg;
                        break;
                default:
                        return log_error_errno(EINVAL, "try 'cppctl %s --help'", argv[0]);
                }
        if (argc - optind != n_args)
                return log_error_errno(EINVAL, "%s: expected %d argument%s", argv[0], n_args,
                                       n_args == 1 ? "" : "s");
        return 1;
}

/* Calls the daemon and reports failures. Returns 0 or an exit status. */
static int call(const char *socket, const char *word, const char *const *kv, struct control_reply *reply) {
        const char *path = control_socket_path(socket);
        int r = control_call(path, word, kv, reply);

        if (r == -ENOENT || r == -ECONNREFUSED) {
                log_error("no cppd is running (no one listens on %s)", path);
                return EXIT_FAILURE_;
        }
        if (r == -EACCES) {
                log_error("%s: permission denied", path);
                return EXIT_FAILURE_;
        }
        if (r == -ETIMEDOUT) {
                log_error("%s: cppd did not answer within %u s: it is stopped, stuck or overloaded", path,
                          control_timeout_ms(word) / 1000);
                return EXIT_FAILURE_;
        }
        if (r < 0) {
                log_error_errno(r, "%s: %m", path);
                return EXIT_FAILURE_;
        }
        if (reply->error < 0) {
                log_error("cppd: %s", reply->message);
                return reply->error == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_;
        }
        return 0;
}

static const char *get(const struct protocol_message *m, const char *key) {
        return protocol_get(m, key) ?: "?";
}

static uint64_t get_u64(const struct protocol_message *m, const char *key) {
        const char *v = protocol_get(m, key);
        uint64_t u = 0;

        if (v)
                (void) safe_atou64(v, &u);
        return u;
}

/* The ClickHouse shipping: where to, how it goes, what waits and what was lost. */
static void print_fleet(const struct protocol_message *m) {
        uint64_t success = get_u64(m, "last_success"), failed = get_u64(m, "last_error_time");
        uint64_t spool_failed = get_u64(m, "spool_error_time");
        const char *error = protocol_get(m, "last_error"), *spool_error = protocol_get(m, "spool_error");
        time_t now = time(NULL);

        printf("\nfleet %s: ", get(m, "url"));
        if ((error && *error) || (spool_error && *spool_error))
                printf("failing\n");
        else
                printf(success ? "ok\n" : "nothing sent yet\n");
        if (success)
                printf("  last success    %" PRId64 " s ago\n", (int64_t) now - (int64_t) success);
        if (error && *error)
                printf("  last error      %" PRId64 " s ago: %s\n", (int64_t) now - (int64_t) failed, error);
        if (spool_error && *spool_error)
                printf("  spool error     since %" PRId64 " s ago: %s (the buckets wait in the store)\n",
                       (int64_t) now - (int64_t) spool_failed, spool_error);
        printf("  sent            %s batches\n", get(m, "sent"));
        printf("  pending         %s batches, %.1f KiB in %s (at most %.1f MiB)\n", get(m, "pending"),
               get_u64(m, "pending_bytes") / 1024.0, get(m, "spool"), get_u64(m, "spool_max") / 1048576.0);
        printf("  dropped         %s batches, %s hits (the spool was full)\n", get(m, "dropped"),
               get(m, "dropped_hits"));
        if (get_u64(m, "damaged") || get_u64(m, "set_aside"))
                printf("  damaged         %s batches (spool files that did not read back whole: not sent); "
                       "%s set aside as .bad, %.1f KiB\n",
                       get(m, "damaged"), get(m, "set_aside"), get_u64(m, "set_aside_bytes") / 1024.0);
}

static void print_sessions(const struct control_reply *reply) {
        bool header = false;

        for (size_t i = 0; i < reply->n_lines; i++) {
                const struct protocol_message *m = &reply->lines[i];

                if (!streq(m->word, "session"))
                        continue;
                if (!header)
                        printf("%-4s %-32s %6s %8s %8s\n", "id", "target", "run", "owner", "seconds");
                header = true;
                printf("%-4s %-32s %6s %8s %8s\n", get(m, "id"), get(m, "target"), get(m, "run"),
                       get(m, "owner"), get(m, "seconds"));
        }
        if (!header)
                printf("no sessions\n");
}

/* The [fleet] receivers: profiles each took and those it did not, and why the last did not. */
static void print_pushes(const struct control_reply *reply) {
        uint64_t most = 0;
        bool header = false;

        /* Each receiver goes at its own pace: the header counts the most advanced one's. */
        for (size_t i = 0; i < reply->n_lines; i++)
                if (streq(reply->lines[i].word, "push"))
                        most = MAX(most, get_u64(&reply->lines[i], "intervals"));
        for (size_t i = 0; i < reply->n_lines; i++) {
                const struct protocol_message *m = &reply->lines[i];

                if (!streq(m->word, "push"))
                        continue;
                if (!header)
                        printf("\n%-10s %10s %10s  %s (every %s s, %" PRIu64 " intervals so far)\n",
                               "push to", "pushed", "failed", "url", get(m, "interval"), most);
                header = true;
                printf("%-10s %10s %10s  %s\n", get(m, "target"), get(m, "pushed"), get(m, "failed"),
                       get(m, "url"));
                if (protocol_get(m, "error"))
                        printf("%-10s last failure: %s\n", "", get(m, "error"));
                if (get_u64(m, "intervals") < most)
                        printf("%-10s %" PRIu64 " intervals behind the others\n", "",
                               most - get_u64(m, "intervals"));
        }
}

int cmd_status(int argc, char **argv, const struct verb *verb) {
        _cleanup_(control_reply_done) struct control_reply reply = {};
        const struct protocol_message *python = NULL;
        const char *socket;
        int r;

        r = parse_common(argc, argv,
                         "Usage: cppctl status [--socket PATH]\n\n"
                         "What the cppd daemon profiles: resources and periods, samples and losses,\n"
                         "its store's size, its memory, its pushes to fleet profilers, and the\n"
                         "on-demand sessions.",
                         0, &socket);
        if (r <= 0)
                return exit_status(r);
        r = call(socket, "status", NULL, &reply);
        if (r != 0)
                return r;
        for (size_t i = 0; i < reply.n_lines; i++) {
                const struct protocol_message *m = &reply.lines[i];

                if (streq(m->word, "daemon")) {
                        uint64_t up = get_u64(m, "uptime");

                        printf("cppd %s: up %" PRIu64 "h %02" PRIu64 "m %02" PRIu64
                               "s, resident %.1f MiB (%.1f MiB allocated, %.1f MiB of it the record queue)\n",
                               get(m, "pid"), up / 3600, up / 60 % 60, up % 60,
                               get_u64(m, "rss_kib") / 1024.0, get_u64(m, "heap_kib") / 1024.0,
                               get_u64(m, "queue_kib") / 1024.0);
                        printf("store %s: %.1f MiB (%.1f MiB in use), run %s, unwinding %s\n",
                               get(m, "store"), get_u64(m, "store_bytes") / 1048576.0,
                               get_u64(m, "store_live_bytes") / 1048576.0, get(m, "run"), get(m, "unwind"));
                        printf("%s samples/s; %s samples, %s lost; %s processes, %s modules; %s failed flushes\n",
                               get(m, "samples_per_second"), get(m, "samples"), get(m, "lost"),
                               get(m, "processes"), get(m, "modules"), get(m, "flush_failures"));
                } else if (streq(m->word, "state")) {
                        /* A tenth of a second is the reader's own rhythm; past it, handling is behind. */
                        if (get_u64(m, "lag_ms") >= 100)
                                printf("handling lags %.1f s behind the kernel (it yields the CPU to the programs "
                                       "profiled)\n",
                                       get_u64(m, "lag_ms") / 1000.0);
                        if (get_u64(m, "rereads"))
                                printf("%s re-reads of /proc for addresses its maps did not yet show\n",
                                       get(m, "rereads"));
                        printf("\n%-20s %8s %10s %12s %12s %12s %10s\n", "resource", "period", "samples/s",
                               "samples", "hits", "stored", "lost");
                } else if (streq(m->word, "resource")) {
                        if (streq(get(m, "active"), "yes"))
                                printf("%-20s %8s %10s %12s %12s %12s %10s\n", get(m, "name"),
                                       get(m, "period"), get(m, "samples_per_second"), get(m, "samples"),
                                       get(m, "hits"), get(m, "stored"), get(m, "lost"));
                        else
                                printf("%-20s %8s   not counted on this machine\n", get(m, "name"),
                                       get(m, "period"));
                        /* alloc-* by uprobes ([alloc] units): where they are and are not. */
                        if (protocol_get(m, "probed"))
                                printf("%-20s uprobes in %s processes (each of their allocation calls traps: "
                                       "~0.8 us)%s%s%s%s\n",
                                       "", get(m, "probed"),
                                       get_u64(m, "not_measured") ? "; not measured in " : "",
                                       get_u64(m, "not_measured") ? get(m, "not_measured") : "",
                                       get_u64(m, "not_measured") ? " processes, the first: " : "",
                                       protocol_get(m, "not_measured_why") ?: "");
                } else if (streq(m->word, "python")) {
                        python = m;
                } else if (streq(m->word, "fleet"))
                        print_fleet(m);
                else if (streq(m->word, "symbols")) {
                        const char *error = protocol_get(m, "error");

                        printf("\nnames from %s: %s passes, %s frames named later, %s modules not found%s%s\n",
                               get(m, "servers"), get(m, "passes"), get(m, "frames_named"),
                               get(m, "modules_missing"), error ? "; last pass failed: " : "", error ?: "");
                }
        }
        if (python && protocol_get(python, "off"))
                printf("\npython: no Python frames: %s\n", get(python, "off"));
        else if (python && protocol_get(python, "disabled"))
                printf("\npython: off (python = no): native frames only\n");
        else if (python)
                printf("\npython: frames in %s samples of %s processes (%s ns a walk in the kernel); %s cut at 64 "
                       "frames, %s frames unreadable; %s Pythons not readable (the log says why)\n",
                       get(python, "samples"), get(python, "processes"), get(python, "walk_ns"),
                       get(python, "cut"), get(python, "unreadable"), get(python, "unsupported"));
        print_pushes(&reply);
        printf("\n");
        print_sessions(&reply);
        return EXIT_OK;
}

int cmd_sessions(int argc, char **argv, const struct verb *verb) {
        _cleanup_(control_reply_done) struct control_reply reply = {};
        const char *socket;
        int r;

        r = parse_common(argc, argv,
                         "Usage: cppctl sessions [--socket PATH]\n\n"
                         "The daemon's on-demand sessions (cppctl attach): all of them for root and the\n"
                         "daemon's group, your own for others.",
                         0, &socket);
        if (r <= 0)
                return exit_status(r);
        r = call(socket, "sessions", NULL, &reply);
        if (r != 0)
                return r;
        print_sessions(&reply);
        return EXIT_OK;
}

int cmd_detach(int argc, char **argv, const struct verb *verb) {
        _cleanup_(control_reply_done) struct control_reply reply = {};
        const char *socket;
        uint64_t id;
        int r;

        r = parse_common(argc, argv,
                         "Usage: cppctl detach [--socket PATH] ID\n\n"
                         "Ends the daemon's session ID: its last samples are stored and its run ends.",
                         1, &socket);
        if (r <= 0)
                return exit_status(r);
        if (safe_atou64(argv[optind], &id) < 0) {
                log_error("detach: '%s' is not a session id", argv[optind]);
                return EXIT_USAGE;
        }
        r = call(socket, "detach", (const char *const[]) { "id", argv[optind], NULL }, &reply);
        if (r != 0)
                return r;
        if (reply.n_lines > 0)
                printf("Session %s ended: run %s.\n", get(&reply.lines[0], "id"),
                       get(&reply.lines[0], "run"));
        return EXIT_OK;
}
