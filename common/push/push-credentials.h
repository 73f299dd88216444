/* The credentials of the fleet profilers: HTTP headers per receiver, read from a file of their
 * own so that no secret is in the configuration, a command line or a log (push-credentials.c). */
#pragma once

#include <stddef.h>

#include "push-request.h"

/* Bytes of a credentials file, of one header line, and headers per receiver. */
#define PUSH_CREDENTIALS_MAX_SIZE (16 * 1024)
#define PUSH_CREDENTIALS_MAX_LINE 1024
#define PUSH_CREDENTIALS_MAX_HEADERS 8

struct push_credentials {
        /* By push_kind: "Name: value" lines for libcurl, NUL-terminated. */
        char headers[_PUSH_KIND_MAX][PUSH_CREDENTIALS_MAX_HEADERS][PUSH_CREDENTIALS_MAX_LINE + 1];
        unsigned n_headers[_PUSH_KIND_MAX];
};

/* Parses TEXT (SIZE bytes): '#' comments, empty lines, and lines "KIND Name: value" with KIND
 * pyroscope, parca or otlp, Name an HTTP header name (RFC 9110 token characters) and value
 * printable (no control characters), e.g. "parca Authorization: Bearer abc". Returns 0 and fills
 * *ret, or -EBADMSG with *ret_line and ERROR (ERROR_SIZE bytes) saying what is wrong where,
 * never quoting a value (it may be the secret). */
int push_credentials_parse(const char *text, size_t size, struct push_credentials *ret, unsigned *ret_line,
                           char *error, size_t error_size);

/* Reads and parses PATH, which must be a regular file of the reader's own (its effective uid)
 * that other users can neither read nor write, opened without waiting on a FIFO (read_open()).
 * Returns 0; -ENOENT, -EACCES and other errnos of open(); -EPERM if it is not a regular file,
 * belongs to another user, or others may read or write it (ERROR says which); -EFBIG past
 * PUSH_CREDENTIALS_MAX_SIZE; -EBADMSG as push_credentials_parse(). */
int push_credentials_load(const char *path, struct push_credentials *ret, unsigned *ret_line, char *error,
                          size_t error_size);
