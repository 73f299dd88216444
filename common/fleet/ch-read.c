/* Loading a filtered sample tree from the fleet store. Three queries, each aggregated in
 * ClickHouse: the runs' periods and losses for the header (run_resources, the newest row of each
 * run), the samples summed per (stack hash, period) under the filter, and the frames of exactly
 * those stacks, one row per frame through ARRAY JOIN of each stack's arrays, in order within each
 * stack; each answer is parsed as it streams in (ch_query_lines()). No frame is joined per
 * sample: a tree of a day of a thousand hosts reads as many stack rows as it has distinct stacks.
 *
 * Here, as in store-read.c: each distinct frame is labelled once (a map from the frame's fields
 * to its label and what the filters say of it), each stack is mapped once to its tree node, and
 * each (stack, period) row adds hits weighted by period / gcd_u64(periods). The labelling, the
 * mapping of a stack frame by frame and the adding of a row are tree-load.c's, which store-read.c
 * calls too: the two loaders cannot disagree on a label, a filter or a weight.
 *
 * The samples come from the rollups (samples_hourly: sums by resource, unit, hour, stack, period
 * and busy, schemas/clickhouse/0002-rollups.sql) where the filter allows, from the raw samples
 * otherwise: a filter of run, pid, process, executable or host needs the raw rows; a time range
 * reads its whole hours from the rollups and the parts of hours at either end from the raw
 * rows. Both give rows of (stack, period, hits, samples, squared hits) that are summed again per
 * (stack, period): the rollups' sums are final only after ClickHouse merges their parts, so no
 * answer may depend on that, and the two paths give the same sums, hence the same tree. */
#include "ch-read.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ch-names.h"
#include "grow.h"
#include "idmap.h"
#include "math-util.h"
#include "store-rename.h"
#include "strv.h"
#include "tree-load.h"

/* Appends the WHERE clause of F's sample filter (column names of `samples`). */
static int where_samples(struct ch_buf *q, const struct store_filter *f) {
        int r = ch_buf_printf(q, " WHERE resource = ");

        if (r >= 0)
                r = ch_buf_quote(q, f->resource);
        if (r >= 0 && f->run_id)
                r = ch_buf_printf(q, " AND run = %" PRId64, f->run_id);
        if (r >= 0 && f->unit) {
                r = ch_buf_printf(q, " AND unit = ");
                if (r >= 0)
                        r = ch_buf_quote(q, f->unit);
        }
        if (r >= 0 && f->pid)
                r = ch_buf_printf(q, " AND pid = %" PRId64, f->pid);
        /* the store's pid != 0 leaves out unknown (NULL) pids too; they are -1 here */
        if (r >= 0 && f->no_idle)
                r = ch_buf_printf(q, " AND pid > 0");
        if (r >= 0 && f->comm) {
                r = ch_buf_printf(q, " AND (comm = ");
                if (r >= 0)
                        r = ch_buf_quote(q, f->comm);
                if (r >= 0)
                        r = ch_buf_printf(q, " OR thread_comm = ");
                if (r >= 0)
                        r = ch_buf_quote(q, f->comm);
                if (r >= 0)
                        r = ch_buf_printf(q, ")");
        }
        if (r >= 0 && f->exe) {
                _cleanup_free_ char *slashed = NULL;
                size_t len = strlen(f->exe);

                /* the path, or its file name: the last len + 1 bytes are "/" exe */
                if (asprintf(&slashed, "/%s", f->exe) < 0)
                        return -ENOMEM;
                r = ch_buf_printf(q, " AND (exe = ");
                if (r >= 0)
                        r = ch_buf_quote(q, f->exe);
                if (r >= 0)
                        r = ch_buf_printf(
                                q,
                                " OR (length(exe) > %zu AND substring(exe, length(exe) - %zu, %zu) = ", len,
                                len, len + 1);
                if (r >= 0)
                        r = ch_buf_quote(q, slashed);
                if (r >= 0)
                        r = ch_buf_printf(q, "))");
        }
        /* time is a DateTime, unsigned 32-bit seconds: a bound past either end is no bound, or
         * excludes everything */
        if (r >= 0 && f->has_since && f->since > 0)
                r = f->since > UINT32_MAX ?
                        ch_buf_printf(q, " AND 0") :
                        ch_buf_printf(q, " AND time >= toDateTime(%" PRId64 ")", f->since);
        if (r >= 0 && f->has_until && f->until <= UINT32_MAX)
                r = f->until <= 0 ? ch_buf_printf(q, " AND 0") :
                                    ch_buf_printf(q, " AND time < toDateTime(%" PRId64 ")", f->until);
        if (r >= 0 && f->host) {
                r = ch_buf_printf(q, " AND host = ");
                if (r >= 0)
                        r = ch_buf_quote(q, f->host);
        }
        return r;
}

