/* Google pprof's profile format: the Profile message of schemas/profile.proto (field numbers from
 * pprof's own proto/profile.proto), packed by protobuf-c and gzipped, as `pprof` and the tools
 * that read its files expect: what `cppctl export --format pprof` writes and what the daemon
 * pushes to Pyroscope and Parca. The trees (one per resource) become:
 *
 *     string_table  "", then each tree's resource and unit, then function names, then the
 *                   stored names of those shown demangled, then the mappings' file names and
 *                   build ids, each once; bytes that are not UTF-8 replaced by U+FFFD, as a
 *                   proto3 string must be (pprof_string_table())
 *     sample_type   per tree (resource, unit): the resource (alloc-bytes and alloc-count as Go's
 *                   heap profiles name them, alloc_space and alloc_objects); the unit in pprof's words, which it scales and
 *                   prints ("milliseconds", "bytes"; "count" for the rest: pprof reads a
 *                   unit such as "1 page fault" as a number to print after the value); values
 *                   are gticks, hits times the period (a
 *                   period of 0, unknown, counts a hit as one gtick)
 *     period_type   the first tree's, with its period in gticks
 *     time_nanos,   when the profile began and how long it covers, where the caller says (a
 *     duration_nanos push of an interval); unset in exports, which cover whatever was asked
 *     mapping       one per binary (path and build id) the functions lie in, where the store
 *                   knows it (not for folded imports): the main binary first (the one not a
 *                   shared library, "[vdso]" or such whose functions end the most samples),
 *                   then in order of first sight. has_functions is set, since every location
 *                   is named, so pprof never needs the binary to name it, and the file name and
 *                   build id are there for what does (-symbolize=force, Parca's debuginfo). The
 *                   store keeps no load addresses: memory ranges are placeholders, disjoint and
 *                   never adjacent (pprof merges adjacent ones), file offsets 0
 *     function      one per distinct name, ids from 1 in order of first sight; a C++ or Rust
 *                   name shown demangled has its stored (mangled) name as system_name
 *     location      one per function, with the same id, its function's mapping and one line
 *                   naming it: we have neither addresses nor line numbers to tell two sites in
 *                   one function apart
 *     sample        one per distinct stack with self hits in any tree, location ids leaf first
 *                   (pprof's order, the reverse of ours), one value per tree, 0 where that tree
 *                   has no such stack
 *
 * The trees' stacks are merged into one sample tree over function ids, a node per distinct
 * stack, with a row of values per node; every tree is walked in sample_tree_each_stack() order and
 * the merged tree is too, so the same trees give the same bytes whatever order samples came in
 * (the gzip header carries no name and no time). The message is built in flat arrays, a few
 * allocations in all, and packed into one buffer before compression: a renderer runs once per
 * command, and a profile holds one sample per distinct stack, not per raw sample. */
#include "pprof.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "grow.h"
#include "name-table.h"
#include "profile.pb-c.h"
#include "sample-tree-walk.h"
#include "utf8.h"

/* The message under construction, in flat arrays that the Profile's pointer arrays point into. */
struct pprof {
        size_t n_trees;
        uint32_t top; /* the node every tree is walked below: the root, or a unit's (a push) */

        /* The union of the trees' stacks. */
        struct name_table *functions; /* a name's id + 1 is its function's and location's id */
        struct sample_tree *merged;   /* over function ids; self: the trees with the stack */
        int64_t *values;              /* values[node * n_trees + tree]: gticks */
        size_t cap_values;            /* nodes that values has room for */
        size_t tree;                  /* the tree being merged... */
        uint64_t gticks;              /* ...and its gticks per hit */
        uint32_t *ids;                /* scratch: one stack's function ids */

        /* The binaries, in order of first sight. */
        struct name_table *mapping_keys;           /* "BUILD_ID/PATH" -> index */
        const struct sample_tree_module **modules; /* by index; the trees' own */
        uint64_t *mapping_hits;                    /* by index: gticks of samples ending in its functions */
        size_t n_mappings, cap_mappings;
        uint32_t *fn_mapping;  /* by name id in functions: mapping index + 1; 0: none */
        const char **fn_raw;   /* by name id in functions: its stored name, if another */
        size_t cap_fn_mapping; /* of both */
        uint64_t *mapping_ids; /* by index: its Mapping id (the main binary's is 1) */
        Perftools__Profiles__Mapping *maps, **map_ptrs;

        struct name_table *strings;
        char **string_table; /* points into strings */
        Perftools__Profiles__ValueType *types, **type_ptrs;
        Perftools__Profiles__Function *fns, **fn_ptrs;
        Perftools__Profiles__Line *lines, **line_ptrs;
        Perftools__Profiles__Location *locs, **loc_ptrs;
        Perftools__Profiles__Sample *samples, **sample_ptrs;
        size_t n_samples;
        uint64_t *location_ids; /* every sample's, concatenated */
        size_t n_location_ids;
};

