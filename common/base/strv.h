/* NULL-terminated string arrays. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"

/* Frees V and its strings; accepts NULL; returns NULL. */
char **strv_free(char **v);
DEFINE_CLEANUP(char **, strv_free);

size_t strv_length(char *const *v);

/* Whether V (which may be NULL) holds a string equal to S. */
bool strv_contains(char *const *v, const char *s);

/* Appends a copy of S to *V (which may be NULL). Returns 0 or -ENOMEM, leaving *V intact. */
int strv_extend(char ***v, const char *s);

/* Joins V with SEP into a new string. NULL: no memory. */
char *strv_join(char *const *v, const char *sep);
