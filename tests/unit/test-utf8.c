/* UTF-8 decoding by RFC 3629's table, the U+FFFD copy that protobuf strings need, and the escape
 * that keeps a server's bytes from driving a terminal. */
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "tap.h"
#include "utf8.h"

static void test_decode(void) {
        static const struct {
                const char *bytes;
                size_t len;
                uint32_t cp;
        } cases[] = {
                { "a", 1, 'a' },
                { "\xc2\x80", 2, 0x80 },
                { "\xdf\xbf", 2, 0x7ff },
                { "\xe0\xa0\x80", 3, 0x800 },
                { "\xed\x9f\xbf", 3, 0xd7ff },
                { "\xef\xbf\xbd", 3, 0xfffd },
                { "\xf0\x90\x80\x80", 4, 0x10000 },
                { "\xf4\x8f\xbf\xbf", 4, 0x10ffff },
                /* not well-formed: */
                { "\x80", 0, 0 },             /* a stray continuation byte */
                { "\xc0\xaf", 0, 0 },         /* overlong '/' */
                { "\xc1\xbf", 0, 0 },         /* overlong */
                { "\xe0\x9f\xbf", 0, 0 },     /* overlong U+07FF */
                { "\xed\xa0\x80", 0, 0 },     /* a surrogate, U+D800 */
                { "\xf0\x8f\xbf\xbf", 0, 0 }, /* overlong U+FFFF */
                { "\xf4\x90\x80\x80", 0, 0 }, /* U+110000 */
                { "\xf5\x80\x80\x80", 0, 0 },
                { "\xff", 0, 0 },
                { "\xe2\x82", 0, 0 }, /* cut short by the NUL */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint32_t cp = 0;
                size_t n = utf8_decode(cases[i].bytes, SIZE_MAX, &cp);

                ok(n == cases[i].len && (n == 0 || cp == cases[i].cp), "case %zu: %zu bytes, U+%04X", i, n,
                   (unsigned) cp);
        }
        ok(utf8_decode("\xe2\x82\xac", 2, NULL) == 0, "a character past LEFT is cut short");
        ok(utf8_decode("", 0, NULL) == 0, "nothing left: 0");
}

static void test_make_valid(void) {
        _cleanup_free_ char *a = utf8_make_valid("bad\xff\xfeutf");
        _cleanup_free_ char *b = utf8_make_valid("caf\xc3\xa9 \xed\xa0\x80");
        _cleanup_free_ char *c = utf8_make_valid("");

        ok(a && streq(a, "bad\xef\xbf\xbd\xef\xbf\xbdutf"), "each stray byte becomes U+FFFD");
        ok(b && streq(b, "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"),
           "well-formed characters stay; a surrogate's three bytes are three U+FFFD");
        ok(c && streq(c, ""), "an empty string stays empty");
}

static void test_escape(void) {
        static const char text[] = "Code: 1\x1b[2J\x1b]0;owned\x07 caf\xc3\xa9\xc2\x9b\xff\n";
        char buf[128], small[12];

        ok(streq(utf8_escape(text, sizeof text - 1, buf, sizeof buf),
                 "Code: 1\\x1b[2J\\x1b]0;owned\\x07 caf\xc3\xa9\\xc2\\x9b\\xff\\x0a"),
           "ESC, BEL, C1 CSI, a stray byte and a newline escaped; printable UTF-8 kept: %s", buf);
        ok(streq(utf8_escape("a\0b", 3, buf, sizeof buf), "a\\x00b"), "a NUL inside is escaped");
        ok(streq(utf8_escape("0123456789\x1b", 11, small, sizeof small), "0123456789"),
           "cut before an escape that does not fit whole");
        ok(streq(utf8_escape("012345678\xc3\xa9", 11, small, 11), "012345678"),
           "cut at a character's boundary");
}

int main(void) {
        test_decode();
        test_make_valid();
        test_escape();
        return tap_done();
}
