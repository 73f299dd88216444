/* Checked number parsing. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "parse-util.h"
#include "tap.h"

int main(void) {
        uint64_t u;
        double d;

        ok(safe_atou64("42", &u) == 0 && u == 42, "42");
        ok(safe_atou64("18446744073709551615", &u) == 0 && u == UINT64_MAX, "2^64-1");
        ok(safe_atou64("18446744073709551616", &u) == -ERANGE, "2^64: -ERANGE");
        ok(safe_atou64("-1", &u) == -EINVAL, "-1: -EINVAL");
        ok(safe_atou64(" 1", &u) == -EINVAL, "a leading blank: -EINVAL");
        ok(safe_atou64("1x", &u) == -EINVAL, "trailing junk: -EINVAL");
        ok(safe_atou64("", &u) == -EINVAL, "empty: -EINVAL");
        ok(safe_atou64_range("0", 1, 10, &u) == -ERANGE, "below the range: -ERANGE");
        ok(safe_atou64_range("10", 1, 10, &u) == 0 && u == 10, "at the top of the range");

        ok(parse_fraction("0.05", &d) == 0 && d == 0.05, "0.05");
        ok(parse_fraction("5%", &d) == 0 && d > 0.0499 && d < 0.0501, "5%% is 0.05");
        ok(parse_fraction(".5", &d) == 0 && d == 0.5, ".5");
        ok(parse_fraction("1", &d) == 0 && d == 1.0, "1");
        ok(parse_fraction("0", &d) == 0 && d == 0.0, "0");
        ok(parse_fraction("1.5", &d) == -ERANGE, "1.5: -ERANGE");
        ok(parse_fraction("200%", &d) == -ERANGE, "200%%: -ERANGE");
        ok(parse_fraction("-0.1", &d) == -EINVAL, "negative: -EINVAL");
        ok(parse_fraction("nan", &d) == -EINVAL, "nan: -EINVAL");
        ok(parse_fraction("0.1x", &d) == -EINVAL, "trailing junk: -EINVAL");
        ok(parse_fraction("%", &d) == -EINVAL, "a bare %%: -EINVAL");

        ok(parse_duration("5s", &u) == 0 && u == 5000000, "5s");
        ok(parse_duration("500ms", &u) == 0 && u == 500000, "500ms");
        ok(parse_duration("10min", &u) == 0 && u == 600000000ULL, "10min");
        ok(parse_duration("7d", &u) == 0 && u == 7 * 86400000000ULL, "7d");
        ok(parse_duration("30", &u) == 0 && u == 30000000, "a bare number is seconds");
        ok(parse_duration("5 s", &u) == 0 && u == 5000000, "a space before the unit");
        ok(parse_duration("5x", &u) == -EINVAL, "an unknown unit: -EINVAL");
        ok(parse_duration("s", &u) == -EINVAL, "no number: -EINVAL");
        ok(parse_duration("99999999999w", &u) == -ERANGE, "too long: -ERANGE");
        ok(parse_size("1G", &u) == 0 && u == 1ULL << 30, "1G");
        ok(parse_size("512MiB", &u) == 0 && u == 512ULL << 20, "512MiB");
        ok(parse_size("4096", &u) == 0 && u == 4096, "4096");
        ok(parse_size("1.5G", &u) == -EINVAL, "1.5G: -EINVAL");
        {
                bool b;
                int64_t t;
                const int64_t now = 1700000000; /* 2023-11-14 22:13:20 UTC */

                ok(parse_boolean("yes", &b) == 0 && b && parse_boolean("off", &b) == 0 && !b, "booleans");
                ok(parse_boolean("maybe", &b) == -EINVAL, "maybe: -EINVAL");
                ok(parse_timestamp("@1234", now, &t) == 0 && t == 1234, "@1234");
                ok(parse_timestamp("-2h", now, &t) == 0 && t == now - 7200, "-2h");
                ok(parse_timestamp("30min ago", now, &t) == 0 && t == now - 1800, "30min ago");
                ok(parse_timestamp("now", now, &t) == 0 && t == now, "now");
                setenv("TZ", "UTC", 1);
                tzset();
                ok(parse_timestamp("2023-11-14 10:00", now, &t) == 0 && t == 1699956000,
                   "2023-11-14 10:00 (UTC)");
                ok(parse_timestamp("2023-11-14", now, &t) == 0 && t == 1699920000, "2023-11-14");
                ok(parse_timestamp("today", now, &t) == 0 && t == 1699920000, "today");
                ok(parse_timestamp("yesterday", now, &t) == 0 && t == 1699920000 - 86400, "yesterday");
                ok(parse_timestamp("2023-13-40", now, &t) == -EINVAL, "a bad date: -EINVAL");
                ok(parse_timestamp("soon", now, &t) == -EINVAL, "soon: -EINVAL");
        }
        return tap_done();
}
