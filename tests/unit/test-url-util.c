/* Passwords out of the URLs that messages quote. */
#include <string.h>

#include "cleanup.h"
#include "tap.h"
#include "url-util.h"

int main(void) {
        static const struct {
                const char *url, *shown;
        } cases[] = {
                { "clickhouse://user:secret@host/db", "clickhouse://user:***@host/db" },
                { "clickhouse://user:s:e@c@host:8123/db", "clickhouse://user:***@host:8123/db" },
                { "http://u:p@[::1]:4040/x?a=b@c", "http://u:***@[::1]:4040/x?a=b@c" },
                { "clickhouse://user@host/db", "clickhouse://user@host/db" },
                { "clickhouse://host:8123/db", "clickhouse://host:8123/db" },
                { "http://host/path:a@b", "http://host/path:a@b" },
                { "not a url: a@b", "not a url: a@b" },
        };
        char buf[128], small[16];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                ok(streq(url_redact(cases[i].url, buf, sizeof buf), cases[i].shown), "%s -> %s", cases[i].url,
                   buf);
        ok(streq(url_redact("clickhouse://user:secret@host/db", small, sizeof small), "clickhouse://us"),
           "cut to the buffer, still without the password");
        return tap_done();
}
