/* cppctl shell: the paper's exploratory loop (§5.2). Settings (store, resource, root, threshold,
 * filters, format) persist between commands; each view is the CLI's own command, called with an
 * argument vector built from the settings, so that the shell shows exactly what `cppctl down ...`
 * would. Interactive input goes through libedit (line editing, history, completion of commands,
 * resources, filter keys and the store's function names); a pipe is read line by line without
 * prompts, so that sessions can be scripted, and `save FILE` writes the session's commands for
 * `--replay FILE`.
 *
 * A setting is checked when it is made, and a refused one changes nothing (a line of several
 * filters is taken whole or not at all), so that the saved session, which holds only the lines
 * that succeeded, rebuilds the same state. Each view runs in a child process: Ctrl-C stops the
 * view and not the session, and what a command leaves behind (getopt's state, a crash) goes with
 * the child. Views are rare and slow next to a fork.
 *
 * Exit status: 0 when every command succeeded, else the status of the last one that failed, in
 * cppctl's codes (1 failure, 2 bad usage, 3 nothing matched), or 130 for a view stopped by Ctrl-C.
 *
 * The store may be a ClickHouse fleet store (clickhouse://...): the views read it as they read
 * a file (through source/source.h), the credentials reach them through
 * $CPPD_CLICKHOUSE_CREDENTIALS, and the function names for completion come from the same
 * source. */
#include "cppctl.h"

#include <editline/readline.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ch-client.h"
#include "demangle.h"
#include "grow.h"
#include "log.h"
#include "parse-util.h"
#include "pattern.h"
#include "read-line.h"
#include "source-names.h"
#include "strv.h"

#define MAX_WORDS 64
#define HISTORY_LINES 1000 /* kept in the history file */

/* The filter keys, which are the report options of the same names. */
static const char *const filter_keys[] = {
        "unit", "pid", "comm",   "exe",   "since",  "until", "host",
        "run",  "by",  "inline", "focus", "ignore", "hide",  "demangle",
};
#define FILTER_KEYS "unit pid comm exe since until host run by inline focus ignore hide demangle"

struct shell {
        const struct verb *verbs; /* the command table whose views it runs */
        char *db;
        char *resource; /* one name or A,B,...; NULL: the command's default */
        char *root;
        char *threshold; /* as typed; NULL: the default */
        char *format;    /* NULL: text */
        char *filters[ELEMENTSOF(filter_keys)];
        char **session;   /* the commands to save: settings and views */
        char **functions; /* the store's function names, read when first needed
                                         * and again when a root is not among them */
        bool functions_read;
        int status; /* of the last failed command, or 0 */
};

static void shell_done(struct shell *s) {
        free(s->db);
        free(s->resource);
        free(s->root);
        free(s->threshold);
        free(s->format);
        for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                free(s->filters[i]);
        strv_free(s->session);
        strv_free(s->functions);
}

static int set_string(char **slot, const char *value) {
        char *copy = value ? strdup(value) : NULL;

        if (value && !copy)
                return log_error_errno(ENOMEM, "Out of memory");
        free(*slot);
        *slot = copy;
        return 0;
}

/* Returns the index of filter KEY in filter_keys, or -1. */
static int filter_index(const char *key) {
        for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                if (streq(key, filter_keys[i]))
                        return (int) i;
        return -1;
}

/* Splits LINE into words at blanks; '...' and "..." group words and are removed; a word that
 * starts with '#' ends the line. Returns the number of words, -EINVAL for an unterminated quote
 * or -E2BIG for more than MAX_WORDS. WORDS point into LINE, which is modified. */
static int split(char *line, char **words) {
        int n = 0;
        char *r = line, *w = line;

        for (;;) {
                while (*r == ' ' || *r == '\t')
                        r++;
                if (*r == '\0' || *r == '#')
                        return n;
                if (n == MAX_WORDS)
                        return -E2BIG;
                words[n++] = w;
                while (*r && *r != ' ' && *r != '\t') {
                        if (*r == '\'' || *r == '"') {
                                char q = *r++;

                                while (*r && *r != q)
                                        *w++ = *r++;
                                if (*r != q)
                                        return -EINVAL;
                                r++;
                                continue;
                        }
                        *w++ = *r++;
                }
                if (*r)
                        r++;
                *w++ = '\0';
        }
}

