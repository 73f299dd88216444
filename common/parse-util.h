/* Checked number parsing: whole strings only, no sign surprises, errors as negative errno. */
#pragma once

#include <stdint.h>

/* Parses a decimal unsigned integer that is the whole of S. Returns 0 and sets *ret; -EINVAL if
 * S is empty, signed or has trailing characters; -ERANGE if it does not fit. */
int safe_atou64(const char *s, uint64_t *ret);

/* Like safe_atou64() for a value that must lie in [min, max]: -ERANGE outside. */
int safe_atou64_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* Parses a fraction in [0, 1]: "0.05" or a percentage "5%". Returns 0 and sets *ret, -EINVAL
 * for anything else, -ERANGE outside [0, 1]. */
int parse_fraction(const char *s, double *ret);
