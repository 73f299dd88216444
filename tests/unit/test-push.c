/* The pushes' requests (common/push): receiver URLs checked, Pyroscope's query, Parca's JSON and
 * the OTLP request unpacked with protobuf-c and checked field by field against a tree worked by
 * hand: three stacks, period 10. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <zlib.h>

#include "folded-tree.h"
#include "otlp.h"
#include "pprof.h"
#include "profile.pb-c.h"
#include "profiles_service.pb-c.h"
#include "push-credentials.h"
#include "push-request.h"
#include "tap.h"
#include "utf8.h"

#define P(name) Opentelemetry__Proto__Profiles__V1development__##name

static struct sample_tree *example(void) {
        struct sample_tree *t = tree_from_folded("main;f;g 2\n"
                                                 "main;g 1\n"
                                                 "main 3\n");

        if (sample_tree_set_resource(t, "cpu-time", "1 ms of CPU time") < 0)
                abort();
        t->info.period = 10;
        return t;
}

static bool endswith_tail(const char *s, const char *tail) {
        size_t n = strlen(s), k = strlen(tail);

        return n >= k && streq(s + n - k, tail);
}

static void test_url_check(void) {
        static const struct {
                const char *url, *why;
        } cases[] = {
                { "http://pyroscope:4040", NULL },
                { "https://parca.example/", NULL },
                { "http://[::1]:4318/otlp", NULL },
                { "ftp://host", "must begin with http:// or https://" },
                { "localhost:4318", "must begin with http:// or https://" },
                { "http://", "names no host" },
                { "http://:80", "names no host" },
                { "http://host/?tenant=a", "must have no query or fragment: cppd adds the receiver's path" },
                { "http://host/a b", "has a space or a character outside printable ASCII" },
                { "http://user:s3cret@host:4040",
                  "must hold no password: put it in push_credentials (an Authorization header)" },
                { "http://user@host:4040", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *why = NULL;
                int r = push_url_check(cases[i].url, &why);

                if (!cases[i].why)
                        ok(r == 0, "%s is a receiver URL", cases[i].url);
                else
                        ok(r == -EINVAL && why && streq(why, cases[i].why), "%s: %s", cases[i].url,
                           cases[i].why);
        }
}

static void test_pyroscope(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = example();
        struct push_profile p = {
                .host = "web-1",
                .unit = "nginx.service",
                .resource = "cpu-time",
                .since = 1700000000,
                .until = 1700000060,
                .tree = t,
        };
        struct push_request r = {};

        ok(push_request_build(PUSH_PYROSCOPE, "http://pyro:4040/", &p, &r) == 0, "a Pyroscope request");
        ok(streq(r.url,
                 "http://pyro:4040/ingest?name=cppd.cpu-time%7Bhost%3Dweb-1%2Cresource%3Dcpu-time%2C"
                 "unit%3Dnginx.service%7D&from=1700000000&until=1700000060&format=pprof&spyName=cppd"),
           "its URL: the app name with labels host, resource and unit, escaped; the interval; pprof");
        ok(streq(r.content_type, "application/octet-stream") && r.size > 2 && r.body[0] == 0x1f &&
                   r.body[1] == 0x8b,
           "its body: gzip, as raw bytes");
        push_request_done(&r);

        p.unit = NULL;
        ok(push_request_build(PUSH_PYROSCOPE, "https://pyro", &p, &r) == 0 &&
                   strstr(r.url, "?name=cppd.cpu-time%7Bhost%3Dweb-1%2Cresource%3Dcpu-time%7D&"),
           "no unit: no unit label");
        push_request_done(&r);
}

static void test_parca(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = example();
        struct push_profile p = {
                .host = "db\"1",
                .unit = "pg@main.service",
                .resource = "cpu-time",
                .since = 60,
                .until = 120,
                .tree = t,
        };
        struct push_request r = {};
        const char *body;

        ok(push_request_build(PUSH_PARCA, "http://parca:7070", &p, &r) == 0, "a Parca request");
        body = (const char *) r.body;
        ok(streq(r.url, "http://parca:7070/api/profiles/writeraw") &&
                   streq(r.content_type, "application/json"),
           "POST /api/profiles/writeraw, JSON");
        ok(r.size == strlen(body) &&
                   startswith(
                           body,
                           "{\"series\":[{\"labels\":{\"labels\":[{\"name\":\"__name__\",\"value\":\"cpu_time\"},"
                           "{\"name\":\"host\",\"value\":\"db\\\"1\"},"
                           "{\"name\":\"resource\",\"value\":\"cpu-time\"},"
                           "{\"name\":\"unit\",\"value\":\"pg@main.service\"}]},"
                           "\"samples\":[{\"rawProfile\":\"H4sI"),
           "labels __name__ (a metric name), host (escaped), resource, unit; then the gzipped pprof in base64");
        ok(endswith_tail(body, "\"}]}],\"normalized\":true}") &&
                   (strlen(strstr(body, "H4sI")) - strlen("\"}]}],\"normalized\":true}")) % 4 == 0,
           "closed, normalized, base64 padded to whole quads");
        push_request_done(&r);
}

static void test_otlp(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = example();
        struct otlp_meta meta = {
                .host = "web-1", .unit = "nginx.service", .time_nanos = 5, .duration_nanos = 7
        };
        _cleanup_free_ uint8_t *data = NULL;
        Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest *req;
        P(ProfilesDictionary) * d;
        P(Profile) * prof;
        Opentelemetry__Proto__Resource__V1__Resource *res;
        size_t size = 0;
        char stacks[256] = "";

        ok(otlp_encode(t, SAMPLE_TREE_ROOT, &meta, &data, &size) == 0, "an OTLP request");
        req = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
                NULL, size, data);
        if (!ok(req && req->n_resource_profiles == 1 && req->dictionary,
                "unpacks: one ResourceProfiles, a dictionary"))
                return;
        d = req->dictionary;
        ok(d->n_string_table > 0 && streq(d->string_table[0], "") && d->n_mapping_table >= 1 &&
                   d->n_function_table == 4 && d->n_location_table == 4 && d->n_stack_table == 4 &&
                   d->n_attribute_table == 1 && d->n_link_table == 1 && d->location_table[0]->n_lines == 0 &&
                   d->stack_table[0]->n_location_indices == 0,
           "each table starts with its zero entry; functions and locations main, f, g; stacks: three");
        res = req->resource_profiles[0]->resource;
        ok(res && res->n_attributes == 2 && streq(res->attributes[0]->key, "host.name") &&
                   streq(res->attributes[0]->value->string_value, "web-1") &&
                   streq(res->attributes[1]->key, "service.name") &&
                   streq(res->attributes[1]->value->string_value, "nginx.service"),
           "resource attributes host.name and service.name");
        prof = req->resource_profiles[0]->scope_profiles[0]->profiles[0];
        ok(streq(d->string_table[prof->sample_type->type_strindex], "cpu-time") &&
                   streq(d->string_table[prof->sample_type->unit_strindex], "milliseconds") &&
                   prof->period == 10 && prof->time_unix_nano == 5 && prof->duration_nano == 7,
           "sample type cpu-time in milliseconds, period 10, the time given");
        /* Each sample as "leaf<-...=value", in the tree's stack order (names sorted). */
        for (size_t i = 0; i < prof->n_samples; i++) {
                const P(Stack) *s = d->stack_table[prof->samples[i]->stack_index];
                char *end = stacks + strlen(stacks);

                for (size_t j = 0; j < s->n_location_indices; j++) {
                        const P(Location) *l = d->location_table[s->location_indices[j]];
                        const P(Function) *f = d->function_table[l->lines[0]->function_index];

                        end += sprintf(end, "%s%s", j ? "<-" : "", d->string_table[f->name_strindex]);
                }
                sprintf(end, "=%" PRId64 " ", prof->samples[i]->values[0]);
        }
        ok(streq(stacks, "main=30 g<-f<-main=20 g<-main=10 "), "stacks leaf first, values hits x period: %s",
           stacks);
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
                req, NULL);
}