/* The seconds of an hour: the rollups' time step, as 0002-rollups.sql rounds. */
#define HOUR 3600

/* What of F the rollups answer: the whole hours [from, to) of its time (to_open: no end),
 * from_edge/to_edge: whether raw rows before from / from to on are in F too. */
struct rollup_span {
        int64_t from, to;
        bool to_open;
        bool from_edge, to_edge;
};

/* Whether the rollups can answer F (some of it), and *ret: how. */
static bool rollup_span(struct ch_client *c, const struct store_filter *f, struct rollup_span *ret) {
        int64_t lo = f->has_since ? f->since : INT64_MIN, hi = f->has_until ? f->until : INT64_MAX;
        struct rollup_span s = {};

        if (!ch_client_rollups(c) || f->run_id || f->pid || f->comm || f->exe || f->host)
                return false;
        /* the odd bounds where_samples() writes as "AND 0": the raw path says it */
        if (lo > UINT32_MAX || hi <= 0)
                return false;
        s.from = lo <= 0 ? 0 : (lo + HOUR - 1) / HOUR * HOUR;
        s.from_edge = lo > 0 && lo != s.from;
        if (s.from > UINT32_MAX)
                return false;
        s.to_open = hi > UINT32_MAX;
        if (!s.to_open) {
                s.to = hi / HOUR * HOUR;
                s.to_edge = hi != s.to;
                if (s.to <= s.from)
                        return false; /* no whole hour */
        }
        *ret = s;
        return true;
}

/* Appends the rows F selects as (stack, period, h, n, sq): hits, samples, squared hits, from
 * the rollups' whole hours of SPAN and the raw rows at its edges. */
static int rollup_rows(struct ch_buf *q, const struct store_filter *f, const struct rollup_span *s) {
        int r;

        r = ch_buf_printf(q,
                          "SELECT stack, period, sum_hits AS h, sum_samples AS n, sum_squares AS sq "
                          "FROM samples_hourly WHERE resource = ");
        if (r >= 0)
                r = ch_buf_quote(q, f->resource);
        if (r >= 0 && f->unit) {
                r = ch_buf_printf(q, " AND unit = ");
                if (r >= 0)
                        r = ch_buf_quote(q, f->unit);
        }
        if (r >= 0 && f->no_idle)
                r = ch_buf_printf(q, " AND busy = 1");
        if (r >= 0 && s->from > 0)
                r = ch_buf_printf(q, " AND hour >= toDateTime(%" PRId64 ")", s->from);
        if (r >= 0 && !s->to_open)
                r = ch_buf_printf(q, " AND hour < toDateTime(%" PRId64 ")", s->to);
        for (int edge = 0; edge < 2 && r >= 0; edge++) {
                if (!(edge ? s->to_edge : s->from_edge))
                        continue;
                r = ch_buf_printf(q,
                                  " UNION ALL SELECT stack, period, hits AS h, samples AS n, "
                                  "if(hits_squared > 0, toFloat64(hits_squared), "
                                  "floor(toFloat64(hits) * hits / greatest(samples, 1))) AS sq FROM samples");
                if (r >= 0)
                        r = where_samples(q, f);
                if (r >= 0)
                        r = edge ? ch_buf_printf(q, " AND time >= toDateTime(%" PRId64 ")", s->to) :
                                   ch_buf_printf(q, " AND time < toDateTime(%" PRId64 ")", s->from);
        }
        return r;
}

/* Appends a subquery of the stack hashes of the samples F selects. */
static int selected_stacks(struct ch_client *c, struct ch_buf *q, const struct store_filter *f) {
        struct rollup_span s;
        int r;

        if (rollup_span(c, f, &s)) {
                r = ch_buf_printf(q, "(SELECT stack FROM (");
                if (r >= 0)
                        r = rollup_rows(q, f, &s);
                return r < 0 ? r : ch_buf_printf(q, "))");
        }
        r = ch_buf_printf(q, "(SELECT stack FROM samples");
        if (r >= 0)
                r = where_samples(q, f);
        return r < 0 ? r : ch_buf_printf(q, ")");
}

