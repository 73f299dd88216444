/* Checked number parsing: whole strings only, no sign surprises, errors as negative errno. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Parses a decimal unsigned integer that is the whole of S. Returns 0 and sets *ret; -EINVAL if
 * S is empty, signed or has trailing characters; -ERANGE if it does not fit. */
int safe_atou64(const char *s, uint64_t *ret);

/* Like safe_atou64() for a value that must lie in [min, max]: -ERANGE outside. */
int safe_atou64_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* Parses a fraction in [0, 1]: "0.05" or a percentage "5%". Returns 0 and sets *ret, -EINVAL
 * for anything else, -ERANGE outside [0, 1]. */
int parse_fraction(const char *s, double *ret);

/* Parses a duration: a number with a unit, "500ms", "5s", "10min" or "10m", "2h", "7d", "1w"
 * (a bare number is seconds). Returns 0 and sets *ret in microseconds; -EINVAL; -ERANGE. */
int parse_duration(const char *s, uint64_t *ret_usec);

/* Parses a size: "4096", "64K", "512M", "1G", "2T" (powers of 1024; "KiB" etc. also). Returns 0
 * and sets *ret in bytes; -EINVAL; -ERANGE. */
int parse_size(const char *s, uint64_t *ret);

/* Parses a boolean: yes/no, true/false, on/off, 1/0. Returns 0 or -EINVAL. */
int parse_boolean(const char *s, bool *ret);

/* Parses a point in time for --since/--until, relative to NOW (unix seconds): "@1700000000",
 * "-2h" or "2h ago" (a duration before now), "now", "today", "yesterday" (local midnight),
 * "YYYY-MM-DD", "YYYY-MM-DD HH:MM" and "YYYY-MM-DD HH:MM:SS" (local time). Returns 0 and sets
 * *ret in unix seconds; -EINVAL. */
int parse_timestamp(const char *s, int64_t now, int64_t *ret);
