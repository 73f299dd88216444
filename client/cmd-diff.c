/* cppctl diff: one view of two profiles, compared path by path. The sides are two stores
 * (cppctl diff BASE.db NEW.db), or two selections of one store: every report option applies to
 * both sides, and --base-NAME VALUE overrides --NAME for the base side alone (two time windows:
 * --base-since T1 --base-until T2 --since T3 --until T4). The command line is parsed twice by
 * query_args_parse_extra(), once as is for the new side and once with the --base- options
 * rewritten in at its end, so every filter reads the same on both sides and any new one works.
 *
 * The trees of the two sides share one name table, so that a path is the same ids on each and
 * profile_join() pairs them. Per path the change is the new fraction minus the base fraction;
 * fractions are shares of each side's own total and so do not depend on its period or length.
 *
 * Is a change more than sampling noise? A path's hits are a binomial count: each of a side's N
 * samples lands on the path with probability p. The two-proportion z test with the pooled
 * proportion asks whether p differs between the sides:
 *
 *     p̂ = (x₁ + x₂) / (N₁ + N₂),   z = (x₂/N₂ − x₁/N₁) / √(p̂ (1 − p̂) (1/N₁ + 1/N₂))
 *
 * and |z| ≥ 1.96 rejects "no change" at 95%. The counts are samples: where a side's hits
 * outnumber its samples (samples that carry several hits, or runs of different periods merged at
 * their gcd), its x and N are scaled by samples/hits. Each path is tested on its own, so among
 * many unchanged paths about one in twenty is marked by chance; and the rows of one profile are
 * not independent (a caller's hits include its callees'). */
#include "cppctl.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "profile-join.h"
#include "strv.h"

/* |z| at or above this rejects "no change" at 95%, two-sided. */
#define DIFF_Z_95 1.96

/* The filters the base side may set apart: selections of samples and the store, never how paths
 * are labelled (--by, --inline), or the two sides' paths would not compare. */
static const char *const base_names[] = {
        "db",   "resource", "run",   "unit",  "pid",    "comm", "exe",
        "host", "since",    "until", "focus", "ignore", "hide",
};

static const char usage[] =
        "       cppctl diff [OPTIONS] BASE.db NEW.db\n"
        "       cppctl diff [OPTIONS] --base-NAME VALUE...\n\n"
        "Compares one view of two profiles path by path: of the stores BASE.db and NEW.db, or of\n"
        "one store under two selections, the base side's set with --base- options, e.g.\n"
        "    cppctl diff --db X --base-since T1 --base-until T2 --since T3 --until T4\n"
        "Every option below applies to both sides. Each path shows its change in fraction, both\n"
        "fractions, its hits on each side, and * where the change exceeds sampling error (a\n"
        "two-proportion z test at 95%); paths are sorted by the size of the change, and shown\n"
        "where either side's fraction reaches the threshold. Exit status 3: a side has no samples.";

enum {
        OPT_VIEW = QUERY_EXTRA_OPTION,
};

struct diff_args {
        enum profile_kind view;
        const char *stores[2]; /* BASE.db NEW.db, if given as arguments */
        size_t n_stores;
        bool base_resource; /* --base-resource: the sides compare two resources on purpose */
};

static int diff_parse(void *userdata, int val, const char *arg) {
        struct diff_args *d = userdata;

        switch (val) {
        case 0:
                if (d->n_stores == 2)
                        return log_error_errno(EINVAL,
                                               "diff: unexpected argument '%s'; it takes two stores, "
                                               "BASE.db NEW.db",
                                               arg);
                d->stores[d->n_stores++] = arg;
                return 0;
        case OPT_VIEW:
                if (streq(arg, "functions"))
                        d->view = PROFILE_FUNCTION;
                else if (streq(arg, "down"))
                        d->view = PROFILE_DOWN;
                else if (streq(arg, "up"))
                        d->view = PROFILE_UP;
                else if (streq(arg, "body"))
                        d->view = PROFILE_BODY;
                else
                        return log_error_errno(EINVAL, "--view %s: expected functions, down, up or body",
                                               arg);
                return 0;
        }
        return -EINVAL;
}

/* The command line of each side: NEW is ARGV without the --base- options; BASE is NEW with each
 * --base-NAME VALUE added as --NAME=VALUE after the shared options (before any "--"), where it
 * overrides them. */
struct sides {
        char **new_argv, **base_argv;
        size_t n_base; /* --base- options given */
        bool base_db, base_resource;
};

