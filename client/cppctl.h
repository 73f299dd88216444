/* cppctl's verbs: the command table's entry (struct verb) and the functions it names, each in
 * its cmd-*.c. */
#pragma once

#include "report.h"

/* A verb of the command table (cppctl.c), as git's cmd_struct and systemd's verbs[]: verbs
 * that differ only by a kind share one function, which reads its kind and usage here. */
struct verb {
        const char *name;
        /* Runs the verb on ARGV (ARGV[0] is its name). Returns an exit status. */
        int (*run)(int argc, char **argv, const struct verb *verb);
        int kind;            /* for a shared function: which one it is (a profile kind) */
        const char *summary; /* its line of cppctl --help */
        const char *usage;   /* for a shared function: its --help description; NULL: its own */
        /* the shell's: the table whose verbs it runs, handed down rather than called up, so that
         * the table and the shell do not call each other */
        const struct verb *verbs;
};

/* The verb named NAME in TABLE (which ends with an entry of NULL name), or NULL (verb.c). */
const struct verb *verb_find(const struct verb *table, const char *name);

/* Runs verb NAME of TABLE (as "cppctl NAME ARGV[1..]"; ARGV[0] is NAME). Returns its exit
 * status, or EXIT_USAGE after saying there is no such verb. */
int verb_run(const struct verb *table, const char *name, int argc, char **argv);

int cmd_attach(int argc, char **argv, const struct verb *verb);
int cmd_detach(int argc, char **argv, const struct verb *verb);
int cmd_diff(int argc, char **argv, const struct verb *verb);
int cmd_export(int argc, char **argv, const struct verb *verb);
int cmd_graph(int argc, char **argv, const struct verb *verb);
int cmd_import(int argc, char **argv, const struct verb *verb);
int cmd_merge(int argc, char **argv, const struct verb *verb);
int cmd_record(int argc, char **argv, const struct verb *verb);
int cmd_sessions(int argc, char **argv, const struct verb *verb);
int cmd_shell(int argc, char **argv, const struct verb *verb);
int cmd_sql(int argc, char **argv, const struct verb *verb);
int cmd_status(int argc, char **argv, const struct verb *verb);
int cmd_symbolize(int argc, char **argv, const struct verb *verb);
int cmd_top(int argc, char **argv, const struct verb *verb);
int cmd_tree(int argc, char **argv, const struct verb *verb);
/* down, up, functions and body (cmd-view.c): KIND is the profile's */
int cmd_view(int argc, char **argv, const struct verb *verb);
