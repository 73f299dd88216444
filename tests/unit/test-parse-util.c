/* Checked number parsing. */
#include <errno.h>

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
        return tap_done();
}
