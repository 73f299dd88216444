/* cppctl: the user's tool. main() looks the verb up in the one command table and hands it the
 * rest of the command line; each verb lives in its own cmd-*.c file, the four profile views in
 * one (cmd-view.c), told apart by the kind and usage their entries carry. */
#include "cppctl.h"

#include <stdio.h>
#include <string.h>

#include "log.h"

#ifndef CPPD_VERSION
#define CPPD_VERSION "unknown"
#endif

/* The one command table, in cppctl --help's order. */
static const struct verb verbs[] = {
        { "record", cmd_record, 0, "run a command and profile it: cppctl record -- CMD ARGS", NULL },
        { "attach", cmd_attach, 0, "profile a running process: cppctl attach PID", NULL },
        { "status", cmd_status, 0, "what the cppd daemon profiles, its rates, losses, store, memory", NULL },
        { "sessions", cmd_sessions, 0, "the daemon's on-demand sessions", NULL },
        { "detach", cmd_detach, 0, "end a daemon session: cppctl detach ID", NULL },
        { "import", cmd_import, 0, "store samples from a folded-stacks file", NULL },
        { "down", cmd_view, PROFILE_DOWN, "downward call path profile from a root function (paper §4.3)",
          "Downward call path profile (paper §4.3): every call path that starts at the root\n"
          "function, with the fraction of all hits whose stacks contain it. Recursion is\n"
          "canonicalized as in the paper's appendix." },
        { "up", cmd_view, PROFILE_UP, "upward call path profile to a root function (paper §4.3)",
          "Upward call path profile (paper §4.3): every call path that ends at the root\n"
          "function, i.e. which chains of callers incur its cost." },
        { "functions", cmd_view, PROFILE_FUNCTION, "function profile: body + descendants (paper §4.4)",
          "Function profile (paper §4.4): for each function, the fraction of hits spent in it\n"
          "and on its behalf (body + descendants), counted once per sample." },
        { "body", cmd_view, PROFILE_BODY, "body profile: hits in each function's own code (paper §5.2)",
          "Body profile (paper §5.2): for each function, the fraction of hits in its own code,\n"
          "as prof(1) reports for time, for any resource." },
        { "tree", cmd_tree, 0, "sample tree profile, indented (paper §7.2), or as a flame graph", NULL },
        { "graph", cmd_graph, 0, "callers and callees of each function (gprof, Racket)", NULL },
        { "top", cmd_top, 0, "live: what cppd collects now, refreshed in place", NULL },
        { "sql", cmd_sql, 0, "SQL over a store, read-only, with call path table functions", NULL },
        { "shell", cmd_shell, 0, "the paper's interactive loop: settings, then views (libedit)", NULL },
        { "export", cmd_export, 0, "the filtered samples for other tools: pprof, speedscope, folded", NULL },
        { "diff", cmd_diff, 0, "two profiles path by path: what changed, and is it more than noise", NULL },
        { "merge", cmd_merge, 0, "copy the runs of several stores into one: cppctl merge --db OUT IN...",
          NULL },
};

static const struct verb *verb_find(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(name, verbs[i].name))
                        return &verbs[i];
        return NULL;
}

int cppctl_run(const char *name, int argc, char **argv) {
        const struct verb *v = verb_find(name);

        if (v)
                return v->run(argc, argv, v);
        log_error("unknown command '%s'", name);
        return EXIT_USAGE;
}

static void help(void) {
        printf("Usage: cppctl COMMAND [OPTIONS]\n\n"
               "Call path profiles of monotonic resources (Hall & Goldberg, USENIX 1993).\n\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-10s %s\n", verbs[i].name, verbs[i].summary);
        printf("\n'cppctl COMMAND --help' describes each.\n\n"
               "Exit status: 0 success; 1 failure (stderr says why); 2 bad usage;\n"
               "3 nothing matched (e.g. a root function that appears in no sample).\n");
}

int main(int argc, char **argv) {
        const struct verb *v;

        if (argc < 2) {
                help();
                return EXIT_USAGE;
        }
        if (streq(argv[1], "-h") || streq(argv[1], "--help") || streq(argv[1], "help")) {
                help();
                return EXIT_OK;
        }
        if (streq(argv[1], "--version")) {
                printf("cppctl %s\n", CPPD_VERSION);
                return EXIT_OK;
        }
        v = verb_find(argv[1]);
        if (v)
                return v->run(argc - 1, argv + 1, v);
        log_error("unknown command '%s'; try 'cppctl --help'", argv[1]);
        return EXIT_USAGE;
}
