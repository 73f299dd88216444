/* The recording loop shared by cppctl record and attach: poll() on the collector (records wait,
 * taken from the rings by its reader thread), a signalfd for SIGINT/SIGTERM/SIGCHLD, and a pidfd
 * for an attached process; every 100 ms at the latest records are handled, every 5 s the hits
 * are flushed to the store, so memory stays bounded and a crash loses little. */
#include "standalone.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc-preload.h"
#include "log.h"
#include "parse-util.h"
#include "perf-event.h"
#include "proc-util.h"
#include "profile.h"
#include "report.h"
#include "resource.h"
#include "source-names.h"
#include "store-error.h"
#include "strv.h"
#include "time-util.h"

#define FLUSH_INTERVAL_NS (5ULL * 1000000000ULL)
#define STATUS_INTERVAL_NS (500ULL * 1000000ULL)
/* Longest a turn of the loop spends on samples, so that status lines and flushes keep time. */
#define DRAIN_BUDGET_NS (100ULL * 1000000ULL)
#define POLL_TIMEOUT_MS 100
/* Samples a second a resource brings before it is thinned: a recording's queue (256 MiB) holds
 * seconds of a burst, which the consumer (about 15 us a sample) works off after; the daemon,
 * always on with a small queue, keeps COLLECTOR_DEFAULT_MAX_RATE. */
#define RECORDING_MAX_RATE 100000u

struct recording {
        struct recording_args args;
        struct store *store;
        struct collector *collector;
        bool status_line; /* stderr is a terminal: show a live status line */
        uint64_t started_ns, ended_ns;
};

/* Parses "NAME[/PERIOD]" (one spec) into S. */
static int parse_spec(const char *text, bool event, struct recording_spec *s) {
        char *slash = strrchr(text, '/');

        *s = (struct recording_spec) { .name = text, .event = event };
        if (slash && slash[1] && strspn(slash + 1, "0123456789") == strlen(slash + 1)) {
                if (safe_atou64_range(slash + 1, 1, INT64_MAX, &s->period) < 0)
                        return -EINVAL;
                *slash = '\0';
        }
        return s->name[0] ? 0 : -EINVAL;
}

static int add_specs(struct recording_args *a, char *list, bool event) {
        char *save = NULL;

        /* An empty list (-e '', a variable that was unset) must not fall back on cpu-time. */
        if (strspn(list, ", ") == strlen(list))
                return log_error_errno(EINVAL, "%s '%s': no %s in it; expected NAME or NAME/PERIOD, ...",
                                       event ? "--event" : "-e", list, event ? "event" : "resource");
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (a->n_specs >= RECORDING_MAX_SPECS)
                        return log_error_errno(EINVAL, "at most %d resources", RECORDING_MAX_SPECS);
                if (parse_spec(t, event, &a->specs[a->n_specs]) < 0)
                        return log_error_errno(EINVAL, "'%s': expected NAME or NAME/PERIOD", t);
                a->n_specs++;
        }
        return 0;
}

static void list_resources(FILE *f) {
        fprintf(f, "Resources (-e NAME[/PERIOD]; the period is in gticks):\n");
        for (unsigned i = 0; i < n_resource_table; i++)
                fprintf(f, "  %-17s every %-6" PRIu64 " gtick = %s: %s\n", resource_table[i].name,
                        resource_table[i].default_period, resource_table[i].unit,
                        resource_table[i].description);
}