static int query_text(struct ch_client *c, struct ch_buf *q, char **ret, size_t *ret_len) {
        if (ch_buf_printf(q, " FORMAT TabSeparated") < 0)
                return -ENOMEM;
        return ch_query(c, q->data, NULL, 0, CH_QUERY_READONLY, ret, ret_len);
}

static int add_resource(char **fields, void *userdata) {
        return strv_extend(userdata, fields[0]) < 0 ? -ENOMEM : 0;
}

int ch_list_resources(struct ch_client *c, char ***ret) {
        _cleanup_(strv_freep) char **names = NULL;
        _cleanup_(ch_buf_done) struct ch_buf q = {};
        int r;

        /* the same set from the rollups, every sample row being rolled up: a smaller scan */
        if (ch_buf_printf(&q, "SELECT DISTINCT resource FROM %s ORDER BY resource",
                          ch_client_rollups(c) ? "samples_hourly" : "samples") < 0)
                return -ENOMEM;
        r = ch_query_rows(c, &q, 1, add_resource, &names);
        if (r == -EBADMSG && !*ch_client_error(c))
                return ch_client_set_error(c, r,
                                           "ClickHouse answered a list of resources cppctl cannot parse");
        if (r < 0)
                return r;
        if (!names) {
                names = calloc(1, sizeof *names);
                if (!names)
                        return -ENOMEM;
        }
        *ret = take_ptr(&names);
        return (int) strv_length(*ret);
}

int ch_has_call_sites(struct ch_client *c) {
        _cleanup_free_ char *out = NULL;
        int r;

        r = ch_query(c,
                     "SELECT count() FROM (SELECT hash FROM stacks WHERE arrayExists(x -> x >= 0, addresses) "
                     "OR arrayExists(x -> x > 0, lines) LIMIT 1) FORMAT TabSeparated",
                     NULL, 0, CH_QUERY_READONLY, &out, NULL);
        if (r < 0)
                return r;
        return out[0] == '1';
}

struct load {
        struct ch_client *c;
        const struct store_filter *f;
        struct sample_tree *tree;
        struct tree_load tl; /* the steps store-read.c takes too */
        uint64_t g;          /* gcd of the periods the header read so far */
        uint64_t lost;
        uint64_t n_runs, random_runs; /* runs in the header, and those sampled at random */
        /* frames: key (function, module, build id, file, line, address, inlined, unknown as
         * ClickHouse wrote them, each after its length) -> index in infos */
        struct name_table *frame_keys;
        struct ch_buf key; /* scratch for a frame's key */
        struct tree_load_label *infos;
        size_t n_infos, cap_infos;
        /* frames stored as addresses that the filter's namer names (after the fact: what the
         * hosts could not): by frame index, its chain's labels in chain_labels from FIRST, N of
         * them (0: none, the frame is its info); and the tree's modules counted as named later */
        struct frame_chain {
                uint32_t first;
                uint8_t n;
        } * chains;
        size_t cap_chains;
        struct tree_load_label *chain_labels;
        size_t n_chain_labels, cap_chain_labels;
        uint8_t *late_module; /* by tree module index: counted */
        size_t cap_late_module;
        /* modules: key "path\x1f build id" -> index in the tree's modules */
        struct name_table *module_keys;
        uint32_t *modules;
        size_t n_modules, cap_modules;
        /* stacks: hash -> index in stacks */
        struct idmap *by_hash;
        struct tree_load_stack *stacks;
        size_t n_stacks, cap_stacks;
        uint64_t cur_hash; /* the stack being read from the frames answer */
        uint64_t cur_k;    /* its frames so far */
        struct tree_load_stack cur;
        bool have_cur;
        bool skipping;         /* the frames of a copy of a stack already read */
        struct ch_names *kept; /* names `cppctl symbolize` kept in the fleet store; NULL: none */
};

static void load_done(struct load *l) {
        tree_load_done(&l->tl);
        l->frame_keys = name_table_free(l->frame_keys);
        ch_buf_done(&l->key);
        l->infos = mfree(l->infos);
        l->chains = mfree(l->chains);
        l->chain_labels = mfree(l->chain_labels);
        l->late_module = mfree(l->late_module);
        l->module_keys = name_table_free(l->module_keys);
        l->modules = mfree(l->modules);
        l->by_hash = idmap_free(l->by_hash);
        l->stacks = mfree(l->stacks);
        l->kept = ch_names_free(l->kept);
}