/* Runs cppctl command NAME with the settings as options and EXTRA words after them, in a child
 * process. Returns the command's exit status, 128 + the signal that stopped it, or a negative
 * errno when no child could be made. */
static int run_view(struct shell *s, const char *name, char **extra, int n_extra) {
        const char *argv[2 * ELEMENTSOF(filter_keys) + MAX_WORDS + 16];
        char options[ELEMENTSOF(filter_keys)][16];
        int argc = 0, status;
        sigset_t block, saved;
        pid_t pid;

        argv[argc++] = name;
        argv[argc++] = "--db";
        argv[argc++] = s->db;
        if (s->resource) {
                argv[argc++] = "--resource";
                argv[argc++] = s->resource;
        }
        if (s->threshold) {
                argv[argc++] = "--threshold";
                argv[argc++] = s->threshold;
        }
        if (s->format) {
                argv[argc++] = "--format";
                argv[argc++] = s->format;
        }
        for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                if (streq(filter_keys[i], "demangle")) {
                        /* demangle=no is --no-demangle; yes is the default */
                        if (s->filters[i] && streq(s->filters[i], "no"))
                                argv[argc++] = "--no-demangle";
                } else if (s->filters[i]) {
                        snprintf(options[i], sizeof options[i], "--%s", filter_keys[i]);
                        argv[argc++] = options[i];
                        argv[argc++] = s->filters[i];
                }
        for (int i = 0; i < n_extra; i++)
                argv[argc++] = extra[i];
        argv[argc] = NULL;

        /* Whatever sits in our buffers would otherwise be written twice, by both processes. */
        fflush(stdout);
        fflush(stderr);
        /* A Ctrl-C before the child has Ctrl-C's default action waits for it, and then stops it. */
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigprocmask(SIG_BLOCK, &block, &saved);
        pid = fork();
        if (pid == 0) {
                signal(SIGINT, SIG_DFL);
                sigprocmask(SIG_SETMASK, &saved, NULL);
                status = verb_run(s->verbs, name, argc, (char **) argv);
                fflush(stdout);
                _exit(status);
        }
        sigprocmask(SIG_SETMASK, &saved, NULL);
        if (pid < 0)
                return log_error_errno(errno, "Cannot start %s: %m", name);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) /* the shell's own Ctrl-C handler ran: keep waiting */
                        return log_error_errno(errno, "Cannot wait for %s: %m", name);
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        if (WTERMSIG(status) == SIGINT)
                log_error("%s: interrupted", name);
        else
                log_error("%s: stopped by signal %d (%s)", name, WTERMSIG(status),
                          strsignal(WTERMSIG(status)));
        return 128 + WTERMSIG(status);
}

static int list_resources(struct shell *s, char ***ret) {
        _cleanup_(source_closep) struct source *src = NULL;
        int r;

        r = source_open(s->db, NULL, 0, &src);
        if (r < 0)
                return r;
        r = source_list_resources(src, ret);
        return r < 0 ? source_log_error(src, r, NULL) : r;
}

/* The function names as they are read: the list (a strv) and its room. */
struct function_names {
        struct shell *shell;
        size_t n, cap;
};

/* Adds RAW and, for C++ and Rust, its demangled form to the function names. Returns 0 or
 * -ENOMEM. */
