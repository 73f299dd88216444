/* The control socket: cppctl's requests to the daemon (schemas/protocol.md), each checked
 * against the peer's credentials (SO_PEERCRED): root may do anything, a member of the configured
 * group may query, any user may profile processes it owns. */
#pragma once

#include <stdbool.h>

struct manager;
struct control;

/* Most connections open at once; more are answered with an error and closed. */
#define CONTROL_MAX_CONNECTIONS 64
/* A connection that has not sent its request, or read its reply, in this time is closed. */
#define CONTROL_TIMEOUT_USEC (5 * 1000000ULL)

/* Listens on the socket systemd passed (socket activation), else on the configured path,
 * replacing a stale socket file. Returns 0 and sets *ret, or a negative errno. */
int control_new(struct manager *m, struct control **ret);
struct control *control_free(struct control *c);