static int header_line(char **fields, void *userdata) {
        struct load *l = userdata;
        uint64_t period, lost, thinned;

        if (ch_parse_u64(fields[0], &period) < 0 || ch_parse_u64(fields[1], &lost) < 0 || period == 0 ||
            ch_parse_u64(fields[3], &thinned) < 0)
                return -EBADMSG;
        l->g = gcd_u64(l->g, period);
        l->lost = saturating_add(l->lost, lost);
        /* As store-read.c's load_header(): one run of fixed periods makes the profile suspect of
         * aliasing; it is "at random" only when every run was. */
        if (streq(fields[2], "fixed"))
                l->tree->info.periods_fixed = true;
        l->random_runs += streq(fields[2], "random");
        l->n_runs++;
        if (thinned > l->tree->info.thinned)
                l->tree->info.thinned = thinned;
        return 0;
}

static int load_header(struct load *l) {
        _cleanup_(ch_buf_done) struct ch_buf q = {};
        int r;

        r = ch_buf_printf(&q,
                          "SELECT argMax(period, updated), argMax(lost, updated), argMax(sampling, updated), "
                          "argMax(thinned, updated) FROM run_resources "
                          "WHERE resource = ");
        if (r >= 0)
                r = ch_buf_quote(&q, l->f->resource);
        if (r >= 0 && l->f->run_id)
                r = ch_buf_printf(&q, " AND run = %" PRId64, l->f->run_id);
        if (r >= 0 && l->f->host) {
                r = ch_buf_printf(&q, " AND host = ");
                if (r >= 0)
                        r = ch_buf_quote(&q, l->f->host);
        }
        if (r >= 0)
                r = ch_buf_printf(&q, " GROUP BY host, run");
        if (r >= 0)
                r = ch_query_rows(l->c, &q, 4, header_line, l);
        if (r < 0)
                return r;
        l->tree->info.period = l->g;
        l->tree->info.lost = l->lost;
        l->tree->info.periods_random = l->n_runs > 0 && l->random_runs == l->n_runs;
        l->tl.g = l->g ? l->g : 1;
        return 0;
}

/* The tree's module index of (PATH, BUILD_ID), added at its first frame. */
static int64_t module_of(struct load *l, const char *path, const char *build_id) {
        _cleanup_free_ char *key = NULL;
        int64_t id, i;
        int n;

        n = asprintf(&key, "%s\x1f%s", path, build_id);
        if (n < 0)
                return -ENOMEM;
        id = name_table_intern(l->module_keys, key, n);
        if (id < 0)
                return id == -EINVAL ? -EBADMSG : id;
        if ((size_t) id < l->n_modules)
                return l->modules[id];
        i = sample_tree_add_module(l->tree, path, build_id);
        if (i < 0)
                return i;
        /* ids count up from 0: a new one is the next */
        if (GROW(l->modules, l->cap_modules, (size_t) id + 1) < 0)
                return -ENOMEM;
        l->modules[id] = i;
        l->n_modules = id + 1;
        return i;
}

/* The most frames one frame stored as an address becomes (module.h's MODULE_MAX_INLINE). */
#define CH_MAX_CHAIN 16

/* Names frame FR (stored as an address, of the module with BUILD_ID) from the names the fleet
 * store keeps, else through the filter's namer:
 * labels its chain into chain_labels and sets *ret. Returns 0 (ret->n 0: not named) or a negative
 * errno. */