const char *pprof_unit(const char *unit) {
        static const struct {
                const char *prefix, *name;
        } units[] = {
                { "1 ns", "nanoseconds" },  { "1 us", "microseconds" }, { "1 \u00b5s", "microseconds" },
                { "1 ms", "milliseconds" }, { "1 s ", "seconds" },      { "1 byte", "bytes" },
        };

        for (size_t i = 0; unit && i < sizeof units / sizeof *units; i++)
                if (strncmp(unit, units[i].prefix, strlen(units[i].prefix)) == 0)
                        return units[i].name;
        return "count";
}

const char *pprof_type(const char *resource) {
        /* Go's heap profiles name them so, and pprof's -sample_index and Pyroscope know them. */
        if (resource && strcmp(resource, "alloc-bytes") == 0)
                return "alloc_space";
        if (resource && strcmp(resource, "alloc-count") == 0)
                return "alloc_objects";
        return resource;
}

static void pprof_done(struct pprof *p) {
        sample_tree_free(p->merged); /* before the names it borrows */
        name_table_free(p->functions);
        pprof_string_table_free(p->strings, p->string_table); /* before the strings it points into */
        name_table_free(p->strings);
        free(p->values);
        free(p->ids);
        free(p->types);
        free(p->type_ptrs);
        free(p->fns);
        free(p->fn_ptrs);
        free(p->lines);
        free(p->line_ptrs);
        free(p->locs);
        free(p->loc_ptrs);
        free(p->samples);
        free(p->sample_ptrs);
        free(p->location_ids);
        name_table_free(p->mapping_keys);
        free(p->modules);
        free(p->mapping_hits);
        free(p->fn_mapping);
        free(p->fn_raw);
        free(p->mapping_ids);
        free(p->maps);
        free(p->map_ptrs);
}

/* The index of module M among the mappings, adding it at its first sight. Returns it, or
 * -ENOMEM. */
static int64_t mapping_of(struct pprof *p, const struct sample_tree_module *m) {
        char key[8192];
        int64_t i;
        int n = snprintf(key, sizeof key, "%s/%s", m->build_id, m->path);

        i = name_table_intern(p->mapping_keys, key, MIN((size_t) n, sizeof key - 1));
        if (i < 0 || (size_t) i < p->n_mappings)
                return i;
        if (p->n_mappings == p->cap_mappings) {
                size_t cap = p->cap_mappings, cap_hits = p->cap_mappings; /* the two grow alike */

                if (GROW(p->modules, cap, p->n_mappings + 1) < 0 ||
                    GROW(p->mapping_hits, cap_hits, p->n_mappings + 1) < 0)
                        return -ENOMEM;
                p->cap_mappings = cap;
        }
        p->modules[p->n_mappings] = m;
        p->mapping_hits[p->n_mappings] = 0;
        return p->n_mappings++;
}

/* Notes what T says of its label NAME for function ID (a name id of p->functions): the binary
 * it lies in, and its stored name. */
static int note_function(struct pprof *p, const struct sample_tree *t, uint32_t name, uint32_t id) {
        const struct sample_tree_module *m = sample_tree_label_module(t, name);
        int64_t i;

        if (id >= p->cap_fn_mapping) {
                size_t old = p->cap_fn_mapping, cap = old, cap_raw = old; /* the two grow alike */

                if (GROW(p->fn_mapping, cap, (size_t) id + 1) < 0 ||
                    GROW(p->fn_raw, cap_raw, (size_t) id + 1) < 0)
                        return -ENOMEM;
                memset(p->fn_mapping + old, 0, (cap - old) * sizeof *p->fn_mapping);
                memset(p->fn_raw + old, 0, (cap - old) * sizeof *p->fn_raw);
                p->cap_fn_mapping = cap;
        }
        if (!p->fn_raw[id])
                p->fn_raw[id] = sample_tree_label_raw(t, name);
        if (!m || p->fn_mapping[id] != 0)
                return 0;
        i = mapping_of(p, m);
        if (i < 0)
                return (int) i;
        p->fn_mapping[id] = i + 1;
        return 0;
}

