/* Call path profiles as SQL tables: eponymous table-valued functions over the store that the
 * connection has open as 'main', the same views as cppctl's commands:
 *
 *     SELECT * FROM downward('main', 'page-faults') WHERE fraction > 0.05;
 *     SELECT leaf, fraction FROM functions('cpu-time') WHERE unit = 'nginx.service';
 *     SELECT * FROM upward('qsort', 'cpu-time', 0.01);
 *
 * Columns: path (names joined by single spaces, caller first), leaf (its last name), depth,
 * hits, fraction (of all hits of the resource in the selection), ci_low and ci_high (Wilson's
 * 95% interval on the fraction). The arguments are hidden columns, given in order or as WHERE
 * terms: [root,] resource, threshold (fraction; default 0: every entry), then the filters unit,
 * pid, comm, exe, since, until (unix seconds, or the times cppctl takes: '-2h', 'yesterday'),
 * run, host, by ('function', 'line', 'module'), inline ('show', 'fold'), focus, ignore, hide
 * (POSIX extended regular expressions), demangle ('yes', the default: C++ and Rust names
 * readable; 'no': as stored). A NULL or absent argument is no filter; a missing resource means
 * the store's only one. Bad arguments are SQL errors that say what is wrong.
 *
 * The scalar demangle(name) gives a stored name's readable form (the name itself when it is not
 * a C++ or Rust one), for SQL over the tables, which keep raw names:
 *
 *     SELECT demangle(name) FROM function WHERE name LIKE '_Z%';
 *
 * Built twice: into cppctl (SQL_EXT_BUILTIN), registered on `cppctl sql`'s connection, and as
 * the loadable module cppd_sql for the stock sqlite3 shell (`.load .../cppd_sql`), which shares
 * the host's libsqlite3. */
#ifdef SQL_EXT_BUILTIN
#include <sqlite3.h>
#else
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#endif

#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "demangle.h"
#include "parse-util.h"
#include "pattern.h"
#include "profile.h"
#include "sql-ext.h"
#include "store.h"
#include "strv.h"

enum {
        COL_PATH,
        COL_LEAF,
        COL_DEPTH,
        COL_HITS,
        COL_FRACTION,
        COL_CI_LOW,
        COL_CI_HIGH,
        COL_ARGS, /* the first hidden column */
};

/* The hidden arguments after the root (down and up only), in order. */
static const char *const arg_names[] = {
        "resource", "threshold", "unit", "pid",    "comm",  "exe",    "since", "until",
        "run",      "host",      "by",   "inline", "focus", "ignore", "hide",  "demangle",
};
#define N_ARGS (ELEMENTSOF(arg_names) + 1) /* + root */

struct view {
        const char *name;
        enum profile_kind kind;
        bool rooted;
};

static const struct view views[] = {
        { "downward", PROFILE_DOWN, true },
        { "upward", PROFILE_UP, true },
        { "functions", PROFILE_FUNCTION, false },
        { "body", PROFILE_BODY, false },
};

struct vtab {
        sqlite3_vtab base;
        sqlite3 *db;
        const struct view *view;
};

struct cursor {
        sqlite3_vtab_cursor base;
        struct sample_tree *tree;
        struct profile *profile;
        sqlite3_value *args[N_ARGS]; /* copies, for xColumn of the hidden columns */
        size_t row;
};

/* Hidden column I (0-based among the hidden ones) is argument... */
static const char *hidden_name(const struct view *v, size_t i) {
        if (v->rooted)
                return i == 0 ? "root" : arg_names[i - 1];
        return i < ELEMENTSOF(arg_names) ? arg_names[i] : NULL;
}

static size_t n_hidden(const struct view *v) {
        return ELEMENTSOF(arg_names) + v->rooted;
}

static int x_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **ret,
                     char **error) {
        const struct view *v = aux;
        char schema[1024];
        size_t len;
        struct vtab *t;
        int rc;

        len = snprintf(schema, sizeof schema,
                       "CREATE TABLE x(path TEXT, leaf TEXT, depth INTEGER, hits INTEGER, "
                       "fraction REAL, ci_low REAL, ci_high REAL");
        for (size_t i = 0; i < n_hidden(v); i++)
                len += snprintf(schema + len, sizeof schema - len, ", \"%s\" HIDDEN",
                                hidden_name(v, i) ?: "");
        snprintf(schema + len, sizeof schema - len, ")");
        rc = sqlite3_declare_vtab(db, schema);
        if (rc != SQLITE_OK)
                return rc;
        t = sqlite3_malloc(sizeof *t);
        if (!t)
                return SQLITE_NOMEM;
        *t = (struct vtab) { .db = db, .view = v };
        *ret = &t->base;
        return SQLITE_OK;
}

