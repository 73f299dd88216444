/* The control protocol's lines. Text, so that a person can speak it with socat, and strict, as
 * requests come from any local user: every length is bounded by PROTOCOL_MAX_* and anything
 * else is -EBADMSG, which the daemon answers with an ERROR before it hangs up. A value's bytes
 * outside [A-Za-z0-9._,:/@+-] travel as %XX, so a value never holds a space or a newline. */
#include "protocol.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"

static bool word_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static bool plain_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                strchr("._,:/@+-", c);
}

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int protocol_parse(const char *line, size_t len, struct protocol_message *ret) {
        size_t i = 0, n = 0, out = 0;

        if (len >= PROTOCOL_MAX_LINE || memchr(line, '\0', len))
                return -EBADMSG;
        ret->n_fields = 0;
        while (i < len && word_char(line[i]) && n < PROTOCOL_MAX_WORD - 1)
                ret->word[n++] = line[i++];
        ret->word[n] = '\0';
        if (n == 0 || (i < len && line[i] != ' '))
                return -EBADMSG;

        while (i < len) {
                struct protocol_field *f;

                i++; /* the space */
                if (ret->n_fields >= PROTOCOL_MAX_FIELDS)
                        return -EBADMSG;
                f = &ret->fields[ret->n_fields];
                for (n = 0; i < len && word_char(line[i]) && n < PROTOCOL_MAX_KEY - 1;)
                        f->key[n++] = line[i++];
                f->key[n] = '\0';
                if (n == 0 || i >= len || line[i] != '=')
                        return -EBADMSG;
                i++;
                f->value = out;
                for (; i < len && line[i] != ' '; i++) {
                        char c = line[i];

                        if (c == '%') {
                                int hi, lo;

                                if (i + 2 >= len || (hi = hex_digit(line[i + 1])) < 0 ||
                                    (lo = hex_digit(line[i + 2])) < 0 || (hi == 0 && lo == 0))
                                        return -EBADMSG;
                                c = (char) (hi << 4 | lo);
                                i += 2;
                        } else if (!plain_char(c))
                                return -EBADMSG;
                        ret->buffer[out++] = c; /* decoding never grows: out < i < len */
                }
                ret->buffer[out++] = '\0';
                ret->n_fields++;
        }
        return 0;
}

const char *protocol_get(const struct protocol_message *m, const char *key) {
        for (unsigned i = 0; i < m->n_fields; i++)
                if (streq(m->fields[i].key, key))
                        return m->buffer + m->fields[i].value;
        return NULL;
}

int protocol_format(char *buf, size_t size, const char *word, const char *const *key_values) {
        static const char digits[] = "0123456789ABCDEF";
        size_t n = 0, limit = MIN(size, (size_t) PROTOCOL_MAX_LINE);

#define PUT(c) \
        do { \
                if (n + 1 >= limit) \
                        return -ENOBUFS; \
                buf[n++] = (c); \
        } while (0)
        for (const char *p = word; *p; p++)
                PUT(*p);
        for (const char *const *kv = key_values; kv && kv[0]; kv += 2) {
                if (!kv[1])
                        continue;
                PUT(' ');
                for (const char *p = kv[0]; *p; p++)
                        PUT(*p);
                PUT('=');
                for (const unsigned char *p = (const unsigned char *) kv[1]; *p; p++)
                        if (plain_char(*p))
                                PUT(*p);
                        else {
                                PUT('%');
                                PUT(digits[*p >> 4]);
                                PUT(digits[*p & 15]);
                        }
        }
        PUT('\n');
#undef PUT
        buf[n] = '\0';
        return n;
}
