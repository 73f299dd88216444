/* What each fleet profiler takes, found in its own sources (read 2026-11; cite them when
 * changing a request):
 *
 *   Pyroscope  grafana/pyroscope at 3fe6a457a320, pkg/ingester/pyroscope/ingest_handler.go:
 *              POST /ingest reads name (an app name with {labels}), from and until (unix
 *              seconds), spyName; readInputRawDataFromRequest() takes format=pprof as a raw
 *              body, and pkg/og/convert/pprof/profile.go hands it to pprof.RawFromBytes, which
 *              takes gzipped and plain pprof alike. (A multipart/form-data body with a "profile"
 *              field also works; a raw body is the simpler of the two.)
 *   Parca      parca-dev/parca at 3b5647cd9e2a, proto/parca/profilestore/v1alpha1/
 *              profilestore.proto: WriteRaw is mapped by grpc-gateway to POST
 *              /profiles/writeraw with body "*", and pkg/server/server.go mounts that gateway
 *              under /api (StripPrefix). The gateway reads protobuf's JSON mapping: bytes are
 *              base64, field names lowerCamelCase (rawProfile) or as declared. Parca's
 *              gRPC and grpc-web endpoints want HTTP/2 framing or its envelope; JSON needs
 *              neither.
 *   OTLP       open-telemetry/opentelemetry-proto v1.11.0, opentelemetry/proto/collector/
 *              profiles/v1development/profiles_service_http.yaml: POST
 *              /v1development/profiles, and the OTLP/HTTP specification's binary encoding,
 *              Content-Type application/x-protobuf.
 *
 * A request is built whole in memory: a profile holds one sample per distinct stack, some
 * kilobytes to a few megabytes, and the receivers want a Content-Length. */
#include "push-request.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "json-string.h"
#include "otlp.h"
#include "pprof.h"

const char *push_kind_name(enum push_kind k) {
        static const char *const names[_PUSH_KIND_MAX] = {
                [PUSH_PYROSCOPE] = "pyroscope",
                [PUSH_PARCA] = "parca",
                [PUSH_OTLP] = "otlp",
        };

        return k < _PUSH_KIND_MAX ? names[k] : NULL;
}

/* What is wrong with URL, or NULL. */
static const char *url_problem(const char *url) {
        const char *host;

        if (strlen(url) >= PUSH_URL_MAX)
                return "longer than 1023 bytes";
        if (startswith(url, "http://"))
                host = url + 7;
        else if (startswith(url, "https://"))
                host = url + 8;
        else
                return "must begin with http:// or https://";
        if (!*host || *host == '/' || *host == ':')
                return "names no host";
        if (strpbrk(url, "?#"))
                return "must have no query or fragment: cppd adds the receiver's path";
        if (memchr(host, '@', strcspn(host, "/")) && memchr(host, ':', strcspn(host, "@/")))
                return "must hold no password: put it in push_credentials (an Authorization header)";
        for (const char *c = url; *c; c++)
                if ((unsigned char) *c <= ' ' || (unsigned char) *c >= 0x7f)
                        return "has a space or a character outside printable ASCII";
        return NULL;
}

int push_url_check(const char *url, const char **ret_why) {
        const char *why = url_problem(url);

        if (!why)
                return 0;
        *ret_why = why;
        return -EINVAL;
}

/* Percent-encodes S onto F: all but RFC 3986's unreserved characters. */
static void write_query_value(FILE *f, const char *s) {
        for (; *s; s++)
                if (isalnum((unsigned char) *s) || strchr("-._~", *s))
                        fputc(*s, f);
                else
                        fprintf(f, "%%%02X", (unsigned char) *s);
}

static void write_base64(FILE *f, const uint8_t *data, size_t size) {
        static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

        for (size_t i = 0; i < size; i += 3) {
                uint32_t v = (uint32_t) data[i] << 16 | (i + 1 < size ? (uint32_t) data[i + 1] << 8 : 0) |
                        (i + 2 < size ? data[i + 2] : 0);

                fputc(digits[v >> 18 & 63], f);
                fputc(digits[v >> 12 & 63], f);
                fputc(i + 1 < size ? digits[v >> 6 & 63] : '=', f);
                fputc(i + 2 < size ? digits[v & 63] : '=', f);
        }
}

/* The resource as a Prometheus metric name, which Parca's __name__ must be: cpu-time -> cpu_time. */
static void write_metric_name(FILE *f, const char *s) {
        for (; *s; s++)
                fputc(isalnum((unsigned char) *s) || *s == '_' || *s == ':' ? *s : '_', f);
}