static int name_later(struct load *l, const struct tree_load_frame *fr, const char *build_id,
                      struct frame_chain *ret) {
        struct store_name chain[CH_MAX_CHAIN];
        bool located = fr->address >= 0;
        int64_t address = located ? fr->address : store_name_address(fr->name);
        int n, r;

        *ret = (struct frame_chain) {};
        if (!fr->unknown || !fr->module || !build_id[0] || address < 0)
                return 0;
        /* what symbolize kept first: no debug info looked for again */
        n = ch_names_find(l->kept, build_id, address, chain, CH_MAX_CHAIN);
        if (n == 0 && l->f->namer)
                n = l->f->namer->name(l->f->namer->userdata, fr->module, build_id, address, located, chain,
                                      CH_MAX_CHAIN);
        if (n <= 0)
                return n;
        if (GROW(l->chain_labels, l->cap_chain_labels, l->n_chain_labels + (size_t) n) < 0)
                return -ENOMEM;
        r = tree_load_label_chain(&l->tl, fr, located, address, chain, (size_t) n,
                                  &l->chain_labels[l->n_chain_labels]);
        if (r < 0)
                return r;
        *ret = (struct frame_chain) { .first = l->n_chain_labels, .n = (uint8_t) n };
        l->n_chain_labels += (size_t) n;
        /* named later: each distinct frame once, and its module */
        l->tree->info.frames_named_later++;
        if (fr->module_index != SAMPLE_TREE_NONE) {
                size_t had = l->cap_late_module;

                if (GROW(l->late_module, l->cap_late_module, (size_t) fr->module_index + 1) < 0)
                        return -ENOMEM;
                /* GROW leaves the new flags as realloc() found them: a module counted at random
                 * (fleet-shards saw "1 frame from 0 modules") */
                memset(l->late_module + had, 0, l->cap_late_module - had);
                if (!l->late_module[fr->module_index]) {
                        l->late_module[fr->module_index] = 1;
                        l->tree->info.modules_named_later++;
                }
        }
        return 0;
}

/* The labels of the frame in FIELDS (function, module, build id, file, line, address, inlined,
 * unknown), made at its first sight: one, or the chain a namer gave a frame stored as an
 * address, into *ret and *ret_n. The key is the fields as ClickHouse wrote them, joined: no
 * number is parsed or printed for a frame seen before (most are). */
static int frame_of(struct load *l, char **fields, const struct tree_load_label **ret, size_t *ret_n) {
        struct tree_load_frame fr = {
                .name = fields[1],
                .function = UINT32_MAX, /* no ids here: each distinct frame is demangled */
                .module = *fields[2] ? fields[2] : NULL,
                .file = *fields[4] ? fields[4] : NULL,
                .module_index = SAMPLE_TREE_NONE,
                .inlined = streq(fields[7], "1"),
                .unknown = streq(fields[8], "1"),
        };
        uint64_t line;
        int64_t id;
        int r;

        l->key.len = 0;
        for (int i = 1; i <= 8; i++) {
                size_t len = strlen(fields[i]);
                char digits[24], *d = digits + sizeof digits;

                /* each field after its length, so that no name can pass for two fields */
                *--d = ':';
                do
                        *--d = '0' + len % 10;
                while ((len /= 10) > 0);
                if (ch_buf_append(&l->key, d, digits + sizeof digits - d) < 0 ||
                    ch_buf_append(&l->key, fields[i], strlen(fields[i])) < 0)
                        return -ENOMEM;
        }
        id = name_table_intern(l->frame_keys, l->key.data, l->key.len);
        if (id < 0)
                return id == -EINVAL ? -EBADMSG : (int) id;
        if ((size_t) id < l->n_infos) {
                const struct frame_chain *c = &l->chains[id];

                *ret = c->n ? &l->chain_labels[c->first] : &l->infos[id];
                *ret_n = c->n ? c->n : 1;
                return 0;
        }
        if (ch_parse_u64(fields[5], &line) < 0 || ch_parse_i64(fields[6], &fr.address) < 0)
                return -EBADMSG;
        fr.line = (int64_t) line;
        if (fr.module) {
                int64_t m = module_of(l, fr.module, fields[3]);

                if (m < 0)
                        return (int) m;
                fr.module_index = m;
        }
        r = GROW(l->infos, l->cap_infos, (size_t) id + 1);
        if (r < 0)
                return r;
        r = GROW(l->chains, l->cap_chains, (size_t) id + 1);
        if (r < 0)
                return r;
        r = tree_load_label(&l->tl, &fr, &l->infos[id]);
        if (r >= 0)
                r = name_later(l, &fr, fields[3], &l->chains[id]);
        if (r < 0)
                return r;
        l->n_infos = id + 1;
        *ret = l->chains[id].n ? &l->chain_labels[l->chains[id].first] : &l->infos[id];
        *ret_n = l->chains[id].n ? l->chains[id].n : 1;
        return 0;
}

static int finish_stack(struct load *l) {
        if (!l->have_cur)
                return 0;
        if (GROW(l->stacks, l->cap_stacks, l->n_stacks + 1) < 0)
                return -ENOMEM;
        l->stacks[l->n_stacks] = l->cur;
        if (idmap_put(l->by_hash, l->cur_hash, l->n_stacks, &(uint64_t *) { NULL }) < 0)
                return -ENOMEM;
        l->n_stacks++;
        l->have_cur = false;
        return 0;
}