static void sides_done(struct sides *s) {
        s->new_argv = strv_free(s->new_argv);
        s->base_argv = strv_free(s->base_argv);
}

static int sides_split(struct sides *s, int argc, char **argv) {
        _cleanup_(strv_freep) char **extra = NULL;
        int i;

        if (strv_extend(&s->new_argv, argv[0]) < 0)
                return log_error_errno(ENOMEM, "Out of memory");
        for (i = 1; i < argc && !streq(argv[i], "--"); i++) {
                _cleanup_free_ char *option = NULL;
                const char *name, *eq, *value;
                size_t len, k;

                if (!startswith(argv[i], "--base-")) {
                        if (strv_extend(&s->new_argv, argv[i]) < 0)
                                return log_error_errno(ENOMEM, "Out of memory");
                        continue;
                }
                name = argv[i] + strlen("--base-");
                eq = strchr(name, '=');
                len = eq ? (size_t) (eq - name) : strlen(name);
                for (k = 0; k < ELEMENTSOF(base_names); k++)
                        if (strlen(base_names[k]) == len && strncmp(base_names[k], name, len) == 0)
                                break;
                if (k == ELEMENTSOF(base_names))
                        return log_error_errno(
                                EINVAL,
                                "%s: the base side may differ in --base-db, -resource, -run, "
                                "-unit, -pid, -comm, -exe, -host, -since, -until, -focus, -ignore "
                                "and -hide",
                                argv[i]);
                if (eq)
                        value = eq + 1;
                else if (i + 1 < argc)
                        value = argv[++i];
                else
                        return log_error_errno(EINVAL, "--base-%s needs a value", base_names[k]);
                if (asprintf(&option, "--%s=%s", base_names[k], value) < 0 || strv_extend(&extra, option) < 0)
                        return log_error_errno(ENOMEM, "Out of memory");
                s->n_base++;
                s->base_db |= streq(base_names[k], "db");
                s->base_resource |= streq(base_names[k], "resource");
        }
        for (char **p = s->new_argv; *p; p++)
                if (strv_extend(&s->base_argv, *p) < 0)
                        return log_error_errno(ENOMEM, "Out of memory");
        for (char **p = extra; p && *p; p++)
                if (strv_extend(&s->base_argv, *p) < 0)
                        return log_error_errno(ENOMEM, "Out of memory");
        for (; i < argc; i++)
                if (strv_extend(&s->new_argv, argv[i]) < 0 || strv_extend(&s->base_argv, argv[i]) < 0)
                        return log_error_errno(ENOMEM, "Out of memory");
        return 0;
}

/* The pooled two-proportion z statistic of X1 of N1 against X2 of N2 (see the top of the file);
 * 0 where the pooled proportion is 0 or 1, as the fractions are then equal. */
static double diff_z(double x1, double n1, double x2, double n2) {
        double p = (x1 + x2) / (n1 + n2), se = sqrt(p * (1.0 - p) * (1.0 / n1 + 1.0 / n2));

        return se > 0.0 ? (x2 / n2 - x1 / n1) / se : 0.0;
}

/* Samples per hit of T: the scale from hits to the counts the test needs (for weighted samples,
 * the effective number of samples, sum(w)² / sum(w²), per hit). */
static double samples_per_hit(const struct sample_tree *t) {
        return 1.0 / profile_tree_weight(t);
}

static int row_cmp(const void *a, const void *b, void *userdata) {
        const struct render_diff *d = userdata;
        const struct render_diff_row *x = a, *y = b;
        const struct profile_join_row *rx = &d->join->rows[x->row], *ry = &d->join->rows[y->row];
        const uint32_t *px = profile_join_path(d->join, rx), *py = profile_join_path(d->join, ry);

        if (x->size != y->size)
                return x->size > y->size ? -1 : 1;
        for (uint32_t i = 0; i < rx->len && i < ry->len; i++) {
                int k = strcmp(sample_tree_name(d->sides[0].tree, px[i]),
                               sample_tree_name(d->sides[0].tree, py[i]));

                if (k)
                        return k;
        }
        return rx->len < ry->len ? -1 : rx->len > ry->len;
}