static int add_function_name(void *userdata, const char *raw) {
        struct function_names *a = userdata;
        struct shell *s = a->shell;
        char readable[DEMANGLE_NAME_MAX * 2];
        const char *names[2] = { raw, NULL };

        if (demangle(raw, readable, sizeof readable) > 0)
                names[1] = readable;
        for (size_t k = 0; k < 2 && names[k]; k++) {
                char *name = strdup(names[k]);

                /* Grown by doubling, not strv_extend(), which walks the list per name: a daemon's
                 * store has a hundred thousand functions. */
                if (name && GROW(s->functions, a->cap, a->n + 2) < 0)
                        name = mfree(name);
                if (!name)
                        return -ENOMEM;
                s->functions[a->n++] = name;
                s->functions[a->n] = NULL;
        }
        return 0;
}

/* Reads the store's function names once, for completion and to check a root, each as stored and,
 * for C++ and Rust, demangled as the views show it. A store we cannot read this way only costs
 * those two conveniences (the views say what is wrong with it), so failures are quiet: the list
 * stays empty. */
static char **function_names(struct shell *s) {
        _cleanup_(source_closep) struct source *src = NULL;
        struct function_names a = { .shell = s };

        if (s->functions_read)
                return s->functions;
        s->functions_read = true;
        if (source_open(s->db, NULL, SOURCE_QUIET, &src) >= 0 &&
            source_function_names(src, add_function_name, &a) == -ENOMEM)
                s->functions = strv_free(s->functions);
        return s->functions;
}

/* Checks VALUE for filter KEY as the report options will, so that a bad setting is refused when
 * it is made, not at every view after. */
static int check_filter(const char *key, const char *value) {
        uint64_t u;
        int64_t t;
        regex_t re;

        if (*value == '\0')
                return log_error_errno(EINVAL,
                                       "filter %s=: expected a value; 'filter clear %s' removes the filter",
                                       key, key);
        if (streq(key, "pid")) {
                if (safe_atou64_range(value, 1, INT32_MAX, &u) < 0)
                        return log_error_errno(EINVAL, "filter pid=%s: expected a process id", value);
        } else if (streq(key, "run")) {
                if (safe_atou64_range(value, 1, INT64_MAX, &u) < 0)
                        return log_error_errno(EINVAL, "filter run=%s: expected a run id", value);
        } else if (streq(key, "since") || streq(key, "until")) {
                if (parse_timestamp(value, time(NULL), &t) < 0)
                        return log_error_errno(EINVAL,
                                               "filter %s=%s: expected a time such as '-2h', 'today' or "
                                               "'2026-11-22 10:00'",
                                               key, value);
        } else if (streq(key, "by")) {
                if (!streq(value, "function") && !streq(value, "line") && !streq(value, "module"))
                        return log_error_errno(EINVAL, "filter by=%s: expected function, line or module",
                                               value);
        } else if (streq(key, "inline")) {
                if (!streq(value, "show") && !streq(value, "fold"))
                        return log_error_errno(EINVAL, "filter inline=%s: expected show or fold", value);
        } else if (streq(key, "demangle")) {
                if (!streq(value, "yes") && !streq(value, "no"))
                        return log_error_errno(EINVAL, "filter demangle=%s: expected yes or no", value);
        } else if (streq(key, "focus") || streq(key, "ignore") || streq(key, "hide")) {
                char error[256];

                if (pattern_compile(&re, value, error, sizeof error) < 0)
                        return log_error_errno(EINVAL, "filter %s=%s: %s", key, value, error);
                regfree(&re);
        }
        return 0;
}

