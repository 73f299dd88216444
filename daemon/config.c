/* The configuration file: INI sections of "key = value" lines, '#' comments. Strict, so that a
 * typo is an error with its line number rather than a setting silently ignored: an unknown
 * section or key, or a value that does not parse, fails the whole file, and the daemon keeps
 * (or, at start, refuses to start without) a configuration it understands. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ch-client.h"
#include "parse-util.h"
#include "read-line.h"
#include "resource.h"
#include "url-util.h"

/* The id of group NAME: 0 and *ret, -ENOENT if there is none, or another negative errno when the
 * lookup itself fails (NSS). */
static int group_id(const char *name, gid_t *ret) {
        struct group g, *found = NULL;
        char buf[CONFIG_GROUP_BUFFER];
        int r;

        r = getgrnam_r(name, &g, buf, sizeof buf, &found);
        if (r != 0)
                return -r;
        if (!found)
                return -ENOENT;
        *ret = found->gr_gid;
        return 0;
}

void config_defaults(struct config *c) {
        /* About 100 stacks a second per busy CPU and a few per faulting or switching thread:
         * well under 1% of a busy machine, always on. */
        static const struct config_resource resources[] = {
                { "cpu-time", 10, false },
                { "page-faults", 256, false },
                { "context-switches", 64, false },
        };

        *c = (struct config) {
                .unwind = UNWIND_DWARF,
                .stack_size = 8192,
                .ring_size = 1u << 20,
                /* Always on, the daemon keeps less than cppctl record (whose runs are short and
                 * can afford bursts): 8 MiB is seconds of samples (DWARF stacks are cut to what
                 * the kernel filled), and past it records wait in the rings. */
                .queue_size = 8u << 20,
                .flush_interval = 5 * 1000000ULL,
                .bucket = 60 * 1000000ULL,
                .retention = 7 * 86400 * 1000000ULL,
                .max_size = 1ULL << 30,
                .max_sessions = 16,
                .push_interval = 60 * 1000000ULL,
                .fleet_spool_max = CONFIG_FLEET_SPOOL_MAX_DEFAULT,
        };
        memcpy(c->resources, resources, sizeof resources);
        c->n_resources = ELEMENTSOF(resources);
        c->alloc_resources[0] = (struct config_resource) { "alloc-bytes", 0, false };
        c->alloc_resources[1] = (struct config_resource) { "alloc-count", 0, false };
        c->n_alloc_resources = 2;
        /* Each probed process adds ~26 ns to every probed call on its libc. */
        c->alloc_max_processes = 16;
        strcpy(c->store_path, "/var/lib/cppd/cppd.db");
        strcpy(c->socket_path, "/run/cppd/cppd.sock");
        strcpy(c->group, "cppd");
        strcpy(c->fleet_spool, "/var/lib/cppd/spool");
        if (group_id(c->group, &c->gid) < 0)
                c->gid = CONFIG_NO_GID;
}

__attribute__((format(printf, 3, 4))) static int fail(char *error, size_t size, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        vsnprintf(error, size, format, ap);
        va_end(ap);
        return -EBADMSG;
}

static char *strip(char *s) {
        char *end;

        while (isspace((unsigned char) *s))
                s++;
        end = s + strlen(s);
        while (end > s && isspace((unsigned char) end[-1]))
                *--end = '\0';
        return s;
}

/* A list of resources into LIST (at most MAX; *N of them): [collect]'s (ALLOC false: any but
 * alloc-*), or [alloc]'s (ALLOC: only alloc-*). */
