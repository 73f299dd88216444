/* OTLP profiles: one sample tree as an ExportProfilesServiceRequest of opentelemetry-proto
 * v1.11.0 (schemas/otlp/, vendored as released), what an OpenTelemetry collector takes on
 * POST /v1development/profiles. The message holds one ResourceProfiles (attributes host.name and,
 * for the samples of a systemd unit, service.name = the unit), one ScopeProfiles (scope "cppd")
 * and one Profile, since OTLP gives a Profile one sample type and a push sends one resource at a
 * time. The ProfilesDictionary, shared by the request, holds:
 *
 *     string_table    "" first (the format requires it), then every name in order of first use,
 *                     made well-formed UTF-8 as pprof.c makes its own (pprof_string_table())
 *     mapping_table   the zero Mapping, then one per binary the functions lie in (its path; the
 *                     store keeps no load addresses, so the ranges are left 0)
 *     function_table  the zero Function, then one per distinct name, with its stored name as
 *                     system name where it is shown demangled
 *     location_table  the zero Location, then one per function with one Line naming it and its
 *                     binary's mapping: as in pprof.c, we have no addresses or lines to tell two
 *                     sites in a function apart
 *     stack_table     the zero Stack, then one per distinct stack with self hits, leaf first
 *     attribute_table, link_table   the zero entry each, which the format requires present
 *
 * Each sample names its stack and has one value: its hits times the period, in gticks, the
 * value pprof.c writes for the same stack. The stacks are those below a node of the tree (its
 * root, or a unit's in a tree of all units) in sample_tree_each_stack() order, so a
 * tree gives the same bytes whatever order its samples came in. The message lives in flat
 * arrays sized from the tree before the walk (stacks and frames counted, names bounded by the
 * tree's name table), a few allocations per push. */
#include "otlp.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "name-table.h"
#include "pprof.h"
#include "profiles_service.pb-c.h"
#include "sample-tree-walk.h"
#include "utf8.h"

#ifndef CPPD_VERSION
#define CPPD_VERSION "unknown"
#endif

/* The generated names are long: P(Profile) is the profiles package's Profile. */
#define P(name) Opentelemetry__Proto__Profiles__V1development__##name
#define P_INIT(name) opentelemetry__proto__profiles__v1development__##name##__init

struct otlp {
        const struct sample_tree *tree;
        uint32_t top;    /* the node the profile's stacks are below */
        uint64_t gticks; /* per hit */
        struct name_table *strings;
        int64_t error; /* the first failed intern's, ending the walk */

        uint32_t *location_of; /* by the tree's name id: its location's index; 0: none yet */
        size_t n_names;
        struct name_table *binaries; /* path -> mapping index - 1 */

        P(Mapping) * maps, **map_ptrs;
        size_t n_maps, cap_maps;
        P(Function) * fns, **fn_ptrs;
        P(Line) * lines, **line_ptrs;
        P(Location) * locs, **loc_ptrs;
        size_t n_locs, cap_locs;
        P(Stack) * stacks, **stack_ptrs;
        int32_t *location_indices; /* every stack's, concatenated */
        size_t n_stacks, n_location_indices;
        P(Sample) * samples, **sample_ptrs;
        int64_t *values;
        size_t n_samples;
};

static void otlp_done(struct otlp *o) {
        name_table_free(o->strings);
        name_table_free(o->binaries);
        free(o->location_of);
        free(o->maps);
        free(o->map_ptrs);
        free(o->fns);
        free(o->fn_ptrs);
        free(o->lines);
        free(o->line_ptrs);
        free(o->locs);
        free(o->loc_ptrs);
        free(o->stacks);
        free(o->stack_ptrs);
        free(o->location_indices);
        free(o->samples);
        free(o->sample_ptrs);
        free(o->values);
}

/* S's index in the string table; a failure is kept in o->error (the index is then 0). */
static int32_t string_index(struct otlp *o, const char *s) {
        int64_t id;

        if (o->error < 0)
                return 0;
        id = name_table_intern(o->strings, s ?: "", s ? strlen(s) : 0);
        if (id < 0 || id > INT32_MAX) {
                o->error = id < 0 ? id : -E2BIG;
                return 0;
        }
        return (int32_t) id;
}

/* The mapping index of module M, adding it at its first sight; 0 for none. */
static int32_t mapping_index(struct otlp *o, const struct sample_tree_module *m) {
        int64_t i;

        if (!m || o->error < 0)
                return 0;
        i = name_table_intern(o->binaries, m->path, strlen(m->path));
        if (i < 0) {
                o->error = i;
                return 0;
        }
        if ((size_t) i + 1 == o->n_maps) {
                P(Mapping) *map = &o->maps[o->n_maps];

                assert(o->n_maps < o->cap_maps); /* one per module of the tree, at most */
                P_INIT(mapping)(map);
                map->filename_strindex = string_index(o, m->path);
                o->map_ptrs[o->n_maps++] = map;
        }
        return (int32_t) i + 1;
}