/* filter KEY=VALUE ... and filter clear [KEY ...]: every word is checked before any is applied. */
static int cmd_filter(struct shell *s, char **words, int n) {
        char *values[ELEMENTSOF(filter_keys)] = {};
        bool set[ELEMENTSOF(filter_keys)] = {};

        if (n < 2)
                return log_error_errno(EINVAL,
                                       "filter KEY=VALUE ... or filter clear [KEY ...]; keys: " FILTER_KEYS);
        if (streq(words[1], "clear")) {
                for (int k = 2; k < n; k++) {
                        int i = filter_index(words[k]);

                        if (i < 0)
                                return log_error_errno(EINVAL,
                                                       "filter clear %s: no such filter; keys: " FILTER_KEYS,
                                                       words[k]);
                        set[i] = true;
                }
                for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                        if (n == 2 || set[i])
                                s->filters[i] = mfree(s->filters[i]);
                return 0;
        }

        for (int k = 1; k < n; k++) {
                char *eq = strchr(words[k], '=');
                int i;

                if (!eq)
                        return log_error_errno(EINVAL, "filter %s: expected KEY=VALUE", words[k]);
                *eq = '\0';
                i = filter_index(words[k]);
                if (i < 0)
                        return log_error_errno(EINVAL, "filter %s: no such filter; keys: " FILTER_KEYS,
                                               words[k]);
                if (check_filter(words[k], eq + 1) < 0)
                        return -EINVAL;
                values[i] = eq + 1; /* a key named twice: the last one, as with options */
                set[i] = true;
        }
        /* Copy first, so that running out of memory half way changes nothing either. */
        for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                if (set[i] && !(values[i] = strdup(values[i]))) {
                        while (i-- > 0)
                                if (set[i])
                                        free(values[i]);
                        return log_error_errno(ENOMEM, "Out of memory");
                }
        for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                if (set[i]) {
                        free(s->filters[i]);
                        s->filters[i] = values[i];
                }
        return 0;
}

/* resource NAME or resource A,B,...: each must have samples in the store. */
static int cmd_resource(struct shell *s, const char *value) {
        _cleanup_(strv_freep) char **names = NULL, **asked = NULL;
        _cleanup_free_ char *copy = strdup(value), *list = NULL;
        char *p, *w;
        int r;

        if (!copy)
                return log_error_errno(ENOMEM, "Out of memory");
        r = list_resources(s, &names);
        if (r < 0)
                return r;
        list = strv_join(names, ", ");
        if (!list)
                return log_error_errno(ENOMEM, "Out of memory");
        for (p = copy; (w = strsep(&p, ","));) {
                if (*w == '\0')
                        return log_error_errno(EINVAL,
                                               "resource %s: expected a name, or names joined by commas",
                                               value);
                if (!strv_contains(names, w))
                        return log_error_errno(ENOENT, "%s has no samples of resource '%s'; it has: %s",
                                               s->db, w, *list ? list : "none");
                if (strv_contains(asked, w))
                        return log_error_errno(EINVAL, "resource %s: '%s' named twice", value, w);
                if (strv_extend(&asked, w) < 0)
                        return log_error_errno(ENOMEM, "Out of memory");
        }
        return set_string(&s->resource, value);
}

/* root F: refused when the store has no function F at all (most likely a typo). Only with views
 * by function: by line or module the labels are call sites or modules. Whether F is in a sample
 * of the resource, under the filters, the view says when it runs. */
static int cmd_root(struct shell *s, const char *name) {
        const char *by = s->filters[filter_index("by")];
        char **functions;

        if (!by || streq(by, "function")) {
                functions = function_names(s);
                if (functions && !strv_contains(functions, name)) {
                        /* The list was read once; a daemon may have stored the function since. */
                        s->functions = strv_free(s->functions);
                        s->functions_read = false;
                        functions = function_names(s);
                }
                if (functions && !strv_contains(functions, name))
                        return log_error_errno(ENODATA,
                                               "root %s: %s has no function of that name "
                                               "('functions' lists them, TAB completes them)",
                                               name, s->db);
        }
        return set_string(&s->root, name);
}

static void show(struct shell *s) {
        _cleanup_(strv_freep) char **names = NULL;
        const char *resource = s->resource;

        /* The default as the views pick it: the store's only resource, else cpu-time. */
        if (!resource) {
                int n = list_resources(s, &names);

                resource = n == 1                                 ? names[0] :
                        n > 1 && strv_contains(names, "cpu-time") ? "cpu-time" :
                        n > 1 ? "(none: the store holds several; choose one)" :
                                "(none)";
        }
        printf("store      %s\nresource   %s\nroot       %s\nthreshold  %s\nformat     %s\n", s->db, resource,
               s->root ?: "(none)", s->threshold ?: "0.01", s->format ?: "text");
        for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                if (s->filters[i])
                        printf("filter     %s=%s\n", filter_keys[i], s->filters[i]);
}

