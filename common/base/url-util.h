/* URLs in messages: a URL as a user typed it may hold a password, which no message, log line or
 * status may show. */
#pragma once

#include <stddef.h>

/* Writes URL into BUF (SIZE bytes, SIZE > 0, always NUL-terminated) with the password of its
 * user information, if it has one, replaced by ***: "clickhouse://user:secret@host/db" becomes
 * "clickhouse://user:***@host/db"; a URL without one, or text that is no URL, is copied as it
 * is (cut to SIZE). Returns BUF. */
char *url_redact(const char *url, char *buf, size_t size);
