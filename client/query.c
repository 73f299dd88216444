/* The report commands' shared half: one option parser and one loader, so every view takes the
 * same --db, --resource, --threshold, --run and --json, and reports a missing store, resource
 * or root the same way. */
#include "cppctl.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "parse-util.h"
#include "strv.h"

int exit_status(int r) {
        if (r >= 0)
                return EXIT_OK;
        if (r == -ENODATA)
                return EXIT_EMPTY;
        return r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_;
}

int log_store_error(int r, const char *path, const struct store *s) {
        const char *detail = store_error(s);

        switch (r) {
        case -ENOENT:
                return log_error_errno(EIO, "%s: no such store (make one with 'cppctl import' or pass --db)", path);
        case -EACCES:
        case -EPERM:
                return log_error_errno(EIO, "%s: permission denied", path);
        case -EBADMSG:
                return log_error_errno(EIO, "%s: not a cppd store, or a damaged one%s%s; left untouched",
                                       path, *detail ? ": " : "", detail);
        case -EPROTONOSUPPORT:
                return log_error_errno(EIO, "%s: written by a newer cppd (%s); use that version", path, detail);
        case -EPROTO:
                return log_error_errno(EIO, "%s: %s; whoever may write it upgrades it by reading it", path, detail);
        case -ENOSPC:
                return log_error_errno(EIO, "%s: no space left on the device; nothing was changed", path);
        case -EBUSY:
                return log_error_errno(EIO, "%s: locked by another writer for too long", path);
        default:
                return log_error_errno(r, "%s: %m%s%s", path, *detail ? ": " : "", detail);
        }
}

