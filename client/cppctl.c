/* cppctl: the user's tool. main() looks the subcommand up in the table and hands it the rest of
 * the command line; each subcommand lives in its own cmd-*.c file. */
#include "cppctl.h"

#include <stdio.h>
#include <string.h>

#include "log.h"

#ifndef CPPD_VERSION
#define CPPD_VERSION "unknown"
#endif

struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary;
};

static const struct command commands[] = {
        { "record", cmd_record, "run a command and profile it: cppctl record -- CMD ARGS" },
        { "attach", cmd_attach, "profile a running process: cppctl attach PID" },
        { "status", cmd_status, "what the cppd daemon profiles, its rates, losses, store, memory" },
        { "sessions", cmd_sessions, "the daemon's on-demand sessions" },
        { "detach", cmd_detach, "end a daemon session: cppctl detach ID" },
        { "import", cmd_import, "store samples from a folded-stacks file" },
        { "down", cmd_down, "downward call path profile from a root function (paper §4.3)" },
        { "up", cmd_up, "upward call path profile to a root function (paper §4.3)" },
        { "functions", cmd_functions, "function profile: body + descendants (paper §4.4)" },
        { "body", cmd_body, "body profile: hits in each function's own code (paper §5.2)" },
        { "tree", cmd_tree, "sample tree profile, indented (paper §7.2), or as a flame graph" },
        { "graph", cmd_graph, "callers and callees of each function (gprof, Racket)" },
        { "top", cmd_top, "live: what cppd collects now, refreshed in place" },
        { "sql", cmd_sql, "SQL over a store, read-only, with call path table functions" },
        { "shell", cmd_shell, "the paper's interactive loop: settings, then views (libedit)" },
        { "export", cmd_export, "the filtered samples for other tools: pprof, speedscope, folded" },
        { "diff", cmd_diff, "two profiles path by path: what changed, and is it more than noise" },
        { "merge", cmd_merge, "copy the runs of several stores into one: cppctl merge --db OUT IN..." },
};

int cppctl_run(const char *name, int argc, char **argv) {
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(name, commands[i].name))
                        return commands[i].run(argc, argv);
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
                        return commands[i].run(argc - 1, argv + 1);
        log_error("unknown command '%s'; try 'cppctl --help'", argv[1]);
        return EXIT_USAGE;
}
