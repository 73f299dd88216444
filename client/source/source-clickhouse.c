/* The ClickHouse source: a fleet store (common/fleet) named by a clickhouse:// URL, its
 * credentials from a file (fleet-open.c). It keeps no index cache: a fleet has no file identity
 * to key one by. Questions go to the rollups where their filters allow (ch-read.c), unless
 * $CPPD_CLICKHOUSE_ROLLUPS is 0: the tests and benchmarks compare the two paths. */
#include "source-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ch-client.h"
#include "ch-read.h"
#include "fleet-open.h"
#include "log.h"
#include "source-names.h"

struct source_clickhouse {
        struct source source; /* first: a struct source * is one of these */
        struct ch_client *ch;
};

static struct source_clickhouse *of(struct source *s) {
        return (struct source_clickhouse *) s;
}

static struct source *clickhouse_close(struct source *s) {
        ch_client_free(of(s)->ch);
        free(s);
        return NULL;
}

static int clickhouse_list_resources(struct source *s, char ***ret) {
        return ch_list_resources(of(s)->ch, ret);
}

static int clickhouse_has_call_sites(struct source *s) {
        return ch_has_call_sites(of(s)->ch);
}

/* Frames the hosts stored as addresses are named as the tree is loaded, from debug info found
 * here now (late-names.c): there is no store to write them into, and the fleet store is read. */
static int clickhouse_load_tree(struct source *s, const struct store_filter *f, struct name_table *names,
                                struct sample_tree **ret) {
        struct store_filter named = *f;
        struct store_namer namer;
        struct late_names *ln = NULL;
        int r;

        if (source_names_enabled() && source_names_cache(&ln) >= 0) {
                namer = (struct store_namer) { .name = late_names_name, .userdata = ln };
                named.namer = &namer;
        }
        r = ch_load_tree_shared(of(s)->ch, &named, names, ret);
        if (ln)
                source_names_report(ln);
        return r;
}

/* The names in the fleet's stacks' arrays, one TabSeparated line each. */
static int clickhouse_function_names(struct source *s, int (*each)(void *userdata, const char *name),
                                     void *userdata) {
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        char *p, *end;
        int r;

        r = ch_query(of(s)->ch,
                     "SELECT DISTINCT arrayJoin(functions) AS f FROM stacks ORDER BY f FORMAT TabSeparated",
                     NULL, 0, CH_QUERY_READONLY, &out, &len);
        if (r < 0)
                return r;
        for (p = out, end = out + len; p < end;) {
                char *nl = memchr(p, '\n', end - p);

                if (!nl || ch_tsv_unescape(p, nl - p) < 0)
                        break;
                r = each(userdata, p);
                if (r < 0)
                        return r;
                p = nl + 1;
        }
        return 0;
}

static int clickhouse_log_error(struct source *s, int r, const char *resource) {
        struct ch_client *c = of(s)->ch;

        if (r == -ENOENT && resource && !*ch_client_error(c))
                return log_error_errno(r, "%s has no samples of %s", s->db, resource);
        return log_fleet_error(r, c);
}

static const struct source_ops clickhouse_ops = {
        .close = clickhouse_close,
        .list_resources = clickhouse_list_resources,
        .has_call_sites = clickhouse_has_call_sites,
        .load_tree = clickhouse_load_tree,
        .function_names = clickhouse_function_names,
        .log_error = clickhouse_log_error,
};

int source_clickhouse_open(const char *db, const char *credentials, unsigned flags, struct source **ret) {
        _cleanup_(ch_client_freep) struct ch_client *c = NULL;
        struct source_clickhouse *s;
        const char *e;
        int r;

        /* Quiet: the client alone, its schema left for whoever reads it next to check and report. */
        if (flags & SOURCE_QUIET)
                r = ch_client_open(db, fleet_credentials(credentials), &c, NULL);
        else
                r = fleet_open(db, fleet_credentials(credentials), false, &c);
        if (r < 0)
                return r;
        e = getenv("CPPD_CLICKHOUSE_ROLLUPS");
        if (e && streq(e, "0"))
                ch_client_set_rollups(c, false);
        s = malloc(sizeof *s);
        if (!s)
                return flags & SOURCE_QUIET ? -ENOMEM : log_error_errno(ENOMEM, "Out of memory");
        *s = (struct source_clickhouse) {
                .source = { .ops = &clickhouse_ops, .db = db },
                .ch = take_ptr(&c),
        };
        *ret = &s->source;
        return 0;
}

int source_clickhouse_check(const char *db, const char *credentials) {
        _cleanup_(ch_client_freep) struct ch_client *c = NULL;

        return fleet_open(db, fleet_credentials(credentials), false, &c);
}
