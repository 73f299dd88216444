/* Bounded line reading, and the readers of outside text that use it (perf-PID.map): a line
 * past the bound is refused before it is held in memory, NUL bytes are kept. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "perf-map.h"
#include "read-line.h"
#include "tap.h"

static void test_read_line(void) {
        static const char text[] = "one\nt\0o\n\nlast";
        _cleanup_fclose_ FILE *f = fmemopen((void *) text, sizeof text - 1, "r");
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;

        ok(read_line(f, 16, &line, &cap) == 4 && streq(line, "one\n"), "a line with its newline");
        ok(read_line(f, 16, &line, &cap) == 4 && memcmp(line, "t\0o\n", 4) == 0, "a NUL byte is kept");
        ok(read_line(f, 16, &line, &cap) == 1 && streq(line, "\n"), "an empty line");
        ok(read_line(f, 16, &line, &cap) == 4 && streq(line, "last"), "the last line, without a newline");
        ok(read_line(f, 16, &line, &cap) == 0, "then the end");
}

static void test_bound(void) {
        size_t size = 1 << 20, cap = 0;
        _cleanup_free_ char *zeros = calloc(1, size), *line = NULL;
        _cleanup_fclose_ FILE *f = fmemopen(zeros, size, "r");

        ok(read_line(f, 1000, &line, &cap) == -E2BIG, "a line past the bound: -E2BIG");
        ok(cap <= 1001, "the buffer never grew past the bound (%zu bytes)", cap);
        ok(ftell(f) <= 1001, "and the rest of the line was not read");
}

static void test_perf_map(void) {
        size_t size = PERF_MAP_MAX_LINE + 100;
        _cleanup_free_ char *text = malloc(size);
        _cleanup_(name_table_freep) struct name_table *names = name_table_new();
        struct symtab *t = NULL;
        FILE *f;

        memset(text, 'x', size);
        memcpy(text, "1000 10 ", 8);
        f = fmemopen(text, size, "r");
        ok(perf_map_load(f, names, &t) == -EBADMSG,
           "perf-PID.map: a line past PERF_MAP_MAX_LINE is -EBADMSG");
        fclose(f);
}

int main(void) {
        test_read_line();
        test_bound();
        test_perf_map();
        return tap_done();
}