int recording_parse(struct recording_args *a, int argc, char **argv, const char *name, const char *usage,
                    bool attach, int *ret_optind) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "resource", required_argument, NULL, 'e' },
                                                 { "event", required_argument, NULL, 'E' },
                                                 { "period", required_argument, NULL, 'p' },
                                                 { "unwind", required_argument, NULL, 'U' },
                                                 { "kernel", no_argument, NULL, 'k' },
                                                 { "stack-size", required_argument, NULL, 'S' },
                                                 { "jitter", no_argument, NULL, 'J' },
                                                 { "no-jitter", no_argument, NULL, 'j' },
                                                 { "every-event", no_argument, NULL, 'V' },
                                                 { "max-rate", required_argument, NULL, 'R' },
                                                 { "lines", no_argument, NULL, 'l' },
                                                 { "no-python", no_argument, NULL, 'Y' },
                                                 { "no-realtime", no_argument, NULL, 'T' },
                                                 { "db", required_argument, NULL, 'd' },
                                                 { "output", required_argument, NULL, 'o' },
                                                 { "quiet", no_argument, NULL, 'q' },
                                                 { "duration", required_argument, NULL, 'D' },
                                                 { "list-resources", no_argument, NULL, 'L' },
                                                 { "unit", required_argument, NULL, 'N' },
                                                 { "socket", required_argument, NULL, 'K' },
                                                 { "standalone", no_argument, NULL, 'A' },
                                                 {} };
        uint64_t u;
        int c, r;

        *a = (struct recording_args) {
                .db = getenv("CPPD_DB") ?: SOURCE_DEFAULT_DB,
                .config = COLLECTOR_CONFIG_DEFAULT,
        };
        a->config.max_rate = RECORDING_MAX_RATE;
        a->config.realtime_reader = true;
        optind = 0;
        /* record: "+" stops at the command's first word, so its own options stay its own. */
        while ((c = getopt_long(argc, argv, attach ? "he:p:d:o:qk" : "+he:p:d:o:qk", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("%s\n"
                               "\nOptions:\n"
                               "  -e, --resource R[/P]   profile resource R every P gticks (repeat, or R1,R2;\n"
                               "                         default cpu-time); --list-resources lists them\n"
                               "      --event NAME[/P]   any perf software event, tracepoint (sys:name) or\n"
                               "                         libpfm4 event, every P events\n"
                               "  -p, --period P         the period for resources given without one\n"
                               "      --unwind MODE      dwarf (default: correct without frame pointers)\n"
                               "                         or fp (cheaper; loses callers in -O2 code and glibc)\n"
                               "  -k, --kernel           keep kernel frames in the stacks\n"
                               "      --stack-size N     dwarf: bytes of stack copied per sample (default %u)\n"
                               "      --no-jitter        fixed periods: every P gticks exactly, which a loop whose\n"
                               "                         cycle divides P aliases (paper §7.1); by default each\n"
                               "                         interval is drawn at random per sample, mean P\n"
                               "      --every-event      draw by a coin at every event (kernel period 1), not\n"
                               "                         by a countdown at a tracepoint: the same statistics,\n"
                               "                         several times the cost per event\n"
                               "      --max-rate N       samples a second a resource may bring before it is\n"
                               "                         thinned at random, with weights (default %u; 0: never)\n"
                               "      --lines            keep each frame's call site (address, file:line), which\n"
                               "                         views show with '--by line'; by default frames are\n"
                               "                         stored as functions\n"
                               "      --no-python        native frames only: no Python functions where\n"
                               "                         CPython ran them (by default read at each sample)\n"
                               "      --no-realtime      leave the thread that reads the samples in the normal\n"
                               "                         scheduling class (by default real-time where allowed,\n"
                               "                         so that a busy machine does not make it late)\n"
                               "  -d, --db FILE          the store (default: $CPPD_DB or ./" SOURCE_DEFAULT_DB
                               ");\n"
                               "                         -o is a report's file in cppctl, never a store\n"
                               "%s"
                               "  -q, --quiet            no status line, no summary\n"
                               "  -h, --help             this help\n",
                               usage, COLLECTOR_CONFIG_DEFAULT_STACK, RECORDING_MAX_RATE,
                               attach ?
                                       "      --duration S       stop after S seconds (default: when it exits, or Ctrl-C)\n"
                                       "      --unit NAME        profile a systemd unit's processes (through cppd)\n"
                                       "      --socket PATH      cppd's control socket (default: $CPPD_SOCKET or "
                                       "/run/cppd/cppd.sock)\n"
                                       "      --standalone       profile here, even if cppd runs\n" :
                                       "");
                        return 0;
                case 'L':
                        list_resources(stdout);
                        return 0;
                case 'e':
                case 'E':
                        r = add_specs(a, optarg, c == 'E');
                        if (r < 0)
                                return r;
                        break;
                case 'p':
                        if (safe_atou64_range(optarg, 1, INT64_MAX, &a->period) < 0)
                                return log_error_errno(EINVAL,
                                                       "--period %s: expected a whole number, at least 1",
                                                       optarg);
                        break;
                case 'U':
                        if (streq(optarg, "dwarf"))
                                a->config.unwind = UNWIND_DWARF;
                        else if (streq(optarg, "fp"))
                                a->config.unwind = UNWIND_FP;
                        else
                                return log_error_errno(EINVAL, "--unwind %s: expected dwarf or fp", optarg);
                        break;
                case 'k':
                        a->config.kernel = true;
                        break;
                case 'S':
                        /* The kernel takes up to 65528 bytes, a multiple of 8. */
                        if (safe_atou64_range(optarg, 64, 65528, &u) < 0 || u % 8)
                                return log_error_errno(EINVAL,
                                                       "--stack-size %s: expected a multiple of 8 "
                                                       "from 64 to 65528",
                                                       optarg);
                        a->config.stack_size = u;
                        break;
                case 'J':
                        a->config.jitter = true; /* the default; kept for old command lines */
                        break;
                case 'j':
                        a->config.jitter = false;
                        break;
                case 'V':
                        a->config.every_event = true;
                        break;
                case 'T':
                        a->config.realtime_reader = false;
                        break;
                case 'R':
                        if (safe_atou64_range(optarg, 0, UINT32_MAX, &u) < 0)
                                return log_error_errno(EINVAL, "--max-rate %s: expected samples a second",
                                                       optarg);
                        a->config.max_rate = (uint32_t) u;
                        break;
                case 'l':
                        a->config.function_frames = false;
                        break;
                case 'Y':
                        a->config.no_python = true;
                        break;
                case 'd':
                        a->db = optarg;
                        break;
                case 'o':
                        /* perf record's -o names its data file; cppctl's -o is a report's file in
                         * every command, so that a view's -o can never be taken for a store. */
                        return log_error_errno(EINVAL,
                                               "%s: -o names a report's file in every cppctl command, "
                                               "never a store; the store %s writes is --db %s",
                                               name, name, optarg);
                case 'q':
                        a->quiet = true;
                        break;
                case 'N':
                case 'K':
                case 'A':
                        if (!attach)
                                return log_error_errno(EINVAL,
                                                       "%s: --unit, --socket and --standalone are for attach",
                                                       name);
                        if (c == 'N')
                                a->unit = optarg;
                        else if (c == 'K')
                                a->socket = optarg;
                        else
                                a->standalone = true;
                        break;
                case 'D':
                        if (!attach)
                                return log_error_errno(EINVAL,
                                                       "%s: --duration is for attach; "
                                                       "record stops when the command exits",
                                                       name);
                        {
                                char *end;

                                errno = 0;
                                a->duration = strtod(optarg, &end);
                                if (errno || *end || !(a->duration > 0) || !isfinite(a->duration))
                                        return log_error_errno(EINVAL, "--duration %s: expected seconds",
                                                               optarg);
                        }
                        break;
                default:
                        return log_error_errno(EINVAL, "try 'cppctl %s --help'", name);
                }
        /* record starts its command, with the allocation counter preloaded if asked for; a
         * process running already cannot have it: attach counts allocations by uprobes. */
        a->config.preloaded = !attach;
        if (a->n_specs == 0) {
                a->specs[0] = (struct recording_spec) { .name = "cpu-time" };
                a->n_specs = 1;
        }
        *ret_optind = optind;
        return 1;
}

int recording_new(const struct recording_args *a, const char *kind, const char *command,
                  struct recording **ret) {
        _cleanup_(recording_freep) struct recording *rec = NULL;
        int r;

        rec = calloc(1, sizeof *rec);
        if (!rec) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        rec->args = *a;
        rec->status_line = !a->quiet && isatty(STDERR_FILENO);

        r = store_open(a->db, STORE_WRITE, &rec->store);
        if (r < 0)
                return exit_status(log_store_error(r, a->db, NULL));
        r = collector_new(&a->config, rec->store, &rec->collector);
        if (r == -EOPNOTSUPP) {
                log_error("DWARF unwinding is not supported on this architecture: use --unwind fp");
                return EXIT_USAGE;
        }
        if (r < 0) {
                log_error_errno(r, "Cannot set up the collector: %m");
                return EXIT_FAILURE_;
        }
        collector_set_run(rec->collector, kind, command);

        for (unsigned i = 0; i < a->n_specs; i++) {
                const struct recording_spec *s = &a->specs[i];
                uint64_t period = s->period ?: a->period;

                r = collector_add_resource(rec->collector, s->name, s->event, period);
                if (r == -ENOENT && !s->event) {
                        log_error("unknown resource '%s': 'cppctl record --list-resources' lists them; "
                                  "--event takes perf, tracepoint and libpfm4 event names",
                                  s->name);
                        return EXIT_USAGE;
                }
                if (r == -ENOENT && s->event) {
                        log_error(
                                "--event %s: not a perf software event, a tracepoint (sys:name) or an event "
                                "libpfm4 knows for this CPU",
                                s->name);
                        return EXIT_USAGE;
                }
                if (r == -ENODEV) {
                        log_error("%s needs tracepoints, and tracefs is not mounted: "
                                  "mount -t tracefs nodev /sys/kernel/tracing",
                                  s->name);
                        return EXIT_FAILURE_;
                }
                if (r == -EACCES) {
                        log_error("%s needs tracepoints, and tracefs is not readable: run as root or "
                                  "with CAP_PERFMON and read access to /sys/kernel/tracing",
                                  s->name);
                        return EXIT_FAILURE_;
                }
                if (r == -EOPNOTSUPP) {
                        log_error("%s is counted in the program by a library preloaded at its start: "
                                  "cppctl record -e %s -- COMMAND; attach and cppd cannot count it yet",
                                  s->name, s->name);
                        return EXIT_USAGE;
                }
                if (r == -EEXIST) {
                        log_error("%s is given twice", s->name);
                        return EXIT_USAGE;
                }
                if (r == -EINVAL) {
                        log_error("%s: period %" PRIu64 " is out of range", s->name, period);
                        return EXIT_USAGE;
                }
                if (r < 0) {
                        log_error_errno(r, "Cannot add %s: %m", s->name);
                        return EXIT_FAILURE_;
                }
        }
        *ret = take_ptr(&rec);
        return EXIT_OK;
}

struct recording *recording_free(struct recording *r) {
        if (!r)
                return NULL;
        collector_free(r->collector);
        store_close(r->store);
        free(r);
        return NULL;
}

void recording_block_signals(void) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
}

