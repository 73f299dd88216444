/* cppctl top: what the daemon collects now, as a call path view refreshed in place. Every
 * --interval it asks cppd to flush (so the store holds the last seconds; without the right to
 * ask, the daemon's own flush timer does it, less often) and shows the view of the samples of
 * the last --window. The window is cut on the store's time buckets ([store] bucket, a minute by
 * default), so it reaches back up to one bucket further. On a terminal the screen is redrawn
 * and cut to its height; otherwise each refresh is printed after the last, for scripts. */
#include "cppctl.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "control-client.h"
#include "log.h"
#include "parse-util.h"
#include "source-names.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
        stop = 1;
}

struct top_args {
        uint64_t interval, window; /* µs */
        uint64_t count;            /* refreshes; 0: until interrupted */
        enum profile_kind view;
        const char *socket;
};

/* Takes top's own options out of ARGV (they are not report options), leaving the rest for
 * query_args_parse(). Returns the new argc, or -EINVAL after reporting. */
static int take_options(struct top_args *a, int argc, char **argv, bool *ret_help) {
        int n = 1;

        *a = (struct top_args) { .interval = 2 * 1000000ULL,
                                 .window = 60 * 1000000ULL,
                                 .view = PROFILE_FUNCTION };
        for (int i = 1; i < argc; i++) {
                const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
                bool known = streq(o, "--interval") || streq(o, "--window") || streq(o, "--count") ||
                        streq(o, "--view") || streq(o, "--socket");
                int r = 0;

                if (streq(o, "--"))
                        break;
                if (streq(o, "-h") || streq(o, "--help"))
                        *ret_help = true;
                if (!known) {
                        argv[n++] = argv[i];
                        continue;
                }
                if (!v)
                        return log_error_errno(EINVAL, "%s needs a value", o);
                i++;
                if (streq(o, "--interval"))
                        r = parse_duration(v, &a->interval) < 0 || a->interval < 100000 ? -1 : 0;
                else if (streq(o, "--window"))
                        r = parse_duration(v, &a->window) < 0 || a->window < 1000000 ? -1 : 0;
                else if (streq(o, "--count"))
                        r = safe_atou64_range(v, 1, UINT32_MAX, &a->count);
                else if (streq(o, "--socket"))
                        a->socket = v;
                else if (streq(v, "functions"))
                        a->view = PROFILE_FUNCTION;
                else if (streq(v, "body"))
                        a->view = PROFILE_BODY;
                else if (streq(v, "down"))
                        a->view = PROFILE_DOWN;
                else if (streq(v, "up"))
                        a->view = PROFILE_UP;
                else
                        r = -1;
                if (r < 0)
                        return log_error_errno(EINVAL, "%s %s: expected %s", o, v,
                                               streq(o, "--interval") ?
                                                       "a duration of 100ms or more, such as 2s" :
                                                       streq(o, "--window") ?
                                                       "a duration of 1s or more, such as 5min" :
                                                       streq(o, "--count") ? "a number of refreshes" :
                                                                             "functions, body, down or up");
        }
        return n;
}

/* The terminal's rows, or 0 when standard output is not one. */
static unsigned screen_rows(void) {
        struct winsize w;

        if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) < 0)
                return 0;
        return w.ws_row;
}

