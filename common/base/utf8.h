/* UTF-8 as the readers of our output parse it: protobuf's string fields (pprof, OTLP), JSON, XML,
 * and a terminal or a log that must not take a server's bytes for commands. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* U+FFFD, which stands in for bytes that are not UTF-8. */
#define UTF8_REPLACEMENT "\xef\xbf\xbd"

/* Decodes the character at P, of which LEFT bytes may be read (SIZE_MAX for a NUL-terminated
 * string: a NUL is no continuation byte, so decoding stops there). Returns its length, 1 to 4,
 * and sets *ret_cp (may be NULL) to its code point; 0 if no well-formed character starts at P
 * (RFC 3629: a stray continuation byte, a sequence cut short, an overlong form, a surrogate, or
 * past U+10FFFF: what protobuf, Go and browsers refuse). */
size_t utf8_decode(const char *p, size_t left, uint32_t *ret_cp);

/* Whether S (NUL-terminated) is well-formed UTF-8 throughout. */
bool utf8_is_valid(const char *s);

/* A copy of S in which each byte that starts no well-formed character is replaced by U+FFFD,
 * as protobuf requires of a string field. Returns it (free()), or NULL: no memory. */
char *utf8_make_valid(const char *s);

/* Writes the LEN bytes at S into BUF (SIZE bytes, SIZE > 0, always NUL-terminated) as they may go
 * to a terminal, a log or `cppctl status`: printable characters as they are; control characters
 * (C0, DEL, C1), and bytes that are not UTF-8, as \xNN, so that text a server sent can neither
 * move a cursor, recolour or clear a screen, nor start a line of its own in a log. Text that
 * does not fit is cut at a character's boundary. Returns BUF. */
char *utf8_escape(const char *s, size_t len, char *buf, size_t size);
