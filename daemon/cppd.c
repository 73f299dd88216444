/* cppd: the system-wide call path profiler daemon. Run by systemd (cppd.service, Type=notify,
 * optionally socket-activated by cppd.socket), or by hand. Everything it does is in manager.c;
 * this is its command line and its logging. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "config.h"
#include "control.h"
#include "log.h"
#include "manager.h"

#ifndef CPPD_VERSION
#define CPPD_VERSION "unknown"
#endif

static const char *arg_config = CONFIG_PATH_DEFAULT;
static bool arg_config_given; /* -c: the file must exist */

static void help(void) {
        printf("Usage: cppd [OPTIONS]\n\n"
               "Profiles every process on the machine: samples the call stacks of the resources in\n"
               "the configuration, attributes them to processes and systemd units, and stores them\n"
               "for cppctl. Signals: SIGHUP reloads the configuration, SIGTERM stores everything and\n"
               "stops.\n\n"
               "Options:\n"
               "  -c, --config FILE   the configuration (default %s)\n"
               "  -v, --verbose       log debug messages too\n"
               "  -h, --help          this help\n"
               "      --version       the version\n",
               CONFIG_PATH_DEFAULT);
}

static int parse_argv(int argc, char **argv) {
        static const struct option options[] = { { "config", required_argument, NULL, 'c' },
                                                 { "verbose", no_argument, NULL, 'v' },
                                                 { "help", no_argument, NULL, 'h' },
                                                 { "version", no_argument, NULL, 'V' },
                                                 {} };
        int c;

        while ((c = getopt_long(argc, argv, "c:vh", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        arg_config = optarg;
                        arg_config_given = true;
                        break;
                case 'v':
                        log_set_max_level(LOG_DEBUG);
                        break;
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("cppd %s\n", CPPD_VERSION);
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("unexpected argument '%s'", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

/* Under systemd, log to the journal with fields; by hand, to stderr. journald may not run even
 * under a service manager (containers), and sd_journal_send() then drops messages silently, so
 * its socket must exist. */
static void setup_logging(void) {
        if ((getenv("JOURNAL_STREAM") || getenv("INVOCATION_ID")) &&
            access("/run/systemd/journal/socket", W_OK) == 0)
                log_set_target(LOG_TARGET_JOURNAL);
}

/* The daemon's parts, from the bottom: the manager (store, collectors, sessions), the control
 * socket over it (listening before collection starts, as early as it can answer), then the
 * system-wide collection. */
static int start(struct manager **ret_m, struct control **ret_control) {
        struct manager *m = NULL;
        struct control *ctl = NULL;
        int r;

        r = manager_new(arg_config, arg_config_given, &m);
        if (r < 0)
                return r;
        r = manager_stop_pending() ? -ECANCELED : control_new(m, &ctl);
        if (r < 0) {
                if (r != -ECANCELED)
                        log_error_errno(r, "Cannot listen on %s: %m", m->config.socket_path);
                manager_free(m);
                return r;
        }
        r = manager_start(m);
        if (r < 0) {
                control_free(ctl);
                manager_free(m);
                return r;
        }
        *ret_m = m;
        *ret_control = ctl;
        return 0;
}

int main(int argc, char **argv) {
        struct manager *m = NULL;
        struct control *ctl = NULL;
        sigset_t mask;
        int r;

        /* SIGTERM, SIGINT and SIGHUP wait for the loop's signalfd from the first line on: every
         * thread the start makes inherits the block, and each step of the start looks for a stop
         * that came meanwhile (manager_stop_pending()). */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        /* A control client that hangs up before its reply, or a closed stderr, must cost a write
         * its EPIPE, not the daemon its life (control.c also writes with MSG_NOSIGNAL). */
        signal(SIGPIPE, SIG_IGN);
        setup_logging();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        r = start(&m, &ctl);
        if (r == -ECANCELED) {
                log_info("Stopped while starting");
                return 0;
        }
        if (r < 0) {
                sd_notifyf(false, "STATUS=Failed to start: %s\nERRNO=%d", strerror(-r), -r);
                return 1;
        }
        r = manager_run(m);
        control_free(ctl);
        manager_free(m);
        if (r < 0) {
                log_error_errno(r, "Stopped with an error: %m");
                return 1;
        }
        return 0;
}