static const struct {
        const char *name, *args, *help;
} shell_commands[] = {
        { "resource", "NAME[,NAME...]",
          "profile resource NAME (cpu-time, page-faults, ...); several side\n"
          "                          by side where the view can (down, up, functions, body)" },
        { "resources", "", "list the store's resources" },
        { "root", "FUNCTION", "the root function of down, up and graph" },
        { "threshold", "T", "leave out entries below fraction T (0.05 or 5%)" },
        { "filter", "KEY=VALUE ...",
          "select samples by unit pid comm exe since until host run, view\n"
          "                          them by=function|line|module, inline=show|fold, focus ignore hide,\n"
          "                          demangle=yes|no\n"
          "                          (the report options of the same names); 'filter clear [KEY...]'" },
        { "format", "text|json|csv", "how views are written" },
        { "show", "", "the current settings" },
        { "down", "[FUNCTION]", "downward call path profile from the root (paper §4.3)" },
        { "up", "[FUNCTION]", "upward call path profile to the root (paper §4.3)" },
        { "functions", "", "function profile: body + descendants (paper §4.4)" },
        { "body", "", "body profile: each function's own hits (paper §5.2)" },
        { "tree", "", "the sample tree, indented (paper §7.2)" },
        { "graph", "[FUNCTION]", "callers and callees of the root, or of every function" },
        { "save", "FILE", "write this session's commands, for cppctl shell --replay FILE" },
        { "help", "[COMMAND]", "this list, or one command" },
        { "quit", "", "leave (also exit, or end of input)" },
};

static int help(char **words, int n) {
        for (size_t i = 0; i < ELEMENTSOF(shell_commands); i++)
                if (n < 2 || streq(words[1], shell_commands[i].name))
                        printf("%-10s %-14s %s\n", shell_commands[i].name, shell_commands[i].args,
                               shell_commands[i].help);
        if (n >= 2) {
                for (size_t i = 0; i < ELEMENTSOF(shell_commands); i++)
                        if (streq(words[1], shell_commands[i].name))
                                return 0;
                return log_error_errno(EINVAL, "help %s: no such command", words[1]);
        }
        return 0;
}

static int save(struct shell *s, const char *path) {
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        r = output_open(path, s->db, &f);
        if (r < 0)
                return log_output_error(r, path);
        fprintf(f, "# cppctl shell session; replay with: cppctl shell --replay %s\n", path);
        for (size_t i = 0; s->session && s->session[i]; i++)
                fprintf(f, "%s\n", s->session[i]);
        if (fflush(f) != 0 || ferror(f))
                return log_error_errno(errno ?: EIO, "Cannot write %s: %m", path);
        return 0;
}

/* Runs one line. Returns 1 to leave, 0 on success, or a negative errno / positive exit status
 * of a failed view. */