int recording_attach(struct recording *rec, pid_t pid, bool enable_on_exec) {
        uint32_t unsupported = 0;
        const char *failed = NULL;
        struct collector_resource_stats rs;
        int r;

        r = collector_attach(rec->collector, pid, enable_on_exec, &unsupported, &failed);
        for (unsigned i = 0; i < collector_n_resources(rec->collector); i++)
                if (unsupported & (1u << i)) {
                        collector_resource_stats(rec->collector, i, &rs);
                        log_warning("%s: not counted on this machine (%s); the other resources go on",
                                    rs.name,
                                    rs.unnamed ? "libpfm4 knows no such event for this CPU" :
                                                 perf_event_hint(-ENOENT));
                }
        if (r == -ESRCH) {
                if (proc_is_zombie(pid))
                        log_error(
                                "process %d has exited (a zombie its parent has not reaped): nothing is left "
                                "to profile",
                                (int) pid);
                else
                        log_error("no process %d", (int) pid);
                return EXIT_FAILURE_;
        }
        if (r == -ENODEV) {
                log_error("none of the resources can be counted on this machine");
                return EXIT_FAILURE_;
        }
        if (r < 0 && collector_alloc_why(rec->collector)) {
                log_error("cannot count the allocations of process %d: %s", (int) pid,
                          collector_alloc_why(rec->collector));
                return EXIT_FAILURE_;
        }
        if (r < 0) {
                log_error("cannot profile %s%s%s: %s", enable_on_exec ? "the command" : "the process",
                          failed ? " for " : "", failed ?: "", perf_event_hint(r));
                return EXIT_FAILURE_;
        }
        for (unsigned i = 0; rec->args.config.jitter && i < collector_n_resources(rec->collector); i++) {
                collector_resource_stats(rec->collector, i, &rs);
                if (rs.active && !streq(rs.sampling, "random")) {
                        log_warning("%s: periods fixed, they may alias with a loop: random intervals need "
                                    "BPF (CAP_BPF, or root) and Linux 4.9 or later",
                                    rs.name);
                        break;
                }
        }
        return EXIT_OK;
}

