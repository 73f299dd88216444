/* A minimal TAP producer for unit tests (meson: protocol 'tap'). ok() prints one test line;
 * is_int() also shows both values when they differ; tap_done() prints the plan and returns the
 * exit status. */
#pragma once

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static unsigned tap_n, tap_failed;

__attribute__((format(printf, 2, 3))) static inline bool ok(bool pass, const char *format, ...) {
        va_list ap;

        tap_n++;
        if (!pass)
                tap_failed++;
        printf("%sok %u - ", pass ? "" : "not ", tap_n);
        va_start(ap, format);
        vprintf(format, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
        return pass;
}

#define is_int(got, want, ...) \
        do { \
                int64_t _g = (int64_t) (got), _w = (int64_t) (want); \
                if (!ok(_g == _w, __VA_ARGS__)) \
                        printf("#   got %" PRId64 ", want %" PRId64 "\n", _g, _w); \
        } while (0)

static inline void diag(const char *s) {
        printf("# %s\n", s);
}

static inline int tap_done(void) {
        printf("1..%u\n", tap_n);
        return tap_failed ? 1 : 0;
}