/* The location index of the tree's label NAME, adding its function and location at first use. */
static int32_t location_index(struct otlp *o, uint32_t name) {
        const char *raw;
        size_t i;

        if (name < o->n_names && o->location_of[name] != 0)
                return (int32_t) o->location_of[name];
        assert(name < o->n_names && o->n_locs < o->cap_locs);
        i = o->n_locs++;
        P_INIT(function)(&o->fns[i]);
        o->fns[i].name_strindex = string_index(o, sample_tree_name(o->tree, name));
        raw = sample_tree_label_raw(o->tree, name);
        if (raw)
                o->fns[i].system_name_strindex = string_index(o, raw);
        o->fn_ptrs[i] = &o->fns[i];
        P_INIT(line)(&o->lines[i]);
        o->lines[i].function_index = (int32_t) i;
        o->line_ptrs[i] = &o->lines[i];
        P_INIT(location)(&o->locs[i]);
        o->locs[i].mapping_index = mapping_index(o, sample_tree_label_module(o->tree, name));
        o->locs[i].n_lines = 1;
        o->locs[i].lines = &o->line_ptrs[i];
        o->loc_ptrs[i] = &o->locs[i];
        o->location_of[name] = (uint32_t) i;
        return (int32_t) i;
}

static int add_stack(const struct sample_tree *t, uint32_t node, const uint32_t *path, size_t depth,
                     void *userdata) {
        struct otlp *o = userdata;
        P(Stack) *stack = &o->stacks[o->n_stacks];
        P(Sample) *sample = &o->samples[o->n_samples];

        P_INIT(stack)(stack);
        stack->n_location_indices = depth;
        stack->location_indices = o->location_indices + o->n_location_indices;
        for (size_t i = 0; i < depth; i++)
                stack->location_indices[i] = location_index(o, path[depth - 1 - i]); /* leaf first */
        if (o->error < 0)
                return (int) o->error;
        o->n_location_indices += depth;
        o->stack_ptrs[o->n_stacks] = stack;

        P_INIT(sample)(sample);
        sample->stack_index = (int32_t) o->n_stacks++;
        sample->n_values = 1;
        sample->values = &o->values[o->n_samples];
        sample->values[0] = (int64_t) (t->nodes[node].self * o->gticks);
        o->sample_ptrs[o->n_samples++] = sample;
        return 0;
}

/* Sizes the arrays from the tree and puts each table's zero entry first. */
static int allocate(struct otlp *o) {
        const struct sample_tree *t = o->tree;
        size_t n_stacks = 1, n_frames = 0;

        for (size_t i = 0; i < t->n_nodes; i++)
                if (t->nodes[i].self > 0) {
                        n_stacks++;
                        n_frames += t->nodes[i].depth;
                }
        o->n_names = name_table_size(t->names);
        o->cap_locs = o->n_names + 1;
        o->cap_maps = t->n_modules + 1;
        o->strings = name_table_new();
        o->binaries = name_table_new();
        o->location_of = calloc(o->n_names + 1, sizeof *o->location_of);
        o->maps = calloc(o->cap_maps, sizeof *o->maps);
        o->map_ptrs = calloc(o->cap_maps, sizeof *o->map_ptrs);
        o->fns = calloc(o->cap_locs, sizeof *o->fns);
        o->fn_ptrs = calloc(o->cap_locs, sizeof *o->fn_ptrs);
        o->lines = calloc(o->cap_locs, sizeof *o->lines);
        o->line_ptrs = calloc(o->cap_locs, sizeof *o->line_ptrs);
        o->locs = calloc(o->cap_locs, sizeof *o->locs);
        o->loc_ptrs = calloc(o->cap_locs, sizeof *o->loc_ptrs);
        o->stacks = calloc(n_stacks, sizeof *o->stacks);
        o->stack_ptrs = calloc(n_stacks, sizeof *o->stack_ptrs);
        o->location_indices = calloc(n_frames + 1, sizeof *o->location_indices);
        o->samples = calloc(n_stacks, sizeof *o->samples);
        o->sample_ptrs = calloc(n_stacks, sizeof *o->sample_ptrs);
        o->values = calloc(n_stacks, sizeof *o->values);
        if (!o->strings || !o->binaries || !o->location_of || !o->maps || !o->map_ptrs || !o->fns ||
            !o->fn_ptrs || !o->lines || !o->line_ptrs || !o->locs || !o->loc_ptrs || !o->stacks ||
            !o->stack_ptrs || !o->location_indices || !o->samples || !o->sample_ptrs || !o->values)
                return -ENOMEM;
        if (n_stacks > INT32_MAX || o->cap_locs > INT32_MAX)
                return -E2BIG; /* indexes are int32 */

        (void) string_index(o, "");
        P_INIT(mapping)(&o->maps[0]);
        o->map_ptrs[0] = &o->maps[0];
        o->n_maps = 1;
        P_INIT(function)(&o->fns[0]);
        o->fn_ptrs[0] = &o->fns[0];
        P_INIT(location)(&o->locs[0]);
        o->loc_ptrs[0] = &o->locs[0];
        o->n_locs = 1;
        P_INIT(stack)(&o->stacks[0]);
        o->stack_ptrs[0] = &o->stacks[0];
        o->n_stacks = 1;
        return (int) o->error;
}

