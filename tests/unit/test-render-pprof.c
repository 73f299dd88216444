/* pprof output for two resources, gunzipped and unpacked with protobuf-c, checked field by field
 * against the example worked by hand; its bytes do not depend on the order of the input.
 * Run as `test-render-pprof --write FILE` it only writes the example to FILE, for
 * test-render-pprof-decode.sh to decode with protoc. */
#include <errno.h>
#include <zlib.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "profile.pb-c.h"
#include "render.h"
#include "tap.h"

struct bytes {
        char *data;
        size_t size;
};

static struct bytes pprof(struct sample_tree *const *trees, size_t n) {
        struct bytes b = {};
        FILE *f = open_memstream(&b.data, &b.size);

        if (!f || render_pprof(f, trees, n) < 0 || fclose(f) != 0)
                abort();
        return b;
}

/* The gunzipped and unpacked message, or NULL. */
static Perftools__Profiles__Profile *unpack(struct bytes b) {
        _cleanup_free_ uint8_t *out = NULL;
        z_stream z = {};
        size_t cap = 4096;
        int r;

        out = malloc(cap);
        if (!out || inflateInit2(&z, 15 + 16) != Z_OK)
                return NULL;
        z.next_in = (uint8_t *) b.data;
        z.avail_in = b.size;
        do {
                if (z.total_out == cap) {
                        uint8_t *bigger = realloc(out, 2 * cap);

                        if (!bigger)
                                break;
                        out = bigger;
                        cap *= 2;
                }
                z.next_out = out + z.total_out;
                z.avail_out = cap - z.total_out;
                r = inflate(&z, Z_FINISH);
        } while (r == Z_BUF_ERROR || r == Z_OK);
        inflateEnd(&z);
        if (r != Z_STREAM_END)
                return NULL;
        return perftools__profiles__profile__unpack(NULL, z.total_out, out);
}

static const char *string(const Perftools__Profiles__Profile *p, int64_t i) {
        return i >= 0 && (size_t) i < p->n_string_table ? p->string_table[i] : "(out of range)";
}

/* The function names of sample I, leaf first, joined by ';'. */
static void sample_stack(const Perftools__Profiles__Profile *p, size_t i, char *buf, size_t size) {
        const Perftools__Profiles__Sample *s = p->sample[i];

        buf[0] = '\0';
        for (size_t j = 0; j < s->n_location_id; j++) {
                const char *name = "(no such location)";

                for (size_t k = 0; k < p->n_location; k++)
                        if (p->location[k]->id == s->location_id[j] && p->location[k]->n_line == 1)
                                for (size_t l = 0; l < p->n_function; l++)
                                        if (p->function[l]->id == p->location[k]->line[0]->function_id)
                                                name = string(p, p->function[l]->name);
                snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", j ? ";" : "", name);
        }
}

static bool sample_is(const Perftools__Profiles__Profile *p, size_t i, const char *stack, int64_t cpu,
                      int64_t faults) {
        char buf[256];

        if (i >= p->n_sample)
                return false;
        sample_stack(p, i, buf, sizeof buf);
        return streq(buf, stack) && p->sample[i]->n_value == 2 && p->sample[i]->value[0] == cpu &&
                p->sample[i]->value[1] == faults;
}

static struct sample_tree *cpu_tree(const char *folded) {
        return tree_of_resource(folded, "cpu-time", "1 ms of CPU time", 10);
}

static struct sample_tree *faults_tree(const char *folded) {
        return tree_of_resource(folded, "page-faults", "1 page fault", 1);
}

