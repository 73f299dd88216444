/* The control protocol between cppctl and cppd (schemas/protocol.md): one request line from
 * the client, then reply lines from the daemon, each "WORD key=value key=value...", values
 * percent-encoded, the last reply line "ok" or "error errno=NAME message=...". */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTOCOL_MAX_LINE 4096
#define PROTOCOL_MAX_FIELDS 32
#define PROTOCOL_MAX_KEY 32
#define PROTOCOL_MAX_WORD 32

struct protocol_field {
        char key[PROTOCOL_MAX_KEY];
        uint32_t value; /* offset of the decoded, NUL-terminated value in the message's
                                         * buffer: an offset, so that messages can be copied and moved */
};

struct protocol_message {
        char word[PROTOCOL_MAX_WORD];
        struct protocol_field fields[PROTOCOL_MAX_FIELDS];
        unsigned n_fields;
        char buffer[PROTOCOL_MAX_LINE];
};

/* Parses LINE[0..len) (without its '\n'). Returns 0, or -EBADMSG: longer than
 * PROTOCOL_MAX_LINE, a word or key that is not lowercase letters, digits and '_' or too long, a
 * field without '=', a bad %XX escape, a NUL, more than PROTOCOL_MAX_FIELDS fields. */
int protocol_parse(const char *line, size_t len, struct protocol_message *ret);

/* The value of KEY, or NULL. */
const char *protocol_get(const struct protocol_message *m, const char *key);

/* Formats "WORD key=value ..." and a '\n' into BUF: KEY_VALUES are pairs of strings, ended by a
 * NULL key; a NULL value leaves the field out. Returns the length, or -ENOBUFS if it does not
 * fit in SIZE (or PROTOCOL_MAX_LINE). */
int protocol_format(char *buf, size_t size, const char *word, const char *const *key_values);
