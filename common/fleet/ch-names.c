/* The fleet store's `names` table (ch-names.h): a key (build id, address) per frame named after
 * the fact, its chain in arrays root first as `stacks` keeps frames. A ReplacingMergeTree by the
 * key: copies of a key (two symbolize runs at once, before ClickHouse merges them away) hold the
 * same chain, and readers take the first they meet. */
#include "ch-names.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "name-table.h"

#define NAMES_TABLE_SQL \
        "CREATE TABLE IF NOT EXISTS names (build_id String, address Int64, functions Array(String), " \
        "files Array(String), lines Array(UInt32), inlined Array(UInt8), named DateTime DEFAULT now()) " \
        "ENGINE = ReplacingMergeTree ORDER BY (build_id, address)"

/* The most frames a kept chain has: what a namer gives (module.h's MODULE_MAX_INLINE is 16). */
#define NAMES_MAX_CHAIN 64

/* Rows of names added in one INSERT at most (bytes of body). */
#define NAMES_INSERT_BYTES (4u << 20)

struct kept_frame {
        uint32_t function, file; /* in strings; file NAME_NONE: unknown */
        uint32_t line;
        bool inlined;
};

struct ch_names {
        struct name_table *keys;    /* "build id \x1f address" -> chain index */
        struct name_table *strings; /* functions and files */
        struct names_chain {
                uint32_t first, n;
        } * chains;
        size_t n_chains, cap_chains;
        struct kept_frame *frames;
        size_t n_frames, cap_frames;
};

int ch_names_create(struct ch_client *c) {
        return ch_query(c, NAMES_TABLE_SQL, NULL, 0, 0, NULL, NULL);
}

int ch_names_exists(struct ch_client *c) {
        _cleanup_free_ char *out = NULL;
        int r;

        r = ch_query_tables(
                c,
                "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'names' "
                "FORMAT TabSeparated",
                CH_QUERY_READONLY, &out, NULL);
        if (r < 0)
                return r;
        return out[0] == '1';
}

struct ch_names *ch_names_free(struct ch_names *n) {
        if (!n)
                return NULL;
        name_table_free(n->keys);
        name_table_free(n->strings);
        free(n->chains);
        free(n->frames);
        free(n);
        return NULL;
}

/* The key of (BUILD_ID, ADDRESS) into BUF (SIZE bytes): its length, or -E2BIG. */
static int key_of(char *buf, size_t size, const char *build_id, int64_t address) {
        int n = snprintf(buf, size, "%s\x1f%" PRId64, build_id, address);

        return n < 0 || (size_t) n >= size ? -E2BIG : n;
}

/* Reading: the rows of each key come in order k = 1..n; a copy of a key read already is
 * skipped. */
struct names_load {
        struct ch_names *n;
        int64_t cur; /* the key being read, -1 before the first */
        uint64_t cur_k;
        bool skipping;
};

static void finish_chain(struct names_load *l) {
        if (l->cur >= 0 && !l->skipping)
                l->n->chains[l->cur].n = (uint32_t) (l->n->n_frames - l->n->chains[l->cur].first);
}

/* build id, address, function, file, line, inlined, k */
static int name_line(char **fields, void *userdata) {
        struct names_load *l = userdata;
        struct ch_names *n = l->n;
        char key[512];
        uint64_t line, inlined, k;
        int64_t address, id, f, file = NAME_NONE;
        int len;

        if (ch_parse_i64(fields[1], &address) < 0 || ch_parse_u64(fields[4], &line) < 0 ||
            line > UINT32_MAX || ch_parse_u64(fields[5], &inlined) < 0 || inlined > 1 ||
            ch_parse_u64(fields[6], &k) < 0 || k == 0 || k > NAMES_MAX_CHAIN)
                return -EBADMSG;
        len = key_of(key, sizeof key, fields[0], address);
        if (len < 0)
                return -EBADMSG;
        if (k == 1) {
                finish_chain(l);
                id = name_table_intern(n->keys, key, len);
                if (id < 0)
                        return id == -EINVAL ? -EBADMSG : (int) id;
                l->skipping = (size_t) id < n->n_chains; /* a copy */
                l->cur = id;
                l->cur_k = 0;
                if (l->skipping)
                        return 0;
                if (GROW(n->chains, n->cap_chains, (size_t) id + 1) < 0)
                        return -ENOMEM;
                n->chains[id] = (struct names_chain) { .first = (uint32_t) n->n_frames };
                n->n_chains = id + 1;
        } else if (l->skipping)
                return 0;
        if (l->cur < 0 || k != l->cur_k + 1 || name_table_find(n->keys, key) != (uint32_t) l->cur)
                return -EBADMSG; /* frames out of order */
        l->cur_k = k;
        f = name_table_intern(n->strings, fields[2], strlen(fields[2]));
        if (f >= 0 && fields[3][0])
                file = name_table_intern(n->strings, fields[3], strlen(fields[3]));
        if (f < 0 || file < 0)
                return (f < 0 ? f : file) == -EINVAL ? -EBADMSG : -ENOMEM;
        if (GROW(n->frames, n->cap_frames, n->n_frames + 1) < 0 || n->n_frames >= UINT32_MAX)
                return -ENOMEM;
        n->frames[n->n_frames++] = (struct kept_frame) {
                .function = (uint32_t) f,
                .file = (uint32_t) file,
                .line = (uint32_t) line,
                .inlined = inlined,
        };
        return 0;
}

