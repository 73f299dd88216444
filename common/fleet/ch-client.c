/* The ClickHouse HTTP client. Each query is one POST to http://HOST:PORT/ with the SQL as the
 * body, or, for an INSERT, the SQL in the `query` parameter and the data as the body, so that a
 * body of any size is sent as is; the database and readonly=1 go as parameters, the user and password as HTTP basic
 * authentication (never on a command line, never in a URL that a log may print). One curl easy
 * handle per client keeps its connection alive between queries: a batch is several INSERTs and
 * a tree load a few SELECTs. ClickHouse answers an error with a status other than 200 and its
 * own text ("Code: 81, e.displayText() = DB::Exception: Database x doesn't exist"); the code
 * becomes the errno callers branch on and the text goes into the client's error in full. */
#include "ch-client.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "read-line.h"
#include "utf8.h"

struct ch_client {
        struct ch_url url;
        char *user, *password; /* NULL: ClickHouse's default user, no password */
        CURL *curl;
        unsigned timeout_s;
        unsigned schema; /* the version ch_schema_check() read; 0: not read */
        bool raw;        /* never the rollups (ch_client_set_rollups()) */
        char error[1024];
};

bool ch_url_is(const char *s) {
        return s && strncmp(s, CH_URL_SCHEME, strlen(CH_URL_SCHEME)) == 0;
}

static bool name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool host_char(char c) {
        return name_char(c) || c == '-' || c == '.' || c == ':';
}

void ch_url_done(struct ch_url *u) {
        u->user = mfree(u->user);
        u->host = mfree(u->host);
        u->db = mfree(u->db);
}

int ch_url_parse(const char *s, struct ch_url *ret, const char **ret_why) {
        _cleanup_free_ char *user = NULL, *host = NULL, *db = NULL;
        const char *p, *at, *slash, *host_end, *why = NULL;
        unsigned long port = CH_DEFAULT_PORT;

        if (!ch_url_is(s)) {
                why = strstr(s, "://") ? "the scheme is not clickhouse://" :
                                         "not a clickhouse://HOST:PORT/DB URL";
                goto fail;
        }
        p = s + strlen(CH_URL_SCHEME);
        slash = strchr(p, '/');
        if (!slash) {
                why = "no database: the URL must end in /DB";
                goto fail;
        }
        at = memchr(p, '@', slash - p);
        if (at && memchr(p, ':', at - p)) {
                why = "a password in the URL, where any process may read it: put it in the credentials file";
                goto fail;
        }
        if (at) {
                if (at == p || at - p > CH_NAME_MAX) {
                        why = at == p ? "an empty user before @" : "the user name is too long";
                        goto fail;
                }
                for (const char *c = p; c < at; c++)
                        if (!name_char(*c) && *c != '-' && *c != '.') {
                                why = "the user name may hold only letters, digits, '_', '-' and '.'";
                                goto fail;
                        }
                user = strndup(p, at - p);
                if (!user)
                        return -ENOMEM;
                p = at + 1;
        }
        if (*p == '[') { /* [IPv6]:port */
                host_end = memchr(p, ']', slash - p);
                if (!host_end) {
                        why = "an IPv6 address without its closing ]";
                        goto fail;
                }
                host = strndup(p + 1, host_end - p - 1);
                host_end++;
        } else {
                host_end = memchr(p, ':', slash - p) ?: slash;
                host = strndup(p, host_end - p);
        }
        if (!host)
                return -ENOMEM;
        if (!*host || strlen(host) > CH_NAME_MAX) {
                why = *host ? "the host name is too long" : "no host";
                goto fail;
        }
        for (const char *c = host; *c; c++)
                if (!host_char(*c)) {
                        why = "the host may hold only letters, digits, '-', '.' and ':' (IPv6 in [])";
                        goto fail;
                }
        if (host_end < slash) {
                char *end;

                if (*host_end != ':' || host_end + 1 == slash) {
                        why = "a bad port: expected :PORT before /DB";
                        goto fail;
                }
                errno = 0;
                port = strtoul(host_end + 1, &end, 10);
                if (end != slash || errno || port == 0 || port > 65535 || host_end[1] < '0' ||
                    host_end[1] > '9') {
                        why = "a bad port: it must be a number from 1 to 65535";
                        goto fail;
                }
        }
        if (!slash[1]) {
                why = "no database: the URL must end in /DB";
                goto fail;
        }
        if (strlen(slash + 1) > CH_NAME_MAX) {
                why = "the database name is too long";
                goto fail;
        }
        for (const char *c = slash + 1; *c; c++)
                if (!name_char(*c)) {
                        why = "the database name may hold only letters, digits and '_'";
                        goto fail;
                }
        if (slash[1] >= '0' && slash[1] <= '9') {
                why = "the database name must not start with a digit";
                goto fail;
        }
        db = strdup(slash + 1);
        if (!db)
                return -ENOMEM;

        *ret = (struct ch_url) {
                .user = take_ptr(&user),
                .host = take_ptr(&host),
                .port = port,
                .db = take_ptr(&db),
        };
        return 0;
fail:
        if (ret_why)
                *ret_why = why;
        return -EINVAL;
}