/* One frame of a stack: hash, function, module, build id, file, line, address, inlined,
 * unknown, and its position k (from 1, root first). ARRAY JOIN keeps the frames of one stacks
 * row together and in order; a hash in several rows (copies not merged away yet) is read once. */
static int frame_line(char **fields, void *userdata) {
        struct load *l = userdata;
        const struct tree_load_label *fi = NULL;
        uint64_t hash, k;
        size_t n = 0;
        int r;

        if (ch_parse_u64(fields[0], &hash) < 0 || hash == UINT64_MAX || ch_parse_u64(fields[9], &k) < 0 ||
            k == 0)
                return -EBADMSG; /* no writer makes a hash of UINT64_MAX, the maps' empty key */
        if (k == 1) {
                r = finish_stack(l);
                if (r < 0)
                        return r;
                l->skipping = idmap_get(l->by_hash, hash) != NULL; /* a copy */
                if (l->skipping)
                        return 0;
                l->cur_hash = hash;
                l->cur = (struct tree_load_stack) { .node = SAMPLE_TREE_ROOT };
                l->have_cur = true;
                l->cur_k = 0;
        }
        if (l->skipping)
                return 0;
        if (!l->have_cur || hash != l->cur_hash || k != l->cur_k + 1)
                return -EBADMSG; /* frames out of order */
        l->cur_k = k;
        r = frame_of(l, fields, &fi, &n);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = tree_load_push(&l->tl, &l->cur, &fi[i], &l->cur);
        return r;
}

/* The names `cppctl symbolize` kept for the modules of the frames stored as addresses in the
 * stacks F selects, if the fleet store has the table. */
static int load_kept_names(struct load *l) {
        _cleanup_(ch_buf_done) struct ch_buf q = {};
        int r;

        r = ch_names_exists(l->c);
        if (r <= 0)
                return r;
        /* GLOBAL IN, as load_stacks() says why: over Distributed tables too */
        r = ch_buf_printf(&q,
                          "SELECT DISTINCT arrayJoin(arrayFilter((b, u) -> u = 1, build_ids, unknown)) "
                          "FROM stacks WHERE hash GLOBAL IN ");
        if (r >= 0)
                r = selected_stacks(l->c, &q, l->f);
        if (r < 0)
                return r;
        return ch_names_load(l->c, q.data, &l->kept);
}

static int load_stacks(struct load *l) {
        _cleanup_(ch_buf_done) struct ch_buf q = {};
        int r;

        /* No GROUP BY and no ORDER BY: both cost ClickHouse more than the rows themselves (a
         * hundred thousand stacks: 1.7 s as is, 9.6 s grouped and sorted, on 18.16). GLOBAL IN:
         * over Distributed tables (schemas/README.md, "Sharding") the server asked computes the
         * set of stacks once, over every shard's samples, and sends it to each shard of stacks; a
         * plain IN there is refused (distributed_product_mode = 'deny'), or would match each
         * shard's stacks against its own samples only, losing the stacks sharded elsewhere. On
         * one server GLOBAL IN is IN. */
        r = ch_buf_printf(
                &q,
                "SELECT hash, fn, mo, bi, fi, li, ad, il, uk, k FROM stacks "
                "ARRAY JOIN functions AS fn, modules AS mo, build_ids AS bi, files AS fi, lines AS li, "
                "addresses AS ad, inlined AS il, unknown AS uk, arrayEnumerate(functions) AS k "
                "WHERE hash GLOBAL IN ");
        if (r >= 0)
                r = selected_stacks(l->c, &q, l->f);
        if (r >= 0)
                r = ch_query_rows(l->c, &q, 10, frame_line, l);
        if (r < 0)
                return r;
        return finish_stack(l);
}

