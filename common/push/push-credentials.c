/* The credentials file: a few lines, each a header one receiver gets with every request
 * ("pyroscope Authorization: Basic ...", "otlp X-Scope-OrgID: team-a"), read whole at start
 * and reload. Headers rather than user and password: the receivers differ (Pyroscope behind a
 * proxy or Grafana Cloud takes basic auth and a tenant header, Parca and collectors bearer
 * tokens or API keys), and a header covers them all. The file is refused when other users may
 * read or write it, and errors name the line, never its value. */
#include "push-credentials.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "read-line.h"

__attribute__((format(printf, 3, 4))) static int fail(char *error, size_t size, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        vsnprintf(error, size, format, ap);
        va_end(ap);
        return -EBADMSG;
}

/* RFC 9110's tchar. */
static bool token_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                strchr("!#$%&'*+-.^_`|~", c);
}

/* Parses LINE (LEN bytes, no newline) into C. */
static int parse_line(const char *line, size_t len, struct push_credentials *c, char *error, size_t size) {
        const char *p = line, *end = line + len, *kind, *name, *colon;
        enum push_kind k;

        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
                end--;
        if (p == end || *p == '#')
                return 0;
        kind = p;
        while (p < end && *p != ' ' && *p != '\t')
                p++;
        for (k = 0; k < _PUSH_KIND_MAX; k++)
                if ((size_t) (p - kind) == strlen(push_kind_name(k)) &&
                    strncmp(kind, push_kind_name(k), p - kind) == 0)
                        break;
        if (k == _PUSH_KIND_MAX)
                return fail(error, size, "expected pyroscope, parca or otlp, then a header");
        while (p < end && (*p == ' ' || *p == '\t'))
                p++;
        name = p;
        while (p < end && token_char(*p))
                p++;
        colon = p;
        if (colon == name || colon == end || *colon != ':')
                return fail(error, size, "expected a header: Name: value");
        for (p = colon + 1; p < end; p++)
                if (((unsigned char) *p < 0x20 && *p != '\t') || (unsigned char) *p == 0x7f)
                        return fail(error, size, "a control character in the value of %.*s",
                                    (int) (colon - name), name);
        if (c->n_headers[k] >= PUSH_CREDENTIALS_MAX_HEADERS)
                return fail(error, size, "more than %d headers for %s", PUSH_CREDENTIALS_MAX_HEADERS,
                            push_kind_name(k));
        /* The line is at most PUSH_CREDENTIALS_MAX_LINE bytes, the header a part of it. */
        memcpy(c->headers[k][c->n_headers[k]], name, end - name);
        c->headers[k][c->n_headers[k]][end - name] = '\0';
        c->n_headers[k]++;
        return 0;
}

int push_credentials_parse(const char *text, size_t size, struct push_credentials *ret, unsigned *ret_line,
                           char *error, size_t error_size) {
        _cleanup_free_ struct push_credentials *c = calloc(1, sizeof *c);
        unsigned n = 0;
        int r;

        if (!c)
                return -ENOMEM;
        for (size_t pos = 0; pos < size;) {
                const char *nl = memchr(text + pos, '\n', size - pos);
                size_t len = nl ? (size_t) (nl - text - pos) : size - pos;

                *ret_line = ++n;
                if (len > PUSH_CREDENTIALS_MAX_LINE)
                        return fail(error, error_size, "line longer than %d bytes",
                                    PUSH_CREDENTIALS_MAX_LINE);
                if (memchr(text + pos, '\0', len))
                        return fail(error, error_size, "a NUL byte");
                r = parse_line(text + pos, len, c, error, error_size);
                if (r < 0)
                        return r;
                pos += len + (nl ? 1 : 0);
        }
        *ret = *c;
        return 0;
}

int push_credentials_load(const char *path, struct push_credentials *ret, unsigned *ret_line, char *error,
                          size_t error_size) {
        _cleanup_free_ char *text = NULL;
        struct stat st;
        ssize_t n;
        int r;

        *ret_line = 0;
        n = read_file(AT_FDCWD, path, READ_SECRET, PUSH_CREDENTIALS_MAX_SIZE, &text, &st);
        if (n == -EPERM) {
                snprintf(error, error_size,
                         "it belongs to another user: it must be the reader's (uid %u; chown it)",
                         (unsigned) geteuid());
                return -EPERM;
        }
        if (n == -EBADFD || n == -EISDIR) {
                snprintf(error, error_size, "%s", read_strerror(-EBADFD));
                return -EPERM;
        }
        if (n < 0)
                return (int) n;
        if (st.st_mode & (S_IROTH | S_IWOTH)) {
                explicit_bzero(text, (size_t) n);
                snprintf(error, error_size, "other users may read or write it (chmod o-rw %s)", path);
                return -EPERM;
        }
        r = push_credentials_parse(text, (size_t) n, ret, ret_line, error, error_size);
        explicit_bzero(text, (size_t) n);
        return r;
}