/* Reads the credentials file PATH into *ret_user (NULL if its first line is empty) and
 * *ret_password. */
static int read_credentials(const char *path, char **ret_user, char **ret_password, const char **ret_why) {
        static __thread char why[512];
        _cleanup_free_ char *text = NULL, *user = NULL, *password = NULL;
        char *nl, *second = NULL;
        struct stat st;
        ssize_t n;
        int r = 0;

        /* It holds a password: a file of another user (who may change it, or swap it for a
         * link) or one that others could have read is refused, as ssh refuses such keys. */
        n = read_file(AT_FDCWD, path, READ_SECRET, CH_CREDENTIALS_MAX, &text, &st);
        if (n == -EPERM)
                snprintf(why, sizeof why,
                         "the credentials file %s belongs to another user: it must be the reader's "
                         "(uid %u; chown it)",
                         path, (unsigned) geteuid());
        else if (n == -EFBIG)
                snprintf(why, sizeof why, "the credentials file %s is not two short lines of text", path);
        else if (n < 0)
                snprintf(why, sizeof why, "cannot open the credentials file %s: %s", path, read_strerror(n));
        if (n < 0) {
                *ret_why = why;
                return n == -EFBIG ? -EBADMSG : (int) n;
        }
        if (st.st_mode & (S_IRWXG | S_IRWXO)) {
                snprintf(why, sizeof why,
                         "the credentials file %s may be read or written by group or others (mode %04o); "
                         "chmod 600 it",
                         path, (unsigned) (st.st_mode & 07777));
                r = -EPERM;
        } else if ((size_t) n != strlen(text)) {
                snprintf(why, sizeof why, "the credentials file %s is not two short lines of text", path);
                r = -EBADMSG;
        } else if (!(nl = strchr(text, '\n'))) {
                snprintf(why, sizeof why,
                         "the credentials file %s must hold the user on its first line and the password on "
                         "its second",
                         path);
                r = -EBADMSG;
        } else {
                *nl = 0;
                second = nl + 1;
                nl = strchr(second, '\n');
                if (nl) {
                        *nl = 0;
                        if (nl[1] && strspn(nl + 1, "\n") != strlen(nl + 1)) {
                                snprintf(why, sizeof why, "the credentials file %s has more than two lines",
                                         path);
                                r = -EBADMSG;
                        }
                }
        }
        if (r == 0) {
                if (text[0] && text[strlen(text) - 1] == '\r')
                        text[strlen(text) - 1] = 0;
                if (second[0] && second[strlen(second) - 1] == '\r')
                        second[strlen(second) - 1] = 0;
                if (text[0] && !(user = strdup(text)))
                        r = -ENOMEM;
                else if (!(password = strdup(second)))
                        r = -ENOMEM;
        }
        explicit_bzero(text, (size_t) n);
        if (r < 0) {
                if (r != -ENOMEM)
                        *ret_why = why;
                return r;
        }
        *ret_user = take_ptr(&user);
        *ret_password = take_ptr(&password);
        return 0;
}

int ch_client_open(const char *url, const char *credentials, struct ch_client **ret, const char **ret_why) {
        _cleanup_(ch_client_freep) struct ch_client *c = NULL;
        const char *why = NULL;
        int r;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->timeout_s = CH_REQUEST_TIMEOUT_S;
        r = ch_url_parse(url, &c->url, &why);
        if (r < 0) {
                if (ret_why)
                        *ret_why = why;
                return r;
        }
        if (credentials) {
                r = read_credentials(credentials, &c->user, &c->password, &why);
                if (r < 0) {
                        if (ret_why)
                                *ret_why = why;
                        return r;
                }
        }
        if (!c->user && c->url.user) {
                c->user = strdup(c->url.user);
                if (!c->user)
                        return -ENOMEM;
        }
        c->curl = curl_easy_init();
        if (!c->curl)
                return -ENOMEM;
        *ret = take_ptr(&c);
        return 0;
}

