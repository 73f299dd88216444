/* The control protocol, client side: a connection per request, the reply read to its final
 * OK or ERROR line, with a timeout so that a stuck daemon cannot hang cppctl. */
#include "control-client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"

/* Longest wait for the daemon: a detach stores the session's last samples first. */
#define CONTROL_CLIENT_TIMEOUT_MS 30000
/* Most reply lines taken: a status of every session fits. */
#define CONTROL_CLIENT_MAX_LINES 4096

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
        m = realloc(ret->lines, (ret->n_lines + 1) * sizeof *m);
        if (!m)
                return -ENOMEM;
        ret->lines = m;
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

static int call(const char *path, const char *word, const char *const *key_values, struct control_reply *ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        char out[PROTOCOL_MAX_LINE], in[PROTOCOL_MAX_LINE];
        size_t n_in = 0;
        int len, r;

        *ret = (struct control_reply) {};
        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        len = protocol_format(out, sizeof out, word, key_values);
        if (len < 0)
                return len;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        if (write(fd, out, len) != len)
                return -EIO;

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                char *nl;
                ssize_t n;

                r = poll(&p, 1, CONTROL_CLIENT_TIMEOUT_MS);
                if (r == 0)
                        return -ETIMEDOUT;
                if (r < 0)
                        return -errno;
                n = read(fd, in + n_in, sizeof in - n_in);
                if (n <= 0)
                        return n < 0 ? -errno : -EBADMSG;      /* closed before the final line */
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

int control_call(const char *path, const char *word, const char *const *key_values, struct control_reply *ret) {
        int r = call(path, word, key_values, ret);

        if (r < 0)
                control_reply_done(ret);        /* the lines of a reply cut short are not one */
        return r;
}
