/* The requests of the fleet profilers cppd pushes to (push-request.c): Pyroscope's ingest API,
 * Parca's WriteRaw and an OpenTelemetry collector's OTLP profiles, each built from one profile
 * of one interval. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "sample-tree.h"

enum push_kind {
        PUSH_PYROSCOPE,
        PUSH_PARCA,
        PUSH_OTLP,
        _PUSH_KIND_MAX,
};

/* Longest base URL a configuration may give. */
#define PUSH_URL_MAX 1024

/* "pyroscope", "parca", "otlp": the configuration's keys. */
const char *push_kind_name(enum push_kind k);

/* Checks base URL URL of a receiver: http:// or https://, then a host, and no query or
 * fragment (the paths and queries are ours to add). Returns 0, or -EINVAL with *ret_why set
 * to what is wrong, in words. */
int push_url_check(const char *url, const char **ret_why);

/* One profile to push: the samples of RESOURCE by UNIT (NULL: the processes in no unit) on
 * HOST in [SINCE, UNTIL), unix seconds: the stacks of TREE below node TOP. */
struct push_profile {
        const char *host;
        const char *unit;
        const char *resource;
        int64_t since, until;
        const struct sample_tree *tree;
        uint32_t top; /* SAMPLE_TREE_ROOT: the whole tree; or a unit's node (unit_roots) */
};

struct push_request {
        char *url;                /* the base URL with the target's path and query */
        const char *content_type; /* static */
        uint8_t *body;
        size_t size;
};

/* Builds the request of kind K for the receiver at BASE_URL (checked with push_url_check()):
 *
 *   pyroscope  POST BASE/ingest?name=cppd.RESOURCE{host=..,resource=..,unit=..}&from=&until=
 *              &format=pprof&spyName=cppd, the body the gzipped pprof, application/octet-stream
 *   parca      POST BASE/api/profiles/writeraw, a WriteRawRequest in JSON (grpc-gateway's
 *              mapping: the pprof base64 in raw_profile), labels __name__, host, resource, unit
 *   otlp       POST BASE/v1development/profiles, an ExportProfilesServiceRequest,
 *              application/x-protobuf
 *
 * Labels with no value (no unit) are left out. Returns 0 and fills *ret (push_request_done()
 * frees it), or -ENOMEM, -E2BIG. */
int push_request_build(enum push_kind k, const char *base_url, const struct push_profile *p,
                       struct push_request *ret);
void push_request_done(struct push_request *r);
