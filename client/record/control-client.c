/* The control protocol, client side: a connection per request, the reply read to its final
 * OK or ERROR line. One deadline covers the whole call (connect, request, reply), so that a stuck
 * daemon cannot hang cppctl: a stopped daemon still accepts connections into its backlog and
 * takes the request into the socket's buffer, and once the backlog is full a blocking connect()
 * would wait for ever; so the socket does not block and each step polls against the deadline.
 * The request is sent with MSG_NOSIGNAL: a daemon that hung up (after refusing the connection
 * with an error line) must not kill cppctl with SIGPIPE before that line is read. */
#include "control-client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "grow.h"
#include "time-util.h"

/* Most reply lines taken: a status of every session fits. */
#define CONTROL_CLIENT_MAX_LINES 4096
/* How long to wait before trying again to connect while the daemon's backlog is full. */
#define CONTROL_CLIENT_CONNECT_RETRY_MS 20

unsigned control_timeout_ms(const char *word) {
        static const char *const slow[] = { "attach", "detach", "flush", "reload" };

        for (size_t i = 0; i < ELEMENTSOF(slow); i++)
                if (streq(word, slow[i]))
                        return CONTROL_CLIENT_SLOW_TIMEOUT_MS;
        return CONTROL_CLIENT_TIMEOUT_MS;
}

const char *control_socket_path(const char *arg) {
        return arg ?: getenv("CPPD_SOCKET") ?: CPPCTL_DEFAULT_SOCKET;
}

void control_reply_done(struct control_reply *r) {
        free(r->lines);
        *r = (struct control_reply) {};
}

static int errno_from_name(const char *name) {
        for (int e = 1; e < 256; e++) {
                const char *n = strerrorname_np(e);

                if (n && streq(n, name))
                        return -e;
        }
        return -EIO;
}

/* Handles one reply line. Returns 1 at the final line, 0 for more, or a negative errno. */
static int take_line(const char *line, size_t len, struct control_reply *ret) {
        struct protocol_message *m;

        if (ret->n_lines >= CONTROL_CLIENT_MAX_LINES)
                return -EBADMSG;
        if (GROW(ret->lines, ret->cap_lines, ret->n_lines + 1) < 0)
                return -ENOMEM;
        m = &ret->lines[ret->n_lines];
        if (protocol_parse(line, len, m) < 0)
                return -EBADMSG;
        if (streq(m->word, "ok"))
                return 1;
        if (streq(m->word, "error")) {
                ret->error = errno_from_name(protocol_get(m, "errno") ?: "EIO");
                snprintf(ret->message, sizeof ret->message, "%s", protocol_get(m, "message") ?: "");
                return 1;
        }
        ret->n_lines++;
        return 0;
}

/* Milliseconds left until DEADLINE (CLOCK_MONOTONIC ns), or -ETIMEDOUT when it has passed. */
static int left_ms(uint64_t deadline) {
        uint64_t now = now_ns(CLOCK_MONOTONIC);

        return now >= deadline ? -ETIMEDOUT : (int) ((deadline - now + 999999) / 1000000);
}

/* Waits until FD is ready for EVENTS or DEADLINE. Returns 0, -ETIMEDOUT, or a negative errno. */
static int wait_for(int fd, short events, uint64_t deadline) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                int ms = left_ms(deadline), r;

                if (ms < 0)
                        return ms;
                r = poll(&p, 1, ms);
                if (r > 0)
                        return 0;
                if (r < 0 && errno != EINTR)
                        return -errno;
        }
}

static int call(const char *path, const char *word, const char *const *key_values,
                struct control_reply *ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        uint64_t deadline = now_ns(CLOCK_MONOTONIC) + control_timeout_ms(word) * 1000000ULL;
        _cleanup_close_ int fd = -1;
        char out[PROTOCOL_MAX_LINE], in[PROTOCOL_MAX_LINE];
        size_t n_in = 0, sent = 0;
        int len, r;

        *ret = (struct control_reply) {};
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        len = protocol_format(out, sizeof out, word, key_values);
        if (len < 0)
                return len;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* A Unix socket connects at once, or says EAGAIN while the listener's backlog is full
         * (nothing to poll for: try again shortly). */
        while (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        return -errno;
                r = left_ms(deadline);
                if (r < 0)
                        return r;
                (void) poll(NULL, 0, MIN(r, CONTROL_CLIENT_CONNECT_RETRY_MS));
        }
        while (sent < (size_t) len) {
                ssize_t n = send(fd, out + sent, len - sent, MSG_NOSIGNAL);

                if (n >= 0) {
                        sent += n;
                        continue;
                }
                if (errno == EPIPE || errno == ECONNRESET)
                        break; /* hung up: its error line may be waiting below */
                if (errno != EAGAIN && errno != EINTR)
                        return -errno;
                r = wait_for(fd, POLLOUT, deadline);
                if (r < 0)
                        return r;
        }

        for (;;) {
                char *nl;
                ssize_t n;

                r = wait_for(fd, POLLIN, deadline);
                if (r < 0)
                        return r;
                n = read(fd, in + n_in, sizeof in - n_in);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0)
                        return n < 0 && errno != ECONNRESET ? -errno :
                                                              -EBADMSG; /* cut before the final line */
                n_in += n;
                while ((nl = memchr(in, '\n', n_in))) {
                        r = take_line(in, nl - in, ret);
                        memmove(in, nl + 1, n_in - (nl + 1 - in));
                        n_in -= nl + 1 - in;
                        if (r != 0)
                                return r < 0 ? r : 0;
                }
                if (n_in == sizeof in)
                        return -EBADMSG;
        }
}

int control_call(const char *path, const char *word, const char *const *key_values,
                 struct control_reply *ret) {
        int r = call(path, word, key_values, ret);

        if (r < 0)
                control_reply_done(ret); /* the lines of a reply cut short are not one */
        return r;
}