struct ch_client *ch_client_free(struct ch_client *c) {
        if (!c)
                return NULL;
        if (c->curl)
                curl_easy_cleanup(c->curl);
        ch_url_done(&c->url);
        free(c->user);
        if (c->password)
                explicit_bzero(c->password, strlen(c->password));
        free(c->password);
        free(c);
        return NULL;
}

const struct ch_url *ch_client_url(const struct ch_client *c) {
        return &c->url;
}

const char *ch_client_error(const struct ch_client *c) {
        return c->error;
}

void ch_client_set_timeout(struct ch_client *c, unsigned seconds) {
        c->timeout_s = seconds;
}

unsigned ch_client_timeout(const struct ch_client *c) {
        return c->timeout_s;
}

void ch_client_set_schema(struct ch_client *c, unsigned version) {
        c->schema = version;
}

void ch_client_set_rollups(struct ch_client *c, bool use) {
        c->raw = !use;
}

bool ch_client_rollups(const struct ch_client *c) {
        return !c->raw && c->schema >= CH_SCHEMA_ROLLUPS;
}

/* ---- buffers ---- */

static int ch_buf_reserve(struct ch_buf *b, size_t more) {
        size_t want;
        char *p;

        if (more > SIZE_MAX / 2 - b->len)
                return -ENOMEM;
        want = b->len + more + 1;
        if (want <= b->cap)
                return 0;
        want = want < 2 * b->cap ? 2 * b->cap : want;
        if (want < 256)
                want = 256;
        p = realloc(b->data, want);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->cap = want;
        return 0;
}

int ch_buf_append(struct ch_buf *b, const char *s, size_t len) {
        if (ch_buf_reserve(b, len) < 0)
                return -ENOMEM;
        memcpy(b->data + b->len, s, len);
        b->len += len;
        b->data[b->len] = 0;
        return 0;
}

int ch_buf_printf(struct ch_buf *b, const char *fmt, ...) {
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -EINVAL;
        if (ch_buf_reserve(b, n) < 0)
                return -ENOMEM;
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, n + 1, fmt, ap);
        va_end(ap);
        b->len += n;
        return 0;
}

/* The escapes ClickHouse reads in both quoted literals and TabSeparated fields. */
static const char *escape_of(char c) {
        switch (c) {
        case '\\':
                return "\\\\";
        case '\t':
                return "\\t";
        case '\n':
                return "\\n";
        case '\r':
                return "\\r";
        case '\0':
                return "\\0";
        case '\b':
                return "\\b";
        case '\f':
                return "\\f";
        case '\'':
                return "\\'";
        default:
                return NULL;
        }
}

static int append_escaped(struct ch_buf *b, const char *s) {
        const char *run = s;

        for (; *s; s++) {
                const char *e = escape_of(*s);

                if (!e)
                        continue;
                if (ch_buf_append(b, run, s - run) < 0 || ch_buf_append(b, e, strlen(e)) < 0)
                        return -ENOMEM;
                run = s + 1;
        }
        return ch_buf_append(b, run, s - run);
}

int ch_buf_quote(struct ch_buf *b, const char *s) {
        if (ch_buf_append(b, "'", 1) < 0 || append_escaped(b, s ?: "") < 0 || ch_buf_append(b, "'", 1) < 0)
                return -ENOMEM;
        return 0;
}

int ch_buf_tsv(struct ch_buf *b, const char *s) {
        return append_escaped(b, s ?: "");
}

char *ch_buf_steal(struct ch_buf *b, size_t *ret_len) {
        char *p = b->data;

        if (ret_len)
                *ret_len = b->len;
        *b = (struct ch_buf) {};
        return p;
}

void ch_buf_done(struct ch_buf *b) {
        b->data = mfree(b->data);
        b->len = b->cap = 0;
}