static int execute(struct shell *s, const char *input) {
        _cleanup_free_ char *line = strdup(input);
        char *words[MAX_WORDS];
        bool record = true;
        const char *cmd;
        int n, r = 0;

        if (!line)
                return log_error_errno(ENOMEM, "Out of memory");
        n = split(line, words);
        if (n == -E2BIG)
                return log_error_errno(EINVAL, "more than %d words on one line", MAX_WORDS);
        if (n < 0)
                return log_error_errno(EINVAL, "unterminated quote: %s", input);
        if (n == 0)
                return 0;
        cmd = words[0];

        if (streq(cmd, "quit") || streq(cmd, "exit"))
                return 1;
        if (streq(cmd, "help") || streq(cmd, "?")) {
                r = help(words, n);
                record = false;
        } else if (streq(cmd, "show")) {
                show(s);
                record = false;
        } else if (streq(cmd, "save")) {
                r = n == 2 ? save(s, words[1]) : log_error_errno(EINVAL, "save FILE");
                record = false;
        } else if (streq(cmd, "resources")) {
                _cleanup_(strv_freep) char **names = NULL;

                r = list_resources(s, &names);
                for (int i = 0; r >= 0 && i < r; i++)
                        printf("%s\n", names[i]);
                r = MIN(r, 0);
                record = false;
        } else if (streq(cmd, "resource")) {
                r = n == 2 ? cmd_resource(s, words[1]) : log_error_errno(EINVAL, "resource NAME[,NAME...]");
        } else if (streq(cmd, "root")) {
                r = n == 2 ? cmd_root(s, words[1]) : log_error_errno(EINVAL, "root FUNCTION");
        } else if (streq(cmd, "threshold")) {
                double t;

                if (n != 2 || parse_fraction(words[1], &t) < 0)
                        r = log_error_errno(EINVAL, "threshold T: a fraction in [0, 1] such as 0.05, or 5%%");
                else
                        r = set_string(&s->threshold, words[1]);
        } else if (streq(cmd, "format")) {
                if (n != 2 ||
                    (!streq(words[1], "text") && !streq(words[1], "json") && !streq(words[1], "csv")))
                        r = log_error_errno(EINVAL, "format text|json|csv");
                else
                        r = set_string(&s->format, streq(words[1], "text") ? NULL : words[1]);
        } else if (streq(cmd, "filter")) {
                r = cmd_filter(s, words, n);
        } else if (streq(cmd, "down") || streq(cmd, "up") || streq(cmd, "graph")) {
                const char *root = n >= 2 ? words[1] : s->root;
                char *extra[] = { "--root", (char *) root };

                if (n > 2)
                        r = log_error_errno(EINVAL, "%s [FUNCTION]", cmd);
                else if (!root && !streq(cmd, "graph"))
                        r = log_error_errno(EINVAL, "%s needs a root: 'root FUNCTION' or '%s FUNCTION'", cmd,
                                            cmd);
                else
                        r = run_view(s, cmd, extra, root ? 2 : 0);
        } else if (streq(cmd, "functions") || streq(cmd, "body") || streq(cmd, "tree")) {
                r = n == 1 ? run_view(s, cmd, NULL, 0) :
                             log_error_errno(EINVAL, "%s takes no arguments", cmd);
        } else {
                r = log_error_errno(EINVAL, "%s: no such command; 'help' lists them", cmd);
                record = false;
        }
        /* Each command's output before the next one's errors, also when both go to one pipe. */
        fflush(stdout);
        if (record && r == 0 && strv_extend(&s->session, input) < 0)
                return log_error_errno(ENOMEM, "Out of memory");
        return r;
}

/* Completion (libedit calls back without user data, hence the pointer): the first word from the
 * commands; after down/up/graph/root a function name of the store, after resource a resource,
 * after filter a key, after format a format. */
static struct shell *completing;
static char **completion_words;

static char *next_match(const char *text, int state) {
        static size_t i;
        const char *w;

        if (state == 0)
                i = 0;
        while (completion_words && (w = completion_words[i++]))
                if (strncmp(w, text, strlen(text)) == 0)
                        return strdup(w);
        return NULL;
}

static char **complete_from(const char *text, char **words) {
        char **matches;

        completion_words = words;
        matches = rl_completion_matches(text, next_match);
        completion_words = NULL;
        return matches;
}