static int merge_stack(const struct sample_tree *t, uint32_t node, const uint32_t *path, size_t depth,
                       void *userdata) {
        struct pprof *p = userdata;
        int64_t id;
        int r;

        for (size_t i = 0; i < depth; i++) {
                const char *name = sample_tree_name(t, path[i]);

                id = name_table_intern(p->functions, name, strlen(name));
                if (id < 0)
                        return (int) id;
                p->ids[i] = id;
                r = note_function(p, t, path[i], id);
                if (r < 0)
                        return r;
        }
        if (depth > 0 && p->fn_mapping[p->ids[depth - 1]] != 0)
                p->mapping_hits[p->fn_mapping[p->ids[depth - 1]] - 1] += t->nodes[node].self * p->gticks;
        id = sample_tree_add(p->merged, p->ids, depth, 1);
        if (id < 0)
                return (int) id;
        if (p->merged->n_nodes > p->cap_values) {
                size_t cap = MAX(2 * p->cap_values, p->merged->n_nodes);
                int64_t *values = reallocarray(p->values, cap * p->n_trees, sizeof *values);

                if (!values)
                        return -ENOMEM;
                memset(values + p->cap_values * p->n_trees, 0,
                       (cap - p->cap_values) * p->n_trees * sizeof *values);
                p->values = values;
                p->cap_values = cap;
        }
        p->values[id * p->n_trees + p->tree] = (int64_t) (t->nodes[node].self * p->gticks);
        return 0;
}

static int merge_trees(struct pprof *p, struct sample_tree *const *trees) {
        uint32_t max_depth = 0;
        int r;

        p->functions = name_table_new();
        p->mapping_keys = name_table_new();
        if (!p->functions || !p->mapping_keys)
                return -ENOMEM;
        p->merged = sample_tree_new(p->functions);
        for (size_t i = 0; i < p->n_trees; i++)
                for (size_t j = 0; j < trees[i]->n_nodes; j++)
                        max_depth = MAX(max_depth, trees[i]->nodes[j].depth);
        p->ids = malloc((max_depth + 1) * sizeof *p->ids);
        if (!p->merged || !p->ids)
                return -ENOMEM;
        for (p->tree = 0; p->tree < p->n_trees; p->tree++) {
                p->gticks = trees[p->tree]->info.period ?: 1;
                r = sample_tree_each_stack_below(trees[p->tree], p->top, merge_stack, p);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int64_t intern(struct name_table *t, const char *s) {
        return name_table_intern(t, s ?: "", s ? strlen(s) : 0);
}

/* The string table, in the order the comment at the top gives, and the sample types. */
static int add_strings(struct pprof *p, struct sample_tree *const *trees) {
        int64_t id;

        p->strings = name_table_new();
        p->types = calloc(p->n_trees + 1, sizeof *p->types);
        p->type_ptrs = calloc(p->n_trees + 1, sizeof *p->type_ptrs);
        if (!p->strings || !p->types || !p->type_ptrs)
                return -ENOMEM;
        id = intern(p->strings, "");
        for (size_t i = 0; id >= 0 && i < p->n_trees; i++) {
                perftools__profiles__value_type__init(&p->types[i]);
                id = p->types[i].type = intern(p->strings, pprof_type(trees[i]->info.resource));
                if (id >= 0)
                        id = p->types[i].unit = intern(p->strings, pprof_unit(trees[i]->info.unit));
                p->type_ptrs[i] = &p->types[i];
        }
        for (size_t i = 0; id >= 0 && i < name_table_size(p->functions); i++)
                id = intern(p->strings, name_table_get(p->functions, i));
        for (size_t i = 0; id >= 0 && i < name_table_size(p->functions) && i < p->cap_fn_mapping; i++)
                if (p->fn_raw[i])
                        id = intern(p->strings, p->fn_raw[i]);
        for (size_t i = 0; id >= 0 && i < p->n_mappings; i++) {
                id = intern(p->strings, p->modules[i]->path);
                if (id >= 0)
                        id = intern(p->strings, p->modules[i]->build_id);
        }
        if (id < 0)
                return (int) id;

        return pprof_string_table(p->strings, &p->string_table);
}

int pprof_string_table(const struct name_table *strings, char ***ret) {
        size_t n = name_table_size(strings);
        char **table = calloc(n + 1, sizeof *table);

        if (!table)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *s = name_table_get(strings, i);

                table[i] = utf8_is_valid(s) ? (char *) s : utf8_make_valid(s);
                if (!table[i]) {
                        pprof_string_table_free(strings, table);
                        return -ENOMEM;
                }
        }
        *ret = table;
        return 0;
}

void pprof_string_table_free(const struct name_table *strings, char **table) {
        if (!table)
                return;
        /* The copies are those that do not point into STRINGS; the first NULL ends a table cut
         * short by a failure. */
        for (size_t i = 0; i < name_table_size(strings) && table[i]; i++)
                if (table[i] != name_table_get(strings, i))
                        free(table[i]);
        free(table);
}

/* Whether PATH is what pprof takes for its main binary: not a shared library (its libRx,
 * "\.so$|\.so[._][0-9]"), not "[vdso]" or another bracketed pseudo-file, not empty. */
static bool main_binary_candidate(const char *path) {
        size_t n = strlen(path);
        const char *so;

        if (n == 0 || path[0] == '[')
                return false;
        if (n >= 3 && streq(path + n - 3, ".so"))
                return false;
        for (so = strstr(path, ".so"); so; so = strstr(so + 1, ".so"))
                if ((so[3] == '.' || so[3] == '_') && isdigit((unsigned char) so[4]))
                        return false;
        return true;
}

/* The Mapping rows: the main binary (the candidate whose functions end the most gticks) gets
 * id 1, the others 2, 3... in order of first sight. Placeholder ranges: [id << 40, + 2^39). */
static int add_mappings(struct pprof *p) {
        size_t main_binary = SIZE_MAX, next = 2;

        p->maps = calloc(p->n_mappings + 1, sizeof *p->maps);
        p->map_ptrs = calloc(p->n_mappings + 1, sizeof *p->map_ptrs);
        p->mapping_ids = calloc(p->n_mappings + 1, sizeof *p->mapping_ids);
        if (!p->maps || !p->map_ptrs || !p->mapping_ids)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_mappings; i++)
                if (main_binary_candidate(p->modules[i]->path) &&
                    (main_binary == SIZE_MAX || p->mapping_hits[i] > p->mapping_hits[main_binary]))
                        main_binary = i;
        for (size_t i = 0; i < p->n_mappings; i++)
                p->mapping_ids[i] = i == main_binary ? 1 : main_binary == SIZE_MAX ? i + 1 : next++;
        for (size_t i = 0; i < p->n_mappings; i++) {
                Perftools__Profiles__Mapping *m = &p->maps[p->mapping_ids[i] - 1];

                perftools__profiles__mapping__init(m);
                m->id = p->mapping_ids[i];
                m->memory_start = m->id << 40;
                m->memory_limit = m->memory_start + (UINT64_C(1) << 39);
                m->filename = name_table_find(p->strings, p->modules[i]->path);
                m->build_id = name_table_find(p->strings, p->modules[i]->build_id);
                m->has_functions = true;
                p->map_ptrs[m->id - 1] = m;
        }
        return 0;
}