static int parse_resource_list(struct config_resource *list, unsigned max, unsigned *n, bool alloc,
                               char *value, char *error, size_t size) {
        char *save = NULL;

        *n = 0;
        for (char *item = strtok_r(value, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                struct config_resource *r;
                char *slash;

                item = strip(item);
                if (*n >= max)
                        return fail(error, size, "more than %u resources", max);
                r = &list[*n];
                *r = (struct config_resource) {};
                slash = strrchr(item, '/');
                if (slash) {
                        *slash = '\0';
                        if (safe_atou64_range(slash + 1, 1, INT64_MAX, &r->period) < 0)
                                return fail(error, size, "'%s': the period after '/' must be a whole number",
                                            item);
                }
                if (startswith(item, "event:")) {
                        r->event = true;
                        item += 6;
                }
                if (!*item || strlen(item) >= sizeof r->name || !resource_name_valid(item))
                        return fail(error, size, "'%s' is not a resource or event name", item);
                if (!r->event && !resource_find(item))
                        return fail(error, size, "unknown resource '%s' (for an event name, write event:%s)",
                                    item, item);
                if (!alloc && !r->event && resource_find(item)->kind == RESOURCE_ALLOC)
                        return fail(error, size,
                                    "%s is counted by uprobes in the processes of the units named in "
                                    "[alloc] units (each of their allocation calls then traps into the "
                                    "kernel, about 0.8 us): not in [collect] resources",
                                    item);
                if (alloc && (r->event || resource_find(item)->kind != RESOURCE_ALLOC))
                        return fail(error, size, "'%s': [alloc] resources are alloc-bytes and alloc-count",
                                    item);
                strcpy(r->name, item);
                (*n)++;
        }
        return *n > 0 ? 0 : fail(error, size, "no resources");
}

static int set(struct config *c, const char *section, const char *key, char *value, char *error,
               size_t size) {
        uint64_t u;
        bool b;

#define KEY(s, k) (streq(section, s) && streq(key, k))
        if (KEY("collect", "resources"))
                return parse_resource_list(c->resources, CONFIG_MAX_RESOURCES, &c->n_resources, false, value,
                                           error, size);
        /* ---- [alloc] ---- */
        if (KEY("alloc", "units")) {
                for (const char *p = value; *p; p++)
                        if (!isalnum((unsigned char) *p) && !strchr(" .-_@:\\", *p))
                                return fail(error, size, "units: '%s' is not a list of unit names", value);
                strcpy(c->alloc_units, value);
                return 0;
        }
        if (KEY("alloc", "resources"))
                return parse_resource_list(c->alloc_resources, ELEMENTSOF(c->alloc_resources),
                                           &c->n_alloc_resources, true, value, error, size);
        if (KEY("alloc", "max_processes")) {
                if (safe_atou64_range(value, 0, 4096, &u) < 0)
                        return fail(error, size, "max_processes must be a number from 0 (no limit) to 4096");
                c->alloc_max_processes = (unsigned) u;
                return 0;
        }
        if (KEY("collect", "unwind")) {
                if (streq(value, "dwarf"))
                        c->unwind = UNWIND_DWARF;
                else if (streq(value, "fp"))
                        c->unwind = UNWIND_FP;
                else
                        return fail(error, size, "unwind must be dwarf or fp");
                return 0;
        }
        if (KEY("collect", "kernel")) {
                if (parse_boolean(value, &b) < 0)
                        return fail(error, size, "kernel must be yes or no");
                c->kernel = b;
                return 0;
        }
        if (KEY("collect", "jitter")) {
                if (parse_boolean(value, &b) < 0)
                        return fail(error, size, "jitter must be yes or no");
                c->no_jitter = !b;
                return 0;
        }
        if (KEY("collect", "every_event")) {
                if (parse_boolean(value, &b) < 0)
                        return fail(error, size, "every_event must be yes or no");
                c->every_event = b;
                return 0;
        }
        if (KEY("collect", "realtime_reader")) {
                if (parse_boolean(value, &b) < 0)
                        return fail(error, size, "realtime_reader must be yes or no");
                c->realtime_reader = b;
                return 0;
        }
        if (KEY("collect", "python")) {
                if (parse_boolean(value, &b) < 0)
                        return fail(error, size, "python must be yes or no");
                c->no_python = !b;
                return 0;
        }
        if (KEY("collect", "stack_size")) {
                if (parse_size(value, &u) < 0 || u < 64 || u > 65528 || u % 8)
                        return fail(error, size, "stack_size must be a multiple of 8 from 64 to 65528");
                c->stack_size = u;
                return 0;
        }
        if (KEY("collect", "ring_size")) {
                if (parse_size(value, &u) < 0 || u < 65536 || u > (1u << 30) || (u & (u - 1)))
                        return fail(error, size, "ring_size must be a power of two from 64K to 1G");
                c->ring_size = u;
                return 0;
        }
        if (KEY("collect", "queue_size")) {
                if (parse_size(value, &u) < 0 || u < (1u << 20) || u > (1u << 30))
                        return fail(error, size, "queue_size must be from 1M to 1G");
                c->queue_size = u;
                return 0;
        }
        if (KEY("store", "path")) {
                if (value[0] != '/' || strlen(value) >= sizeof c->store_path)
                        return fail(error, size, "path must be absolute");
                strcpy(c->store_path, value);
                return 0;
        }
        if (KEY("store", "flush_interval")) {
                if (parse_duration(value, &u) < 0 || u < 100000 || u > 3600 * 1000000ULL)
                        return fail(error, size, "flush_interval must be a duration from 100ms to 1h");
                c->flush_interval = u;
                return 0;
        }
        if (KEY("store", "bucket")) {
                if (parse_duration(value, &u) < 0 || u < 1000000 || u > 86400 * 1000000ULL || u % 1000000)
                        return fail(error, size, "bucket must be whole seconds from 1s to 1d");
                c->bucket = u;
                return 0;
        }
        if (KEY("store", "retention")) {
                if (parse_duration(value, &u) < 0)
                        return fail(error, size, "retention must be a duration (0: forever)");
                c->retention = u;
                return 0;
        }
        if (KEY("store", "granularity")) {
                if (streq(value, "function"))
                        c->lines = false;
                else if (streq(value, "line"))
                        c->lines = true;
                else
                        return fail(error, size, "granularity must be function or line");
                return 0;
        }
        if (KEY("store", "max_size")) {
                if (parse_size(value, &u) < 0)
                        return fail(error, size, "max_size must be a size (0: unbounded)");
                c->max_size = u;
                return 0;
        }
        if (KEY("control", "socket")) {
                if (value[0] != '/' || strlen(value) >= sizeof c->socket_path)
                        return fail(error, size, "socket must be an absolute path of at most %zu bytes",
                                    sizeof c->socket_path - 1);
                strcpy(c->socket_path, value);
                return 0;
        }
        if (KEY("control", "group")) {
                gid_t gid = CONFIG_NO_GID;
                int r;

                if (strlen(value) >= sizeof c->group)
                        return fail(error, size, "group name too long");
                if (value[0]) {
                        r = group_id(value, &gid);
                        if (r == -ENOENT)
                                return fail(error, size,
                                            "no group '%s' on this machine (getent group %s); "
                                            "leave the value empty for none",
                                            value, value);
                        if (r < 0)
                                return fail(error, size, "cannot look up group '%s': %s", value,
                                            strerror(-r));
                }
                strcpy(c->group, value);
                c->gid = gid;
                return 0;
        }
        if (KEY("control", "max_sessions")) {
                if (safe_atou64_range(value, 0, 1024, &u) < 0)
                        return fail(error, size, "max_sessions must be from 0 to 1024");
                c->max_sessions = u;
                return 0;
        }
        /* The pushes to fleet profilers: their own block of [fleet] (the ClickHouse keys are
         * another matter). */
        for (enum push_kind k = 0; k < _PUSH_KIND_MAX; k++)
                if (KEY("fleet", push_kind_name(k))) {
                        const char *why;

                        char shown[PUSH_URL_MAX];

                        if (value[0] && push_url_check(value, &why) < 0)
                                return fail(error, size, "%s = %s: the URL %s", key,
                                            url_redact(value, shown, sizeof shown), why);
                        strcpy(c->push_url[k], value);
                        return 0;
                }
        if (KEY("fleet", "push_credentials")) {
                if ((value[0] && value[0] != '/') || strlen(value) >= sizeof c->push_credentials)
                        return fail(error, size,
                                    "push_credentials must be an absolute path (or empty: none)");
                strcpy(c->push_credentials, value);
                return 0;
        }
        if (KEY("fleet", "push_interval")) {
                if (parse_duration(value, &u) < 0 || u < 1000000 || u > 86400 * 1000000ULL || u % 1000000)
                        return fail(error, size, "push_interval must be whole seconds from 1s to 1d");
                c->push_interval = u;
                return 0;
        }
        /* ---- [fleet] shipping to ClickHouse ---- */
        if (KEY("fleet", "url")) {
                struct ch_url url = {};
                const char *why = NULL, *at = strchr(value, '@');

                /* A password is for the credentials file, not for a file others may read. */
                if (at && startswith(value, CH_URL_SCHEME) &&
                    memchr(value + strlen(CH_URL_SCHEME), ':', at - value - strlen(CH_URL_SCHEME)))
                        return fail(error, size,
                                    "url must not hold a password: put it in the credentials file");
                if (value[0] && ch_url_parse(value, &url, &why) < 0)
                        return fail(error, size, "url '%s': %s (expected clickhouse://[USER@]HOST[:PORT]/DB)",
                                    value, why ?: "not a ClickHouse URL");
                ch_url_done(&url);
                if (strlen(value) >= sizeof c->fleet_url)
                        return fail(error, size, "url longer than %zu bytes", sizeof c->fleet_url - 1);
                strcpy(c->fleet_url, value);
                return 0;
        }
        if (KEY("fleet", "credentials")) {
                if (value[0] && (value[0] != '/' || strlen(value) >= sizeof c->fleet_credentials))
                        return fail(error, size, "credentials must be an absolute file name");
                strcpy(c->fleet_credentials, value);
                return 0;
        }
        if (KEY("fleet", "spool")) {
                if (value[0] && (value[0] != '/' || strlen(value) >= sizeof c->fleet_spool))
                        return fail(error, size, "spool must be an absolute directory name");
                strcpy(c->fleet_spool, value);
                return 0;
        }
        if (KEY("fleet", "spool_max")) {
                if (parse_size(value, &u) < 0 || u < 4096)
                        return fail(error, size, "spool_max must be a size of at least 4K");
                c->fleet_spool_max = u;
                return 0;
        }
        /* ---- [symbols] ---- */
        if (KEY("symbols", "debuginfod")) {
                _cleanup_free_ char *copy = strdup(value);
                char *save = NULL;

                if (!copy)
                        return fail(error, size, "out of memory");
                if (strlen(value) >= sizeof c->debuginfod)
                        return fail(error, size, "debuginfod longer than %zu bytes",
                                    sizeof c->debuginfod - 1);
                for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
                        if ((!startswith(w, "http://") && !startswith(w, "https://")) || strlen(w) <= 8)
                                return fail(error, size, "debuginfod '%s': expected http:// or https:// URLs",
                                            w);
                strcpy(c->debuginfod, value);
                return 0;
        }
#undef KEY
        return fail(error, size, "unknown key '%s' in [%s]", key, section);
}

int config_parse(const char *text, size_t size, struct config *ret, unsigned *ret_line, char *error,
                 size_t error_size) {
        static const char *const sections[] = { "collect", "store", "control", "fleet", "symbols", "alloc" };
        char section[32] = "", line[CONFIG_MAX_LINE + 1];
        struct config c;
        unsigned n = 0;
        int r;

        config_defaults(&c);
        c.fleet_spool[0] = '\0'; /* unless set, beside the store: below */
        for (size_t pos = 0; pos < size;) {
                const char *nl = memchr(text + pos, '\n', size - pos);
                size_t len = nl ? (size_t) (nl - text - pos) : size - pos;
                char *s, *eq;

                n++;
                *ret_line = n;
                if (len > CONFIG_MAX_LINE)
                        return fail(error, error_size, "line longer than %d bytes", CONFIG_MAX_LINE);
                if (memchr(text + pos, '\0', len))
                        return fail(error, error_size, "a NUL byte");
                memcpy(line, text + pos, len);
                line[len] = '\0';
                pos += len + (nl ? 1 : 0);

                s = strip(line);
                if (*s == '\0' || *s == '#' || *s == ';')
                        continue;
                if (*s == '[') {
                        size_t l = strlen(s);
                        bool known = false;

                        if (s[l - 1] != ']' || l - 2 >= sizeof section)
                                return fail(error, error_size, "expected [section]");
                        s[l - 1] = '\0';
                        for (size_t i = 0; i < ELEMENTSOF(sections); i++)
                                known = known || streq(s + 1, sections[i]);
                        if (!known)
                                return fail(error, error_size, "unknown section [%s]", s + 1);
                        strcpy(section, s + 1);
                        continue;
                }
                eq = strchr(s, '=');
                if (!eq)
                        return fail(error, error_size, "expected key = value");
                if (!section[0])
                        return fail(error, error_size, "a key before any [section]");
                *eq = '\0';
                r = set(&c, section, strip(s), strip(eq + 1), error, error_size);
                if (r < 0)
                        return r;
        }
        /* A push covers whole time buckets: the store cannot split one. */
        if (config_pushes(&c) && c.push_interval % c.bucket != 0)
                return fail(error, error_size,
                            "push_interval (%" PRIu64 "s) must be a multiple of [store] bucket (%" PRIu64
                            "s)",
                            c.push_interval / 1000000, c.bucket / 1000000);
        /* The spool defaults to a folder beside the store, whichever key came first. */
        if (!c.fleet_spool[0]) {
                const char *slash = strrchr(c.store_path, '/');

                snprintf(c.fleet_spool, sizeof c.fleet_spool, "%.*s/spool", (int) (slash - c.store_path),
                         c.store_path);
        }
        *ret = c;
        return 0;
}

bool config_pushes(const struct config *c) {
        for (enum push_kind k = 0; k < _PUSH_KIND_MAX; k++)
                if (c->push_url[k][0])
                        return true;
        return false;
}

int config_load(const char *path, struct config *ret, unsigned *ret_line, char *error, size_t error_size) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        struct stat before, after;
        ssize_t n;

        *ret_line = 0;
        /* A FIFO or a device there must not hold the daemon before it listens (read_open()). */
        fd = read_open(AT_FDCWD, path, 0, &before);
        if (fd < 0)
                return fd;
        if (before.st_size > CONFIG_MAX_SIZE)
                return -EFBIG;
        n = read_all(fd, CONFIG_MAX_SIZE, &text);
        if (n < 0)
                return (int) n;
        if (n == 0)
                return -ENODATA;
        /* Written while we read (an editor or a copy rewriting it in place): what we have may be
         * half of it, which would parse as a different configuration. */
        if (fstat(fd, &after) < 0)
                return -errno;
        if (after.st_size != before.st_size || (off_t) n != after.st_size ||
            after.st_mtim.tv_sec != before.st_mtim.tv_sec || after.st_mtim.tv_nsec != before.st_mtim.tv_nsec)
                return -ESTALE;
        return config_parse(text, (size_t) n, ret, ret_line, error, error_size);
}