/* A tree of two units, as the daemon loads one (store_filter.unit_roots): each unit's profile is
 * its subtree, as if it were the whole tree. */
static void test_below(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *all = tree_from_folded("a.service;main;f 2\n"
                                                                                "b.service;main 1\n"
                                                                                "a.service;main 1\n");
        _cleanup_(sample_tree_freep) struct sample_tree *a = tree_from_folded("main;f 2\n"
                                                                              "main 1\n");
        _cleanup_free_ uint8_t *p1 = NULL, *p2 = NULL, *o1 = NULL, *o2 = NULL;
        size_t n1 = 0, n2 = 0, m1 = 0, m2 = 0;
        const struct otlp_meta meta = { .host = "h" };
        uint32_t unit_a = all->nodes[SAMPLE_TREE_ROOT].first_child;

        if (streq(sample_tree_name(all, all->nodes[unit_a].name), "b.service"))
                unit_a = all->nodes[unit_a].next_sibling;
        if (sample_tree_set_resource(all, "cpu-time", "1 ms of CPU time") < 0 ||
            sample_tree_set_resource(a, "cpu-time", "1 ms of CPU time") < 0)
                abort();
        all->info.period = a->info.period = 10;
        ok(pprof_encode_below(all, unit_a, 60, 30, &p1, &n1) == 0 &&
                   pprof_encode(&a, 1, 60, 30, &p2, &n2) == 0 && n1 == n2 && memcmp(p1, p2, n1) == 0,
           "pprof below a unit's node: the bytes of that unit's own tree");
        ok(otlp_encode(all, unit_a, &meta, &o1, &m1) == 0 &&
                   otlp_encode(a, SAMPLE_TREE_ROOT, &meta, &o2, &m2) == 0 && m1 == m2 &&
                   memcmp(o1, o2, m1) == 0,
           "OTLP below a unit's node: the bytes of that unit's own tree");
}

