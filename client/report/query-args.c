/* The report commands' shared half: one option parser and one loader, so every view takes the
 * same --db, --resource, --threshold, --run and --json, and reports a missing store, resource
 * or root the same way. The store is a SQLite file or a ClickHouse fleet store (--db
 * clickhouse://HOST:PORT/DB), read through the one source interface (source/source.h), so
 * that every view, diff, export and the shell read either alike. */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ch-client.h"
#include "log.h"
#include "parse-util.h"
#include "pattern.h"
#include "strv.h"

int exit_status(int r) {
        if (r >= 0)
                return EXIT_OK;
        if (r == -ENODATA)
                return EXIT_EMPTY;
        return r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_;
}

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
                               "      --no-demangle      C++ and Rust names as the symbol table has them\n",
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

static int pick_resource(struct query_args *q, struct source *src) {
        _cleanup_(strv_freep) char **names = NULL;
        _cleanup_free_ char *list = NULL;
        int n;

        n = source_list_resources(src, &names);
        if (n < 0)
                return source_log_error(src, n, q->resource);
        if (n == 0)
                return log_error_errno(ENOENT, "%s holds no samples yet", q->db);
        list = strv_join(names, ", ");
        if (!list)
                return log_error_errno(ENOMEM, "Out of memory");

        if (q->resource) {
                for (int i = 0; i < n; i++)
                        if (streq(names[i], q->resource))
                                return 0;
                return log_error_errno(ENOENT, "%s has no samples of resource '%s'; it has: %s", q->db,
                                       q->resource, list);
        }
        if (n == 1) {
                free(q->resource_owned);
                q->resource = q->resource_owned = strdup(names[0]);
                return q->resource ? 0 : log_error_errno(ENOMEM, "Out of memory");
        }
        for (int i = 0; i < n; i++)
                if (streq(names[i], "cpu-time")) {
                        q->resource = "cpu-time";
                        return 0;
                }
        return log_error_errno(EINVAL, "%s holds several resources (%s): choose one with --resource", q->db,
                               list);
}

int query_load(struct query_args *q, struct sample_tree **ret) {
        return query_load_shared(q, NULL, ret);
}

/* Opens Q's store for reading into *ret and fills *ret_filter with Q's filter and resource (the
 * store's only one when Q names none). Errors are logged. */
static int open_store(struct query_args *q, struct source **ret, struct store_filter *ret_filter) {
        _cleanup_(source_closep) struct source *src = NULL;
        int r;

        r = source_open(q->db, q->credentials, 0, &src);
        if (r < 0)
                return r;
        r = pick_resource(q, src);
        if (r < 0)
                return r;
        if (q->filter.by == STORE_BY_LINE && source_has_call_sites(src) == 0)
                log_notice(
                        "%s keeps its frames as functions, so --by line shows functions; record with --lines "
                        "(cppd: [store] granularity = line) to keep call sites",
                        q->db);
        *ret_filter = q->filter;
        ret_filter->resource = q->resource;
        *ret = take_ptr(&src);
        return 0;
}

int query_load_shared(struct query_args *q, struct name_table *names, struct sample_tree **ret) {
        _cleanup_(source_closep) struct source *src = NULL;
        struct store_filter f;
        int r;

        r = open_store(q, &src, &f);
        if (r < 0)
                return r;
        r = source_load_tree(src, &f, names, ret);
        if (r < 0)
                return source_log_error(src, r, q->resource);
        if ((*ret)->total == 0) {
                *ret = sample_tree_free(*ret);
                log_error("no samples of %s in %s match the filters", q->resource, q->db);
                return -ENODATA;
        }
        return 0;
}

int query_load_index(struct query_args *q, bool inverted, struct view_data *ret) {
        _cleanup_(source_closep) struct source *src = NULL;
        _cleanup_(view_data_done) struct view_data v = {};
        struct store_filter f;
        int r;

        r = open_store(q, &src, &f);
        if (r < 0)
                return r;
        r = source_load_index(src, &f, inverted, &v);
        if (r < 0)
                return source_log_error(src, r, q->resource);
        if (v.index->header->total == 0) {
                log_error("no samples of %s in %s match the filters", q->resource, q->db);
                return -ENODATA;
        }
        *ret = v;
        v = (struct view_data) {};
        return 0;
}