static char **complete(const char *text, int start, int end) {
        static const char *const formats[] = { "text", "json", "csv", NULL };
        _cleanup_(strv_freep) char **words = NULL;
        const char *line = rl_line_buffer;
        size_t len;

        (void) end;
        rl_attempted_completion_over = 1;
        while (*line == ' ' || *line == '\t')
                line++;
        if (line - rl_line_buffer >= start) {
                for (size_t i = 0; i < ELEMENTSOF(shell_commands); i++)
                        if (strv_extend(&words, shell_commands[i].name) < 0)
                                return NULL;
                return complete_from(text, words);
        }
        len = strcspn(line, " \t");
#define IS(w) (len == strlen(w) && strncmp(line, w, len) == 0)
        /* filter takes several KEY=VALUE words; the others complete their one argument */
        if (!IS("filter") && strpbrk(line + len + strspn(line + len, " \t"), " \t"))
                return NULL;
        if (IS("down") || IS("up") || IS("graph") || IS("root"))
                return complete_from(text, function_names(completing));
        if (IS("resource")) {
                if (list_resources(completing, &words) < 0)
                        return NULL;
                return complete_from(text, words);
        }
        if (IS("filter") || IS("help") || IS("format")) {
                rl_completion_append_character = IS("filter") ? '=' : ' ';
                for (size_t i = 0; IS("filter") && i < ELEMENTSOF(filter_keys); i++)
                        if (strv_extend(&words, filter_keys[i]) < 0)
                                return NULL;
                for (size_t i = 0; IS("help") && i < ELEMENTSOF(shell_commands); i++)
                        if (strv_extend(&words, shell_commands[i].name) < 0)
                                return NULL;
                for (size_t i = 0; IS("format") && formats[i]; i++)
                        if (strv_extend(&words, formats[i]) < 0)
                                return NULL;
                return complete_from(text, words);
        }
#undef IS
        return NULL;
}

static char *history_path(void) {
        const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        char *p = NULL;

        if (state && *state) {
                if (asprintf(&p, "%s/cppctl", state) < 0)
                        return NULL;
                (void) mkdir(p, 0700);
                free(p);
                return asprintf(&p, "%s/cppctl/history", state) < 0 ? NULL : p;
        }
        if (home && *home)
                return asprintf(&p, "%s/.cppctl_history", home) < 0 ? NULL : p;
        return NULL;
}

static void account(struct shell *s, int r) {
        if (r != 0)
                s->status = r < 0 ? exit_status(r) : r;
}

/* Runs every line of F (named WHAT in errors). Returns 1 when a line asked to leave, or when
 * reading failed (a line past READ_LINE_MAX: a command never is), else 0. */
static int run_lines(struct shell *s, FILE *f, const char *what) {
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        uint64_t n = 0;
        ssize_t len;

        while ((len = read_line(f, READ_LINE_MAX, &line, &size)) > 0) {
                int r;

                n++;
                if (line[len - 1] == '\n')
                        line[--len] = '\0';
                if (memchr(line, '\0', len)) {
                        account(s,
                                log_error_errno(EINVAL, "%s:%" PRIu64 ": a NUL byte in the command", what,
                                                n));
                        continue;
                }
                r = execute(s, line);
                if (r == 1)
                        return 1;
                account(s, r);
        }
        if (len == 0)
                return 0;
        if (len == -E2BIG)
                log_error("%s:%" PRIu64 ": line longer than %u bytes; stopping here", what, n + 1,
                          READ_LINE_MAX);
        else
                log_error_errno(len, "%s: read failed: %m", what);
        s->status = EXIT_FAILURE_;
        return 1;
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
        (void) sig;
        interrupted = 1;
}

static void interact(struct shell *s) {
        /* No SA_RESTART: Ctrl-C must end libedit's read, which then returns NULL as at the end of
         * input; the flag tells the two apart. */
        struct sigaction sa = { .sa_handler = on_sigint }, old;
        _cleanup_free_ char *history = history_path();
        char *line;

        completing = s;
        rl_readline_name = "cppctl";
        rl_attempted_completion_function = complete;
        using_history();
        stifle_history(HISTORY_LINES);
        if (history)
                read_history(history);
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old);
        printf("cppctl shell on %s: 'help' lists the commands.\n", s->db);
        for (;;) {
                int r;

                interrupted = 0;
                rl_completion_append_character = ' ';
                line = readline("cppd> ");
                if (interrupted) {
                        /* Ctrl-C at the prompt: drop the line, as a shell does. libedit returns
                         * NULL if the signal ended its read(); if it came while libedit was
                         * drawing, libedit reads on, and the line it returns is dropped too. */
                        free(line);
                        putchar('\n');
                        continue;
                }
                if (!line) {
                        putchar('\n'); /* after Ctrl-D, the terminal's prompt on a line of its own */
                        break;
                }
                if (*line)
                        add_history(line);
                r = execute(s, line);
                free(line);
                if (r == 1)
                        break;
                account(s, r);
        }
        sigaction(SIGINT, &old, NULL);
        if (history)
                write_history(history);
        completing = NULL;
}