/* A function per name and a location per function, with one line naming it. */
static int add_functions(struct pprof *p) {
        size_t n = name_table_size(p->functions);

        p->fns = calloc(n + 1, sizeof *p->fns);
        p->fn_ptrs = calloc(n + 1, sizeof *p->fn_ptrs);
        p->lines = calloc(n + 1, sizeof *p->lines);
        p->line_ptrs = calloc(n + 1, sizeof *p->line_ptrs);
        p->locs = calloc(n + 1, sizeof *p->locs);
        p->loc_ptrs = calloc(n + 1, sizeof *p->loc_ptrs);
        if (!p->fns || !p->fn_ptrs || !p->lines || !p->line_ptrs || !p->locs || !p->loc_ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                perftools__profiles__function__init(&p->fns[i]);
                p->fns[i].id = i + 1;
                p->fns[i].name = name_table_find(p->strings, name_table_get(p->functions, i));
                if (i < p->cap_fn_mapping && p->fn_raw[i])
                        p->fns[i].system_name = name_table_find(p->strings, p->fn_raw[i]);
                p->fn_ptrs[i] = &p->fns[i];
                perftools__profiles__line__init(&p->lines[i]);
                p->lines[i].function_id = i + 1;
                p->line_ptrs[i] = &p->lines[i];
                perftools__profiles__location__init(&p->locs[i]);
                p->locs[i].id = i + 1;
                if (i < p->cap_fn_mapping && p->fn_mapping[i] != 0)
                        p->locs[i].mapping_id = p->mapping_ids[p->fn_mapping[i] - 1];
                p->locs[i].n_line = 1;
                p->locs[i].line = &p->line_ptrs[i];
                p->loc_ptrs[i] = &p->locs[i];
        }
        return 0;
}

static int add_sample(const struct sample_tree *t, uint32_t node, const uint32_t *path, size_t depth,
                      void *userdata) {
        struct pprof *p = userdata;
        Perftools__Profiles__Sample *s = &p->samples[p->n_samples];

        perftools__profiles__sample__init(s);
        s->n_location_id = depth;
        s->location_id = p->location_ids + p->n_location_ids;
        for (size_t i = 0; i < depth; i++)
                s->location_id[i] = path[depth - 1 - i] + 1; /* leaf first */
        s->n_value = p->n_trees;
        s->value = p->values + node * p->n_trees;
        p->sample_ptrs[p->n_samples++] = s;
        p->n_location_ids += depth;
        return 0;
}

