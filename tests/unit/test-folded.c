/* The folded-stack line parser on good lines, odd-but-valid lines and nonsense. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "tap.h"

static struct folded_frame frames[FOLDED_MAX_FRAMES];

static int parse(const char *line, size_t *n, uint64_t *count) {
        return folded_parse_line(line, strlen(line), frames, n, count);
}

static bool frame_is(size_t i, const char *name) {
        return frames[i].len == strlen(name) && memcmp(frames[i].name, name, frames[i].len) == 0;
}

int main(void) {
        char *big;
        size_t n;
        uint64_t count;

        ok(parse("main;f;g 12\n", &n, &count) == 1 && n == 3 && count == 12, "main;f;g 12");
        ok(frame_is(0, "main") && frame_is(1, "f") && frame_is(2, "g"), "frames root first");
        ok(parse("main 1", &n, &count) == 1 && n == 1 && count == 1, "one frame, no newline");
        ok(parse("a;b 7\r\n", &n, &count) == 1 && count == 7, "CRLF line ending");
        ok(parse("std::vector<int>::push_back(int const&);operator new(unsigned long) 3\n", &n, &count) ==
                           1 &&
                   n == 2 && frame_is(1, "operator new(unsigned long)"),
           "names with spaces: the count follows the last one");
        ok(parse("a;b  5\n", &n, &count) == 1 && frame_is(1, "b"),
           "extra spaces before the count are not part of the name");
        ok(parse("main;f 9223372036854775807\n", &n, &count) == 1 && count == FOLDED_MAX_COUNT,
           "the largest count");
        ok(parse("main;f 0\n", &n, &count) == 1 && count == 0, "a zero count parses (the importer skips it)");

        ok(parse("\n", &n, &count) == 0, "a blank line is skipped");
        ok(parse("   \n", &n, &count) == 0, "a line of spaces is skipped");
        ok(parse("# a comment 12\n", &n, &count) == 0, "a comment is skipped");

        ok(parse("main;f\n", &n, &count) == -EBADMSG, "no count: -EBADMSG");
        ok(parse("main;f x\n", &n, &count) == -EBADMSG, "a word for a count: -EBADMSG");
        ok(parse("main;f -3\n", &n, &count) == -EBADMSG, "a negative count: -EBADMSG");
        ok(parse("main;f 18446744073709551616\n", &n, &count) == -ERANGE, "a count past 2^64-1: -ERANGE");
        ok(parse("main;;f 3\n", &n, &count) == -EBADMSG, "an empty frame: -EBADMSG");
        ok(parse(";f 3\n", &n, &count) == -EBADMSG, "an empty first frame: -EBADMSG");
        ok(parse("main; 3\n", &n, &count) == -EBADMSG, "an empty last frame: -EBADMSG");
        ok(parse(" 3\n", &n, &count) == -EBADMSG, "only a count: -EBADMSG");
        ok(folded_parse_line("ma\0in 3\n", 8, frames, &n, &count) == -EILSEQ, "a NUL byte: -EILSEQ");
        ok(parse("main 9223372036854775808\n", &n, &count) == -ERANGE, "2^63: -ERANGE");
        ok(parse("main 99999999999999999999999\n", &n, &count) == -ERANGE, "past 64 bits: -ERANGE");

        big = malloc(2 * FOLDED_MAX_FRAMES + 16);
        for (size_t i = 0; i < FOLDED_MAX_FRAMES; i++)
                memcpy(big + 2 * i, "a;", 2);
        strcpy(big + 2 * FOLDED_MAX_FRAMES - 1, " 1\n");
        ok(parse(big, &n, &count) == 1 && n == FOLDED_MAX_FRAMES, "exactly %d frames parse",
           FOLDED_MAX_FRAMES);
        strcpy(big + 2 * FOLDED_MAX_FRAMES - 1, ";a 1\n");
        ok(parse(big, &n, &count) == -E2BIG, "one more: -E2BIG");
        free(big);

        big = malloc(FOLDED_MAX_NAME + 16);
        memset(big, 'x', FOLDED_MAX_NAME + 1);
        strcpy(big + FOLDED_MAX_NAME + 1, " 1\n");
        ok(parse(big, &n, &count) == -EBADMSG, "a name over %d bytes: -EBADMSG", FOLDED_MAX_NAME);
        free(big);
        return tap_done();
}
