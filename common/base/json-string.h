/* JSON string literals, for every writer of JSON (cppctl's formats, Parca's push request). */
#pragma once

#include <stdio.h>

/* Writes S as a JSON string literal, escaping what JSON requires (quotes, backslashes, control
 * characters) and replacing bytes that are not UTF-8 with U+FFFD, which JSON parsers that check
 * (Go's protojson, Python's strict mode) would otherwise refuse. */
void json_write_string(FILE *f, const char *s);
