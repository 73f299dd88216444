/* cppctl shell: the paper's exploratory loop (§5.2). Settings (store, resource, root, threshold,
 * filters, format) persist between commands; each view is the CLI's own command, called with an
 * argument vector built from the settings, so that the shell shows exactly what `cppctl down ...`
 * would. Interactive input goes through libedit (line editing, history, completion of commands
 * and of the store's function names); a pipe is read line by line without prompts, so that
 * sessions can be scripted, and `save FILE` writes the session's commands for `--replay FILE`.
 *
 * Exit status: 0 when every command succeeded, else the status of the last one that failed. */
#include "cppctl.h"

#include <editline/readline.h>
#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "parse-util.h"
#include "strv.h"

#define MAX_WORDS 64

/* The filter keys and the report options they become. */
static const char *const filter_keys[] = {
        "unit", "pid", "comm", "exe", "since", "until", "host", "run", "by", "inline", "focus", "ignore", "hide",
};

struct shell {
        char *db;
        char *resource;                 /* NULL: the command's default */
        char *root;
        char *threshold;                /* as typed; NULL: the default */
        char *format;                   /* NULL: text */
        char *filters[ELEMENTSOF(filter_keys)];
        char **session;                 /* the commands to save: settings and views */
        int status;                     /* of the last failed command, or 0 */
        bool interactive;
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
}

static int set_string(char **slot, const char *value) {
        char *copy = value ? strdup(value) : NULL;

        if (value && !copy)
                return log_error_errno(ENOMEM, "Out of memory");
        free(*slot);
        *slot = copy;
        return 0;
}

/* Splits LINE into words at blanks; '...' and "..." group words and are removed. Returns the
 * number of words, or -EINVAL for an unterminated quote or too many words. WORDS point into
 * LINE, which is modified. */