int query_args_parse(struct query_args *q, int argc, char **argv, const char *name,
                     const char *usage, unsigned flags) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
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
                { "since", required_argument, NULL, 'S' },
                { "until", required_argument, NULL, 'T' },
                { "by", required_argument, NULL, 'B' },
                { "inline", required_argument, NULL, 'I' },
                { "focus", required_argument, NULL, 'F' },
                { "ignore", required_argument, NULL, 'G' },
                { "hide", required_argument, NULL, 'H' },
                {}
        };
        uint64_t run, pid;
        int c, r;

        *q = (struct query_args) {
                .db = getenv("CPPD_DB"),
                .threshold = QUERY_THRESHOLD_DEFAULT,
                .format = RENDER_TEXT,
        };
        /* ./cppd.db when there is one (cppctl record's default), else the daemon's store. */
        if (!q->db)
                q->db = access(CPPCTL_DEFAULT_DB, F_OK) < 0 && access(CPPCTL_DAEMON_DB, F_OK) == 0 ?
                        CPPCTL_DAEMON_DB : CPPCTL_DEFAULT_DB;
        optind = 0;
        while ((c = getopt_long(argc, argv, "hd:r:t:j", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("Usage: cppctl %s [OPTIONS]%s\n%s\n"
                               "\nOptions:\n"
                               "  -d, --db FILE          the store (default: $CPPD_DB, ./" CPPCTL_DEFAULT_DB ", or the daemon's)\n"
                               "  -r, --resource NAME    the resource (default: the store's only one, else cpu-time)\n"
                               "  -t, --threshold T      leave out entries below fraction T (0.05 or 5%%; default %g)\n"
                               "      --run ID           only samples of run ID\n"
                               "      --unit NAME        only samples of processes of systemd unit NAME\n"
                               "      --pid PID          only samples of process PID\n"
                               "      --comm NAME        only samples of processes or threads named NAME\n"
                               "      --exe PATH         only samples of this executable (a path or a file name)\n"
                               "      --since TIME       only samples from TIME on: '2026-11-22 10:00', '-2h',\n"
                               "                         'today', 'yesterday', '@UNIXTIME'\n"
                               "      --until TIME       only samples before TIME\n"
                               "      --by G             function (default), line (call sites: name (file:line)),\n"
                               "                         or module\n"
                               "      --inline MODE      show (default: inlined functions as frames) or fold\n"
                               "      --focus RE         only stacks with a frame matching RE (POSIX extended)\n"
                               "      --ignore RE        no stacks with a frame matching RE\n"
                               "      --hide RE          leave frames matching RE out of the stacks\n"
                               "  -j, --json             JSON instead of text\n"
                               "  -h, --help             this help\n",
                               name, flags & QUERY_NEEDS_ROOT ? " --root FUNCTION" : "", usage,
                               QUERY_THRESHOLD_DEFAULT);
                        if (flags & QUERY_NEEDS_ROOT)
                                printf("      --root FUNCTION    the root function (or give it as the argument)\n");
                        return 0;
                case 'd':
                        q->db = optarg;
                        break;
                case 'r':
                        q->resource = optarg;
                        break;
                case 'R':
                        if (!(flags & QUERY_NEEDS_ROOT))
                                return log_error_errno(EINVAL, "%s takes no --root", name);
                        q->root = optarg;
                        break;
                case 't':
                        r = parse_fraction(optarg, &q->threshold);
                        if (r < 0)
                                return log_error_errno(EINVAL, "--threshold %s: expected a fraction in [0, 1] "
                                                       "such as 0.05, or a percentage such as 5%%", optarg);
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
                case 'C':
                        q->filter.comm = optarg;
                        break;
                case 'E':
                        q->filter.exe = optarg;
                        break;
                case 'B':
                        if (streq(optarg, "function"))
                                q->filter.by = STORE_BY_FUNCTION;
                        else if (streq(optarg, "line"))
                                q->filter.by = STORE_BY_LINE;
                        else if (streq(optarg, "module"))
                                q->filter.by = STORE_BY_MODULE;
                        else
                                return log_error_errno(EINVAL, "--by %s: expected function, line or module", optarg);
                        break;
                case 'I':
                        if (!streq(optarg, "show") && !streq(optarg, "fold"))
                                return log_error_errno(EINVAL, "--inline %s: expected show or fold", optarg);
                        q->filter.fold_inline = streq(optarg, "fold");
                        break;
                case 'F':
                case 'G':
                case 'H': {
                        regex_t *re = c == 'F' ? &q->focus : c == 'G' ? &q->ignore : &q->hide;
                        const regex_t **slot = c == 'F' ? &q->filter.focus : c == 'G' ? &q->filter.ignore :
                                               &q->filter.hide;
                        char error[256];

                        if (*slot)
                                regfree(re);
                        r = regcomp(re, optarg, REG_EXTENDED | REG_NOSUB);
                        if (r != 0) {
                                regerror(r, re, error, sizeof error);
                                *slot = NULL;
                                return log_error_errno(EINVAL, "--%s %s: %s", c == 'F' ? "focus" : c == 'G' ?
                                                       "ignore" : "hide", optarg, error);
                        }
                        *slot = re;
                        break;
                }
                case 'S':
                case 'T':
                        r = parse_timestamp(optarg, time(NULL), c == 'S' ? &q->filter.since : &q->filter.until);
                        if (r < 0)
                                return log_error_errno(EINVAL, "--%s %s: expected a time such as '2026-11-22 10:00', "
                                                       "'-2h', 'today' or '@1700000000'",
                                                       c == 'S' ? "since" : "until", optarg);
                        break;
                case 'j':
                        q->format = RENDER_JSON;
                        break;
                default:
                        return log_error_errno(EINVAL, "try 'cppctl %s --help'", name);
                }

        if ((flags & QUERY_NEEDS_ROOT) && !q->root && optind < argc)
                q->root = argv[optind++];
        if (optind < argc)
                return log_error_errno(EINVAL, "%s: unexpected argument '%s'", name, argv[optind]);
        if ((flags & QUERY_NEEDS_ROOT) && !q->root)
                return log_error_errno(EINVAL, "%s needs a root function: cppctl %s --root FUNCTION", name, name);
        return 1;
}

static int pick_resource(struct query_args *q, struct store *s) {
        _cleanup_(strv_freep) char **names = NULL;
        _cleanup_free_ char *list = NULL;
        int n;

        n = store_list_resources(s, &names);
        if (n < 0)
                return log_store_error(n, q->db, s);
        if (n == 0)
                return log_error_errno(ENOENT, "%s holds no samples yet", q->db);
        list = strv_join(names, ", ");
        if (!list)
                return log_error_errno(ENOMEM, "Out of memory");

        if (q->resource) {
                for (int i = 0; i < n; i++)
                        if (streq(names[i], q->resource))
                                return 0;
                return log_error_errno(ENOENT, "%s has no samples of resource '%s'; it has: %s",
                                       q->db, q->resource, list);
        }
        if (n == 1) {
                q->resource = strdup(names[0]);         /* lives until exit */
                return q->resource ? 0 : log_error_errno(ENOMEM, "Out of memory");
        }
        for (int i = 0; i < n; i++)
                if (streq(names[i], "cpu-time")) {
                        q->resource = "cpu-time";
                        return 0;
                }
        return log_error_errno(EINVAL, "%s holds several resources (%s): choose one with --resource", q->db, list);
}

int query_load(struct query_args *q, struct sample_tree **ret) {
        _cleanup_(store_closep) struct store *s = NULL;
        struct store_filter f;
        int r;

        r = store_open(q->db, STORE_READ, &s);
        if (r < 0)
                return log_store_error(r, q->db, s);
        r = pick_resource(q, s);
        if (r < 0)
                return r;
        f = q->filter;
        f.resource = q->resource;
        r = store_load_tree(s, &f, ret);
        if (r < 0)
                return log_store_error(r, q->db, s);
        if ((*ret)->total == 0) {
                *ret = sample_tree_free(*ret);
                log_error("no samples of %s in %s match the filters", q->resource, q->db);
                return -ENODATA;
        }
        return 0;
}

int query_render_profile(const struct query_args *q, const struct profile *p) {
        int r;

        r = q->format == RENDER_JSON ? render_json_profile(stdout, p, q->threshold) :
                                       render_text_profile(stdout, p, q->threshold);
        if (r >= 0 && fflush(stdout) != 0)
                r = -errno;
        if (r < 0) {
                log_error_errno(r, "Cannot write the profile: %m");
                return EXIT_FAILURE_;
        }
        return EXIT_OK;
}

int query_missing_root(const struct query_args *q, enum profile_kind kind, struct sample_tree *t) {
        _cleanup_(profile_freep) struct profile *empty = profile_new(kind, t, NAME_NONE);
        _cleanup_(strv_freep) char **similar = NULL;
        _cleanup_free_ char *list = NULL;
        size_t n = name_table_size(t->names);

        if (!empty) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        if (query_render_profile(q, empty) != EXIT_OK)
                return EXIT_FAILURE_;

        for (uint32_t i = 0; i < n && strv_length(similar) < 5; i++)
                if (strstr(name_table_get(t->names, i), q->root) && strv_extend(&similar, name_table_get(t->names, i)) < 0)
                        break;
        list = strv_join(similar, ", ");
        if (similar && list)
                log_error("'%s' appears in no sample of %s; functions with that in their name: %s",
                          q->root, q->resource, list);
        else
                log_error("'%s' appears in no sample of %s; 'cppctl functions' lists those that do",
                          q->root, q->resource);
        return EXIT_EMPTY;
}

int query_profile_command(int argc, char **argv, const char *name, const char *usage, enum profile_kind kind) {
        bool rooted = kind == PROFILE_DOWN || kind == PROFILE_UP;
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        _cleanup_(profile_freep) struct profile *p = NULL;
        struct query_args q;
        uint64_t min_hits;
        int r;

        r = query_args_parse(&q, argc, argv, name, usage, rooted ? QUERY_NEEDS_ROOT : 0);
        if (r <= 0)
                return exit_status(r);
        r = query_load(&q, &t);
        if (r < 0)
                return exit_status(r);

        min_hits = profile_min_hits(t->total, q.threshold);
        switch (kind) {
        case PROFILE_DOWN:
                r = profile_down(t, q.root, min_hits, &p);
                break;
        case PROFILE_UP:
                r = profile_up(t, q.root, min_hits, &p);
                break;
        case PROFILE_FUNCTION:
                r = profile_function(t, min_hits, &p);
                break;
        case PROFILE_BODY:
                r = profile_body(t, min_hits, &p);
                break;
        }
        if (r == -ENOENT && rooted)
                return query_missing_root(&q, kind, t);
        if (r < 0) {
                log_error_errno(r, "Cannot compute the profile: %m");
                return EXIT_FAILURE_;
        }
        return query_render_profile(&q, p);
}