static struct push_credentials credentials;

static int parse_credentials(const char *text, unsigned *line, char *error) {
        return push_credentials_parse(text, strlen(text), &credentials, line, error, 256);
}

static void test_credentials(void) {
        struct push_credentials *c = &credentials;
        char error[256] = "";
        unsigned line = 0;
        const char *text = "# comment\n"
                           "\n"
                           "pyroscope Authorization: Basic dXNlcjp0b2tlbg==\n"
                           "  pyroscope   X-Scope-OrgID: team-a  \r\n"
                           "otlp api-key:s3cret\n";

        ok(parse_credentials(text, &line, error) == 0, "a credentials file: %s", error);
        ok(c->n_headers[PUSH_PYROSCOPE] == 2 && c->n_headers[PUSH_PARCA] == 0 &&
                   c->n_headers[PUSH_OTLP] == 1 &&
                   streq(c->headers[PUSH_PYROSCOPE][0], "Authorization: Basic dXNlcjp0b2tlbg==") &&
                   streq(c->headers[PUSH_PYROSCOPE][1], "X-Scope-OrgID: team-a") &&
                   streq(c->headers[PUSH_OTLP][0], "api-key:s3cret"),
           "headers by receiver, blanks around the line dropped");
        ok(parse_credentials("parca\nparca Authorization Bearer s3cret\n", &line, error) == -EBADMSG &&
                   line == 1 && streq(error, "expected a header: Name: value"),
           "a kind without a header: line 1, %s", error);
        ok(parse_credentials("otlp X: a\njaeger X: s3cret\n", &line, error) == -EBADMSG && line == 2 &&
                   streq(error, "expected pyroscope, parca or otlp, then a header") &&
                   !strstr(error, "s3cret"),
           "an unknown receiver: line 2, the value not quoted");
        ok(parse_credentials("otlp X-Key: s3\001cret\n", &line, error) == -EBADMSG &&
                   streq(error, "a control character in the value of X-Key"),
           "a control character: %s", error);
        ok(parse_credentials("otlp A: 1\notlp A: 2\notlp A: 3\notlp A: 4\notlp A: 5\notlp A: 6\notlp A: 7\n"
                             "otlp A: 8\notlp A: 9\n",
                             &line, error) == -EBADMSG &&
                   line == 9 && strstr(error, "more than 8 headers for otlp"),
           "at most 8 headers a receiver: %s", error);
}

/* The unpacked Profile of a gzipped pprof, or NULL. */
static Perftools__Profiles__Profile *pprof_unpack(const uint8_t *data, size_t size) {
        _cleanup_free_ uint8_t *out = malloc(1 << 20);
        z_stream z = { .next_in = (uint8_t *) data, .avail_in = (unsigned) size };

        if (!out || inflateInit2(&z, 15 + 16) != Z_OK)
                return NULL;
        z.next_out = out;
        z.avail_out = 1 << 20;
        if (inflate(&z, Z_FINISH) != Z_STREAM_END) {
                inflateEnd(&z);
                return NULL;
        }
        inflateEnd(&z);
        return perftools__profiles__profile__unpack(NULL, z.total_out, out);
}