/* Fills D's rows from its join: those where either side reaches THRESHOLD, sorted. */
static int diff_compute(struct render_diff *d, double threshold) {
        double scale[2] = { samples_per_hit(d->sides[0].tree), samples_per_hit(d->sides[1].tree) };
        const struct profile_join *j = d->join;

        d->rows = calloc(j->n_rows + 1, sizeof *d->rows);
        if (!d->rows)
                return -ENOMEM;
        for (size_t i = 0; i < j->n_rows; i++) {
                struct render_diff_row r = { .row = i };
                unsigned __int128 up, down;

                for (size_t side = 0; side < 2; side++) {
                        r.hits[side] = profile_join_hits(j, i, side);
                        r.fraction[side] = d->sides[side].tree->total ?
                                (double) r.hits[side] / (double) d->sides[side].tree->total :
                                0.0;
                }
                if ((r.fraction[0] < threshold && r.fraction[1] < threshold) || r.hits[0] + r.hits[1] == 0) {
                        d->n_omitted++;
                        continue;
                }
                r.change = r.fraction[1] - r.fraction[0];
                up = (unsigned __int128) r.hits[1] * d->sides[0].tree->total;
                down = (unsigned __int128) r.hits[0] * d->sides[1].tree->total;
                r.size = up > down ? up - down : down - up;
                r.z = diff_z(r.hits[0] * scale[0], d->sides[0].tree->total * scale[0], r.hits[1] * scale[1],
                             d->sides[1].tree->total * scale[1]);
                r.significant = fabs(r.z) >= DIFF_Z_95;
                d->rows[d->n_rows++] = r;
        }
        qsort_r(d->rows, d->n_rows, sizeof *d->rows, row_cmp, d);
        return 0;
}

/* A side as the renderers show it: Q's store and selection, and its tree T. */
static struct render_diff_side diff_side(const struct query_args *q, const struct sample_tree *t) {
        const struct store_filter *f = &q->filter;

        return (struct render_diff_side) {
                .store = q->db,
                .run = f->run_id,
                .pid = f->pid,
                .host = f->host,
                .unit = f->unit,
                .comm = f->comm,
                .exe = f->exe,
                .has_since = f->has_since,
                .has_until = f->has_until,
                .since = f->since,
                .until = f->until,
                .tree = t,
        };
}

/* KIND's profile of T with every entry; a root in no sample of T gives an empty profile, and
 * *ret_found false. */
static int diff_profile(struct sample_tree *t, enum profile_kind kind, const char *root, bool *ret_found,
                        struct profile **ret) {
        int r = profile_compute(t, kind, root, 0, ret);

        *ret_found = r != -ENOENT;
        if (r == -ENOENT) {
                *ret = profile_new(kind, t, NAME_NONE);
                r = *ret ? 0 : -ENOMEM;
        }
        return r;
}

/* Parses the command line into S (whose strings BASE and NEW point into), BASE, NEW and D.
 * Returns 1 to go on, 0 after --help, or a negative errno after reporting. */
static int parse_sides(struct sides *s, struct query_args *base, struct query_args *new, struct diff_args *d,
                       int argc, char **argv) {
        struct query_extra extra = {
                .options = (const struct option[]) { { "view", required_argument, NULL, OPT_VIEW }, {} },
                .help = "      --view V           functions (default: the function profile), body, or down\n"
                        "                         and up, which need --root FUNCTION\n"
                        "      --base-NAME VALUE  the base side's --NAME: db, resource, run, unit, pid, comm,\n"
                        "                         exe, host, since, until, focus, ignore or hide\n",
                .arguments = true,
                .parse = diff_parse,
                .userdata = d,
        };
        bool rooted;
        int r;

        r = sides_split(s, argc, argv);
        if (r < 0)
                return r;
        *d = (struct diff_args) { .view = PROFILE_FUNCTION };
        r = query_args_parse_extra(new, strv_length(s->new_argv), s->new_argv, "diff", usage,
                                   QUERY_TAKES_ROOT, &extra);
        if (r <= 0)
                return r;
        *d = (struct diff_args) { .view = PROFILE_FUNCTION, .base_resource = s->base_resource };
        r = query_args_parse_extra(base, strv_length(s->base_argv), s->base_argv, "diff", usage,
                                   QUERY_TAKES_ROOT, &extra);
        if (r < 0)
                log_error(
                        "(in a --base- option: the base side's value is checked as the option without --base-)");
        if (r <= 0)
                return r;

        if (d->n_stores == 1)
                return log_error_errno(EINVAL,
                                       "diff takes two stores, BASE.db NEW.db, or none (one store's two "
                                       "selections, with --base- options)");
        if (d->n_stores == 2) {
                if (s->base_db)
                        return log_error_errno(
                                EINVAL, "diff: the base store is given twice, as %s and with --base-db",
                                d->stores[0]);
                base->db = d->stores[0];
                new->db = d->stores[1];
        } else if (s->n_base == 0)
                return log_error_errno(
                        EINVAL,
                        "diff needs two sides: cppctl diff BASE.db NEW.db, or --base- options "
                        "such as --base-since T1 --base-until T2 for the base side of one store");

        rooted = d->view == PROFILE_DOWN || d->view == PROFILE_UP;
        if (rooted && !new->root)
                return log_error_errno(EINVAL, "diff --view %s needs a root function: --root FUNCTION",
                                       d->view == PROFILE_DOWN ? "down" : "up");
        if (!rooted && new->root)
                return log_error_errno(EINVAL, "diff: --root %s is for --view down or up", new->root);
        return query_check_format(new, "diff", RENDER_DIFF) < 0 ? -EINVAL : 1;
}

