/* The report options: one parser for every report command, so every view takes the same --db,
 * --resource, --threshold, --run, --format and filters and refuses a bad one the same way; and
 * the check that the chosen format draws what the command has (render_formats[]). */
#include "report.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch-client.h"
#include "log.h"
#include "parse-util.h"
#include "pattern.h"
#include "source-names.h"
#include "strv.h"

/* -r A,B,... or --ratio A/B into Q's resources; one name stays q->resource alone. */
static int parse_resources(struct query_args *q, const char *list, const char *name, unsigned flags) {
        const char *sep = q->ratio ? "/" : ",";
        _cleanup_free_ char *copy = strdup(list);
        char *save = NULL;

        if (!copy)
                return log_error_errno(ENOMEM, "Out of memory");
        q->resources = strv_free(q->resources);
        for (char *w = strtok_r(copy, sep, &save); w; w = strtok_r(NULL, sep, &save)) {
                if (strv_contains(q->resources, w))
                        return log_error_errno(EINVAL, "%s: resource '%s' named twice", list, w);
                if (strv_extend(&q->resources, w) < 0)
                        return log_error_errno(ENOMEM, "Out of memory");
        }
        if (q->ratio && strv_length(q->resources) != 2)
                return log_error_errno(EINVAL,
                                       "--ratio %s: expected two resources, A/B, such as "
                                       "page-faults/cpu-time",
                                       list);
        if (strv_length(q->resources) == 0)
                return log_error_errno(EINVAL, "--resource '%s': expected a resource name", list);
        if (strv_length(q->resources) > 1 && !(flags & QUERY_MANY_RESOURCES))
                return log_error_errno(EINVAL, "%s shows one resource at a time: --resource %s", name, list);
        q->resource = q->resources[0];
        return 1;
}

/* OPTIONS then EXTRA's, for getopt_long(). Returns a malloc()ed array, or NULL: no memory. */
static struct option *options_with(const struct option *options, const struct query_extra *extra) {
        size_t n = 0, m = 0;
        struct option *all;

        while (options[n].name)
                n++;
        while (extra && extra->options[m].name)
                m++;
        all = calloc(n + m + 1, sizeof *all);
        if (!all)
                return NULL;
        memcpy(all, options, n * sizeof *all);
        if (m > 0)
                memcpy(all + n, extra->options, m * sizeof *all);
        return all;
}

/* --format's lines of --help: the formats of a profile (every view), then the others, which
 * tree, graph and export draw. */
static void help_formats(void) {
        const char *sep = "";

        printf("  -f, --format F         ");
        for (const struct render_format *x = render_formats; x->name; x++)
                if (x->profile) {
                        printf("%s%s", sep, x->name);
                        if (x->note)
                                printf(" (%s)", x->note);
                        sep = ", ";
                }
        printf("; tree, graph and export\n"
               "                         also ");
        sep = "";
        for (const struct render_format *x = render_formats; x->name; x++)
                if (!x->profile) {
                        printf("%s%s", sep, x->name);
                        sep = ", ";
                }
        printf("\n");
}

int query_args_parse(struct query_args *q, int argc, char **argv, const char *name, const char *usage,
                     unsigned flags) {
        return query_args_parse_extra(q, argc, argv, name, usage, flags, NULL);
}

