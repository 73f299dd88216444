/* OTLP profiles (otlp.c): a sample tree as an ExportProfilesServiceRequest of
 * opentelemetry-proto v1.11.0. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "sample-tree.h"

/* What the request says beside the samples. */
struct otlp_meta {
        const char *host;        /* resource attribute host.name; NULL: none */
        const char *unit;        /* resource attribute service.name, the systemd unit; NULL: none */
        uint64_t time_nanos;     /* the interval's start, unix ns */
        uint64_t duration_nanos; /* its length */
};

/* Encodes the stacks of T (one resource) below node TOP (SAMPLE_TREE_ROOT: all), as if TOP were
 * the root, with META as a packed ExportProfilesServiceRequest, as otlp.c's opening comment lays
 * out. Returns 0 and sets *ret (malloc()ed, the caller frees it) and
 * *ret_size; -ENOMEM, or -E2BIG past the format's 32-bit indexes. */
int otlp_encode(const struct sample_tree *t, uint32_t top, const struct otlp_meta *meta, uint8_t **ret,
                size_t *ret_size);