int ch_tsv_unescape(char *s, size_t len) {
        size_t i = 0, o = 0;

        while (i < len) {
                char c = s[i++];

                if (c == '\\') {
                        if (i == len)
                                return -EBADMSG;
                        switch (s[i++]) {
                        case '\\':
                                c = '\\';
                                break;
                        case 't':
                                c = '\t';
                                break;
                        case 'n':
                                c = '\n';
                                break;
                        case 'r':
                                c = '\r';
                                break;
                        case '0':
                                c = '\0';
                                break;
                        case 'b':
                                c = '\b';
                                break;
                        case 'f':
                                c = '\f';
                                break;
                        case '\'':
                                c = '\'';
                                break;
                        case '"':
                                c = '"';
                                break;
                        case 'a':
                                c = '\a';
                                break;
                        case 'v':
                                c = '\v';
                                break;
                        case '/':
                                c = '/';
                                break;
                        default:
                                return -EBADMSG;
                        }
                }
                s[o++] = c;
        }
        s[o] = 0;
        return o > INT_MAX ? -EBADMSG : (int) o;
}

/* ---- queries ---- */

struct answer {
        struct ch_buf buf; /* the answer; with LINE, only its last line while incomplete */
        bool too_big, line_too_long;
        size_t error_bytes; /* of an error's answer, kept or not */
        CURL *curl;
        /* ch_query_lines(): each complete line of a 200 answer as it comes */
        int (*line)(char *line, size_t len, void *userdata);
        void *userdata;
        int line_error; /* LINE's first failure, which stops the transfer */
};

static void answer_done(struct answer *a) {
        ch_buf_done(&a->buf);
}

/* Hands the complete lines held in A to its callback, keeping an incomplete last one. */
static int answer_lines(struct answer *a) {
        char *p = a->buf.data, *end = p + a->buf.len, *nl;

        for (; (nl = memchr(p, '\n', end - p)); p = nl + 1) {
                int r;

                *nl = 0;
                r = a->line(p, nl - p, a->userdata);
                if (r < 0)
                        return r;
        }
        memmove(a->buf.data, p, end - p);
        a->buf.len = end - p;
        return 0;
}

static size_t on_data(char *data, size_t size, size_t n, void *userdata) {
        struct answer *a = userdata;
        long status = 0;

        (void) curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
        /* An error's text: its start is all the message quotes; the rest is read and dropped,
         * whatever a proxy sends. */
        if (status != 200) {
                size_t keep =
                        a->error_bytes < CH_ERROR_BODY_MAX ? MIN(n, CH_ERROR_BODY_MAX - a->error_bytes) : 0;

                a->error_bytes += n;
                return keep && ch_buf_append(&a->buf, data, keep) < 0 ? 0 : n;
        }
        if (a->buf.len + n > CH_ANSWER_MAX) {
                a->too_big = true;
                return 0;
        }
        if (ch_buf_append(&a->buf, data, n) < 0)
                return 0;
        if (a->line) {
                a->line_error = answer_lines(a);
                if (a->line_error < 0)
                        return 0;
                /* What is left is one line cut short: past CH_LINE_MAX, the answer stops. */
                if (a->buf.len > CH_LINE_MAX) {
                        a->line_too_long = true;
                        return 0;
                }
        }
        return n;
}

/* The errno of ClickHouse's exception code in TEXT ("Code: 81, ..."). */
static int errno_of_exception(const char *text) {
        const char *p = strstr(text, "Code: ");
        long code = p ? strtol(p + 6, NULL, 10) : 0;

        switch (code) {
        case 60: /* UNKNOWN_TABLE */
        case 81: /* UNKNOWN_DATABASE */
                return -ENOENT;
        case 192: /* UNKNOWN_USER */
        case 193: /* WRONG_PASSWORD */
        case 194: /* REQUIRED_PASSWORD */
        case 195: /* IP_ADDRESS_NOT_ALLOWED */
        case 516: /* AUTHENTICATION_FAILED */
                return -EACCES;
        case 164: /* READONLY */
                return -EROFS;
        case 62: /* SYNTAX_ERROR */
                return -EINVAL;
        case 57: /* TABLE_ALREADY_EXISTS */
                return -EEXIST;
        default:
                return -EIO;
        }
}

int ch_client_set_error(struct ch_client *c, int r, const char *fmt, ...) {
        char text[sizeof c->error];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        /* It quotes what a server sent (an error body, a proxy's page), bound for a terminal, the
         * journal and cppctl status: no control character goes through. */
        utf8_escape(text, strlen(text), c->error, sizeof c->error);
        return r;
}

