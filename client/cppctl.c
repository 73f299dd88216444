/* cppctl: the user's tool. main() looks the subcommand up in the table and hands it the rest of
 * the command line; each subcommand lives in its own cmd-*.c file. */
#include "cppctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#ifndef CPPD_VERSION
#define CPPD_VERSION "unknown"
#endif

struct command {
        const char *name;
        int (*run)(int argc, char **argv); /* NULL: a view, run from views[] */
        const char *summary;
};

/* The four profile views differ only in their kind and the text of their --help. */
static const struct view {
        const char *name;
        enum profile_kind kind;
        const char *usage;
} views[] = {
        { "down", PROFILE_DOWN,
          "Downward call path profile (paper §4.3): every call path that starts at the root\n"
          "function, with the fraction of all hits whose stacks contain it. Recursion is\n"
          "canonicalized as in the paper's appendix." },
        { "up", PROFILE_UP,
          "Upward call path profile (paper §4.3): every call path that ends at the root\n"
          "function, i.e. which chains of callers incur its cost." },
        { "functions", PROFILE_FUNCTION,
          "Function profile (paper §4.4): for each function, the fraction of hits spent in it\n"
          "and on its behalf (body + descendants), counted once per sample." },
        { "body", PROFILE_BODY,
          "Body profile (paper §5.2): for each function, the fraction of hits in its own code,\n"
          "as prof(1) reports for time, for any resource." },
};

static const struct command commands[] = {
        { "record", cmd_record, "run a command and profile it: cppctl record -- CMD ARGS" },
        { "attach", cmd_attach, "profile a running process: cppctl attach PID" },
        { "status", cmd_status, "what the cppd daemon profiles, its rates, losses, store, memory" },
        { "sessions", cmd_sessions, "the daemon's on-demand sessions" },
        { "detach", cmd_detach, "end a daemon session: cppctl detach ID" },
        { "import", cmd_import, "store samples from a folded-stacks file" },
        { "down", NULL, "downward call path profile from a root function (paper §4.3)" },
        { "up", NULL, "upward call path profile to a root function (paper §4.3)" },
        { "functions", NULL, "function profile: body + descendants (paper §4.4)" },
        { "body", NULL, "body profile: hits in each function's own code (paper §5.2)" },
        { "tree", cmd_tree, "sample tree profile, indented (paper §7.2), or as a flame graph" },
        { "graph", cmd_graph, "callers and callees of each function (gprof, Racket)" },
        { "top", cmd_top, "live: what cppd collects now, refreshed in place" },
        { "sql", cmd_sql, "SQL over a store, read-only, with call path table functions" },
        { "shell", cmd_shell, "the paper's interactive loop: settings, then views (libedit)" },
        { "export", cmd_export, "the filtered samples for other tools: pprof, speedscope, folded" },
        { "diff", cmd_diff, "two profiles path by path: what changed, and is it more than noise" },
        { "merge", cmd_merge, "copy the runs of several stores into one: cppctl merge --db OUT IN..." },
};

static int command_run(const struct command *c, int argc, char **argv) {
        if (c->run)
                return c->run(argc, argv);
        for (size_t i = 0; i < ELEMENTSOF(views); i++)
                if (streq(c->name, views[i].name))
                        return query_profile_command(argc, argv, views[i].name, views[i].usage,
                                                     views[i].kind);
        abort(); /* every command without run has a view */
}

int cppctl_run(const char *name, int argc, char **argv) {
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(name, commands[i].name))
                        return command_run(&commands[i], argc, argv);
        log_error("unknown command '%s'", name);
        return EXIT_USAGE;
}

static void help(void) {
        printf("Usage: cppctl COMMAND [OPTIONS]\n\n"
               "Call path profiles of monotonic resources (Hall & Goldberg, USENIX 1993).\n\n"
               "Commands:\n");
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                printf("  %-10s %s\n", commands[i].name, commands[i].summary);
        printf("\n'cppctl COMMAND --help' describes each.\n\n"
               "Exit status: 0 success; 1 failure (stderr says why); 2 bad usage;\n"
               "3 nothing matched (e.g. a root function that appears in no sample).\n");
}

int main(int argc, char **argv) {
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
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(argv[1], commands[i].name))
                        return command_run(&commands[i], argc - 1, argv + 1);
        log_error("unknown command '%s'; try 'cppctl --help'", argv[1]);
        return EXIT_USAGE;
}
