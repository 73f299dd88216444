/* The control protocol's lines: round trips, escaping, and refusal of anything out of bounds. */
#include <errno.h>
#include <string.h>

#include "protocol.h"
#include "tap.h"

static int parse(const char *line, struct protocol_message *m) {
        return protocol_parse(line, strlen(line), m);
}

int main(void) {
        static struct protocol_message m;
        char buf[PROTOCOL_MAX_LINE + 64], long_value[5000];
        int n;

        ok(parse("status", &m) == 0 && strcmp(m.word, "status") == 0 && m.n_fields == 0, "a bare word");
        ok(parse("attach pid=42 resources=cpu-time/1,page-faults duration=2.5", &m) == 0 && m.n_fields == 3,
           "a word with fields");
        ok(strcmp(protocol_get(&m, "pid"), "42") == 0 &&
                   strcmp(protocol_get(&m, "resources"), "cpu-time/1,page-faults") == 0,
           "values");
        ok(protocol_get(&m, "unit") == NULL, "an absent key: NULL");
        ok(parse("x msg=hello%20world%21", &m) == 0 && strcmp(protocol_get(&m, "msg"), "hello world!") == 0,
           "%%XX escapes decode");
        ok(parse("x empty=", &m) == 0 && strcmp(protocol_get(&m, "empty"), "") == 0, "an empty value");

        n = protocol_format(buf, sizeof buf, "error",
                            (const char *const[]) { "errno", "EACCES", "message", "no, you may not\n(100%)",
                                                    NULL });
        ok(n > 0 && strcmp(buf, "error errno=EACCES message=no,%20you%20may%20not%0A%28100%25%29\n") == 0,
           "formatting escapes spaces, newlines, parentheses and %%");
        ok(parse(buf, &m) < 0, "a formatted line keeps its newline: the parser takes it off first");
        buf[n - 1] = '\0';
        ok(parse(buf, &m) == 0 && strcmp(protocol_get(&m, "message"), "no, you may not\n(100%)") == 0,
           "and round-trips");
        n = protocol_format(buf, sizeof buf, "x", (const char *const[]) { "a", NULL, "b", "1", NULL });
        ok(n > 0 && strcmp(buf, "x b=1\n") == 0, "a NULL value leaves its field out");
        memset(long_value, 'a', sizeof long_value - 1);
        long_value[sizeof long_value - 1] = '\0';
        ok(protocol_format(buf, sizeof buf, "x", (const char *const[]) { "v", long_value, NULL }) == -ENOBUFS,
           "a line over the limit: -ENOBUFS");

        ok(parse("", &m) == -EBADMSG, "empty: -EBADMSG");
        ok(parse("Status", &m) == -EBADMSG, "uppercase: -EBADMSG");
        ok(parse("status ", &m) == -EBADMSG, "a trailing space: -EBADMSG");
        ok(parse("attach pid", &m) == -EBADMSG, "a field without =: -EBADMSG");
        ok(parse("attach =5", &m) == -EBADMSG, "an empty key: -EBADMSG");
        ok(parse("x v=a b", &m) == -EBADMSG, "a bare word after fields: -EBADMSG");
        ok(parse("x v=%4", &m) == -EBADMSG, "a cut escape: -EBADMSG");
        ok(parse("x v=%zz", &m) == -EBADMSG, "a bad escape: -EBADMSG");
        ok(parse("x v=%00", &m) == -EBADMSG, "an escaped NUL: -EBADMSG");
        ok(parse("x v=(1)", &m) == -EBADMSG, "an unescaped parenthesis: -EBADMSG");
        ok(protocol_parse("x v=a\0b", 7, &m) == -EBADMSG, "a NUL: -EBADMSG");
        ok(parse("x a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=10 k=11 l=12 m=13 n=14 o=15 p=16 "
                 "q=17 r=18 s=19 t=20 u=21 v=22 w=23 x=24 y=25 z=26 aa=27 bb=28 cc=29 dd=30 ee=31 ff=32",
                 &m) == 0,
           "32 fields");
        ok(parse("x a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=10 k=11 l=12 m=13 n=14 o=15 p=16 "
                 "q=17 r=18 s=19 t=20 u=21 v=22 w=23 x=24 y=25 z=26 aa=27 bb=28 cc=29 dd=30 ee=31 ff=32 gg=33",
                 &m) == -EBADMSG,
           "33: -EBADMSG");
        ok(parse("abcdefghijabcdefghijabcdefghijabcdefghij", &m) == -EBADMSG,
           "a word over 31 bytes: -EBADMSG");
        memset(long_value, 'a', PROTOCOL_MAX_LINE);
        ok(protocol_parse(long_value, PROTOCOL_MAX_LINE, &m) == -EBADMSG, "a line of %d bytes: -EBADMSG",
           PROTOCOL_MAX_LINE);
        return tap_done();
}