/* Runs the request; the answer goes into *A (whose LINE may be set). */
static int perform(struct ch_client *c, const char *sql, const char *body, size_t len, unsigned flags,
                   struct answer *a) {
        _cleanup_(ch_buf_done) struct ch_buf url = {};
        struct curl_slist *headers = NULL;
        char *q;
        long status = 0;
        CURLcode cc;
        bool ipv6 = strchr(c->url.host, ':');
        int r;

        c->error[0] = 0;
        /* wait_end_of_query: ClickHouse holds the answer until the query ends, so that an error
         * after the first rows is an error status, not text after a 200 and half an answer */
        if (ch_buf_printf(&url, "http://%s%s%s:%u/?wait_end_of_query=1", ipv6 ? "[" : "", c->url.host,
                          ipv6 ? "]" : "", c->url.port) < 0)
                return -ENOMEM;
        /* The SQL is the body, which has no length limit, unless the body is an INSERT's data:
         * then the SQL (short: INSERT INTO t FORMAT ...) goes in the URL. */
        if (body) {
                q = curl_easy_escape(c->curl, sql, 0);
                if (!q)
                        return -ENOMEM;
                r = ch_buf_printf(&url, "&query=%s", q);
                curl_free(q);
                if (r < 0)
                        return -ENOMEM;
        } else {
                body = sql;
                len = strlen(sql);
        }
        if (!(flags & CH_QUERY_NO_DB) && ch_buf_printf(&url, "&database=%s", c->url.db) < 0)
                return -ENOMEM;
        if ((flags & CH_QUERY_READONLY) && ch_buf_printf(&url, "&readonly=1") < 0)
                return -ENOMEM;
        if ((flags & CH_QUERY_ONE_BLOCK) &&
            ch_buf_printf(&url, "&max_insert_block_size=%" PRIu64, UINT64_MAX / 2) < 0)
                return -ENOMEM;
        if ((flags & CH_QUERY_NAMES_TYPES) &&
            ch_buf_printf(&url, "&default_format=TabSeparatedWithNamesAndTypes") < 0)
                return -ENOMEM;

        curl_easy_reset(c->curl);
        curl_easy_setopt(c->curl, CURLOPT_URL, url.data);
        curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http");
        curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, (long) CH_CONNECT_TIMEOUT_S);
        curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, (long) c->timeout_s);
        curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
        curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
        a->curl = c->curl;
        curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, a);
        /* curl would send "Expect: 100-continue" for big bodies and wait a second for an answer */
        headers = curl_slist_append(NULL, "Expect:");
        if (!headers)
                return -ENOMEM;
        curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
        if (c->user) {
                curl_easy_setopt(c->curl, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
                curl_easy_setopt(c->curl, CURLOPT_USERNAME, c->user);
                curl_easy_setopt(c->curl, CURLOPT_PASSWORD, c->password ?: "");
        }
        cc = curl_easy_perform(c->curl);
        curl_slist_free_all(headers);
        if (a->line_error < 0)
                return a->line_error;
        if (a->line_too_long)
                return ch_client_set_error(
                        c, -EFBIG,
                        "ClickHouse at %s:%u answered a line longer than %u MiB: cppctl stops "
                        "there (what came before it was handled)",
                        c->url.host, c->url.port, CH_LINE_MAX >> 20);
        if (a->too_big)
                return ch_client_set_error(c, -EFBIG, "ClickHouse at %s:%u answered more than %llu bytes",
                                           c->url.host, c->url.port, (unsigned long long) CH_ANSWER_MAX);
        switch (cc) {
        case CURLE_OK:
                break;
        case CURLE_COULDNT_CONNECT:
                return ch_client_set_error(c, -ECONNREFUSED,
                                           "Cannot reach ClickHouse at %s:%u: connection refused",
                                           c->url.host, c->url.port);
        case CURLE_COULDNT_RESOLVE_HOST:
                return ch_client_set_error(c, -EHOSTUNREACH, "Cannot reach ClickHouse at %s:%u: unknown host",
                                           c->url.host, c->url.port);
        case CURLE_OPERATION_TIMEDOUT:
                return ch_client_set_error(c, -ETIMEDOUT,
                                           "Cannot reach ClickHouse at %s:%u: no answer within %u s",
                                           c->url.host, c->url.port,
                                           a->buf.len ? c->timeout_s : CH_CONNECT_TIMEOUT_S);
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return ch_client_set_error(c, -EIO, "Cannot reach ClickHouse at %s:%u: %s", c->url.host,
                                           c->url.port, curl_easy_strerror(cc));
        }
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200) {
                const char *text = a->buf.data ?: "";
                size_t n = strcspn(text, "\n"); /* ClickHouse's message is its first line */

                return ch_client_set_error(c, errno_of_exception(text),
                                           "ClickHouse at %s:%u answered %ld: %.*s", c->url.host, c->url.port,
                                           status, (int) (n > 700 ? 700 : n), text);
        }
        return 0;
}

