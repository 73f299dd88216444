/* The fleet client's pure parts, worked by hand: clickhouse:// URLs and their refusals, the
 * escapes of quoted literals and TabSeparated fields (and back), credentials files, and the
 * stack hash (FNV-1a, checked against its published test vector and for what it must tell
 * apart). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ch-client.h"
#include "ch-write.h"
#include "tap.h"

static int parse(const char *s, struct ch_url *u, const char **why) {
        *u = (struct ch_url) {};
        *why = NULL;
        return ch_url_parse(s, u, why);
}

static void test_urls(void) {
        struct ch_url u;
        const char *why;

        ok(parse("clickhouse://ch1.example:9123/fleet", &u, &why) == 0 && streq(u.host, "ch1.example") &&
                   u.port == 9123 && streq(u.db, "fleet") && !u.user,
           "host, port and database");
        ch_url_done(&u);
        ok(parse("clickhouse://ch1/fleet", &u, &why) == 0 && u.port == 8123, "the port defaults to 8123");
        ch_url_done(&u);
        ok(parse("clickhouse://ops@10.0.0.7:8123/prof_2", &u, &why) == 0 && streq(u.user, "ops") &&
                   streq(u.host, "10.0.0.7") && streq(u.db, "prof_2"),
           "a user before @");
        ch_url_done(&u);
        ok(parse("clickhouse://[::1]:8124/f", &u, &why) == 0 && streq(u.host, "::1") && u.port == 8124,
           "an IPv6 address in brackets");
        ch_url_done(&u);

        ok(parse("http://ch1:8123/fleet", &u, &why) == -EINVAL && why && strstr(why, "scheme"),
           "another scheme is refused by name");
        ok(parse("ch1:8123/fleet", &u, &why) == -EINVAL && why, "no scheme at all");
        ok(parse("clickhouse://ops:s3cret@ch1/fleet", &u, &why) == -EINVAL && strstr(why, "a password") &&
                   !strstr(why, "s3cret"),
           "a password in the URL: refused, not quoted: %s", why);
        ok(parse("clickhouse://ch1:8123", &u, &why) == -EINVAL && strstr(why, "no database"), "no /DB");
        ok(parse("clickhouse://ch1:8123/", &u, &why) == -EINVAL && strstr(why, "no database"), "an empty DB");
        ok(parse("clickhouse:///fleet", &u, &why) == -EINVAL && streq(why, "no host"), "no host");
        ok(parse("clickhouse://:8123/fleet", &u, &why) == -EINVAL && streq(why, "no host"), "only a port");
        ok(parse("clickhouse://ch1:0/f", &u, &why) == -EINVAL && strstr(why, "bad port"), "port 0");
        ok(parse("clickhouse://ch1:65536/f", &u, &why) == -EINVAL && strstr(why, "bad port"), "port 65536");
        ok(parse("clickhouse://ch1:80x/f", &u, &why) == -EINVAL && strstr(why, "bad port"), "port 80x");
        ok(parse("clickhouse://ch1:/f", &u, &why) == -EINVAL && strstr(why, "bad port"), "an empty port");
        ok(parse("clickhouse://ch1:-1/f", &u, &why) == -EINVAL && strstr(why, "bad port"), "a negative port");
        ok(parse("clickhouse://ch1/fl;DROP", &u, &why) == -EINVAL && strstr(why, "database name"),
           "a database name with SQL in it");
        ok(parse("clickhouse://ch1/9x", &u, &why) == -EINVAL && strstr(why, "digit"),
           "a database name starting with a digit");
        ok(parse("clickhouse://@ch1/f", &u, &why) == -EINVAL && strstr(why, "empty user"), "an empty user");
        ok(parse("clickhouse://a b/f", &u, &why) == -EINVAL && strstr(why, "host"), "a blank in the host");
        ok(parse("clickhouse://[::1/f", &u, &why) == -EINVAL && strstr(why, "IPv6"), "an unclosed [");
        ok(ch_url_is("clickhouse://x/y") && !ch_url_is("fleet.db") && !ch_url_is(NULL), "ch_url_is()");
}

static void test_escapes(void) {
        _cleanup_(ch_buf_done) struct ch_buf b = {};
        char field[64];

        ok(ch_buf_tsv(&b, "a\tb\nc\\d'e") == 0 && streq(b.data, "a\\tb\\nc\\\\d\\'e"),
           "TSV: tab, newline, backslash and quote escaped");
        ch_buf_done(&b);
        ok(ch_buf_quote(&b, "it's\\") == 0 && streq(b.data, "'it\\'s\\\\'"), "a quoted literal");
        ch_buf_done(&b);
        ok(ch_buf_tsv(&b, "\r\b\f") == 0 && streq(b.data, "\\r\\b\\f"),
           "carriage return, backspace, form feed");
        ch_buf_done(&b);
        ok(ch_buf_tsv(&b, NULL) == 0 && b.len == 0, "NULL is the empty field");
        ch_buf_done(&b);

        strcpy(field, "a\\tb\\nc\\\\d\\'e");
        ok(ch_tsv_unescape(field, strlen(field)) == 9 && streq(field, "a\tb\nc\\d'e"), "and back");
        strcpy(field, "x\\0y");
        ok(ch_tsv_unescape(field, 4) == 3 && field[1] == 0 && field[2] == 'y', "\\0 is a NUL byte");
        strcpy(field, "bad\\q");
        ok(ch_tsv_unescape(field, strlen(field)) == -EBADMSG, "an unknown escape: -EBADMSG");
        strcpy(field, "end\\");
        ok(ch_tsv_unescape(field, strlen(field)) == -EBADMSG, "a lone trailing backslash: -EBADMSG");

        /* round trip over every byte */
        {
                char all[256], copy[1024];
                int n;

                for (int i = 0; i < 255; i++)
                        all[i] = (char) (i + 1);
                all[255] = 0;
                ok(ch_buf_tsv(&b, all) == 0 && !memchr(b.data, '\t', b.len) && !memchr(b.data, '\n', b.len),
                   "no tab or newline survives escaping");
                memcpy(copy, b.data, b.len);
                n = ch_tsv_unescape(copy, b.len);
                ok(n == 255 && memcmp(copy, all, 255) == 0, "every byte comes back");
                ch_buf_done(&b);
        }
}