static int split(char *line, char **words) {
        int n = 0;
        char *r = line, *w = line;

        for (;;) {
                while (*r == ' ' || *r == '\t')
                        r++;
                if (*r == '\0' || *r == '#')
                        return n;
                if (n == MAX_WORDS)
                        return -EINVAL;
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

/* Runs cppctl command NAME with the settings as options and EXTRA words after them. */
static int run_view(struct shell *s, const char *name, char **extra, int n_extra) {
        const char *argv[2 * ELEMENTSOF(filter_keys) + MAX_WORDS + 16];
        char options[ELEMENTSOF(filter_keys)][16];
        int argc = 0, r;

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
                if (s->filters[i]) {
                        snprintf(options[i], sizeof options[i], "--%s", filter_keys[i]);
                        argv[argc++] = options[i];
                        argv[argc++] = s->filters[i];
                }
        for (int i = 0; i < n_extra; i++)
                argv[argc++] = extra[i];
        argv[argc] = NULL;

        r = cppctl_run(name, argc, (char **) argv);
        fflush(stdout);
        return r;
}

static int list_resources(struct shell *s, char ***ret) {
        _cleanup_(store_closep) struct store *st = NULL;
        int r;

        r = store_open(s->db, STORE_READ, &st);
        if (r < 0)
                return log_store_error(r, s->db, st);
        r = store_list_resources(st, ret);
        return r < 0 ? log_store_error(r, s->db, st) : r;
}

/* Checks VALUE for filter KEY as the report options will, so that a bad setting is refused when
 * it is made, not at every view after. */
static int check_filter(const char *key, const char *value) {
        uint64_t u;
        int64_t t;
        regex_t re;

        if (streq(key, "pid") || streq(key, "run")) {
                if (safe_atou64_range(value, 1, INT32_MAX, &u) < 0)
                        return log_error_errno(EINVAL, "filter %s=%s: expected a number", key, value);
        } else if (streq(key, "since") || streq(key, "until")) {
                if (parse_timestamp(value, time(NULL), &t) < 0)
                        return log_error_errno(EINVAL, "filter %s=%s: expected a time such as '-2h', 'today' or "
                                               "'2026-11-22 10:00'", key, value);
        } else if (streq(key, "by")) {
                if (!streq(value, "function") && !streq(value, "line") && !streq(value, "module"))
                        return log_error_errno(EINVAL, "filter by=%s: expected function, line or module", value);
        } else if (streq(key, "inline")) {
                if (!streq(value, "show") && !streq(value, "fold"))
                        return log_error_errno(EINVAL, "filter inline=%s: expected show or fold", value);
        } else if (streq(key, "focus") || streq(key, "ignore") || streq(key, "hide")) {
                char error[256];
                int r = regcomp(&re, value, REG_EXTENDED | REG_NOSUB);

                if (r != 0) {
                        regerror(r, &re, error, sizeof error);
                        return log_error_errno(EINVAL, "filter %s=%s: %s", key, value, error);
                }
                regfree(&re);
        }
        return 0;
}

static int cmd_filter(struct shell *s, char **words, int n) {
        if (n < 2)
                return log_error_errno(EINVAL, "filter KEY=VALUE ... or filter clear [KEY]; keys: unit pid comm exe "
                                       "since until host run by inline focus ignore hide");
        if (streq(words[1], "clear")) {
                for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                        if (n == 2 || strv_contains(words + 2, filter_keys[i]))
                                s->filters[i] = mfree(s->filters[i]);
                for (int k = 2; k < n; k++) {
                        bool known = false;

                        for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                                known = known || streq(words[k], filter_keys[i]);
                        if (!known)
                                return log_error_errno(EINVAL, "filter clear %s: no such filter", words[k]);
                }
                return 0;
        }
        for (int k = 1; k < n; k++) {
                char *eq = strchr(words[k], '=');
                size_t i;

                if (!eq)
                        return log_error_errno(EINVAL, "filter %s: expected KEY=VALUE", words[k]);
                *eq = '\0';
                for (i = 0; i < ELEMENTSOF(filter_keys); i++)
                        if (streq(words[k], filter_keys[i]))
                                break;
                if (i == ELEMENTSOF(filter_keys))
                        return log_error_errno(EINVAL, "filter %s: no such filter; keys: unit pid comm exe since until "
                                               "host run by inline focus ignore hide", words[k]);
                if (check_filter(words[k], eq + 1) < 0)
                        return -EINVAL;
                if (set_string(&s->filters[i], eq + 1) < 0)
                        return -ENOMEM;
                *eq = '=';
        }
        return 0;
}

static void show(const struct shell *s) {
        printf("store      %s\nresource   %s\nroot       %s\nthreshold  %s\nformat     %s\n", s->db,
               s->resource ?: "(the store's only one, or cpu-time)", s->root ?: "(none)",
               s->threshold ?: "0.01", s->format ?: "text");
        for (size_t i = 0; i < ELEMENTSOF(filter_keys); i++)
                if (s->filters[i])
                        printf("filter     %s=%s\n", filter_keys[i], s->filters[i]);
}

static const struct {
        const char *name, *args, *help;
} shell_commands[] = {
        { "resource", "NAME", "profile resource NAME (cpu-time, page-faults, ...)" },
        { "resources", "", "list the store's resources" },
        { "root", "FUNCTION", "the root function of down, up and graph" },
        { "threshold", "T", "leave out entries below fraction T (0.05 or 5%)" },
        { "filter", "KEY=VALUE ...", "select samples by unit pid comm exe since until host run, view\n"
          "                          them by=function|line|module, inline=show|fold, focus ignore hide\n"
          "                          (the report options of the same names); 'filter clear [KEY]'" },
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
        _cleanup_fclose_ FILE *f = fopen(path, "we");

        if (!f)
                return log_error_errno(errno, "Cannot create %s: %m", path);
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
        if (n < 0)
                return log_error_errno(EINVAL, "%s", n == -EINVAL ? "unterminated quote, or too many words" : "");
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
                record = false;
        } else if (streq(cmd, "resource")) {
                _cleanup_(strv_freep) char **names = NULL;

                if (n != 2)
                        r = log_error_errno(EINVAL, "resource NAME");
                else if ((r = list_resources(s, &names)) >= 0 && !strv_contains(names, words[1]))
                        r = log_error_errno(ENOENT, "%s has no samples of resource '%s'", s->db, words[1]);
                else if (r >= 0)
                        r = set_string(&s->resource, words[1]);
        } else if (streq(cmd, "root")) {
                r = n == 2 ? set_string(&s->root, words[1]) : log_error_errno(EINVAL, "root FUNCTION");
        } else if (streq(cmd, "threshold")) {
                double t;

                if (n != 2 || parse_fraction(words[1], &t) < 0)
                        r = log_error_errno(EINVAL, "threshold T: a fraction in [0, 1] such as 0.05, or 5%%");
                else
                        r = set_string(&s->threshold, words[1]);
        } else if (streq(cmd, "format")) {
                if (n != 2 || (!streq(words[1], "text") && !streq(words[1], "json") && !streq(words[1], "csv")))
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
                        r = log_error_errno(EINVAL, "%s needs a root: 'root FUNCTION' or '%s FUNCTION'", cmd, cmd);
                else
                        r = run_view(s, cmd, extra, root ? 2 : 0);
        } else if (streq(cmd, "functions") || streq(cmd, "body") || streq(cmd, "tree")) {
                r = n == 1 ? run_view(s, cmd, NULL, 0) : log_error_errno(EINVAL, "%s takes no arguments", cmd);
        } else {
                r = log_error_errno(EINVAL, "%s: no such command; 'help' lists them", cmd);
                record = false;
        }
        if (record && r == 0 && strv_extend(&s->session, input) < 0)
                return log_error_errno(ENOMEM, "Out of memory");
        return r;
}

/* Completion: the first word from the commands, after down/up/graph/root a function name of
 * the store (read once). */
static char **function_names;

static char *next_match(const char *text, int state, const char *(*get)(size_t)) {
        static size_t i;
        const char *w;

        if (state == 0)
                i = 0;
        while ((w = get(i++)))
                if (strncmp(w, text, strlen(text)) == 0)
                        return strdup(w);
        return NULL;
}

static const char *command_at(size_t i) {
        return i < ELEMENTSOF(shell_commands) ? shell_commands[i].name : NULL;
}

static const char *function_at(size_t i) {
        return i < strv_length(function_names) ? function_names[i] : NULL;
}

static char *complete_command(const char *text, int state) {
        return next_match(text, state, command_at);
}

static char *complete_function(const char *text, int state) {
        return next_match(text, state, function_at);
}

static char **complete(const char *text, int start, int end) {
        const char *line = rl_line_buffer;

        rl_attempted_completion_over = 1;
        while (*line == ' ')
                line++;
        if (line - rl_line_buffer >= start)
                return rl_completion_matches(text, complete_command);
        if (strncmp(line, "down ", 5) == 0 || strncmp(line, "up ", 3) == 0 || strncmp(line, "graph ", 6) == 0 ||
            strncmp(line, "root ", 5) == 0)
                return rl_completion_matches(text, complete_function);
        return NULL;
}

static void load_function_names(const char *db) {
        sqlite3 *c = NULL;
        sqlite3_stmt *st = NULL;

        if (sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(c, "SELECT DISTINCT name FROM function ORDER BY name", -1, &st, NULL) == SQLITE_OK)
                while (sqlite3_step(st) == SQLITE_ROW)
                        if (strv_extend(&function_names, (const char *) sqlite3_column_text(st, 0)) < 0)
                                break;
        sqlite3_finalize(st);
        sqlite3_close(c);
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

/* Runs every line of F. Returns 1 when a line asked to leave, else 0. */
static int run_lines(struct shell *s, FILE *f) {
        _cleanup_free_ char *line = NULL;
        size_t size = 0;
        ssize_t len;

        while ((len = getline(&line, &size, f)) >= 0) {
                int r;

                if (len > 0 && line[len - 1] == '\n')
                        line[len - 1] = '\0';
                r = execute(s, line);
                if (r == 1)
                        return 1;
                if (r != 0)
                        s->status = r < 0 ? exit_status(r) : r;
        }
        return 0;
}

static int interact(struct shell *s) {
        _cleanup_free_ char *history = history_path();
        char *line;

        load_function_names(s->db);
        rl_readline_name = "cppctl";
        rl_attempted_completion_function = complete;
        using_history();
        if (history)
                read_history(history);
        printf("cppctl shell on %s: 'help' lists the commands.\n", s->db);
        while ((line = readline("cppd> "))) {
                int r;

                if (*line)
                        add_history(line);
                r = execute(s, line);
                free(line);
                if (r == 1)
                        break;
                if (r != 0)
                        s->status = r < 0 ? exit_status(r) : r;
        }
        if (history)
                write_history(history);
        function_names = strv_free(function_names);
        return 0;
}

int cmd_shell(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "db", required_argument, NULL, 'd' },
                { "replay", required_argument, NULL, 'R' },
                {}
        };
        _cleanup_(shell_done) struct shell s = {};
        const char *db = getenv("CPPD_DB"), *replay = NULL;
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "hd:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: cppctl shell [--replay FILE] [DB]\n\n"
                               "The paper's exploratory loop (§5.2): set the resource, the root, the threshold\n"
                               "and filters, then ask for views; 'help' inside lists the commands. Reads a pipe\n"
                               "as a script (no prompts). Exit status: 0, or that of the last failed command.\n\n"
                               "  -d, --db FILE          the store (default: $CPPD_DB, ./" CPPCTL_DEFAULT_DB ", or the daemon's)\n"
                               "      --replay FILE      run a session written by 'save FILE' first\n"
                               "  -h, --help             this help\n");
                        return EXIT_OK;
                case 'd':
                        db = optarg;
                        break;
                case 'R':
                        replay = optarg;
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
                db = access(CPPCTL_DEFAULT_DB, F_OK) < 0 && access(CPPCTL_DAEMON_DB, F_OK) == 0 ?
                     CPPCTL_DAEMON_DB : CPPCTL_DEFAULT_DB;
        if (access(db, R_OK) < 0) {
                log_error_errno(errno, "%s: %m (make a store with 'cppctl record' or 'cppctl import')", db);
                return EXIT_FAILURE_;
        }
        if (set_string(&s.db, db) < 0)
                return EXIT_FAILURE_;

        if (replay) {
                _cleanup_fclose_ FILE *f = fopen(replay, "re");

                if (!f) {
                        log_error_errno(errno, "Cannot open %s: %m", replay);
                        return EXIT_FAILURE_;
                }
                if (run_lines(&s, f) == 1 || !isatty(STDIN_FILENO))
                        return s.status;
        }
        if (isatty(STDIN_FILENO))
                interact(&s);
        else
                run_lines(&s, stdin);
        return s.status;
}