int ch_query(struct ch_client *c, const char *sql, const char *body, size_t len, unsigned flags, char **ret,
             size_t *ret_len) {
        _cleanup_(answer_done) struct answer a = {};
        int r;

        r = perform(c, sql, body, len, flags, &a);
        if (r < 0)
                return r;
        if (ret) {
                if (!a.buf.data && ch_buf_append(&a.buf, "", 0) < 0)
                        return -ENOMEM;
                *ret = ch_buf_steal(&a.buf, ret_len);
        }
        return 0;
}

int ch_query_tables(struct ch_client *c, const char *sql, unsigned flags, char **ret, size_t *ret_len) {
        int r = -ENOENT;

        for (unsigned i = 0; i < CH_TABLES_TRIES && r == -ENOENT; i++)
                r = ch_query(c, sql, NULL, 0, flags, ret, ret_len);
        return r;
}

int ch_query_lines(struct ch_client *c, const char *sql, unsigned flags,
                   int (*line)(char *line, size_t len, void *userdata), void *userdata) {
        _cleanup_(answer_done) struct answer a = { .line = line, .userdata = userdata };
        int r;

        r = perform(c, sql, NULL, 0, flags, &a);
        if (r < 0)
                return r;
        if (a.buf.len > 0) /* the answer's last line without its newline: cut short */
                return ch_client_set_error(c, -EBADMSG, "ClickHouse at %s:%u sent an answer cut short",
                                           c->url.host, c->url.port);
        return 0;
}

/* ---- rows of TabSeparated answers ---- */

/* Splits the TabSeparated line [P, END) into at most MAX fields, unescaped in place. Returns the
 * number of fields or -EBADMSG. */
static int split_line(char *p, char *end, char **fields, int max) {
        int n = 0;

        for (;;) {
                char *tab = memchr(p, '\t', end - p);
                char *stop = tab ?: end;
                int len;

                if (n == max)
                        return -EBADMSG;
                len = ch_tsv_unescape(p, stop - p);
                if (len < 0)
                        return len;
                fields[n++] = p;
                if (!tab)
                        return n;
                p = tab + 1;
        }
}

/* A query's rows for ch_query_rows(). */
struct rows {
        int n_fields;
        int (*row)(char **fields, void *userdata);
        void *userdata;
};

static int rows_line(char *line, size_t len, void *userdata) {
        struct rows *rs = userdata;
        char *fields[16];
        int n;

        n = split_line(line, line + len, fields, 16);
        if (n < 0)
                return n;
        if (n != rs->n_fields)
                return -EBADMSG;
        return rs->row(fields, rs->userdata);
}

int ch_query_rows(struct ch_client *c, struct ch_buf *q, int n_fields,
                  int (*row)(char **fields, void *userdata), void *userdata) {
        struct rows rs = { n_fields, row, userdata };

        if (ch_buf_printf(q, " FORMAT TabSeparated") < 0)
                return -ENOMEM;
        return ch_query_lines(c, q->data, CH_QUERY_READONLY, rows_line, &rs);
}

int ch_parse_u64(const char *s, uint64_t *ret) {
        char *end;

        if (!*s || *s == '-')
                return -EBADMSG;
        errno = 0;
        *ret = strtoull(s, &end, 10);
        return errno || *end ? -EBADMSG : 0;
}

int ch_parse_i64(const char *s, int64_t *ret) {
        char *end;

        if (!*s)
                return -EBADMSG;
        errno = 0;
        *ret = strtoll(s, &end, 10);
        return errno || *end ? -EBADMSG : 0;
}
