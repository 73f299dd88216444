/* The control socket: cppctl's requests to the daemon (schemas/protocol.md), each checked
 * against the peer's credentials (SO_PEERCRED): root may do anything, a member of the configured
 * group may query, any user may profile processes it owns. */
#pragma once

#include <stdbool.h>

struct manager;
struct control;

/* Most connections open at once; more are answered with an EBUSY error and closed. */
#define CONTROL_MAX_CONNECTIONS 64
/* Most connections of one uid other than root, so that no user takes them all. */
#define CONTROL_MAX_PER_UID 8
/* Connections users outside the group leave to root and the group, and the group to root. */
#define CONTROL_RESERVED_GROUP 16
#define CONTROL_RESERVED_ROOT 8
/* Most on-demand sessions of one uid other than root, and the sessions of max_sessions that
 * users other than root leave to root (when there are more than that). */
#define CONTROL_MAX_SESSIONS_PER_UID 4
#define CONTROL_RESERVED_SESSIONS 2
/* A connection that has not sent its request, or read its reply, in this time is closed. */
#define CONTROL_TIMEOUT_USEC (5 * 1000000ULL)

/* Listens on the socket systemd passed (socket activation), else on the configured path,
 * replacing a stale socket file. Returns 0 and sets *ret, or a negative errno. */
int control_new(struct manager *m, struct control **ret);
struct control *control_free(struct control *c);
