/* POSTs to the fleet profilers, with libcurl (push-http.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The bytes of a reply body kept for an error message. */
#define PUSH_HTTP_REPLY_MAX 512
/* Longest a connection may take to open, and a whole request. */
#define PUSH_HTTP_CONNECT_TIMEOUT_MS 5000
#define PUSH_HTTP_TIMEOUT_MS 30000

struct push_http_request {
        const char *url;
        const char *content_type;
        const uint8_t *body;
        size_t size;
        const bool *cancel;         /* read during the transfer: true aborts it (the daemon stopping) */
        const char *const *headers; /* more headers, "Name: value" (credentials); may be NULL */
        size_t n_headers;
};

struct push_http_reply {
        long status;                        /* the HTTP status; 0 when none came */
        char body[PUSH_HTTP_REPLY_MAX + 1]; /* its start, NUL-terminated, for errors */
        char error[256];                    /* libcurl's words when no reply came */
};

/* Initializes libcurl for the process: once, before any thread posts. Returns 0 or -EIO. */
int push_http_init(void);

/* POSTs REQ (http or https only, no redirects followed). Returns 0 when a reply came, whatever
 * its status (*ret says which); when none did, *ret->error says why and: -ECONNREFUSED (nothing
 * listens), -EHOSTUNREACH (no such host, or no route), -ETIMEDOUT, -ECANCELED (REQ->cancel),
 * -EPROTONOSUPPORT (a scheme other than http or https), -ENOMEM, -EIO for the rest. */
int push_http_post(const struct push_http_request *req, struct push_http_reply *ret);