static int x_disconnect(sqlite3_vtab *vt) {
        sqlite3_free(vt);
        return SQLITE_OK;
}

/* Every equality on a hidden column becomes an argument, passed in column order; idxNum has a
 * bit per argument given. */
static int x_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
        const struct vtab *t = (const struct vtab *) vt;
        int order[N_ARGS], n = 0;
        unsigned mask = 0;

        for (size_t i = 0; i < N_ARGS; i++)
                order[i] = -1;
        for (int i = 0; i < info->nConstraint; i++) {
                const struct sqlite3_index_constraint *c = &info->aConstraint[i];
                int arg = c->iColumn - COL_ARGS;

                if (arg < 0 || (size_t) arg >= n_hidden(t->view))
                        continue;
                if (!c->usable || c->op != SQLITE_INDEX_CONSTRAINT_EQ)
                        return SQLITE_CONSTRAINT; /* arguments are not optional to the plan */
                order[arg] = i;
        }
        for (size_t a = 0; a < n_hidden(t->view); a++)
                if (order[a] >= 0) {
                        info->aConstraintUsage[order[a]].argvIndex = ++n;
                        info->aConstraintUsage[order[a]].omit = 1;
                        mask |= 1u << a;
                }
        info->idxNum = (int) mask;
        info->estimatedCost = 1000;
        return SQLITE_OK;
}

static int x_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **ret) {
        struct cursor *c = sqlite3_malloc(sizeof *c);

        if (!c)
                return SQLITE_NOMEM;
        *c = (struct cursor) {};
        *ret = &c->base;
        return SQLITE_OK;
}

static void cursor_reset(struct cursor *c) {
        c->profile = profile_free(c->profile);
        c->tree = sample_tree_free(c->tree);
        for (size_t i = 0; i < N_ARGS; i++) {
                sqlite3_value_free(c->args[i]);
                c->args[i] = NULL;
        }
        c->row = 0;
}

static int x_close(sqlite3_vtab_cursor *cur) {
        cursor_reset((struct cursor *) cur);
        sqlite3_free(cur);
        return SQLITE_OK;
}

static int fail(struct vtab *t, const char *fmt, const char *a, const char *b) {
        sqlite3_free(t->base.zErrMsg);
        t->base.zErrMsg = sqlite3_mprintf(fmt, a, b);
        return SQLITE_ERROR;
}

/* The text of argument NAME, or NULL when absent or NULL. */
static const char *arg_text(struct cursor *c, const struct view *v, const char *name) {
        for (size_t i = 0; i < n_hidden(v); i++)
                if (strcmp(hidden_name(v, i), name) == 0)
                        return c->args[i] ? (const char *) sqlite3_value_text(c->args[i]) : NULL;
        return NULL;
}

static int arg_time(struct vtab *t, const char *name, const char *text, int64_t *ret, bool *ret_set) {
        uint64_t u;

        if (!text)
                return SQLITE_OK;
        *ret_set = true; /* 0 is 1970, not "no bound" */

        if (safe_atou64_range(text, 0, INT64_MAX, &u) == 0)
                *ret = (int64_t) u;
        else if (parse_timestamp(text, time(NULL), ret) < 0)
                return fail(t,
                            "%s: '%s' is not a time (unix seconds, '-2h', 'yesterday', '2026-11-22 10:00')",
                            name, text);
        return SQLITE_OK;
}

static int compile(struct vtab *t, const char *name, const char *text, regex_t *re, const regex_t **slot) {
        char error[256];

        if (!text)
                return SQLITE_OK;
        if (pattern_compile(re, text, error, sizeof error) < 0)
                return fail(t, "%s: %s", name, error);
        *slot = re;
        return SQLITE_OK;
}

