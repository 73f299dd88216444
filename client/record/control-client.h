/* cppctl's side of the control protocol (schemas/protocol.md): one request, its reply lines. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "protocol.h"

#define CPPCTL_DEFAULT_SOCKET "/run/cppd/cppd.sock"
/* Longest wait for the daemon's whole reply to a query (status, sessions): it answers from
 * memory, so a daemon that takes longer is stopped or stuck. */
#define CONTROL_CLIENT_TIMEOUT_MS 10000
/* To a request that works first (attach, detach, flush, reload): a detach stores the session's
 * last samples, a flush waits up to 5 s for the rings (MANAGER_CATCH_UP_NS) and then writes. */
#define CONTROL_CLIENT_SLOW_TIMEOUT_MS 60000

struct control_reply {
        struct protocol_message *lines; /* the lines before OK */
        size_t n_lines, cap_lines;      /* lines held, and room for */
        int error;                      /* the ERROR line's errno, negative; 0 for OK */
        char message[512];              /* the ERROR line's message */
};

/* The socket: $CPPD_SOCKET, else the default. */
const char *control_socket_path(const char *arg);

/* The milliseconds control_call() waits for the reply to WORD, all told. */
unsigned control_timeout_ms(const char *word);

/* Connects to PATH, sends WORD with KEY_VALUES (as protocol_format()), reads the reply into
 * *ret. Returns 0 when the daemon replied (OK or ERROR: see ret->error); -ENOENT or
 * -ECONNREFUSED when no daemon listens; -EBADMSG for a reply that does not parse or is cut
 * short; -ETIMEDOUT when the whole reply has not come within control_timeout_ms(WORD). */
int control_call(const char *path, const char *word, const char *const *key_values,
                 struct control_reply *ret);

void control_reply_done(struct control_reply *r);