/* Loads Q's tree, saying which side (LABEL) it is when it is empty. */
static int load_side(struct query_args *q, const char *label, struct name_table *names,
                     struct sample_tree **ret) {
        _cleanup_free_ char *selection = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        r = query_load_shared(q, names, ret);
        if (r != -ENODATA)
                return r;
        f = open_memstream(&selection, &size);
        if (f) {
                struct render_diff_side side = diff_side(q, NULL);

                render_diff_selection(f, &side);
                fclose(f);
        }
        log_error("diff: the %s side (%s) has no samples to compare", label, selection ?: q->db);
        return r;
}

int cmd_diff(int argc, char **argv, const struct verb *verb) {
        _cleanup_(sides_done) struct sides s = {};
        _cleanup_(query_args_done) struct query_args base = {};
        _cleanup_(query_args_done) struct query_args new = {};
        _cleanup_(name_table_freep) struct name_table *names = NULL;
        _cleanup_(sample_tree_freep) struct sample_tree *tb = NULL, *tn = NULL;
        _cleanup_(profile_freep) struct profile *pb = NULL, *pn = NULL;
        _cleanup_(profile_join_freep) struct profile_join *j = NULL;
        const struct profile *columns[2];
        struct render_diff d = {};
        struct diff_args a;
        bool found_b, found_n;
        FILE *out;
        int r;

        r = parse_sides(&s, &base, &new, &a, argc, argv);
        if (r <= 0)
                return exit_status(r);

        names = name_table_new();
        if (!names) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        r = load_side(&base, "base", names, &tb);
        if (r >= 0)
                r = load_side(&new, "new", names, &tn);
        if (r < 0)
                return exit_status(r);
        /* Each store's only resource is its default: two stores may differ, unnoticed. */
        if (!streq(tb->info.resource, tn->info.resource) && !a.base_resource) {
                log_error(
                        "diff: the base side holds %s and the new side %s; name one with --resource, or the "
                        "base side's with --base-resource to compare the two",
                        tb->info.resource, tn->info.resource);
                return EXIT_USAGE;
        }

        r = diff_profile(tb, a.view, new.root, &found_b, &pb);
        if (r >= 0)
                r = diff_profile(tn, a.view, new.root, &found_n, &pn);
        if (r < 0) {
                log_error_errno(r, "Cannot compute the profiles: %m");
                return EXIT_FAILURE_;
        }
        if (!found_b && !found_n) {
                log_error("'%s' appears in no sample of either side; 'cppctl functions' lists those that do",
                          new.root);
                return EXIT_EMPTY;
        }
        columns[0] = pb;
        columns[1] = pn;
        r = profile_join(columns, 2, &j);
        if (r < 0) {
                log_error_errno(r, "Cannot join the profiles: %m");
                return EXIT_FAILURE_;
        }
        d = (struct render_diff) {
                .sides = { diff_side(&base, tb), diff_side(&new, tn) },
                .root = new.root,
                .critical_z = DIFF_Z_95,
                .join = j,
        };
        r = diff_compute(&d, new.threshold);
        if (r < 0) {
                free(d.rows);
                log_error_errno(r, "Out of memory");
                return EXIT_FAILURE_;
        }

        out = query_output(&new);
        if (!out) {
                free(d.rows);
                return EXIT_FAILURE_;
        }
        r = new.format->diff(out, &d, new.threshold);
        free(d.rows);
        return query_output_close(&new, out, r);
}
