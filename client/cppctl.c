/* cppctl: the user's tool. main() looks the verb up in the one command table and hands it the
 * rest of the command line; each verb lives in its own cmd-*.c file, the four profile views in
 * one (cmd-view.c), told apart by the kind and usage their entries carry. The shell runs the
 * other verbs through the table its entry hands it. */
#include "cppctl.h"

#include <stdio.h>
#include <string.h>

#include "log.h"

#ifndef CPPD_VERSION
#define CPPD_VERSION "unknown"
#endif

/* The one command table, in cppctl --help's order. */
static const struct verb verbs[] = {
        { .name = "record",
          .run = cmd_record,
          .summary = "run a command and profile it: cppctl record -- CMD ARGS" },
        { .name = "attach", .run = cmd_attach, .summary = "profile a running process: cppctl attach PID" },
        { .name = "status",
          .run = cmd_status,
          .summary = "what the cppd daemon profiles, its rates, losses, store, memory" },
        { .name = "sessions", .run = cmd_sessions, .summary = "the daemon's on-demand sessions" },
        { .name = "detach", .run = cmd_detach, .summary = "end a daemon session: cppctl detach ID" },
        { .name = "import", .run = cmd_import, .summary = "store samples from a folded-stacks file" },
        { .name = "down",
          .run = cmd_view,
          .kind = PROFILE_DOWN,
          .summary = "downward call path profile from a root function (paper §4.3)",
          .usage = "Downward call path profile (paper §4.3): every call path that starts at the root\n"
                   "function, with the fraction of all hits whose stacks contain it. Recursion is\n"
                   "canonicalized as in the paper's appendix." },
        { .name = "up",
          .run = cmd_view,
          .kind = PROFILE_UP,
          .summary = "upward call path profile to a root function (paper §4.3)",
          .usage = "Upward call path profile (paper §4.3): every call path that ends at the root\n"
                   "function, i.e. which chains of callers incur its cost." },
        { .name = "functions",
          .run = cmd_view,
          .kind = PROFILE_FUNCTION,
          .summary = "function profile: body + descendants (paper §4.4)",
          .usage = "Function profile (paper §4.4): for each function, the fraction of hits spent in it\n"
                   "and on its behalf (body + descendants), counted once per sample." },
        { .name = "body",
          .run = cmd_view,
          .kind = PROFILE_BODY,
          .summary = "body profile: hits in each function's own code (paper §5.2)",
          .usage = "Body profile (paper §5.2): for each function, the fraction of hits in its own code,\n"
                   "as prof(1) reports for time, for any resource." },
        { .name = "tree",
          .run = cmd_tree,
          .summary = "sample tree profile, indented (paper §7.2), or as a flame graph" },
        { .name = "graph",
          .run = cmd_graph,
          .summary = "callers and callees of each function (gprof, Racket)" },
        { .name = "top", .run = cmd_top, .summary = "live: what cppd collects now, refreshed in place" },
        { .name = "sql",
          .run = cmd_sql,
          .summary = "SQL over a store, read-only, with call path table functions" },
        { .name = "shell",
          .run = cmd_shell,
          .summary = "the paper's interactive loop: settings, then views (libedit)",
          .verbs = verbs },
        { .name = "export",
          .run = cmd_export,
          .summary = "the filtered samples for other tools: pprof, speedscope, folded" },
        { .name = "diff",
          .run = cmd_diff,
          .summary = "two profiles path by path: what changed, and is it more than noise" },
        { .name = "merge",
          .run = cmd_merge,
          .summary = "copy the runs of several stores into one: cppctl merge --db OUT IN..." },
        { .name = "symbolize",
          .run = cmd_symbolize,
          .summary = "name frames stored as addresses from debug info found now, into the store" },
        {},
};

static void help(void) {
        printf("Usage: cppctl COMMAND [OPTIONS]\n\n"
               "Call path profiles of monotonic resources (Hall & Goldberg, USENIX 1993).\n\n"
               "Commands:\n");
        for (const struct verb *v = verbs; v->name; v++)
                printf("  %-10s %s\n", v->name, v->summary);
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
        v = verb_find(verbs, argv[1]);
        if (v)
                return v->run(argc - 1, argv + 1, v);
        log_error("unknown command '%s'; try 'cppctl --help'", argv[1]);
        return EXIT_USAGE;
}
