/* Checked number parsing. strtoull() alone accepts "-1", leading blanks and trailing junk; the
 * helpers here refuse all three so that a typo on the command line or in a file is an error. */
#include "parse-util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"

int safe_atou64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atou64_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v;
        int r;

        r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_fraction(const char *s, double *ret) {
        size_t n = s ? strlen(s) : 0;
        bool percent = n > 0 && s[n - 1] == '%';
        char *end;
        double v;

        if (n == 0 || !(isdigit((unsigned char) s[0]) || s[0] == '.'))
                return -EINVAL;
        errno = 0;
        v = strtod(s, &end);
        if (errno != 0 || end != s + n - percent || !isfinite(v))
                return -EINVAL;
        if (percent)
                v /= 100.0;
        if (v < 0.0 || v > 1.0)
                return -ERANGE;
        *ret = v;
        return 0;
}

/* A number followed by one of UNITS (name -> multiplier); the first unit is the default. */
struct unit {
        const char *suffix;
        uint64_t factor;
};

static int parse_with_units(const char *s, const struct unit *units, size_t n_units, uint64_t *ret) {
        uint64_t v = 0;
        const char *p = s;

        if (!s || !isdigit((unsigned char) *p))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        while (*p == ' ')
                p++;
        for (size_t i = 0; i < n_units; i++)
                if (streq(p, units[i].suffix)) {
                        if (units[i].factor && v > UINT64_MAX / units[i].factor)
                                return -ERANGE;
                        *ret = v * units[i].factor;
                        return 0;
                }
        return -EINVAL;
}

int parse_duration(const char *s, uint64_t *ret_usec) {
        static const struct unit units[] = {
                { "", 1000000ULL },       { "s", 1000000ULL },    { "sec", 1000000ULL },
                { "ms", 1000ULL },        { "us", 1ULL },         { "m", 60000000ULL },
                { "min", 60000000ULL },   { "h", 3600000000ULL }, { "d", 86400000000ULL },
                { "w", 604800000000ULL },
        };

        return parse_with_units(s, units, ELEMENTSOF(units), ret_usec);
}

int parse_size(const char *s, uint64_t *ret) {
        static const struct unit units[] = {
                { "", 1 },           { "B", 1 },
                { "K", 1ULL << 10 }, { "KiB", 1ULL << 10 },
                { "M", 1ULL << 20 }, { "MiB", 1ULL << 20 },
                { "G", 1ULL << 30 }, { "GiB", 1ULL << 30 },
                { "T", 1ULL << 40 }, { "TiB", 1ULL << 40 },
        };

        return parse_with_units(s, units, ELEMENTSOF(units), ret);
}

int parse_boolean(const char *s, bool *ret) {
        static const char *const yes[] = { "yes", "true", "on", "1" },
                                 *const no[] = { "no", "false", "off", "0" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (streq(s, yes[i])) {
                        *ret = true;
                        return 0;
                }
                if (streq(s, no[i])) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

static int local_midnight(int64_t now, int days_back, int64_t *ret) {
        time_t t = now;
        struct tm tm;

        if (!localtime_r(&t, &tm))
                return -EINVAL;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        tm.tm_mday -= days_back;
        tm.tm_isdst = -1;
        *ret = mktime(&tm);
        return 0;
}

int parse_timestamp(const char *s, int64_t now, int64_t *ret) {
        size_t n = s ? strlen(s) : 0;
        uint64_t usec, secs;
        struct tm tm = {};
        const char *end;
        char buf[64];

        if (n == 0 || n >= sizeof buf)
                return -EINVAL;
        if (streq(s, "now")) {
                *ret = now;
                return 0;
        }
        if (streq(s, "today"))
                return local_midnight(now, 0, ret);
        if (streq(s, "yesterday"))
                return local_midnight(now, 1, ret);
        if (s[0] == '@') {
                if (safe_atou64(s + 1, &secs) < 0 || secs > INT64_MAX)
                        return -EINVAL;
                *ret = secs;
                return 0;
        }
        if (s[0] == '-' || (n > 4 && streq(s + n - 4, " ago"))) {
                memcpy(buf, s[0] == '-' ? s + 1 : s, n);
                buf[s[0] == '-' ? n - 1 : n - 4] = '\0';
                if (parse_duration(buf, &usec) < 0 || usec / 1000000 > (uint64_t) now)
                        return -EINVAL;
                *ret = now - (int64_t) (usec / 1000000);
                return 0;
        }
        for (const char *const *f =
                     (const char *const[]) { "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d", NULL };
             *f; f++) {
                memset(&tm, 0, sizeof tm);
                end = strptime(s, *f, &tm);
                if (end && *end == '\0') {
                        tm.tm_isdst = -1;
                        *ret = mktime(&tm);
                        return 0;
                }
        }
        return -EINVAL;
}