static void write_parca_label(FILE *f, bool first, const char *name, const char *value) {
        fputs(first ? "" : ",", f);
        fputs("{\"name\":", f);
        json_write_string(f, name);
        fputs(",\"value\":", f);
        json_write_string(f, value);
        fputs("}", f);
}

/* BASE without the slashes it may end with, then PATH. */
static int join_url(const char *base, const char *path, FILE *f) {
        size_t n = strlen(base);

        while (n > 0 && base[n - 1] == '/')
                n--;
        fwrite(base, 1, n, f);
        fputs(path, f);
        return 0;
}

static int build_pyroscope(const char *base, const struct push_profile *p, struct push_request *r) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *name = NULL;
        size_t n;
        int k;

        k = pprof_encode_below(p->tree, p->top, p->since * INT64_C(1000000000),
                               (p->until - p->since) * INT64_C(1000000000), &r->body, &r->size);
        if (k < 0)
                return k;
        f = open_memstream(&r->url, &n);
        if (!f)
                return -ENOMEM;
        join_url(base, "/ingest?name=", f);
        /* Pyroscope's labelset syntax: app{key=value,...}; write_query_value() escapes it whole. */
        if (asprintf(&name, "cppd.%s{host=%s,resource=%s%s%s}", p->resource, p->host, p->resource,
                     p->unit ? ",unit=" : "", p->unit ?: "") < 0)
                return -ENOMEM;
        write_query_value(f, name);
        fprintf(f, "&from=%" PRId64 "&until=%" PRId64 "&format=pprof&spyName=cppd", p->since, p->until);
        if (fflush(f) != 0 || ferror(f))
                return -ENOMEM;
        r->content_type = "application/octet-stream";
        return 0;
}

static int build_parca(const char *base, const struct push_profile *p, struct push_request *r) {
        _cleanup_free_ uint8_t *pprof = NULL;
        _cleanup_fclose_ FILE *f = NULL, *u = NULL;
        size_t size = 0, n;
        int k;

        k = pprof_encode_below(p->tree, p->top, p->since * INT64_C(1000000000),
                               (p->until - p->since) * INT64_C(1000000000), &pprof, &size);
        if (k < 0)
                return k;
        f = open_memstream((char **) &r->body, &r->size);
        u = open_memstream(&r->url, &n);
        if (!f || !u)
                return -ENOMEM;
        join_url(base, "/api/profiles/writeraw", u);
        fputs("{\"series\":[{\"labels\":{\"labels\":[", f);
        fputs("{\"name\":\"__name__\",\"value\":\"", f);
        write_metric_name(f, p->resource);
        fputs("\"}", f);
        write_parca_label(f, false, "host", p->host);
        write_parca_label(f, false, "resource", p->resource);
        if (p->unit)
                write_parca_label(f, false, "unit", p->unit);
        fputs("]},\"samples\":[{\"rawProfile\":\"", f);
        write_base64(f, pprof, size);
        /* normalized: there are no addresses to adjust for position-independent code. */
        fputs("\"}]}],\"normalized\":true}", f);
        if (fflush(f) != 0 || ferror(f) || fflush(u) != 0 || ferror(u))
                return -ENOMEM;
        r->content_type = "application/json";
        return 0;
}

static int build_otlp(const char *base, const struct push_profile *p, struct push_request *r) {
        const struct otlp_meta meta = {
                .host = p->host,
                .unit = p->unit,
                .time_nanos = (uint64_t) p->since * UINT64_C(1000000000),
                .duration_nanos = (uint64_t) (p->until - p->since) * UINT64_C(1000000000),
        };
        _cleanup_fclose_ FILE *u = NULL;
        size_t n;
        int k;

        k = otlp_encode(p->tree, p->top, &meta, &r->body, &r->size);
        if (k < 0)
                return k;
        u = open_memstream(&r->url, &n);
        if (!u)
                return -ENOMEM;
        join_url(base, "/v1development/profiles", u);
        if (fflush(u) != 0 || ferror(u))
                return -ENOMEM;
        r->content_type = "application/x-protobuf";
        return 0;
}

int push_request_build(enum push_kind k, const char *base_url, const struct push_profile *p,
                       struct push_request *ret) {
        struct push_request r = {};
        int e;

        switch (k) {
        case PUSH_PYROSCOPE:
                e = build_pyroscope(base_url, p, &r);
                break;
        case PUSH_PARCA:
                e = build_parca(base_url, p, &r);
                break;
        case PUSH_OTLP:
                e = build_otlp(base_url, p, &r);
                break;
        default:
                e = -EINVAL;
        }
        if (e < 0) {
                push_request_done(&r);
                return e;
        }
        *ret = r;
        return 0;
}

void push_request_done(struct push_request *r) {
        free(r->url);
        free(r->body);
        *r = (struct push_request) {};
}