int query_load_many(struct query_args *q, struct name_table **ret_names, struct sample_tree ***ret_trees,
                    size_t *ret_n) {
        _cleanup_(source_closep) struct source *src = NULL;
        _cleanup_(name_table_freep) struct name_table *names = name_table_new();
        size_t n = q->resources ? strv_length(q->resources) : 1;
        _cleanup_free_ struct sample_tree **trees = calloc(n, sizeof *trees);
        uint64_t total = 0;
        int r;

        if (!names || !trees)
                return log_error_errno(ENOMEM, "Out of memory");
        r = source_open(q->db, q->credentials, 0, &src);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                struct store_filter f = q->filter;

                q->resource = q->resources ? q->resources[i] : q->resource;
                r = pick_resource(q, src);
                if (r >= 0) {
                        f.resource = q->resource;
                        r = source_load_tree(src, &f, names, &trees[i]);
                        if (r < 0)
                                r = source_log_error(src, r, q->resource);
                }
                if (r < 0) {
                        for (size_t k = 0; k < i; k++)
                                sample_tree_free(trees[k]);
                        return r;
                }
                total += trees[i]->total;
        }
        q->resource = q->resources ? q->resources[0] : q->resource;
        if (total == 0) {
                for (size_t k = 0; k < n; k++)
                        sample_tree_free(trees[k]);
                log_error("no samples of %s in %s match the filters",
                          q->resources ? "these resources" : q->resource, q->db);
                return -ENODATA;
        }
        *ret_names = take_ptr(&names);
        *ret_trees = take_ptr(&trees);
        *ret_n = n;
        return 0;
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

/* The first 16 bytes of every SQLite database file, its NUL included (sqlite.org/fileformat). */
#define SQLITE_HEADER "SQLite format 3"

/* Whether the file open at FD starts as an SQLite database or its write-ahead log does. Read
 * through /proc/self/fd: the same file, whatever its name now, and FD may be write-only. */
static bool is_store_file(int fd) {
        static const uint8_t wal_be[] = { 0x37, 0x7f, 0x06, 0x82 }, wal_le[] = { 0x37, 0x7f, 0x06, 0x83 };
        _cleanup_close_ int rfd = -EBADF;
        char path[64], head[sizeof SQLITE_HEADER];

        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        rfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (rfd < 0 || pread(rfd, head, sizeof head, 0) != (ssize_t) sizeof head)
                return false; /* unreadable or too short to be one */
        return memcmp(head, SQLITE_HEADER, sizeof head) == 0 || memcmp(head, wal_be, 4) == 0 ||
                memcmp(head, wal_le, 4) == 0;
}

int output_open(const char *path, const char *store, FILE **ret) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st, store_st;
        FILE *f;

        /* Not O_TRUNC: what is there is looked at first, through this descriptor, so that the
         * file checked is the file cut (symbolic links followed, any name). */
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISREG(st.st_mode)) {
                if ((store && stat(store, &store_st) == 0 && store_st.st_dev == st.st_dev &&
                     store_st.st_ino == st.st_ino) ||
                    (st.st_size > 0 && is_store_file(fd)))
                        return -EEXIST;
                if (ftruncate(fd, 0) < 0)
                        return -errno;
        }
        f = fdopen(fd, "w");
        if (!f)
                return -errno;
        fd = -EBADF;
        *ret = f;
        return 0;
}

int log_output_error(int r, const char *path) {
        if (r == -EEXIST)
                return log_error_errno(
                        EEXIST,
                        "%s is a store (an SQLite database): -o writes a report, and never over "
                        "a store; name another file (the store a command reads or writes is --db)",
                        path);
        return log_error_errno(r, "Cannot create %s: %m", path);
}

FILE *query_output(const struct query_args *q) {
        FILE *f = NULL;
        int r;

        if (!q->output || streq(q->output, "-"))
                return stdout;
        r = output_open(q->output, q->db, &f);
        if (r < 0)
                log_output_error(r, q->output);
        return f;
}

int query_output_close(const struct query_args *q, FILE *out, int r) {
        const char *what = q->output && !streq(q->output, "-") ? q->output : "standard output";

        if (r >= 0 && fflush(out) != 0)
                r = -errno;
        if (out != stdout && fclose(out) != 0 && r >= 0)
                r = -errno;
        if (r < 0) {
                log_error_errno(r, "Cannot write %s: %m", what);
                return EXIT_FAILURE_;
        }
        return EXIT_OK;
}

int query_render_profile(const struct query_args *q, const struct profile *p) {
        FILE *out = query_output(q);

        if (!out)
                return EXIT_FAILURE_;
        return query_output_close(q, out, q->format->profile(out, p, q->threshold));
}

int query_missing_root(const struct query_args *q, enum profile_kind kind, struct sample_tree *t,
                       const struct tree_index *x) {
        _cleanup_(profile_freep) struct profile *empty = profile_new(kind, t, NAME_NONE);
        _cleanup_(strv_freep) char **similar = NULL;
        _cleanup_free_ char *list = NULL;
        int r;

        if (!empty) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        if (query_render_profile(q, empty) != EXIT_OK)
                return EXIT_FAILURE_;

        r = x ? profile_similar_roots_index(x, q->root, 5, &similar) :
                profile_similar_roots(t, q->root, 5, &similar);
        if (r > 0)
                list = strv_join(similar, ", ");
        if (list)
                log_error("'%s' appears in no sample of %s; functions with that in their name: %s", q->root,
                          q->resource, list);
        else
                log_error("'%s' appears in no sample of %s; 'cppctl functions' lists those that do", q->root,
                          q->resource);
        return EXIT_EMPTY;
}