/* Names that are not UTF-8 (a symbol, a perf-PID.map line, a folded file, a host name may hold
 * any bytes): every protobuf string of every push body, and Parca's JSON, well-formed, the bytes
 * U+FFFD. */
static void test_not_utf8(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;bad\xff\xfeutf 4\n"
                                                                              "main;ok 3\n");
        const struct otlp_meta meta = { .host = "web\xc0", .unit = "a\xed\xa0\x80.service" };
        struct push_profile p = {
                .host = "web\xc0", .unit = "a\xed\xa0\x80.service", .resource = "cpu-time", .tree = t
        };
        Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest *req;
        Perftools__Profiles__Profile *prof;
        _cleanup_free_ uint8_t *data = NULL;
        struct push_request r = {};
        bool valid = true, replaced = false;
        size_t size = 0;

        if (sample_tree_set_resource(t, "cpu-time", "1 ms of CPU time") < 0)
                abort();
        ok(push_request_build(PUSH_PYROSCOPE, "http://pyro:4040", &p, &r) == 0 &&
                   (prof = pprof_unpack(r.body, r.size)),
           "Pyroscope: the pprof body of a name that is not UTF-8 unpacks");
        push_request_done(&r);
        for (size_t i = 0; prof && i < prof->n_string_table; i++) {
                valid = valid && utf8_is_valid(prof->string_table[i]);
                replaced = replaced ||
                        streq(prof->string_table[i], "bad" UTF8_REPLACEMENT UTF8_REPLACEMENT "utf");
        }
        ok(prof && valid && replaced, "pprof: every string UTF-8, each stray byte U+FFFD");
        if (prof)
                perftools__profiles__profile__free_unpacked(prof, NULL);

        ok(push_request_build(PUSH_PARCA, "http://parca:7070", &p, &r) == 0 &&
                   strstr((const char *) r.body, "{\"name\":\"host\",\"value\":\"web\\ufffd\"}") &&
                   strstr((const char *) r.body,
                          "{\"name\":\"unit\",\"value\":\"a\\ufffd\\ufffd\\ufffd.service\"}"),
           "Parca: labels that are not UTF-8 as \\ufffd in the JSON");
        push_request_done(&r);

        ok(otlp_encode(t, SAMPLE_TREE_ROOT, &meta, &data, &size) == 0, "OTLP: a request");
        req = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
                NULL, size, data);
        if (!ok(req && req->dictionary && req->n_resource_profiles == 1, "OTLP: it unpacks"))
                return;
        valid = true;
        replaced = false;
        for (size_t i = 0; i < req->dictionary->n_string_table; i++) {
                valid = valid && utf8_is_valid(req->dictionary->string_table[i]);
                replaced = replaced ||
                        streq(req->dictionary->string_table[i],
                              "bad" UTF8_REPLACEMENT UTF8_REPLACEMENT "utf");
        }
        ok(valid && replaced, "OTLP: every string of the dictionary UTF-8, each stray byte U+FFFD");
        {
                Opentelemetry__Proto__Resource__V1__Resource *res = req->resource_profiles[0]->resource;

                ok(res && res->n_attributes == 2 &&
                           streq(res->attributes[0]->value->string_value, "web" UTF8_REPLACEMENT) &&
                           streq(res->attributes[1]->value->string_value,
                                 "a" UTF8_REPLACEMENT UTF8_REPLACEMENT UTF8_REPLACEMENT ".service"),
                   "OTLP: host.name and service.name UTF-8 too");
        }
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
                req, NULL);
}

static void test_gzip(void) {
        static const uint8_t text[] = "the same bytes, the same gzip";
        _cleanup_free_ uint8_t *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;

        ok(pprof_gzip(text, sizeof text, &a, &na) == 0 && pprof_gzip(text, sizeof text, &b, &nb) == 0 &&
                   na == nb && memcmp(a, b, na) == 0 && a[3] == 0 && a[4] == 0 && a[5] == 0 && a[6] == 0 &&
                   a[7] == 0,
           "gzip: no name, no time, the same bytes twice");
}

int main(void) {
        test_url_check();
        test_pyroscope();
        test_parca();
        test_otlp();
        test_below();
        test_credentials();
        test_not_utf8();
        test_gzip();
        return tap_done();
}