int ch_names_load(struct ch_client *c, const char *build_ids_sql, struct ch_names **ret) {
        _cleanup_(ch_names_freep) struct ch_names *n = calloc(1, sizeof *n);
        _cleanup_(ch_buf_done) struct ch_buf q = {};
        struct names_load l = { .n = n, .cur = -1 };
        int r;

        if (!n)
                return -ENOMEM;
        n->keys = name_table_new();
        n->strings = name_table_new();
        if (!n->keys || !n->strings)
                return -ENOMEM;
        /* No ORDER BY: ARRAY JOIN keeps one row's frames together and in order. */
        r = ch_buf_printf(&q,
                          "SELECT build_id, address, fn, fi, li, il, k FROM names "
                          "ARRAY JOIN functions AS fn, files AS fi, lines AS li, inlined AS il, "
                          "arrayEnumerate(functions) AS k WHERE build_id GLOBAL IN (%s)",
                          build_ids_sql);
        if (r >= 0)
                r = ch_query_rows(c, &q, 7, name_line, &l);
        if (r < 0)
                return r;
        finish_chain(&l);
        *ret = take_ptr(&n);
        return 0;
}

int ch_names_find(const struct ch_names *n, const char *build_id, int64_t address, struct store_name *ret,
                  size_t max) {
        const struct names_chain *ch;
        char key[512];
        uint32_t id;

        if (!n || key_of(key, sizeof key, build_id, address) < 0)
                return 0;
        id = name_table_find(n->keys, key);
        if (id == NAME_NONE || id >= n->n_chains)
                return 0;
        ch = &n->chains[id];
        for (uint32_t j = 0; j < ch->n && j < max; j++) {
                const struct kept_frame *f = &n->frames[ch->first + j];

                ret[j] = (struct store_name) {
                        .function = name_table_get(n->strings, f->function),
                        .file = f->file != NAME_NONE ? name_table_get(n->strings, f->file) : NULL,
                        .line = f->line,
                        .inlined = f->inlined,
                };
        }
        return (int) (ch->n < max ? ch->n : max); /* the outermost levels, as namers keep them */
}

/* ---- symbolize ---- */

struct candidate {
        uint32_t module;         /* in modules: "path \x1f build id" */
        uint32_t path, build_id; /* in strings */
        int64_t address;
};

struct names_new {
        struct name_table *before;  /* keys the table names already */
        struct name_table *seen;    /* keys met among the stacks */
        struct name_table *modules; /* "path \x1f build id" of the candidates */
        struct name_table *strings;
        struct candidate *cands;
        size_t n_cands, cap_cands;
        struct ch_names_stats *stats;
};

static int before_line(char **fields, void *userdata) {
        struct names_new *s = userdata;
        char key[512];
        int64_t address, id;
        int len;

        if (ch_parse_i64(fields[1], &address) < 0 || (len = key_of(key, sizeof key, fields[0], address)) < 0)
                return -EBADMSG;
        id = name_table_intern(s->before, key, len);
        return id < 0 ? (id == -EINVAL ? -EBADMSG : (int) id) : 0;
}

/* module, build id, address, function of a frame stored as an address */
static int candidate_line(char **fields, void *userdata) {
        struct names_new *s = userdata;
        char key[512], *mkey = NULL;
        int64_t address, id, m, path, build_id;
        size_t before;
        int len;

        if (ch_parse_i64(fields[2], &address) < 0)
                return -EBADMSG;
        if (address < 0)
                address = store_name_address(fields[3]); /* located or not, the name has the offset */
        if (!fields[0][0] || fields[0][0] == '[' || address < 0)
                return 0; /* no module to look in: [unknown], [vdso], JIT code */
        len = key_of(key, sizeof key, fields[1], address);
        if (len < 0)
                return -EBADMSG;
        before = name_table_size(s->seen);
        id = name_table_intern(s->seen, key, len);
        if (id < 0)
                return id == -EINVAL ? -EBADMSG : (int) id;
        if ((size_t) id < before)
                return 0; /* met already (another function name of one address: --lines off and on) */
        if (name_table_find(s->before, key) != NAME_NONE) {
                s->stats->frames_before++;
                return 0;
        }
        len = asprintf(&mkey, "%s\x1f%s", fields[0], fields[1]);
        if (len < 0)
                return -ENOMEM;
        m = name_table_intern(s->modules, mkey, len);
        free(mkey);
        path = name_table_intern(s->strings, fields[0], strlen(fields[0]));
        build_id = name_table_intern(s->strings, fields[1], strlen(fields[1]));
        if (m < 0 || path < 0 || build_id < 0)
                return -ENOMEM;
        if (GROW(s->cands, s->cap_cands, s->n_cands + 1) < 0)
                return -ENOMEM;
        s->cands[s->n_cands++] =
                (struct candidate) { (uint32_t) m, (uint32_t) path, (uint32_t) build_id, address };
        s->stats->frames++;
        return 0;
}