static void status(struct recording *rec, bool final) {
        struct collector_stats st;
        double secs = (now_ns(CLOCK_MONOTONIC) - rec->started_ns) / 1e9;

        if (!rec->status_line)
                return;
        collector_get_stats(rec->collector, &st);
        fprintf(stderr,
                "\rcppctl: recording %.1f s: %" PRIu64 " samples, %" PRIu64 " lost, %" PRIu64 " processes%s",
                secs, st.samples, st.lost, st.processes, final ? "\n" : "   ");
        fflush(stderr);
}

static int flush(struct recording *rec, bool final) {
        int r = collector_flush(rec->collector, final);

        if (r == -ENOSPC)
                log_warning("%s: disk full: the samples stay in memory, retrying", rec->args.db);
        else if (r < 0)
                log_store_error(r, rec->args.db, rec->store);
        return r;
}

/* With $DEBUGINFOD_URLS set, names the frames the run stored as addresses from the servers, now
 * that sampling is over: the collector looks on this machine only, so that no sample waits on a
 * server (debuginfo-find.c); what it could not name is fetched here, bounded, and written into
 * the store (late-names.c). The run is stored already: a failure only leaves addresses. */
static void name_later(struct recording *rec) {
        const char *urls = getenv("DEBUGINFOD_URLS");
        struct late_names_stats st;
        struct late_names *ln;
        int r;

        if (!urls || urls[strspn(urls, " \t")] == '\0' || !source_names_enabled())
                return;
        r = source_names_cache(&ln);
        if (r < 0) {
                log_warning_errno(r, "Out of memory: frames stored as addresses stay so");
                return;
        }
        r = late_names_apply(ln, rec->store, true, &st);
        source_names_report(ln);
        if (r < 0) {
                log_warning_errno(r, "Cannot name the frames stored as addresses: %s (they stay so)",
                                  store_error(rec->store)[0] ? store_error(rec->store) : strerror(-r));
                return;
        }
        if (st.frames_named > 0 && !rec->args.quiet)
                printf("Named after sampling, from debuginfod: %" PRIu64 " frames from %" PRIu64
                       " module%s\n",
                       st.frames_named, st.modules_named, st.modules_named == 1 ? "" : "s");
}