static const char *write_file(const char *text, mode_t mode) {
        static char path[] = "/tmp/test-ch-client-XXXXXX";
        int fd;

        strcpy(path, "/tmp/test-ch-client-XXXXXX");
        fd = mkstemp(path);
        if (fd < 0)
                return NULL;
        if (write(fd, text, strlen(text)) != (ssize_t) strlen(text)) {
                close(fd);
                return NULL;
        }
        fchmod(fd, mode);
        close(fd);
        return path;
}

static void test_credentials(void) {
        struct ch_client *c = NULL;
        const char *why = NULL, *path;

        path = write_file("reader\ns3cret\n", 0600);
        ok(path && ch_client_open("clickhouse://h/db", path, &c, &why) == 0, "user and password lines");
        c = ch_client_free(c);
        unlink(path);
        path = write_file("reader\ns3cret\n", 0640);
        ok(path && ch_client_open("clickhouse://h/db", path, &c, &why) == -EPERM && strstr(why, "chmod 600"),
           "a file the group may read is refused");
        unlink(path);
        path = write_file("reader only", 0600);
        ok(path && ch_client_open("clickhouse://h/db", path, &c, &why) == -EBADMSG && strstr(why, "second"),
           "a file of one line is refused");
        unlink(path);
        path = write_file("a\nb\nc\n", 0600);
        ok(path && ch_client_open("clickhouse://h/db", path, &c, &why) == -EBADMSG &&
                   strstr(why, "more than two"),
           "a file of three lines is refused");
        unlink(path);
        ok(ch_client_open("clickhouse://h/db", "/nonexistent/creds", &c, &why) == -ENOENT &&
                   strstr(why, "/nonexistent/creds"),
           "a missing file is named");
        ok(ch_client_open("clickhouse://h/db", NULL, &c, &why) == 0, "no credentials: the default user");
        c = ch_client_free(c);
}

static void test_hash(void) {
        struct ch_frame a[2] = { { .function = "main", .address = -1 }, { .function = "f", .address = -1 } };
        struct ch_frame b[2] = { { .function = "mai", .address = -1 }, { .function = "nf", .address = -1 } };
        struct ch_frame c[2] = { { .function = "f", .address = -1 }, { .function = "main", .address = -1 } };
        struct ch_frame d[2] = { { .function = "main", .address = -1 },
                                 { .function = "f", .address = -1, .inlined = true } };
        struct ch_frame e[2] = { { .function = "main", .address = -1 },
                                 { .function = "f", .address = -1, .line = 1 } };
        uint64_t h = ch_stack_hash(a, 2);

        /* FNV-1a 64 of nothing is its offset basis */
        ok(ch_stack_hash(NULL, 0) == UINT64_C(0xcbf29ce484222325), "no frames: the FNV-1a offset basis");
        ok(h == ch_stack_hash(a, 2), "the same frames, the same hash");
        ok(h != ch_stack_hash(b, 2), "names split differently hash differently");
        ok(h != ch_stack_hash(c, 2), "the order of frames counts");
        ok(h != ch_stack_hash(d, 2), "an inlined frame counts");
        ok(h != ch_stack_hash(e, 2), "a line counts");
        ok(h != ch_stack_hash(a, 1), "a prefix differs");
}

int main(void) {
        test_urls();
        test_escapes();
        test_credentials();
        test_hash();
        return tap_done();
}