/* One refresh into F: ask for a flush, load the window, render the view. */
static int refresh(struct query_args *q, const struct top_args *a, FILE *f, bool *warned) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        _cleanup_(profile_freep) struct profile *p = NULL;
        struct control_reply reply = {};
        time_t now = time(NULL);
        char when[32];
        int r;

        r = control_call(control_socket_path(a->socket), "flush", NULL, &reply);
        if ((r < 0 || reply.error < 0) && !*warned) {
                if (r == -ENOENT || r == -ECONNREFUSED)
                        log_warning("cppd is not listening on %s: showing the store as it is",
                                    control_socket_path(a->socket));
                else if (r == -ETIMEDOUT)
                        log_warning(
                                "cppd did not answer a flush within %u s: the view is as fresh as its flush "
                                "timer",
                                control_timeout_ms("flush") / 1000);
                else
                        log_warning("Cannot ask cppd to flush (%s): the view is as fresh as its flush timer",
                                    r < 0 ? strerror(-r) : reply.message);
                *warned = true;
        }
        control_reply_done(&reply);

        q->filter.since = now - (time_t) (a->window / 1000000);
        q->filter.has_since = true;
        strftime(when, sizeof when, "%H:%M:%S", localtime(&now));
        fprintf(f, "cppctl top: %s, the last %" PRIu64 " s, every %.1f s; %s\n", q->db, a->window / 1000000,
                (double) a->interval / 1e6, when);
        r = query_load(q, &t);
        if (r == -ENODATA) {
                fprintf(f, "(no samples in the window yet)\n");
                return 0;
        }
        if (r < 0)
                return r;
        r = profile_compute(t, a->view, q->root, profile_min_hits(t->total, q->threshold), &p);
        if (r == -ENOENT) {
                fprintf(f, "(%s is in no sample of the window)\n", q->root);
                return 0;
        }
        if (r < 0)
                return log_error_errno(r, "Cannot compute the profile: %m");
        return q->format->profile(f, p, q->threshold);
}

int cmd_top(int argc, char **argv, const struct verb *verb) {
        _cleanup_(query_args_done) struct query_args q = {};
        struct top_args a;
        bool help = false, warned = false;
        int r;

        r = take_options(&a, argc, argv, &help);
        if (r < 0)
                return exit_status(r);
        argc = r;
        /* A live view reads the store every second: no look for debug info each time (the
         * daemon's naming thread, or cppctl symbolize, names frames stored as addresses). */
        source_names_disable();
        r = query_args_parse(
                &q, argc, argv, "top",
                "What cppd collects now: the function profile (or --view body, down, up with\n"
                "--root F) of the samples of the last --window, refreshed every --interval.\n"
                "  --interval DURATION   between refreshes (default 2s)\n"
                "  --window DURATION     how far back (default 1min; cut on the store's buckets)\n"
                "  --view VIEW           functions (default), body, down, up\n"
                "  --count N             stop after N refreshes (default: at Ctrl-C)\n"
                "  --socket PATH         cppd's control socket (default: $CPPD_SOCKET or\n"
                "                        " CPPCTL_DEFAULT_SOCKET ")",
                QUERY_TAKES_ROOT);
        if (r <= 0)
                return exit_status(r);
        if (help)
                return EXIT_OK;
        r = query_check_format(&q, "top", RENDER_PROFILE | RENDER_LIVE);
        if (r < 0)
                return exit_status(r);
        if ((a.view == PROFILE_DOWN || a.view == PROFILE_UP) && !q.root)
                return exit_status(log_error_errno(EINVAL, "top --view %s needs --root FUNCTION",
                                                   a.view == PROFILE_DOWN ? "down" : "up"));

        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        for (uint64_t i = 0; !stop && (a.count == 0 || i < a.count); i++) {
                _cleanup_free_ char *text = NULL;
                size_t size = 0;
                unsigned rows = screen_rows();
                FILE *f = open_memstream(&text, &size);

                if (!f)
                        return exit_status(log_error_errno(ENOMEM, "Out of memory"));
                r = refresh(&q, &a, f, &warned);
                if (fclose(f) != 0 && r >= 0)
                        r = -ENOMEM;
                if (r < 0)
                        return exit_status(r);
                if (rows) {
                        /* Home, clear, and no more lines than the screen holds. */
                        char *end = text;

                        for (unsigned k = 0; k + 1 < rows && end && *end; k++) {
                                end = strchr(end, '\n');
                                if (end)
                                        end++;
                        }
                        if (end)
                                *end = '\0';
                        fputs("\033[H\033[2J", stdout);
                } else if (i > 0)
                        fputc('\n', stdout);
                fputs(text, stdout);
                if (fflush(stdout) != 0)
                        return exit_status(log_error_errno(errno, "Cannot write: %m"));
                if (a.count && i + 1 == a.count)
                        break;
                nanosleep(&(struct timespec) { a.interval / 1000000, (a.interval % 1000000) * 1000 }, NULL);
        }
        return EXIT_OK;
}