int recording_run(struct recording *rec, pid_t child, int pidfd, int *ret_status) {
        _cleanup_close_ int sfd = -1;
        struct pollfd pfd[3];
        uint64_t last_flush, last_status, deadline = 0;
        int n_sigint = 0, r;
        sigset_t mask;
        bool done = false;

        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGCHLD);
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0) {
                log_error_errno(errno, "signalfd: %m");
                return EXIT_FAILURE_;
        }
        rec->started_ns = last_flush = last_status = now_ns(CLOCK_MONOTONIC);
        if (rec->args.duration > 0)
                deadline = rec->started_ns + (uint64_t) (rec->args.duration * 1e9);

        while (!done) {
                int n = 0;
                uint64_t now;

                pfd[n++] = (struct pollfd) { .fd = collector_fd(rec->collector), .events = POLLIN };
                pfd[n++] = (struct pollfd) { .fd = sfd, .events = POLLIN };
                if (pidfd >= 0)
                        pfd[n++] = (struct pollfd) { .fd = pidfd, .events = POLLIN };
                if (poll(pfd, n, POLL_TIMEOUT_MS) < 0 && errno != EINTR) {
                        log_error_errno(errno, "poll: %m");
                        return EXIT_FAILURE_;
                }

                for (;;) {
                        struct signalfd_siginfo si;

                        if (read(sfd, &si, sizeof si) != sizeof si)
                                break;
                        if (si.ssi_signo == SIGCHLD && child > 0) {
                                int st;

                                if (waitpid(child, &st, WNOHANG) == child) {
                                        *ret_status = st;
                                        done = true;
                                }
                        } else if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
                                /* The command got the terminal's SIGINT too; if it lives on,
                                 * a second one ends it. */
                                n_sigint++;
                                if (child > 0)
                                        kill(child, n_sigint > 1 ? SIGKILL : (int) si.ssi_signo);
                                else
                                        done = true;
                        }
                }
                if (pidfd >= 0 && pfd[n - 1].revents & POLLIN)
                        done = true;

                r = collector_drain(rec->collector, DRAIN_BUDGET_NS);
                if (r < 0) {
                        log_error_errno(r, "Cannot process the samples: %m");
                        return EXIT_FAILURE_;
                }
                now = now_ns(CLOCK_MONOTONIC);
                if (deadline && now >= deadline)
                        done = true;
                if (now - last_flush >= FLUSH_INTERVAL_NS) {
                        (void) flush(rec, false); /* on failure the hits wait for the next */
                        last_flush = now;
                }
                if (now - last_status >= STATUS_INTERVAL_NS) {
                        status(rec, false);
                        last_status = now;
                }
        }
        rec->ended_ns = now_ns(CLOCK_MONOTONIC);
        collector_stop(rec->collector);
        r = collector_drain(rec->collector, 0);
        if (r < 0) {
                log_error_errno(r, "Cannot process the samples: %m");
                return EXIT_FAILURE_;
        }
        status(rec, true);
        for (int tries = 0; (r = flush(rec, true)) == -ENOSPC && tries < 3; tries++)
                sleep(1);
        if (r < 0) {
                log_error("The samples could not be stored; %s is as it was before the failed write.",
                          rec->args.db);
                return EXIT_FAILURE_;
        }
        name_later(rec);
        return EXIT_OK;
}

