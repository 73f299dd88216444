/* Users' regular expressions, compiled safely. */
#pragma once

#include <errno.h>
#include <regex.h>
#include <stddef.h>

/* regcomp(RE, PATTERN, REG_EXTENDED | REG_NOSUB), unless PATTERN would take glibc more than a
 * moment and some MiB to compile (nested or huge repetitions). Returns 0, or -EINVAL with what is
 * wrong in ERROR (SIZE bytes), and RE then not to be freed. */
int pattern_compile(regex_t *re, const char *pattern, char *error, size_t size);