int query_args_parse_extra(struct query_args *q, int argc, char **argv, const char *name, const char *usage,
                           unsigned flags, const struct query_extra *extra) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "db", required_argument, NULL, 'd' },
                                                 { "resource", required_argument, NULL, 'r' },
                                                 { "root", required_argument, NULL, 'R' },
                                                 { "threshold", required_argument, NULL, 't' },
                                                 { "run", required_argument, NULL, 'u' },
                                                 { "json", no_argument, NULL, 'j' },
                                                 { "unit", required_argument, NULL, 'U' },
                                                 { "pid", required_argument, NULL, 'P' },
                                                 { "comm", required_argument, NULL, 'C' },
                                                 { "exe", required_argument, NULL, 'E' },
                                                 { "host", required_argument, NULL, 'O' },
                                                 { "since", required_argument, NULL, 'S' },
                                                 { "until", required_argument, NULL, 'T' },
                                                 { "by", required_argument, NULL, 'B' },
                                                 { "inline", required_argument, NULL, 'I' },
                                                 { "focus", required_argument, NULL, 'F' },
                                                 { "ignore", required_argument, NULL, 'G' },
                                                 { "hide", required_argument, NULL, 'H' },
                                                 { "no-demangle", no_argument, NULL, 'N' },
                                                 { "format", required_argument, NULL, 'f' },
                                                 { "output", required_argument, NULL, 'o' },
                                                 { "ratio", required_argument, NULL, 'A' },
                                                 { "no-idle", no_argument, NULL, 'D' },
                                                 { "credentials", required_argument, NULL, 'K' },
                                                 { "debug-dir", required_argument, NULL, 'X' },
                                                 {} };
        _cleanup_free_ struct option *all = options_with(options, extra);
        const char *resources = NULL;
        uint64_t run, pid;
        int c, r;

        if (!all)
                return log_error_errno(ENOMEM, "Out of memory");

        *q = (struct query_args) {
                .db = source_default_db(),
                .threshold = QUERY_THRESHOLD_DEFAULT,
                .format = &render_formats[0],
        };
        optind = 0;
        while ((c = getopt_long(argc, argv, "hd:r:t:jf:o:", all, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: cppctl %s [OPTIONS]%s\n%s\n"
                               "\nOptions:\n"
                               "  -d, --db FILE          the store (default: $CPPD_DB, ./" SOURCE_DEFAULT_DB
                               ", or the daemon's),\n"
                               "                         or a fleet store: clickhouse://[USER@]HOST[:PORT]/DB\n"
                               "      --credentials FILE for clickhouse://: the user (first line) and password\n"
                               "                         (second line); default $" CH_CREDENTIALS_ENV "\n"
                               "  -r, --resource NAME    the resource (default: the store's only one, else cpu-time)\n"
                               "  -t, --threshold T      leave out entries below fraction T (0.05 or 5%%; default %g)\n"
                               "      --run ID           only samples of run ID\n"
                               "      --unit NAME        only samples of processes of systemd unit NAME\n"
                               "      --pid PID          only samples of process PID\n"
                               "      --no-idle          leave out the idle task (pid 0, swapper): shown by default\n"
                               "      --comm NAME        only samples of processes or threads named NAME\n"
                               "      --exe PATH         only samples of this executable (a path or a file name)\n"
                               "      --host NAME        only samples of runs on host NAME (a store merged from several)\n"
                               "      --since TIME       only samples from TIME on: '2026-11-22 10:00', '-2h',\n"
                               "                         'today', 'yesterday', '@UNIXTIME'\n"
                               "      --until TIME       only samples before TIME\n"
                               "      --by G             function (default), line (call sites: name (file:line)),\n"
                               "                         or module\n"
                               "      --inline MODE      show (default: inlined functions as frames) or fold\n"
                               "      --focus RE         only stacks with a frame matching RE (POSIX extended)\n"
                               "      --ignore RE        no stacks with a frame matching RE\n"
                               "      --hide RE          leave frames matching RE out of the stacks\n"
                               "      --no-demangle      C++ and Rust names as the symbol table has them\n"
                               "      --debug-dir DIR    name frames stored as addresses from debug files in DIR\n"
                               "                         too (laid out as /usr/lib/debug: .build-id/xx/yyyy.debug);\n"
                               "                         repeatable. $DEBUGINFOD_URLS: from debuginfod servers too\n",
                               name,
                               flags & QUERY_NEEDS_ROOT         ? " --root FUNCTION" :
                                       flags & QUERY_TAKES_ROOT ? " [--root FUNCTION]" :
                                                                  "",
                               usage, QUERY_THRESHOLD_DEFAULT);
                        help_formats();
                        printf("  -j, --json             --format json\n"
                               "  -o, --output FILE      write to FILE instead of standard output (never over a\n"
                               "                         store: the store is --db, in every command)\n"
                               "  -h, --help             this help\n");
                        if (flags & (QUERY_NEEDS_ROOT | QUERY_TAKES_ROOT))
                                printf("      --root FUNCTION    the root function (or give it as the argument)\n");
                        if (flags & QUERY_MANY_RESOURCES)
                                printf("  -r A,B,...             several resources side by side, a column each\n"
                                       "      --ratio A/B        per call path, A's gticks per B's (e.g. page-faults/cpu-time)\n");
                        if (extra && extra->help)
                                fputs(extra->help, stdout);
                        return 0;
                case 'd':
                        q->db = optarg;
                        break;
                case 'r':
                        resources = optarg;
                        q->ratio = false;
                        break;
                case 'A':
                        if (!(flags & QUERY_MANY_RESOURCES))
                                return log_error_errno(EINVAL, "%s takes no --ratio", name);
                        resources = optarg;
                        q->ratio = true;
                        break;
                case 'f':
                        q->format = render_format_find(optarg);
                        if (!q->format) {
                                _cleanup_free_ char *names = render_format_list(0, " or ");

                                return log_error_errno(EINVAL, "--format %s: expected %s", optarg,
                                                       names ?: "");
                        }
                        q->format_set = true;
                        break;
                case 'o':
                        q->output = optarg;
                        break;
                case 'R':
                        if (!(flags & (QUERY_NEEDS_ROOT | QUERY_TAKES_ROOT)))
                                return log_error_errno(EINVAL, "%s takes no --root", name);
                        q->root = optarg;
                        break;
                case 't':
                        r = parse_fraction(optarg, &q->threshold);
                        if (r < 0)
                                return log_error_errno(EINVAL,
                                                       "--threshold %s: expected a fraction in [0, 1] "
                                                       "such as 0.05, or a percentage such as 5%%",
                                                       optarg);
                        q->threshold_set = true;
                        break;
                case 'u':
                        r = safe_atou64_range(optarg, 1, INT64_MAX, &run);
                        if (r < 0)
                                return log_error_errno(EINVAL, "--run %s: expected a run id", optarg);
                        q->filter.run_id = run;
                        break;
                case 'U':
                        q->filter.unit = optarg;
                        break;
                case 'P':
                        r = safe_atou64_range(optarg, 1, INT32_MAX, &pid);
                        if (r < 0)
                                return log_error_errno(EINVAL, "--pid %s: expected a process id", optarg);
                        q->filter.pid = pid;
                        break;
                case 'D':
                        q->filter.no_idle = true;
                        break;
                case 'K':
                        q->credentials = optarg;
                        break;
                case 'X':
                        r = source_names_add_debug_dir(optarg);
                        if (r < 0)
                                return r;
                        break;
                case 'C':
                        q->filter.comm = optarg;
                        break;
                case 'E':
                        q->filter.exe = optarg;
                        break;
                case 'O':
                        q->filter.host = optarg;
                        break;
                case 'B':
                        if (streq(optarg, "function"))
                                q->filter.by = STORE_BY_FUNCTION;
                        else if (streq(optarg, "line"))
                                q->filter.by = STORE_BY_LINE;
                        else if (streq(optarg, "module"))
                                q->filter.by = STORE_BY_MODULE;
                        else
                                return log_error_errno(EINVAL, "--by %s: expected function, line or module",
                                                       optarg);
                        break;
                case 'I':
                        if (!streq(optarg, "show") && !streq(optarg, "fold"))
                                return log_error_errno(EINVAL, "--inline %s: expected show or fold", optarg);
                        q->filter.fold_inline = streq(optarg, "fold");
                        break;
                case 'N':
                        q->filter.raw_names = true;
                        break;
                case 'F':
                case 'G':
                case 'H': {
                        regex_t *re = c == 'F' ? &q->focus : c == 'G' ? &q->ignore : &q->hide;
                        const regex_t **slot = c == 'F' ? &q->filter.focus :
                                c == 'G'                ? &q->filter.ignore :
                                                          &q->filter.hide;
                        char error[256];

                        if (*slot)
                                regfree(re);
                        r = pattern_compile(re, optarg, error, sizeof error);
                        if (r < 0) {
                                *slot = NULL;
                                return log_error_errno(EINVAL, "--%s %s: %s",
                                                       c == 'F'         ? "focus" :
                                                               c == 'G' ? "ignore" :
                                                                          "hide",
                                                       optarg, error);
                        }
                        *slot = re;
                        break;
                }
                case 'S':
                case 'T':
                        r = parse_timestamp(optarg, time(NULL),
                                            c == 'S' ? &q->filter.since : &q->filter.until);
                        if (r >= 0)
                                *(c == 'S' ? &q->filter.has_since : &q->filter.has_until) = true;
                        if (r < 0)
                                return log_error_errno(EINVAL,
                                                       "--%s %s: expected a time such as '2026-11-22 10:00', "
                                                       "'-2h', 'today' or '@1700000000'",
                                                       c == 'S' ? "since" : "until", optarg);
                        break;
                case 'j':
                        q->format = render_format_find("json");
                        q->format_set = true;
                        break;
                default:
                        if (extra && c >= QUERY_EXTRA_OPTION) {
                                r = extra->parse(extra->userdata, c, optarg);
                                if (r < 0)
                                        return r;
                                break;
                        }
                        return log_error_errno(EINVAL, "try 'cppctl %s --help'", name);
                }

        for (; extra && extra->arguments && optind < argc; optind++) {
                r = extra->parse(extra->userdata, 0, argv[optind]);
                if (r < 0)
                        return r;
        }

        if ((flags & (QUERY_NEEDS_ROOT | QUERY_TAKES_ROOT)) && !q->root && optind < argc)
                q->root = argv[optind++];
        if (optind < argc)
                return log_error_errno(EINVAL, "%s: unexpected argument '%s'", name, argv[optind]);
        if ((flags & QUERY_NEEDS_ROOT) && !q->root)
                return log_error_errno(EINVAL, "%s needs a root function: cppctl %s --root FUNCTION", name,
                                       name);
        return resources ? parse_resources(q, resources, name, flags) : 1;
}

void query_args_done(struct query_args *q) {
        q->resources = strv_free(q->resources);
        q->resource_owned = mfree(q->resource_owned);
        if (q->filter.focus)
                regfree(&q->focus);
        if (q->filter.ignore)
                regfree(&q->ignore);
        if (q->filter.hide)
                regfree(&q->hide);
        q->filter.focus = q->filter.ignore = q->filter.hide = NULL;
}

int query_check_format(const struct query_args *q, const char *name, unsigned what) {
        _cleanup_free_ char *list = NULL;

        if (render_format_draws(q->format, what))
                return 0;
        list = render_format_list(what, ", ");
        if (!list)
                return log_error_errno(ENOMEM, "Out of memory");
        return log_error_errno(EINVAL, "%s has no %s format; it writes %s%s", name, q->format->name, list,
                               render_format_draws(q->format, RENDER_TREE) ?
                                       " ('cppctl export' writes the others)" :
                                       "");
}