static int load(struct vtab *t, struct cursor *c) {
        const struct view *v = t->view;
        const char *root = v->rooted ? arg_text(c, v, "root") : NULL;
        const char *resource = arg_text(c, v, "resource"), *text;
        _cleanup_(strv_freep) char **resources = NULL;
        _cleanup_(store_closep) struct store *s = NULL;
        struct store_filter f = {};
        regex_t focus, ignore, hide;
        double threshold = 0;
        uint64_t u;
        int r, rc = SQLITE_OK;

        if (v->rooted && !root)
                return fail(t, "%s(root, resource, ...): the root function is missing", v->name, NULL);
        r = store_wrap(t->db, &s);
        if (r < 0)
                return fail(t, "%s: the database is not a cppd store at this version%s", v->name,
                            r == -EBADMSG ? "" : " (open it with this cppctl first to upgrade it)");
        if (!resource) {
                r = store_list_resources(s, &resources);
                if (r < 0)
                        return fail(t, "%s: cannot read the store's resources", v->name, NULL);
                if (r != 1)
                        return fail(t, "%s: the store holds %s resources: name one", v->name,
                                    r ? "several" : "no");
                resource = resources[0];
        }
        f.resource = resource;
        if ((text = arg_text(c, v, "threshold")) && parse_fraction(text, &threshold) < 0)
                return fail(t, "threshold: '%s' is not a fraction in [0, 1]%s", text, "");
        f.unit = arg_text(c, v, "unit");
        f.comm = arg_text(c, v, "comm");
        f.exe = arg_text(c, v, "exe");
        f.host = arg_text(c, v, "host");
        if ((text = arg_text(c, v, "pid"))) {
                if (safe_atou64_range(text, 1, INT32_MAX, &u) < 0)
                        return fail(t, "pid: '%s' is not a process id%s", text, "");
                f.pid = u;
        }
        if ((text = arg_text(c, v, "run"))) {
                if (safe_atou64_range(text, 1, INT64_MAX, &u) < 0)
                        return fail(t, "run: '%s' is not a run id%s", text, "");
                f.run_id = u;
        }
        if (arg_time(t, "since", arg_text(c, v, "since"), &f.since, &f.has_since) != SQLITE_OK ||
            arg_time(t, "until", arg_text(c, v, "until"), &f.until, &f.has_until) != SQLITE_OK)
                return SQLITE_ERROR;
        if ((text = arg_text(c, v, "by"))) {
                if (strcmp(text, "function") == 0)
                        f.by = STORE_BY_FUNCTION;
                else if (strcmp(text, "line") == 0)
                        f.by = STORE_BY_LINE;
                else if (strcmp(text, "module") == 0)
                        f.by = STORE_BY_MODULE;
                else
                        return fail(t, "by: '%s' is not function, line or module%s", text, "");
        }
        if ((text = arg_text(c, v, "inline"))) {
                if (strcmp(text, "show") != 0 && strcmp(text, "fold") != 0)
                        return fail(t, "inline: '%s' is not show or fold%s", text, "");
                f.fold_inline = strcmp(text, "fold") == 0;
        }
        if ((text = arg_text(c, v, "demangle"))) {
                if (strcmp(text, "yes") != 0 && strcmp(text, "no") != 0)
                        return fail(t, "demangle: '%s' is not yes or no%s", text, "");
                f.raw_names = strcmp(text, "no") == 0;
        }
        if (compile(t, "focus", arg_text(c, v, "focus"), &focus, &f.focus) != SQLITE_OK)
                return SQLITE_ERROR;
        if (compile(t, "ignore", arg_text(c, v, "ignore"), &ignore, &f.ignore) != SQLITE_OK)
                rc = SQLITE_ERROR;
        if (rc == SQLITE_OK && compile(t, "hide", arg_text(c, v, "hide"), &hide, &f.hide) != SQLITE_OK)
                rc = SQLITE_ERROR;

        if (rc == SQLITE_OK) {
                r = store_load_tree(s, &f, &c->tree);
                if (r == -ENOENT)
                        rc = fail(t, "%s: the store has no samples of resource '%s'", v->name, resource);
                else if (r < 0)
                        rc = fail(t, "%s: cannot load the samples: %s", v->name, store_error(s));
        }
        if (rc == SQLITE_OK) {
                uint64_t min_hits = profile_min_hits(c->tree->total, threshold);

                r = profile_compute(c->tree, v->kind, root, min_hits, &c->profile);
                if (r == -ENOENT)
                        r = 0; /* a root in no sample: no rows, as in SQL */
                if (r < 0)
                        rc = SQLITE_NOMEM;
        }
        if (f.focus)
                regfree(&focus);
        if (f.ignore)
                regfree(&ignore);
        if (f.hide)
                regfree(&hide);
        return rc;
}

