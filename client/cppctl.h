/* cppctl's verbs: the entry points the command table (cppctl.c) names, each in its cmd-*.c. */
#pragma once

#include "report.h"

/* Subcommands return an exit status. */
int cmd_attach(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_sessions(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_shell(int argc, char **argv);
int cmd_sql(int argc, char **argv);

/* Runs cppctl command NAME (as "cppctl NAME ARGV[1..]"; ARGV[0] is NAME). Returns its exit
 * status. For the shell. */
int cppctl_run(const char *name, int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_merge(int argc, char **argv);