/* Appends one names row: build id, address, then the chain's arrays. */
static int name_row(struct ch_buf *out, const char *build_id, int64_t address, const struct store_name *chain,
                    int n) {
        int r = ch_buf_tsv(out, build_id);

        if (r >= 0)
                r = ch_buf_printf(out, "\t%" PRId64, address);
        for (int col = 0; col < 4 && r >= 0; col++) {
                r = ch_buf_append(out, "\t[", 2);
                for (int j = 0; j < n && r >= 0; j++) {
                        if (j > 0)
                                r = ch_buf_append(out, ",", 1);
                        if (r < 0)
                                break;
                        /* strings in an array are quoted literals, whose escapes keep tabs and
                         * newlines out of the row (as ch-write.c's stack rows) */
                        if (col == 0)
                                r = ch_buf_quote(out, chain[j].function);
                        else if (col == 1)
                                r = ch_buf_quote(out, chain[j].file ?: "");
                        else
                                r = ch_buf_printf(out, "%u",
                                                  col == 2 ? chain[j].line : (unsigned) chain[j].inlined);
                }
                if (r >= 0)
                        r = ch_buf_append(out, "]", 1);
        }
        return r < 0 ? r : ch_buf_append(out, "\n", 1);
}

static int insert_names(struct ch_client *c, struct ch_buf *body) {
        int r;

        if (body->len == 0)
                return 0;
        r = ch_query(
                c,
                "INSERT INTO names (build_id, address, functions, files, lines, inlined) FORMAT TabSeparated",
                body->data, body->len, 0, NULL, NULL);
        body->len = 0;
        return r;
}

static void names_new_done(struct names_new *s) {
        name_table_free(s->before);
        name_table_free(s->seen);
        name_table_free(s->modules);
        name_table_free(s->strings);
        free(s->cands);
}

int ch_names_symbolize(struct ch_client *c, const struct store_namer *namer, struct ch_names_stats *ret) {
        _cleanup_(names_new_done) struct names_new s = { .stats = ret };
        _cleanup_(ch_buf_done) struct ch_buf q = {}, body = {};
        _cleanup_free_ bool *module_named = NULL;
        int r;

        *ret = (struct ch_names_stats) {};
        s.before = name_table_new();
        s.seen = name_table_new();
        s.modules = name_table_new();
        s.strings = name_table_new();
        if (!s.before || !s.seen || !s.modules || !s.strings)
                return -ENOMEM;
        r = ch_names_create(c);
        if (r < 0)
                return r;
        r = ch_buf_printf(&q, "SELECT DISTINCT build_id, address FROM names");
        if (r >= 0)
                r = ch_query_rows(c, &q, 2, before_line, &s);
        if (r < 0)
                return r;
        ch_buf_done(&q);
        r = ch_buf_printf(&q,
                          "SELECT DISTINCT mo, bi, ad, fn FROM stacks "
                          "ARRAY JOIN modules AS mo, build_ids AS bi, addresses AS ad, functions AS fn, "
                          "unknown AS uk WHERE uk = 1");
        if (r >= 0)
                r = ch_query_rows(c, &q, 4, candidate_line, &s);
        if (r < 0)
                return r;

        ret->modules = name_table_size(s.modules);
        module_named = calloc(ret->modules + 1, sizeof *module_named);
        if (!module_named)
                return -ENOMEM;
        for (size_t i = 0; i < s.n_cands; i++) {
                const struct candidate *k = &s.cands[i];
                const char *build_id = name_table_get(s.strings, k->build_id);
                struct store_name chain[NAMES_MAX_CHAIN];
                int n;

                n = namer->name(namer->userdata, name_table_get(s.strings, k->path), build_id, k->address,
                                true, chain, NAMES_MAX_CHAIN);
                if (n < 0)
                        return n;
                if (n == 0)
                        continue;
                r = name_row(&body, build_id, k->address, chain, n);
                if (r >= 0 && body.len >= NAMES_INSERT_BYTES)
                        r = insert_names(c, &body);
                if (r < 0)
                        return r;
                ret->frames_named++;
                if (!module_named[k->module]) {
                        module_named[k->module] = true;
                        ret->modules_named++;
                }
        }
        return insert_names(c, &body);
}