static void key_value(Opentelemetry__Proto__Common__V1__KeyValue *kv,
                      Opentelemetry__Proto__Common__V1__AnyValue *v, const char *key, const char *value) {
        opentelemetry__proto__common__v1__key_value__init(kv);
        opentelemetry__proto__common__v1__any_value__init(v);
        kv->key = (char *) key;
        kv->value = v;
        v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        v->string_value = (char *) value;
}

int otlp_encode(const struct sample_tree *t, uint32_t top, const struct otlp_meta *meta, uint8_t **ret,
                size_t *ret_size) {
        _cleanup_(otlp_done) struct otlp o = { .tree = t, .top = top, .gticks = t->info.period ?: 1 };
        char **string_table = NULL;
        _cleanup_free_ char *host = NULL, *unit = NULL;
        _cleanup_free_ uint8_t *packed = NULL;
        Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest request =
                OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
        P(ProfilesDictionary)
        dictionary = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
        P(ResourceProfiles) rp = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__RESOURCE_PROFILES__INIT;
        P(ResourceProfiles) *rp_ptr = &rp;
        P(ScopeProfiles) sp = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SCOPE_PROFILES__INIT;
        P(ScopeProfiles) *sp_ptr = &sp;
        P(Profile) profile = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILE__INIT;
        P(Profile) *profile_ptr = &profile;
        P(ValueType) sample_type = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT;
        P(KeyValueAndUnit)
        no_attribute = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__KEY_VALUE_AND_UNIT__INIT;
        P(KeyValueAndUnit) *no_attribute_ptr = &no_attribute;
        P(Link) no_link = OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT;
        P(Link) *no_link_ptr = &no_link;
        Opentelemetry__Proto__Resource__V1__Resource resource =
                OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
        Opentelemetry__Proto__Common__V1__InstrumentationScope scope =
                OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
        Opentelemetry__Proto__Common__V1__KeyValue attributes[2], *attribute_ptrs[2];
        Opentelemetry__Proto__Common__V1__AnyValue attribute_values[2];
        size_t n_attributes = 0, size;
        int r;

        r = allocate(&o);
        if (r < 0)
                return r;
        sample_type.type_strindex = string_index(&o, t->info.resource);
        sample_type.unit_strindex = string_index(&o, pprof_unit(t->info.unit));
        r = sample_tree_each_stack_below(t, top, add_stack, &o);
        if (r < 0)
                return r;
        if (o.error < 0)
                return (int) o.error;

        /* The attributes' values are protobuf strings too. */
        if (meta->host && !(host = utf8_make_valid(meta->host)))
                return -ENOMEM;
        if (meta->unit && !(unit = utf8_make_valid(meta->unit)))
                return -ENOMEM;
        r = pprof_string_table(o.strings, &string_table);
        if (r < 0)
                return r;
        dictionary.n_string_table = name_table_size(o.strings);
        dictionary.string_table = string_table;
        dictionary.n_mapping_table = o.n_maps;
        dictionary.mapping_table = o.map_ptrs;
        dictionary.n_function_table = o.n_locs;
        dictionary.function_table = o.fn_ptrs;
        dictionary.n_location_table = o.n_locs;
        dictionary.location_table = o.loc_ptrs;
        dictionary.n_stack_table = o.n_stacks;
        dictionary.stack_table = o.stack_ptrs;
        dictionary.n_attribute_table = 1;
        dictionary.attribute_table = &no_attribute_ptr;
        dictionary.n_link_table = 1;
        dictionary.link_table = &no_link_ptr;

        profile.sample_type = &sample_type;
        profile.period_type = &sample_type;
        profile.period = (int64_t) o.gticks;
        profile.n_samples = o.n_samples;
        profile.samples = o.sample_ptrs;
        profile.time_unix_nano = meta->time_nanos;
        profile.duration_nano = meta->duration_nanos;

        if (host) {
                key_value(&attributes[n_attributes], &attribute_values[n_attributes], "host.name", host);
                n_attributes++;
        }
        if (unit) {
                key_value(&attributes[n_attributes], &attribute_values[n_attributes], "service.name", unit);
                n_attributes++;
        }
        for (size_t i = 0; i < n_attributes; i++)
                attribute_ptrs[i] = &attributes[i];
        resource.n_attributes = n_attributes;
        resource.attributes = attribute_ptrs;
        scope.name = (char *) "cppd";
        scope.version = (char *) CPPD_VERSION;
        sp.scope = &scope;
        sp.n_profiles = 1;
        sp.profiles = &profile_ptr;
        rp.resource = &resource;
        rp.n_scope_profiles = 1;
        rp.scope_profiles = &sp_ptr;
        request.n_resource_profiles = 1;
        request.resource_profiles = &rp_ptr;
        request.dictionary = &dictionary;

        size = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(
                &request);
        packed = malloc(size + 1);
        if (packed)
                opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(
                        &request, packed);
        pprof_string_table_free(o.strings, string_table);
        if (!packed)
                return -ENOMEM;
        *ret = take_ptr(&packed);
        *ret_size = size;
        return 0;
}