int query_compute_profile(struct sample_tree *t, enum profile_kind kind, const char *root, uint64_t min_hits,
                          struct profile **ret) {
        switch (kind) {
        case PROFILE_DOWN:
                return profile_down(t, root, min_hits, ret);
        case PROFILE_UP:
                return profile_up(t, root, min_hits, ret);
        case PROFILE_FUNCTION:
                return profile_function(t, min_hits, ret);
        case PROFILE_BODY:
                return profile_body(t, min_hits, ret);
        }
        return -EINVAL;
}

/* -r A,B,... and --ratio A/B: the view of each resource, joined by path. */
static int table_command(struct query_args *q, enum profile_kind kind) {
        _cleanup_(name_table_freep) struct name_table *names = NULL;
        _cleanup_free_ struct sample_tree **trees = NULL;
        _cleanup_free_ struct profile **profiles = NULL;
        _cleanup_(profile_join_freep) struct profile_join *j = NULL;
        size_t n = 0, found = 0;
        FILE *out;
        int r;

        r = query_load_many(q, &names, &trees, &n);
        if (r < 0)
                return exit_status(r);
        profiles = calloc(n, sizeof *profiles);
        if (!profiles) {
                r = log_error_errno(ENOMEM, "Out of memory");
                goto finish;
        }
        for (size_t i = 0; i < n; i++) {
                r = query_compute_profile(trees[i], kind, q->root, 0, &profiles[i]);
                if (r == -ENOENT) {
                        profiles[i] = profile_new(kind, trees[i], NAME_NONE);
                        r = profiles[i] ? 0 : -ENOMEM;
                } else if (r >= 0)
                        found++;
                if (r < 0) {
                        log_error_errno(r, "Cannot compute the profile: %m");
                        goto finish;
                }
        }
        if (q->root && found == 0) {
                r = query_missing_root(q, kind, trees[0], NULL);
                goto finish;
        }
        r = profile_join((const struct profile *const *) profiles, n, &j);
        if (r < 0) {
                log_error_errno(r, "Cannot join the profiles: %m");
                goto finish;
        }
        out = query_output(q);
        if (!out) {
                r = -EIO;
                goto finish;
        }
        r = q->format->table(out, j, q->ratio, q->threshold);
        r = query_output_close(q, out, r) == EXIT_OK ? 0 : -EIO;
finish:
        j = profile_join_free(j);
        for (size_t i = 0; i < n; i++) {
                if (profiles)
                        profile_free(profiles[i]);
                sample_tree_free(trees[i]);
        }
        return r > 0 ? r : exit_status(r);
}

static int compute_index_profile(const struct tree_index *x, enum profile_kind kind, const char *root,
                                 uint64_t min_hits, struct profile **ret) {
        switch (kind) {
        case PROFILE_DOWN:
                return profile_down_index(x, root, min_hits, ret);
        case PROFILE_UP:
                return profile_up_index(x, root, min_hits, ret);
        case PROFILE_FUNCTION:
                return profile_function_index(x, min_hits, ret);
        case PROFILE_BODY:
                return profile_body_index(x, min_hits, ret);
        }
        return -EINVAL;
}

int query_profile_command(int argc, char **argv, const char *name, const char *usage,
                          enum profile_kind kind) {
        bool rooted = kind == PROFILE_DOWN || kind == PROFILE_UP;
        _cleanup_(view_data_done) struct view_data v = {};
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_(query_args_done) struct query_args q = {};
        const struct sample_tree *header;
        int r;

        r = query_args_parse(&q, argc, argv, name, usage,
                             (rooted ? QUERY_NEEDS_ROOT : 0) | QUERY_MANY_RESOURCES);
        if (r <= 0)
                return exit_status(r);
        r = query_check_format(&q, name, RENDER_PROFILE);
        if (r < 0)
                return exit_status(r);
        if (q.resources && q.resources[1])
                return table_command(&q, kind);
        r = query_load_index(&q, kind == PROFILE_UP, &v);
        if (r < 0)
                return exit_status(r);

        header = v.index->header;
        r = compute_index_profile(v.index, kind, q.root, profile_min_hits(header->total, q.threshold), &p);
        if (r == -ENOENT && rooted)
                return query_missing_root(&q, kind, v.index->header, v.index);
        if (r < 0) {
                log_error_errno(r, "Cannot compute the profile: %m");
                return EXIT_FAILURE_;
        }
        return query_render_profile(&q, p);
}