/* One (stack, period) row: hits, samples and the sum of squared hits. */
static int sample_line(char **fields, void *userdata) {
        struct load *l = userdata;
        uint64_t hash, period, hits, samples, *i;
        double squares;
        char *end;
        int r;

        if (ch_parse_u64(fields[0], &hash) < 0 || hash == UINT64_MAX ||
            ch_parse_u64(fields[1], &period) < 0 || ch_parse_u64(fields[2], &hits) < 0 ||
            ch_parse_u64(fields[3], &samples) < 0 || period == 0)
                return -EBADMSG;
        errno = 0;
        squares = strtod(fields[4], &end);
        if (errno || end == fields[4] || *end || squares < 0)
                return -EBADMSG;
        i = idmap_get(l->by_hash, hash);
        if (!i)
                return ch_client_set_error(l->c, -EBADMSG,
                                           "the stack %" PRIu64 " of some samples is not in stacks", hash);
        r = tree_load_add(&l->tl, &l->stacks[*i], period, hits, samples, squares);
        if (r == -EOVERFLOW)
                return ch_client_set_error(l->c, r, "the hits of %s add up to more than 2^63",
                                           l->f->resource);
        return r < 0 ? r : 0;
}

static int load_samples(struct load *l) {
        _cleanup_(ch_buf_done) struct ch_buf q = {};
        struct rollup_span s;
        int r;

        if (rollup_span(l->c, l->f, &s)) {
                r = ch_buf_printf(&q, "SELECT stack, period, sum(h), sum(n), sum(sq) FROM (");
                if (r >= 0)
                        r = rollup_rows(&q, l->f, &s);
                if (r >= 0)
                        r = ch_buf_printf(&q, ") GROUP BY stack, period");
                return r < 0 ? r : ch_query_rows(l->c, &q, 5, sample_line, l);
        }

        /* The sum of squared hits as store-read.c sums it: a row that does not know it counts
         * each of its samples as hits / samples. */
        r = ch_buf_printf(&q,
                          "SELECT stack, period, sum(hits), sum(samples), "
                          "sum(if(hits_squared > 0, toFloat64(hits_squared), "
                          "floor(toFloat64(hits) * hits / greatest(samples, 1)))) FROM samples");
        if (r >= 0)
                r = where_samples(&q, l->f);
        if (r >= 0)
                r = ch_buf_printf(&q, " GROUP BY stack, period");
        if (r < 0)
                return r;
        return ch_query_rows(l->c, &q, 5, sample_line, l);
}

static int resource_unit(struct ch_client *c, const char *resource, char **ret) {
        _cleanup_(ch_buf_done) struct ch_buf q = {};
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        char *nl;
        int r;

        r = ch_buf_printf(&q, "SELECT unit FROM run_resources WHERE resource = ");
        if (r >= 0)
                r = ch_buf_quote(&q, resource);
        if (r >= 0)
                r = ch_buf_printf(&q, " LIMIT 1");
        if (r < 0)
                return r;
        r = query_text(c, &q, &out, &len);
        if (r < 0)
                return r;
        if (len == 0)
                return -ENOENT;
        nl = memchr(out, '\n', len);
        if (!nl)
                return -EBADMSG;
        r = ch_tsv_unescape(out, nl - out);
        if (r < 0)
                return r;
        *ret = take_ptr(&out);
        return 0;
}

int ch_load_tree_shared(struct ch_client *c, const struct store_filter *f, struct name_table *names,
                        struct sample_tree **ret) {
        _cleanup_(sample_tree_freep) struct sample_tree *tree = NULL;
        _cleanup_(load_done) struct load l = { .c = c, .f = f };
        _cleanup_free_ char *unit = NULL;
        int r;

        r = resource_unit(c, f->resource, &unit);
        if (r < 0)
                return r;
        tree = sample_tree_new(names);
        if (!tree)
                return -ENOMEM;
        r = tree_load_init(&l.tl, f, tree, 0);
        if (r < 0)
                return r;
        l.frame_keys = name_table_new();
        l.module_keys = name_table_new();
        l.by_hash = idmap_new();
        if (!l.frame_keys || !l.module_keys || !l.by_hash)
                return -ENOMEM;
        l.tree = tree;
        r = sample_tree_set_resource(tree, f->resource, unit);
        if (r < 0)
                return r;
        r = load_header(&l);
        if (r >= 0)
                r = load_kept_names(&l);
        if (r >= 0)
                r = load_stacks(&l);
        if (r >= 0)
                r = load_samples(&l);
        if (r == -EBADMSG && !*ch_client_error(c))
                ch_client_set_error(
                        c, r,
                        "ClickHouse answered rows cppctl cannot parse, or stacks that do not hold together");
        if (r < 0)
                return r;
        sample_tree_weigh(tree);
        *ret = take_ptr(&tree);
        return 0;
}