/* Where the allocation counter is: $CPPD_ALLOC_LIBRARY, else beside a cppctl run from its build
 * folder, else where it is installed. */
static int alloc_library(char *buf, size_t size) {
        const char *e = getenv("CPPD_ALLOC_LIBRARY");
        char exe[4096], *slash;
        ssize_t n;

        if (e) {
                snprintf(buf, size, "%s", e);
                return access(buf, R_OK) < 0 ? -errno : 0;
        }
        n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
                exe[n] = '\0';
                slash = strrchr(exe, '/');
                if (slash) {
                        *slash = '\0';
                        if (snprintf(buf, size, "%s/../common/collect/%s", exe, ALLOC_PRELOAD_LIBRARY) <
                                    (int) size &&
                            access(buf, R_OK) == 0)
                                return 0;
                }
        }
        snprintf(buf, size, "%s", CPPD_ALLOC_LIBRARY_PATH);
        return access(buf, R_OK) < 0 ? -errno : 0;
}

int recording_environment(const struct recording *rec, char ***ret) {
        _cleanup_(strv_freep) char **env = NULL;
        struct collector_resource_stats rs;
        char lib[4096], *real, *preload = NULL, periods[2][64] = { "", "" };
        const char *old = getenv("LD_PRELOAD");
        char line[64];
        uint64_t budget, rate;
        FILE *f;
        size_t n = 0;
        int r;

        for (unsigned i = 0; i < collector_n_resources(rec->collector); i++) {
                collector_resource_stats(rec->collector, i, &rs);
                if (streq(rs.name, "alloc-bytes"))
                        snprintf(periods[0], sizeof periods[0], ALLOC_ENV_BYTES "=%" PRIu64, rs.period);
                else if (streq(rs.name, "alloc-count"))
                        snprintf(periods[1], sizeof periods[1], ALLOC_ENV_CALLS "=%" PRIu64, rs.period);
        }
        if (!periods[0][0] && !periods[1][0]) {
                *ret = NULL;
                return 0;
        }
        r = alloc_library(lib, sizeof lib);
        if (r < 0)
                return log_error_errno(r, "Cannot find %s, which counts allocations in the command: %s: %m",
                                       ALLOC_PRELOAD_LIBRARY, lib);
        real = realpath(lib, NULL);
        if (!real)
                return log_error_errno(errno, "Cannot find %s: %s: %m", ALLOC_PRELOAD_LIBRARY, lib);
        /* The dynamic linker splits LD_PRELOAD at spaces and colons. */
        if (strpbrk(real, " :")) {
                log_error("%s: the path of %s holds a space or a colon, which LD_PRELOAD cannot carry", real,
                          ALLOC_PRELOAD_LIBRARY);
                free(real);
                return -EINVAL;
        }
        r = asprintf(&preload, "LD_PRELOAD=%s%s%s", real, old && *old ? " " : "", old ? old : "");
        free(real);
        if (r < 0)
                return log_error_errno(ENOMEM, "Out of memory");
        for (char **e = environ; *e; e++)
                n++;
        env = calloc(n + 6, sizeof *env);
        if (!env) {
                free(preload);
                return log_error_errno(ENOMEM, "Out of memory");
        }
        n = 0;
        env[n++] = preload;
        for (char **e = environ; *e; e++) {
                if (startswith(*e, "LD_PRELOAD=") || startswith(*e, ALLOC_ENV_BYTES "=") ||
                    startswith(*e, ALLOC_ENV_CALLS "=") || startswith(*e, ALLOC_ENV_FIXED "=") ||
                    startswith(*e, ALLOC_ENV_BUDGET "="))
                        continue;
                if (!(env[n++] = strdup(*e)))
                        return log_error_errno(ENOMEM, "Out of memory");
        }
        for (int i = 0; i < 2; i++)
                if (periods[i][0] && !(env[n++] = strdup(periods[i])))
                        return log_error_errno(ENOMEM, "Out of memory");
        if (!rec->args.config.jitter && !(env[n++] = strdup(ALLOC_ENV_FIXED "=1")))
                return log_error_errno(ENOMEM, "Out of memory");
        /* A storm of allocations thins itself, as the kernel's programs thin other storms: at
         * cppd's budget, and below half what the kernel samples of one event in a tick (at
         * most 1000 a second: HZ), past which it silently stops sampling until the next one. */
        budget = collector_window_budget(rec->collector) / 10;
        if (budget == 0)
                budget = UINT64_MAX; /* --max-rate 0: none of cppd's, but the kernel's */
        f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
        if (f && fgets(line, sizeof line, f) && safe_atou64(strtok(line, "\n") ?: "", &rate) == 0)
                budget = MIN(budget, rate / 2000);
        if (f)
                fclose(f);
        /* None of cppd's nor the kernel's (unreadable): never thinned; else at least 1 a ms. */
        budget = budget == UINT64_MAX ? 0 : MAX(budget, 1u);
        if (asprintf(&env[n], ALLOC_ENV_BUDGET "=%" PRIu64, budget) < 0) {
                env[n] = NULL;
                return log_error_errno(ENOMEM, "Out of memory");
        }
        *ret = take_ptr(&env);
        return 0;
}