int cmd_shell(int argc, char **argv, const struct verb *verb) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "db", required_argument, NULL, 'd' },
                                                 { "replay", required_argument, NULL, 'R' },
                                                 { "credentials", required_argument, NULL, 'K' },
                                                 { "debug-dir", required_argument, NULL, 'X' },
                                                 {} };
        _cleanup_(shell_done) struct shell s = { .verbs = verb->verbs };
        const char *db = NULL, *replay = NULL, *credentials = NULL;
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "hd:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: cppctl shell [--replay FILE] [DB]\n\n"
                               "The paper's exploratory loop (§5.2): set the resource, the root, the threshold\n"
                               "and filters, then ask for views; 'help' inside lists the commands. Reads a pipe\n"
                               "as a script (no prompts; '#' starts a comment). Ctrl-C stops a view, not the shell.\n"
                               "Exit status: 0, or that of the last failed command, as cppctl's: 1 failure,\n"
                               "2 bad usage, 3 nothing matched (a root in no sample); 130 for a view stopped by\n"
                               "Ctrl-C.\n\n"
                               "  -d, --db FILE          the store (default: $CPPD_DB, ./" SOURCE_DEFAULT_DB
                               ", or the daemon's),\n"
                               "                         or a fleet store: clickhouse://[USER@]HOST[:PORT]/DB\n"
                               "      --credentials FILE for clickhouse://: the user (first line) and password\n"
                               "                         (second line); default $" CH_CREDENTIALS_ENV "\n"
                               "      --replay FILE      run a session written by 'save FILE' first; then leave,\n"
                               "                         unless standard input is a terminal\n"
                               "      --debug-dir DIR    name frames stored as addresses from debug files in DIR\n"
                               "                         too, in every view (as the views' --debug-dir)\n"
                               "  -h, --help             this help\n");
                        return EXIT_OK;
                case 'd':
                        db = optarg;
                        break;
                case 'R':
                        replay = optarg;
                        break;
                case 'X':
                        if (source_names_add_debug_dir(optarg) < 0)
                                return EXIT_USAGE;
                        break;
                case 'K':
                        credentials = optarg;
                        break;
                default:
                        return EXIT_USAGE;
                }
        if (optind < argc)
                db = argv[optind++];
        if (optind < argc) {
                log_error("shell: unexpected argument '%s'", argv[optind]);
                return EXIT_USAGE;
        }
        if (!db)
                db = source_default_db();
        if (credentials && setenv(CH_CREDENTIALS_ENV, credentials, 1) < 0) {
                log_error_errno(errno, "Cannot pass on the credentials: %m");
                return EXIT_FAILURE_;
        }
        if (source_check(db, NULL) < 0)
                return EXIT_FAILURE_;
        if (set_string(&s.db, db) < 0)
                return EXIT_FAILURE_;

        if (replay) {
                _cleanup_fclose_ FILE *f = fopen(replay, "re");

                if (!f) {
                        log_error_errno(errno, "Cannot open %s: %m", replay);
                        return EXIT_FAILURE_;
                }
                if (run_lines(&s, f, replay) == 1 || !isatty(STDIN_FILENO))
                        return s.status;
        }
        if (isatty(STDIN_FILENO))
                interact(&s);
        else
                run_lines(&s, stdin, "standard input");
        return s.status;
}