/* A sample per merged stack, in sample_tree_each_stack() order. */
static int add_samples(struct pprof *p) {
        size_t n_stacks = 0, n_frames = 0;

        for (size_t i = 0; i < p->merged->n_nodes; i++)
                if (p->merged->nodes[i].self > 0) {
                        n_stacks++;
                        n_frames += p->merged->nodes[i].depth;
                }
        p->samples = calloc(n_stacks + 1, sizeof *p->samples);
        p->sample_ptrs = calloc(n_stacks + 1, sizeof *p->sample_ptrs);
        p->location_ids = calloc(n_frames + 1, sizeof *p->location_ids);
        if (!p->samples || !p->sample_ptrs || !p->location_ids)
                return -ENOMEM;
        return sample_tree_each_stack(p->merged, add_sample, p);
}

int pprof_gzip(const uint8_t *data, size_t size, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *out = NULL;
        z_stream z = {};
        uLong bound;
        int r;

        if (size > UINT_MAX)
                return -E2BIG; /* avail_in is an unsigned int; no pprof file is this big */
        r = deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
        if (r != Z_OK)
                return r == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
        /* deflateBound() covers the zlib wrapper; gzip's header and trailer are 12 bytes more. */
        bound = deflateBound(&z, size) + 32;
        out = malloc(bound);
        if (!out) {
                deflateEnd(&z);
                return -ENOMEM;
        }
        z.next_in = (uint8_t *) data;
        z.avail_in = (unsigned) size;
        z.next_out = out;
        z.avail_out = bound > UINT_MAX ? UINT_MAX : (unsigned) bound;
        r = deflate(&z, Z_FINISH);
        *ret_size = z.total_out;
        deflateEnd(&z);
        if (r != Z_STREAM_END)
                return -EIO;
        *ret = take_ptr(&out);
        return 0;
}

static int encode(struct sample_tree *const *trees, size_t n, uint32_t top, int64_t time_nanos,
                  int64_t duration_nanos, uint8_t **ret, size_t *ret_size) {
        _cleanup_(pprof_done) struct pprof p = { .n_trees = n, .top = top };
        Perftools__Profiles__Profile profile = PERFTOOLS__PROFILES__PROFILE__INIT;
        _cleanup_free_ uint8_t *packed = NULL;
        size_t size;
        int r;

        r = merge_trees(&p, trees);
        if (r >= 0)
                r = add_strings(&p, trees);
        if (r >= 0)
                r = add_mappings(&p);
        if (r >= 0)
                r = add_functions(&p);
        if (r >= 0)
                r = add_samples(&p);
        if (r < 0)
                return r;

        profile.n_sample_type = n;
        profile.sample_type = p.type_ptrs;
        profile.n_sample = p.n_samples;
        profile.sample = p.sample_ptrs;
        profile.n_mapping = p.n_mappings;
        profile.mapping = p.map_ptrs;
        profile.n_location = profile.n_function = name_table_size(p.functions);
        profile.location = p.loc_ptrs;
        profile.function = p.fn_ptrs;
        profile.n_string_table = name_table_size(p.strings);
        profile.string_table = p.string_table;
        profile.time_nanos = time_nanos;
        profile.duration_nanos = duration_nanos;
        if (n > 0) {
                profile.period_type = &p.types[0];
                profile.period = (int64_t) trees[0]->info.period;
        }

        size = perftools__profiles__profile__get_packed_size(&profile);
        packed = malloc(size + 1);
        if (!packed)
                return -ENOMEM;
        perftools__profiles__profile__pack(&profile, packed);
        return pprof_gzip(packed, size, ret, ret_size);
}

int pprof_encode(struct sample_tree *const *trees, size_t n, int64_t time_nanos, int64_t duration_nanos,
                 uint8_t **ret, size_t *ret_size) {
        return encode(trees, n, SAMPLE_TREE_ROOT, time_nanos, duration_nanos, ret, ret_size);
}

int pprof_encode_below(const struct sample_tree *t, uint32_t top, int64_t time_nanos, int64_t duration_nanos,
                       uint8_t **ret, size_t *ret_size) {
        struct sample_tree *tree = (struct sample_tree *) t; /* read only, as every tree here */

        return encode(&tree, 1, top, time_nanos, duration_nanos, ret, ret_size);
}

/* The gzip stream of pprof_write_index(): bytes gathered into IN, deflated into OUT as IN fills,
 * OUT written to F as it fills. Deflate with Z_NO_FLUSH decides its blocks from the bytes alone,
 * not from how they are handed in, so the stream is byte for byte pprof_gzip()'s of the same
 * bytes in one buffer. */
struct gzip_stream {
        z_stream z;
        FILE *f;
        size_t n_in;
        uint8_t in[1 << 16], out[1 << 16];
};