static int x_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
                    sqlite3_value **argv) {
        struct cursor *c = (struct cursor *) cur;
        struct vtab *t = (struct vtab *) cur->pVtab;
        int k = 0;

        cursor_reset(c);
        for (size_t a = 0; a < N_ARGS; a++)
                if (idx_num & (1u << a)) {
                        if (k >= argc)
                                return SQLITE_ERROR;
                        if (sqlite3_value_type(argv[k]) != SQLITE_NULL) {
                                c->args[a] = sqlite3_value_dup(argv[k]);
                                if (!c->args[a])
                                        return SQLITE_NOMEM;
                        }
                        k++;
                }
        return load(t, c);
}

static int x_next(sqlite3_vtab_cursor *cur) {
        ((struct cursor *) cur)->row++;
        return SQLITE_OK;
}

static int x_eof(sqlite3_vtab_cursor *cur) {
        const struct cursor *c = (const struct cursor *) cur;

        return !c->profile || c->row >= c->profile->n_entries;
}

static int x_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
        const struct cursor *c = (const struct cursor *) cur;
        const struct profile *p = c->profile;
        const struct profile_entry *e = &p->entries[c->row];
        const uint32_t *names = profile_path(p, e);
        double lo, hi;

        switch (col) {
        case COL_PATH: {
                sqlite3_str *s = sqlite3_str_new(NULL);

                for (uint32_t i = 0; i < e->len; i++)
                        sqlite3_str_appendf(s, "%s%s", i ? " " : "", sample_tree_name(p->tree, names[i]));
                sqlite3_result_text(ctx, sqlite3_str_finish(s), -1, sqlite3_free);
                break;
        }
        case COL_LEAF:
                sqlite3_result_text(ctx, e->len ? sample_tree_name(p->tree, names[e->len - 1]) : "", -1,
                                    SQLITE_TRANSIENT);
                break;
        case COL_DEPTH:
                sqlite3_result_int64(ctx, e->len);
                break;
        case COL_HITS:
                sqlite3_result_int64(ctx, (sqlite3_int64) e->hits);
                break;
        case COL_FRACTION:
                sqlite3_result_double(ctx, profile_fraction(p, e->hits));
                break;
        case COL_CI_LOW:
        case COL_CI_HIGH:
                profile_interval(e->hits, p->total, &lo, &hi);
                sqlite3_result_double(ctx, col == COL_CI_LOW ? lo : hi);
                break;
        default:
                if (col - COL_ARGS < (int) N_ARGS && c->args[col - COL_ARGS])
                        sqlite3_result_value(ctx, c->args[col - COL_ARGS]);
                else
                        sqlite3_result_null(ctx);
        }
        return SQLITE_OK;
}

static int x_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *ret) {
        *ret = (sqlite3_int64) ((const struct cursor *) cur)->row;
        return SQLITE_OK;
}

static const sqlite3_module module = {
        .xConnect = x_connect,
        .xBestIndex = x_best_index,
        .xDisconnect = x_disconnect,
        .xOpen = x_open,
        .xClose = x_close,
        .xFilter = x_filter,
        .xNext = x_next,
        .xEof = x_eof,
        .xColumn = x_column,
        .xRowid = x_rowid,
};

/* demangle(name): the readable form of a C++ or Rust name, else the name; NULL for NULL. */
static void fn_demangle(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
        const char *name = (const char *) sqlite3_value_text(argv[0]);
        char buf[DEMANGLE_NAME_MAX * 2];
        size_t n;

        (void) argc;
        if (!name) {
                sqlite3_result_null(ctx);
                return;
        }
        n = demangle(name, buf, sizeof buf);
        if (n > 0)
                sqlite3_result_text(ctx, buf, (int) n, SQLITE_TRANSIENT);
        else
                sqlite3_result_value(ctx, argv[0]);
}

int sql_ext_register(sqlite3 *db) {
        int rc = sqlite3_create_function(db, "demangle", 1,
                                         SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
                                         fn_demangle, NULL, NULL);

        for (size_t i = 0; i < ELEMENTSOF(views) && rc == SQLITE_OK; i++)
                rc = sqlite3_create_module(db, views[i].name, &module, (void *) &views[i]);
        return rc;
}

#ifndef SQL_EXT_BUILTIN
/* The entry point sqlite3 looks for in cppd_sql.so ("cppd_sql" without its '_'). */
int sqlite3_cppdsql_init(sqlite3 *db, char **error, const sqlite3_api_routines *api);
int sqlite3_cppdsql_init(sqlite3 *db, char **error, const sqlite3_api_routines *api) {
        SQLITE_EXTENSION_INIT2(api);
        return sql_ext_register(db);
}
#endif
