/* Checked number parsing. strtoull() alone accepts "-1", leading blanks and trailing junk; the
 * helpers here refuse all three so that a typo on the command line or in a file is an error. */
#include "parse-util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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