/* Deflates what IN holds with FLUSH (Z_NO_FLUSH, or Z_FINISH at the end) and writes what comes
 * out. Returns 0, or -EIO. */
static int gzip_deflate(struct gzip_stream *g, int flush) {
        int r;

        g->z.next_in = g->in;
        g->z.avail_in = (unsigned) g->n_in;
        do {
                g->z.next_out = g->out;
                g->z.avail_out = sizeof g->out;
                r = deflate(&g->z, flush);
                if (r == Z_STREAM_ERROR)
                        return -EIO;
                if (fwrite(g->out, 1, sizeof g->out - g->z.avail_out, g->f) != sizeof g->out - g->z.avail_out)
                        return -EIO;
        } while (g->z.avail_out == 0 || (flush == Z_FINISH && r != Z_STREAM_END));
        g->n_in = 0;
        return 0;
}

static int gzip_add(struct gzip_stream *g, const void *data, size_t size) {
        const uint8_t *p = data;

        while (size > 0) {
                size_t n = MIN(size, sizeof g->in - g->n_in);
                int r;

                memcpy(g->in + g->n_in, p, n);
                g->n_in += n;
                p += n;
                size -= n;
                if (g->n_in == sizeof g->in) {
                        r = gzip_deflate(g, Z_NO_FLUSH);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Writes V as a protobuf varint into BUF (10 bytes at most). Returns its length. */
static size_t varint(uint8_t *buf, uint64_t v) {
        size_t n = 0;

        for (; v >= 0x80; v >>= 7)
                buf[n++] = (uint8_t) (v | 0x80);
        buf[n++] = (uint8_t) v;
        return n;
}

/* What the two walks of pprof_write_indexes() share. */
struct pprof_index_walk {
        struct pprof *p;
        const struct tree_index *const *xs;
        uint32_t **function_of; /* by index, by its name id: function id + 1; 0: not seen yet */
        uint64_t *gticks;       /* by index: gticks per hit */
        size_t x;               /* the index of the first walk */
        uint64_t *location_ids; /* one stack's, leaf first */
        int64_t *values;        /* one stack's, by index */
        bool *take;             /* by index: whether it has the stack at hand */
        size_t n_samples, size; /* the samples and their bytes in the Profile, tag included */
        uint8_t *packed;        /* one sample, packed */
        size_t cap_packed;
        struct gzip_stream *gzip; /* the second walk's */

        /* The second walk: each index's stacks, walked side by side. */
        struct tree_index_stacks **stacks;
        const uint32_t **path; /* by index: its stack at hand; NULL past its last */
        size_t *depth;
        uint64_t *self;
};

/* The first walk: functions and their binaries in order of first sight, as merge_stack() finds
 * them over the trees one after the other, and each binary's gticks (and, of one index, the
 * samples' size). */
static int index_note_stack(const struct tree_index *x, const uint32_t *path, size_t depth, uint64_t self,
                            void *userdata) {
        struct pprof_index_walk *w = userdata;
        struct pprof *p = w->p;
        uint32_t *function_of = w->function_of[w->x];
        int r;

        for (size_t i = 0; i < depth; i++) {
                const char *name = sample_tree_name(x->header, path[i]);
                int64_t id;

                if (function_of[path[i]] != 0)
                        continue;
                id = name_table_intern(p->functions, name, strlen(name));
                if (id < 0)
                        return (int) id;
                function_of[path[i]] = id + 1;
                r = note_function(p, x->header, path[i], id);
                if (r < 0)
                        return r;
        }
        if (depth > 0 && p->fn_mapping[function_of[path[depth - 1]] - 1] != 0)
                p->mapping_hits[p->fn_mapping[function_of[path[depth - 1]] - 1] - 1] +=
                        self * w->gticks[w->x];
        if (p->n_trees == 1) {
                /* one index: its walk is the merged walk, whose samples' size it adds up too */
                Perftools__Profiles__Sample s;
                uint8_t len[10];
                size_t size;

                perftools__profiles__sample__init(&s);
                for (size_t i = 0; i < depth; i++) /* leaf first; id + 1 */
                        w->location_ids[i] = function_of[path[depth - 1 - i]];
                s.n_location_id = depth;
                s.location_id = w->location_ids;
                w->values[0] = (int64_t) (self * w->gticks[0]);
                s.n_value = 1;
                s.value = w->values;
                size = perftools__profiles__sample__get_packed_size(&s);
                w->size += 1 + varint(len, size) + size;
                w->n_samples++;
        }
        return 0;
}

/* Whether index A's stack at hand comes before index B's in sample_tree_each_stack() order over
 * the merged tree: names compared as strings from the root, a stack before those it prefixes. A
 * stack no longer at hand comes last. Returns <0, 0 (the same stack) or >0. */
static int stack_cmp(const struct pprof_index_walk *w, size_t a, size_t b) {
        if (!w->path[a] || !w->path[b])
                return !w->path[a] - !w->path[b];
        for (size_t i = 0; i < w->depth[a] && i < w->depth[b]; i++) {
                uint32_t fa = w->function_of[a][w->path[a][i]], fb = w->function_of[b][w->path[b][i]];

                if (fa != fb)
                        return strcmp(name_table_get(w->p->functions, fa - 1),
                                      name_table_get(w->p->functions, fb - 1));
        }
        return w->depth[a] < w->depth[b] ? -1 : w->depth[a] > w->depth[b];
}

/* Index I's next stack into the walk's path; its path NULL at the end. 0 or a negative errno. */
static int step_stack(struct pprof_index_walk *w, size_t i) {
        int r = tree_index_stacks_next(w->stacks[i], &w->path[i], &w->depth[i], &w->self[i]);

        if (r == 0)
                w->path[i] = NULL;
        return r < 0 ? r : 0;
}

/* The next stack of the merged walk, as the Sample S over W's arrays: the first stack at hand
 * with each index's value for it (0 where it has none); those indexes step on. Returns 1, 0 past
 * the last, or a negative errno. */
static int next_sample(struct pprof_index_walk *w, Perftools__Profiles__Sample *s) {
        size_t n = w->p->n_trees, first = 0;
        int r;

        for (size_t i = 1; i < n; i++)
                if (stack_cmp(w, i, first) < 0)
                        first = i;
        if (!w->path[first])
                return 0;
        perftools__profiles__sample__init(s);
        for (size_t i = 0; i < w->depth[first]; i++) /* leaf first; id + 1 */
                w->location_ids[i] = w->function_of[first][w->path[first][w->depth[first] - 1 - i]];
        s->n_location_id = w->depth[first];
        s->location_id = w->location_ids;
        s->n_value = n;
        s->value = w->values;
        for (size_t i = 0; i < n; i++) {
                w->take[i] = i == first || (w->path[i] && stack_cmp(w, i, first) == 0);
                w->values[i] = w->take[i] ? (int64_t) (w->self[i] * w->gticks[i]) : 0;
        }
        for (size_t i = 0; i < n; i++) { /* after the comparisons: a step overwrites the path */
                if (!w->take[i])
                        continue;
                r = step_stack(w, i);
                if (r < 0)
                        return r;
        }
        return 1;
}

/* Starts (or starts again) the merged walk over every index. */
static int start_samples(struct pprof_index_walk *w) {
        for (size_t i = 0; i < w->p->n_trees; i++) {
                int r;

                w->stacks[i] = tree_index_stacks_free(w->stacks[i]);
                r = tree_index_stacks_new(w->xs[i], &w->stacks[i]);
                if (r >= 0)
                        r = step_stack(w, i);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The samples' count and size in the Profile: the merged walk, each sample sized. */
static int size_samples(struct pprof_index_walk *w) {
        Perftools__Profiles__Sample s;
        uint8_t len[10];
        int r;

        r = start_samples(w);
        while (r >= 0 && (r = next_sample(w, &s)) > 0) {
                size_t size = perftools__profiles__sample__get_packed_size(&s);

                w->size += 1 + varint(len, size) + size;
                w->n_samples++;
        }
        return r;
}

/* The merged walk again: each sample packed and deflated, tag and length first. */
static int write_samples(struct pprof_index_walk *w) {
        Perftools__Profiles__Sample s;
        int r;

        r = start_samples(w);
        while (r >= 0 && (r = next_sample(w, &s)) > 0) {
                uint8_t head[11] = { 0x12 }; /* field 2 (sample), length-delimited */
                size_t size = perftools__profiles__sample__get_packed_size(&s);

                if (GROW(w->packed, w->cap_packed, size + 1) < 0)
                        return -ENOMEM;
                perftools__profiles__sample__pack(&s, w->packed);
                r = gzip_add(w->gzip, head, 1 + varint(head + 1, size));
                if (r >= 0)
                        r = gzip_add(w->gzip, w->packed, size);
        }
        return r;
}

static void index_walk_done(struct pprof_index_walk *w, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (w->function_of)
                        free(w->function_of[i]);
                if (w->stacks)
                        tree_index_stacks_free(w->stacks[i]);
        }
        free(w->function_of);
        free(w->stacks);
        free(w->path);
        free(w->depth);
        free(w->self);
        free(w->gticks);
        free(w->location_ids);
        free(w->values);
        free(w->take);
        free(w->packed);
}

int pprof_write_indexes(FILE *f, const struct tree_index *const *xs, size_t n) {
        _cleanup_(pprof_done) struct pprof p = { .n_trees = n };
        _cleanup_free_ struct gzip_stream *gzip = calloc(1, sizeof *gzip);
        _cleanup_free_ struct sample_tree **headers = calloc(n + 1, sizeof *headers);
        _cleanup_free_ uint8_t *head = NULL, *tail = NULL;
        struct pprof_index_walk w = {
                .p = &p,
                .xs = xs,
                .gzip = gzip,
                .function_of = calloc(n + 1, sizeof *w.function_of),
                .stacks = calloc(n + 1, sizeof *w.stacks),
                .path = calloc(n + 1, sizeof *w.path),
                .depth = calloc(n + 1, sizeof *w.depth),
                .self = calloc(n + 1, sizeof *w.self),
                .gticks = calloc(n + 1, sizeof *w.gticks),
                .values = calloc(n + 1, sizeof *w.values),
                .take = calloc(n + 1, sizeof *w.take),
        };
        Perftools__Profiles__Profile first = PERFTOOLS__PROFILES__PROFILE__INIT;
        Perftools__Profiles__Profile rest = PERFTOOLS__PROFILES__PROFILE__INIT;
        uint32_t max_depth = 0;
        size_t head_size, tail_size;
        int r = 0;

        p.functions = name_table_new();
        p.mapping_keys = name_table_new();
        if (n == 0 || !gzip || !headers || !w.function_of || !w.stacks || !w.path || !w.depth || !w.self ||
            !w.gticks || !w.values || !w.take || !p.functions || !p.mapping_keys) {
                r = n == 0 ? -EINVAL : -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; i < n; i++) {
                headers[i] = xs[i]->header;
                w.gticks[i] = xs[i]->header->info.period ?: 1;
                max_depth = MAX(max_depth, xs[i]->max_depth);
                w.function_of[i] = calloc((size_t) xs[i]->n_names + 1, sizeof *w.function_of[i]);
                if (!w.function_of[i]) {
                        r = -ENOMEM;
                        goto finish;
                }
        }
        w.location_ids = malloc(((size_t) max_depth + 1) * sizeof *w.location_ids);
        if (!w.location_ids) {
                r = -ENOMEM;
                goto finish;
        }
        for (w.x = 0; r >= 0 && w.x < n; w.x++)
                r = tree_index_each_stack(xs[w.x], index_note_stack, &w);
        if (r >= 0 && n > 1)
                r = size_samples(&w);
        if (r >= 0)
                r = add_strings(&p, headers);
        if (r >= 0)
                r = add_mappings(&p);
        if (r >= 0)
                r = add_functions(&p);
        if (r < 0)
                goto finish;

        /* The Profile's fields are packed in the order of their numbers: the sample types (1),
         * the samples (2), then the rest; so the samples go between the two. */
        first.n_sample_type = n;
        first.sample_type = p.type_ptrs;
        rest.n_mapping = p.n_mappings;
        rest.mapping = p.map_ptrs;
        rest.n_location = rest.n_function = name_table_size(p.functions);
        rest.location = p.loc_ptrs;
        rest.function = p.fn_ptrs;
        rest.n_string_table = name_table_size(p.strings);
        rest.string_table = p.string_table;
        rest.period_type = &p.types[0];
        rest.period = (int64_t) headers[0]->info.period;
        head_size = perftools__profiles__profile__get_packed_size(&first);
        tail_size = perftools__profiles__profile__get_packed_size(&rest);
        if (head_size + w.size + tail_size > UINT_MAX) {
                r = -E2BIG; /* as pprof_gzip() refuses it */
                goto finish;
        }
        head = malloc(head_size + 1);
        tail = malloc(tail_size + 1);
        if (!head || !tail) {
                r = -ENOMEM;
                goto finish;
        }
        perftools__profiles__profile__pack(&first, head);
        perftools__profiles__profile__pack(&rest, tail);

        r = deflateInit2(&gzip->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
        if (r != Z_OK) {
                r = r == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
                goto finish;
        }
        gzip->f = f;
        r = gzip_add(gzip, head, head_size);
        if (r >= 0)
                r = write_samples(&w);
        if (r >= 0)
                r = gzip_add(gzip, tail, tail_size);
        if (r >= 0)
                r = gzip_deflate(gzip, Z_FINISH);
        deflateEnd(&gzip->z);
        if (r >= 0 && ferror(f))
                r = -EIO;
finish:
        index_walk_done(&w, n);
        return r < 0 ? r : 0;
}

int pprof_write_index(FILE *f, const struct tree_index *x) {
        return pprof_write_indexes(f, &x, 1);
}
