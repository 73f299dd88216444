/* The configuration file: defaults, every key, and errors with their line numbers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "tap.h"

static int parse(const char *text, struct config *c, unsigned *line, char *error) {
        return config_parse(text, strlen(text), c, line, error, 256);
}

int main(void) {
        struct config c, d;
        char error[256];
        unsigned line;

        config_defaults(&d);
        ok(parse("", &c, &line, error) == 0 && memcmp(&c, &d, sizeof c) == 0, "an empty file: the defaults");
        ok(d.n_resources == 3 && strcmp(d.resources[0].name, "cpu-time") == 0 && d.resources[0].period == 10,
           "default resources: cpu-time/10 and two more");
        ok(strcmp(d.store_path, "/var/lib/cppd/cppd.db") == 0 &&
                   strcmp(d.socket_path, "/run/cppd/cppd.sock") == 0,
           "default paths");

        ok(parse("# comment\n"
                 "[collect]\n"
                 "resources = cpu-time/1, syscalls , event:cpu-migrations/5\n"
                 "unwind = fp\n"
                 "kernel = yes\n"
                 "stack_size = 4K\n"
                 "ring_size = 2M\n"
                 "queue_size = 16M\n"
                 "[store]\n"
                 "  path = /srv/cppd.db  \n"
                 "flush_interval = 250ms\n"
                 "bucket = 10s\n"
                 "retention = 30d\n"
                 "max_size = 512M\n"
                 "granularity = line\n"
                 "[control]\n"
                 "socket = /run/x.sock\n"
                 "group = root\n"
                 "max_sessions = 3\n",
                 &c, &line, error) == 0,
           "every key");
        ok(c.n_resources == 3 && c.resources[0].period == 1 && strcmp(c.resources[1].name, "syscalls") == 0 &&
                   c.resources[1].period == 0 && c.resources[2].event &&
                   strcmp(c.resources[2].name, "cpu-migrations") == 0,
           "resources with and without periods, and an event");
        ok(c.unwind == UNWIND_FP && c.kernel && c.stack_size == 4096 && c.ring_size == 2u << 20 &&
                   c.queue_size == 16u << 20,
           "[collect]");
        ok(strcmp(c.store_path, "/srv/cppd.db") == 0 && c.flush_interval == 250000 && c.bucket == 10000000 &&
                   c.retention == 30 * 86400 * 1000000ULL && c.max_size == 512u << 20 && c.lines,
           "[store], values stripped");
        ok(strcmp(c.socket_path, "/run/x.sock") == 0 && strcmp(c.group, "root") == 0 && c.gid == 0 &&
                   c.max_sessions == 3,
           "[control], the group's id looked up");
        ok(!d.lines, "frames are functions by default");
        c = d;
        ok(parse("[store]\ngranularity = file\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "granularity must be function or line"),
           "another granularity: %s", error);

        ok(d.alloc_units[0] == '\0' && d.n_alloc_resources == 2 && d.alloc_max_processes == 16,
           "[alloc]: off by default, both resources, 16 processes per libc");
        c = d;
        ok(parse("[alloc]\nunits = a.service b-c@1.service\nresources = alloc-bytes/65536\nmax_processes = 4\n",
                 &c, &line, error) == 0 &&
                   strcmp(c.alloc_units, "a.service b-c@1.service") == 0 && c.n_alloc_resources == 1 &&
                   c.alloc_resources[0].period == 65536 && c.alloc_max_processes == 4,
           "[alloc]: units, resources, max_processes");
        c = d;
        ok(parse("[alloc]\nresources = cpu-time\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "[alloc] resources are alloc-bytes and alloc-count"),
           "[alloc] resources: only alloc-*: %s", error);
        ok(parse("[alloc]\nunits = a.service;rm\n", &c, &line, error) == -EBADMSG,
           "[alloc] units: names only");
        ok(parse("[collect]\nresources = alloc-bytes\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "[alloc] units"),
           "alloc-bytes in [collect] resources: refused, naming [alloc] units: %s", error);
        c = d;
        ok(parse("[collect]\nresources = cpu-tim\n", &c, &line, error) == -EBADMSG && line == 2 &&
                   strstr(error, "unknown resource 'cpu-tim'"),
           "a misspelt resource: line 2, %s", error);
        ok(memcmp(&c, &d, sizeof c) == 0, "and the configuration is untouched");
        ok(parse("[store]\nflush_intervall = 5s\n", &c, &line, error) == -EBADMSG && line == 2 &&
                   strstr(error, "unknown key 'flush_intervall' in [store]"),
           "an unknown key: %s", error);
        ok(parse("\n\n[colect]\n", &c, &line, error) == -EBADMSG && line == 3 &&
                   strstr(error, "unknown section"),
           "an unknown section: line 3");
        ok(parse("resources = cpu-time\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "before any [section]"),
           "a key before any section");
        ok(parse("[collect]\nunwind\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "expected key = value"),
           "a line without =");
        ok(parse("[collect]\nstack_size = 100\n", &c, &line, error) == -EBADMSG,
           "stack_size not a multiple of 8");
        ok(parse("[collect]\nring_size = 3M\n", &c, &line, error) == -EBADMSG,
           "ring_size not a power of two");
        ok(parse("[collect]\nqueue_size = 64K\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "queue_size"),
           "queue_size below 1M");
        ok(parse("[store]\npath = relative.db\n", &c, &line, error) == -EBADMSG, "a relative store path");
        ok(parse("[store]\nbucket = 1500ms\n", &c, &line, error) == -EBADMSG,
           "a bucket of a fraction of a second");
        ok(parse("[store]\nflush_interval = 1ms\n", &c, &line, error) == -EBADMSG,
           "a flush interval too short");
        ok(parse("[collect]\nresources = cpu-time/0\n", &c, &line, error) == -EBADMSG, "period 0");
        ok(parse("[collect]\nresources = \n", &c, &line, error) == -EBADMSG, "no resources");
        ok(parse("[collect]\nkernel = maybe\n", &c, &line, error) == -EBADMSG, "kernel = maybe");
        c = d;
        ok(!d.no_python && parse("[collect]\npython = no\n", &c, &line, error) == 0 && c.no_python,
           "Python frames by default; python = no turns them off");
        ok(parse("[collect]\npython = sometimes\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "python must be yes or no"),
           "python = sometimes: %s", error);
        ok(config_parse("[collect]\n\0", 11, &c, &line, error, sizeof error) == -EBADMSG, "a NUL byte");
        {
                static char big[CONFIG_MAX_LINE + 16];

                memset(big, '#', sizeof big - 1);
                ok(parse(big, &c, &line, error) == -EBADMSG && strstr(error, "longer"),
                   "a line over the limit");
        }
        c = d;
        ok(parse("[control]\n\ngroup = nosuchgroup\n", &c, &line, error) == -EBADMSG && line == 3 &&
                   strstr(error, "no group 'nosuchgroup'"),
           "a group that does not exist: line 3, %s", error);
        ok(memcmp(&c, &d, sizeof c) == 0, "and the configuration is untouched");
        ok(parse("[control]\ngroup =\n", &c, &line, error) == 0 && c.group[0] == '\0' &&
                   c.gid == CONFIG_NO_GID,
           "group = (empty): no group");

        /* [fleet]: the pushes to fleet profilers. */
        ok(!config_pushes(&d) && d.push_interval == 60 * 1000000ULL, "no pushes by default, every 60 s");
        ok(parse("[store]\nbucket = 10s\n"
                 "[fleet]\n"
                 "pyroscope = http://pyroscope:4040\n"
                 "parca = https://parca.example/\n"
                 "otlp = http://127.0.0.1:4318\n"
                 "push_interval = 30s\n",
                 &c, &line, error) == 0 &&
                   config_pushes(&c) && streq(c.push_url[PUSH_PYROSCOPE], "http://pyroscope:4040") &&
                   streq(c.push_url[PUSH_PARCA], "https://parca.example/") &&
                   streq(c.push_url[PUSH_OTLP], "http://127.0.0.1:4318") &&
                   c.push_interval == 30 * 1000000ULL,
           "[fleet] pyroscope, parca, otlp, push_interval: %s", error);
        ok(parse("[fleet]\notlp =\n", &c, &line, error) == 0 && !config_pushes(&c), "an empty URL: no push");
        ok(parse("[fleet]\npush_credentials = /etc/cppd/push-credentials\n", &c, &line, error) == 0 &&
                   streq(c.push_credentials, "/etc/cppd/push-credentials") && !d.push_credentials[0],
           "push_credentials: a path (none by default)");
        ok(parse("[fleet]\npush_credentials = secrets\n", &c, &line, error) == -EBADMSG &&
                   streq(error, "push_credentials must be an absolute path (or empty: none)"),
           "a relative credentials path: %s", error);
        c = d;
        ok(parse("[fleet]\n\nparca = grpc://parca:7070\n", &c, &line, error) == -EBADMSG && line == 3 &&
                   streq(error, "parca = grpc://parca:7070: the URL must begin with http:// or https://") &&
                   memcmp(&c, &d, sizeof c) == 0,
           "a URL of another scheme: line 3, %s", error);
        ok(parse("[fleet]\notlp = http://collector:4318/v1development/profiles?x=1\n", &c, &line, error) ==
                           -EBADMSG &&
                   strstr(error, "must have no query or fragment"),
           "a URL with a query: %s", error);
        ok(parse("[fleet]\npush_interval = 1500ms\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "push_interval must be whole seconds from 1s to 1d"),
           "a push interval of a fraction of a second: %s", error);
        ok(parse("[store]\nbucket = 60s\n[fleet]\notlp = http://c:4318\npush_interval = 90s\n", &c, &line,
                 error) == -EBADMSG &&
                   streq(error, "push_interval (90s) must be a multiple of [store] bucket (60s)"),
           "a push interval that splits buckets: %s", error);
        ok(parse("[store]\nbucket = 60s\n[fleet]\npush_interval = 90s\n", &c, &line, error) == 0,
           "which is no error while nothing is pushed");

        c = d;
        ok(config_load("/nonexistent/cppd.conf", &c, &line, error, sizeof error) == -ENOENT &&
                   memcmp(&c, &d, sizeof c) == 0,
           "a missing file: -ENOENT (cppd decides), the configuration untouched");
        {
                char empty[] = "/tmp/test-config-XXXXXX", fifo[sizeof empty + 5];
                int fd = mkstemp(empty);

                close(fd);
                ok(config_load(empty, &c, &line, error, sizeof error) == -ENODATA, "an empty file: -ENODATA");
                unlink(empty);
                snprintf(fifo, sizeof fifo, "%s.fifo", empty);
                ok(mkfifo(fifo, 0600) == 0 && config_load(fifo, &c, &line, error, sizeof error) == -EBADFD,
                   "a FIFO, with no one writing: -EBADFD at once, not waited on");
                unlink(fifo);
        }
        ok(config_load("/dev/null", &c, &line, error, sizeof error) == -EBADFD, "a device: -EBADFD");
        ok(config_load("/", &c, &line, error, sizeof error) == -EISDIR, "a directory: -EISDIR");
        /* [fleet] */
        ok(!d.fleet_url[0] && strcmp(d.fleet_spool, "/var/lib/cppd/spool") == 0 &&
                   d.fleet_spool_max == CONFIG_FLEET_SPOOL_MAX_DEFAULT,
           "[fleet]: nothing shipped by default; the spool beside the default store");
        ok(parse("[fleet]\nurl = clickhouse://cppd@ch.example:9000/fleet\ncredentials = /etc/cppd/ch\n"
                 "spool_max = 1M\n[store]\npath = /srv/x/cppd.db\n",
                 &c, &line, error) == 0 &&
                   strcmp(c.fleet_url, "clickhouse://cppd@ch.example:9000/fleet") == 0 &&
                   strcmp(c.fleet_credentials, "/etc/cppd/ch") == 0 && c.fleet_spool_max == 1u << 20 &&
                   strcmp(c.fleet_spool, "/srv/x/spool") == 0,
           "[fleet] keys; the spool follows the store's folder whichever comes first");
        ok(parse("[fleet]\nspool = /var/spool/cppd\n", &c, &line, error) == 0 &&
                   strcmp(c.fleet_spool, "/var/spool/cppd") == 0,
           "[fleet] spool");
        ok(parse("[fleet]\nurl = http://ch:8123/fleet\n", &c, &line, error) == -EBADMSG && line == 2 &&
                   strstr(error, "not clickhouse://"),
           "another scheme: %s", error);
        ok(parse("[fleet]\nurl = clickhouse://ch:8123\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "no database"),
           "no database: %s", error);
        ok(parse("[fleet]\nurl = clickhouse://ch:99999/fleet\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "port"),
           "a bad port: %s", error);
        ok(parse("[fleet]\nurl = clickhouse://cppd:secret@ch/fleet\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "must not hold a password") && !strstr(error, "secret"),
           "a password in the url: refused, and not repeated: %s", error);
        ok(parse("[fleet]\ncredentials = ch.txt\n", &c, &line, error) == -EBADMSG &&
                   strstr(error, "credentials must be an absolute file name"),
           "a relative credentials file: %s", error);
        ok(parse("[fleet]\nspool_max = 1K\n", &c, &line, error) == -EBADMSG && strstr(error, "at least 4K"),
           "a spool bound too small: %s", error);
        ok(parse("[fleet]\nspool_max = lots\n", &c, &line, error) == -EBADMSG && strstr(error, "spool_max"),
           "a spool bound that is not a size: %s", error);
        return tap_done();
}