static void test_two_resources(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *cpu = cpu_tree("main;f;g 2\nmain;h 1\n");
        _cleanup_(sample_tree_freep) struct sample_tree *faults = faults_tree("main;h 3\nmain;k;g 1\n");
        _cleanup_(sample_tree_freep) struct sample_tree *cpu2 = cpu_tree("main;h 1\nmain;f;g 2\n");
        _cleanup_(sample_tree_freep) struct sample_tree *faults2 = faults_tree("main;k;g 1\nmain;h 3\n");
        struct sample_tree *trees[] = { cpu, faults }, *trees2[] = { cpu2, faults2 };
        _cleanup_free_ char *data = NULL, *data2 = NULL;
        struct bytes b = pprof(trees, 2), b2 = pprof(trees2, 2);
        Perftools__Profiles__Profile *p = unpack(b);
        static const char *const strings[] = {
                "", "cpu-time", "milliseconds", "page-faults", "count", "main", "f", "g", "h", "k",
        };
        bool same = p && p->n_string_table == ELEMENTSOF(strings);

        data = b.data;
        data2 = b2.data;
        ok(b.size > 10 && memcmp(b.data, "\x1f\x8b\x08\0\0\0\0\0", 8) == 0,
           "gzip, with no name and no time in its header");
        ok(p, "gunzips and unpacks as a perftools.profiles.Profile");
        if (!p)
                return;
        for (size_t i = 0; same && i < ELEMENTSOF(strings); i++)
                same = streq(p->string_table[i], strings[i]);
        ok(same, "string table: \"\", the types and units, the functions in order of first sight");
        ok(p->n_sample_type == 2 && streq(string(p, p->sample_type[0]->type), "cpu-time") &&
                   streq(string(p, p->sample_type[0]->unit), "milliseconds") &&
                   streq(string(p, p->sample_type[1]->type), "page-faults") &&
                   streq(string(p, p->sample_type[1]->unit), "count"),
           "one sample type per resource, with its unit in pprof's words");
        ok(p->period_type && p->period_type->type == 1 && p->period_type->unit == 2 && p->period == 10,
           "period type and period: the first resource's");
        is_int(p->n_function, 5, "five functions");
        ok(p->n_location == 5 && p->location[4]->id == 5 && p->location[4]->n_line == 1 &&
                   p->location[4]->line[0]->function_id == 5 && p->function[4]->id == 5 &&
                   streq(string(p, p->function[4]->name), "k"),
           "a location per function, with the same id");
        is_int(p->n_sample, 3, "three distinct stacks");
        ok(sample_is(p, 0, "g;f;main", 20, 0), "g;f;main (leaf first): 2 hits x 10 gticks, no faults");
        ok(sample_is(p, 1, "h;main", 10, 3), "h;main: 10 gticks of CPU, 3 faults");
        ok(sample_is(p, 2, "g;k;main", 0, 1), "g;k;main: only a fault");
        ok(b.size == b2.size && memcmp(b.data, b2.data, b.size) == 0,
           "the same stacks in another order give the same bytes");
        perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_forms(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t =
                tree_of_resource(forms_folded, "real-time", "1 ms", 20);
        struct bytes b = pprof(&t, 1);
        _cleanup_free_ char *data = b.data;
        Perftools__Profiles__Profile *p = unpack(b);
        int64_t sum = 0;

        ok(p && p->n_sample == 11 && p->n_function == 10, "forms: 11 stacks, 10 functions");
        for (size_t i = 0; p && i < p->n_sample; i++)
                sum += p->sample[i]->value[0];
        is_int(sum, 614 * 20, "values add up to 614 hits of 20 gticks");
        perftools__profiles__profile__free_unpacked(p, NULL);
}

static void test_empty_and_errors(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_of_resource("", "cpu-time", "1 ms", 0);
        _cleanup_(sample_tree_freep) struct sample_tree *forms =
                tree_of_resource(forms_folded, "cpu-time", "1 ms", 1);
        _cleanup_fclose_ FILE *ro = fopen("/dev/null", "re");
        struct bytes b = pprof(&t, 1);
        _cleanup_free_ char *data = b.data;
        Perftools__Profiles__Profile *p = unpack(b);

        ok(p && p->n_sample == 0 && p->n_function == 0 && p->n_location == 0 && p->n_string_table == 3 &&
                   p->n_sample_type == 1 && p->period == 0,
           "an empty tree: a sample type, no samples");
        perftools__profiles__profile__free_unpacked(p, NULL);
        ok(ro && render_pprof(ro, &forms, 1) == -EIO, "a stream that cannot be written: -EIO");
}

static void test_empty_stack(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t =
                tree_of_resource("main 1\n", "cpu-time", "1 ms", 10);
        _cleanup_free_ char *data = NULL;
        Perftools__Profiles__Profile *p;
        struct bytes b;

        sample_tree_add(t, NULL, 0, 2); /* samples whose stack was empty */
        b = pprof(&t, 1);
        data = b.data;
        p = unpack(b);
        ok(p && p->n_sample == 2 && p->sample[0]->n_location_id == 0 && p->sample[0]->value[0] == 20 &&
                   p->sample[1]->value[0] == 10,
           "hits at the root: a sample with no locations, first");
        perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Mapping rows, worked by hand. In sample_tree_each_stack() order the binaries are first seen as
 * libc (__libc_start_main), prog (main), [vdso], helper; the leaves end 3 gticks in prog (f 1,
 * h 2), 4 in libc, 7 in [vdso], 2 in helper. pprof's main binary is prog: libc and [vdso]
 * cannot be, and helper ends fewer. So: prog 1, then libc 2, [vdso] 3, helper 4. */
static void test_mappings(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t =
                tree_of_resource("__libc_start_main;main;f 1\n"
                                 "__libc_start_main;main;h 2\n"
                                 "__libc_start_main;main;memcpy 4\n"
                                 "__libc_start_main;main;__vdso_clock_gettime 7\n"
                                 "helper_main 2\n"
                                 "unknown 1\n",
                                 "cpu-time", "1 ms", 1);
        static const struct {
                const char *name, *path, *build_id;
        } where[] = {
                { "__libc_start_main", "/usr/lib/x86_64-linux-gnu/libc.so.6", "cd34" },
                { "main", "/usr/bin/prog", "ab12" },
                { "f", "/usr/bin/prog", "ab12" },
                { "h", "/usr/bin/prog", "ab12" },
                { "memcpy", "/usr/lib/x86_64-linux-gnu/libc.so.6", "cd34" },
                { "__vdso_clock_gettime", "[vdso]", "" },
                { "helper_main", "/usr/bin/helper", "" },
        };
        static const char *const want[][2] = {
                { "/usr/bin/prog", "ab12" },
                { "/usr/lib/x86_64-linux-gnu/libc.so.6", "cd34" },
                { "[vdso]", "" },
                { "/usr/bin/helper", "" },
        };
        _cleanup_free_ char *data = NULL;
        Perftools__Profiles__Profile *p;
        bool fields = true, located = true;
        struct bytes b;

        for (size_t i = 0; i < ELEMENTSOF(where); i++) {
                int64_t m = -1;

                for (size_t k = 0; k < t->n_modules; k++)
                        if (streq(t->modules[k].path, where[i].path))
                                m = k;
                if (m < 0)
                        m = sample_tree_add_module(t, where[i].path, where[i].build_id);
                if (m < 0 || sample_tree_set_label_module(t, name_table_find(t->names, where[i].name), m))
                        abort();
        }
        if (sample_tree_set_label_raw(t, name_table_find(t->names, "h"), "_Z1hv") < 0)
                abort();
        b = pprof(&t, 1);
        data = b.data;
        p = unpack(b);
        ok(p && p->n_mapping == 4, "a mapping per binary");
        for (size_t i = 0; p && i < p->n_function; i++)
                if (streq(string(p, p->function[i]->name), "h"))
                        ok(streq(string(p, p->function[i]->system_name), "_Z1hv"),
                           "a function shown demangled keeps its stored name as system_name");
                else if (p->function[i]->system_name != 0)
                        ok(false, "%s has a system_name of its own", string(p, p->function[i]->name));
        for (size_t i = 0; p && i < p->n_mapping && i < ELEMENTSOF(want); i++) {
                const Perftools__Profiles__Mapping *m = p->mapping[i];

                fields = fields && m->id == i + 1 && streq(string(p, m->filename), want[i][0]) &&
                        streq(string(p, m->build_id), want[i][1]) && m->has_functions &&
                        m->memory_start == (i + 1) << 40 &&
                        m->memory_limit == m->memory_start + (UINT64_C(1) << 39);
        }
        ok(p && fields, "prog first, then libc, [vdso], helper in order of first sight; ranges disjoint");
        for (size_t i = 0; p && i < p->n_location; i++) {
                const Perftools__Profiles__Location *l = p->location[i];
                const char *name = string(p, p->function[l->line[0]->function_id - 1]->name);
                const char *path = NULL;

                for (size_t k = 0; k < ELEMENTSOF(where); k++)
                        if (streq(where[k].name, name))
                                path = where[k].path;
                if (!path)
                        located = located && l->mapping_id == 0;
                else
                        located = located && l->mapping_id > 0 && l->mapping_id <= p->n_mapping &&
                                streq(string(p, p->mapping[l->mapping_id - 1]->filename), path);
        }
        ok(p && p->n_location == 8 && located, "each location names its binary's mapping; 'unknown' none");
        perftools__profiles__profile__free_unpacked(p, NULL);
}

static int write_example(const char *path) {
        _cleanup_(sample_tree_freep) struct sample_tree *cpu = cpu_tree("main;f;g 2\nmain;h 1\n");
        _cleanup_(sample_tree_freep) struct sample_tree *faults = faults_tree("main;h 3\nmain;k;g 1\n");
        struct sample_tree *trees[] = { cpu, faults };
        FILE *f = fopen(path, "we");
        int r;

        if (!f)
                return 1;
        r = render_pprof(f, trees, 2);
        return fclose(f) == 0 && r == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
        if (argc == 3 && streq(argv[1], "--write"))
                return write_example(argv[2]);
        test_two_resources();
        test_forms();
        test_empty_and_errors();
        test_empty_stack();
        test_mappings();
        return tap_done();
}