void recording_summary(struct recording *rec, const char *what) {
        struct collector_stats st;
        struct collector_resource_stats rs;
        int64_t run = collector_run_id(rec->collector);
        const char *first = NULL;

        for (unsigned i = 0; i < collector_n_resources(rec->collector); i++) {
                collector_resource_stats(rec->collector, i, &rs);
                if (rs.uncounted)
                        log_warning("%s: not counted in %" PRIu64 " process%s, %s (pid %" PRIu32
                                    ") the first: %s",
                                    rs.name, rs.uncounted, rs.uncounted == 1 ? "" : "es", rs.uncounted_comm,
                                    rs.uncounted_pid,
                                    rs.uncounted_why ? rs.uncounted_why :
                                                       "an allocator of its own (linked into the program, or "
                                                       "preloaded before cppd's counter) is not seen");
                if (rs.late)
                        log_warning(
                                "%s: the first allocations of %u process%s started while recording were not "
                                "counted (up to %.1f ms each, until its uprobes were placed)",
                                rs.name, rs.late, rs.late == 1 ? "" : "es", rs.late_max_ns / 1e6);
        }
        if (rec->args.quiet)
                return;
        collector_get_stats(rec->collector, &st);
        printf("Recorded %s for %.2f s: run %" PRId64 " in %s (unwinding: %s)\n", what,
               (rec->ended_ns - rec->started_ns) / 1e9, run, rec->args.db,
               rec->args.config.unwind == UNWIND_DWARF ? "dwarf" : "fp");
        for (unsigned i = 0; i < collector_n_resources(rec->collector); i++) {
                collector_resource_stats(rec->collector, i, &rs);
                if (!rs.active) {
                        printf("  %-18s not counted on this machine\n", rs.name);
                        continue;
                }
                printf("  %-18s %8" PRIu64 " samples, %8" PRIu64 " hits of %" PRIu64 " gticks, %" PRIu64
                       " lost; %s",
                       rs.name, rs.samples, rs.hits, rs.period, rs.lost,
                       streq(rs.sampling, "random") ? "random intervals" : "periods fixed: may alias");
                if (rs.thinned > 1)
                        printf(", thinned to 1 in %" PRIu64 " under load", rs.thinned);
                putchar('\n');
                if (rs.libc)
                        printf("  %-18s uprobes on %s in %u process%s: each of their allocation calls trapped "
                               "into the kernel (about 0.8 us a call)\n",
                               "", rs.libc, rs.probed_ever, rs.probed_ever == 1 ? "" : "es");
                if (!first && rs.hits > 0)
                        first = rs.name;
        }
        if (st.python_samples)
                printf("  %-18s frames in %" PRIu64 " samples of %" PRIu64 " process%s; %" PRIu64
                       " cut at 64 frames, %" PRIu64 " frames unreadable; %.2f us a walk in the kernel\n",
                       "python", st.python_samples, st.python_processes, st.python_processes == 1 ? "" : "es",
                       st.python_cut, st.python_unreadable,
                       st.python_walks ? st.python_walk_ns / 1e3 / st.python_walks : 0.0);
        else if (collector_python_why(rec->collector))
                printf("  %-18s no Python frames: %s\n", "python", collector_python_why(rec->collector));
        if (st.frames)
                printf("  %.1f%% of frames unsymbolized; %" PRIu64 " processes, %" PRIu64 " modules\n",
                       100.0 * st.frames_unknown / st.frames, st.processes, st.modules);
        if (st.samples) {
                struct rusage ru;
                double cpu;

                getrusage(RUSAGE_SELF, &ru);
                cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
                        (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
                printf("  cppctl: %.3f s of CPU, %.1f us a sample (unwinding %.1f us, symbolizing %.1f us)\n",
                       cpu, 1e6 * cpu / st.samples, st.unwind_ns / 1e3 / st.samples,
                       st.symbolize_ns / 1e3 / st.samples);
        }
        if (first)
                recording_print_top(rec->store, rec->args.db, run, first);
}

void recording_print_top(struct store *store, const char *db, int64_t run, const char *resource) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        _cleanup_(profile_freep) struct profile *p = NULL;
        int r;

        printf("\nTop functions by %s ('cppctl functions -r %s --run %" PRId64 " --db %s' for all):\n",
               resource, resource, run, db);
        fflush(stdout);
        r = store_load_tree(store, &(struct store_filter) { .resource = resource, .run_id = run }, &t);
        if (r >= 0)
                r = profile_function(t, profile_min_hits(t->total, 0.05), &p);
        if (r >= 0)
                r = render_text_profile(stdout, p, 0.05);
        if (r < 0)
                log_warning_errno(r, "Cannot show the function profile: %m");
}
