/* debuginfod fetches. libdebuginfod (elfutils) asks every server of $DEBUGINFOD_URLS at once,
 * keeps what it gets in its cache ($DEBUGINFOD_CACHE_PATH) and remembers misses for a while, so a
 * second command asks no server again. It reads its bounds from the environment at each fetch:
 * DEBUGINFOD_TIMEOUT (seconds without 100 KiB of progress), DEBUGINFOD_MAXTIME and
 * DEBUGINFOD_MAXSIZE (0.188: checked against the announced length). Unset, a server that trickles
 * bytes holds a fetch for as long as it likes, so defaults are put in the environment, and the
 * progress callback, which libdebuginfod calls about once a second during a transfer, cuts off
 * any fetch past DEBUGINFOD_FETCH_MAXTIME_S or DEBUGINFOD_FETCH_MAXSIZE (or the user's bounds,
 * when set lower) whatever the server announced: a body of no length, a redirect loop.
 *
 * libdebuginfod says -ENOENT for every HTTP error, a 500 as a 404; its verbose log, which it
 * writes to a descriptor of ours (a memfd, emptied before each fetch), has libcurl's words
 * "returned error: NNN", from which a status other than 404 is told apart: -EREMOTEIO. And a
 * transfer that a server began and did not finish sometimes comes back as -ENOENT too (0.188,
 * seen built with AddressSanitizer after its DEBUGINFOD_TIMEOUT: no retry, no -ETIME): the
 * progress reports say bytes of a body came, and the log no HTTP error (a 404 is not found), so
 * it is told as a timeout, or a broken connection. */
#include "debuginfod-fetch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

struct debuginfod_fetch {
        debuginfod_client *client;
        uint64_t max_bytes;
        double max_seconds;
        double timeout_s; /* DEBUGINFOD_TIMEOUT */
        bool body_seen;   /* the fetch under way received bytes of a body */
        double started;   /* CLOCK_MONOTONIC seconds at the start of the fetch under way */
        bool too_big, too_slow;
        const bool *cancel; /* stop the fetch under way when true; NULL: never */
        int log_fd;         /* libdebuginfod's verbose log of the last fetch; -1: none */
        int http_status;    /* of the last failed fetch, when its log says; 0: unknown */
};

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The bound in environment variable NAME, set to FALLBACK there when unset or not a positive
 * number, so that libdebuginfod reads the same. */
static uint64_t env_bound(const char *name, uint64_t fallback) {
        const char *v = getenv(name);
        char *end, text[32];
        unsigned long long n;

        if (v && *v) {
                errno = 0;
                n = strtoull(v, &end, 10);
                if (errno == 0 && *end == '\0' && n > 0)
                        return n;
        }
        snprintf(text, sizeof text, "%" PRIu64, fallback);
        (void) setenv(name, text, 1);
        return fallback;
}

/* libdebuginfod's progress callback: A bytes so far, B announced (0: unknown). Nonzero stops. */
static int progress(debuginfod_client *c, long a, long b) {
        struct debuginfod_fetch *f = debuginfod_get_user_data(c);

        if (a > 0)
                f->body_seen = true;
        if ((a > 0 && (uint64_t) a > f->max_bytes) || (b > 0 && (uint64_t) b > f->max_bytes))
                f->too_big = true;
        if (now() - f->started > f->max_seconds)
                f->too_slow = true;
        return f->too_big || f->too_slow || (f->cancel && __atomic_load_n(f->cancel, __ATOMIC_RELAXED));
}

void debuginfod_fetch_set_cancel(struct debuginfod_fetch *f, const bool *cancel) {
        f->cancel = cancel;
}

int debuginfod_fetch_setup_env(void) {
        (void) env_bound(DEBUGINFOD_TIMEOUT_ENV_VAR, DEBUGINFOD_FETCH_TIMEOUT_S);
        (void) env_bound(DEBUGINFOD_MAXTIME_ENV_VAR, DEBUGINFOD_FETCH_MAXTIME_S);
        (void) env_bound(DEBUGINFOD_MAXSIZE_ENV_VAR, DEBUGINFOD_FETCH_MAXSIZE);
        return setenv(DEBUGINFOD_RETRY_LIMIT_ENV_VAR, "1", 0) < 0 ? -ENOMEM : 0;
}

int debuginfod_fetch_new(struct debuginfod_fetch **ret) {
        const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
        struct debuginfod_fetch *f;

        if (!urls || urls[strspn(urls, " \t")] == '\0')
                return -ENOENT;
        f = calloc(1, sizeof *f);
        if (!f)
                return -ENOMEM;
        f->log_fd = memfd_create("debuginfod-log", MFD_CLOEXEC);
        f->timeout_s = (double) env_bound(DEBUGINFOD_TIMEOUT_ENV_VAR, DEBUGINFOD_FETCH_TIMEOUT_S);
        f->max_seconds = (double) env_bound(DEBUGINFOD_MAXTIME_ENV_VAR, DEBUGINFOD_FETCH_MAXTIME_S);
        f->max_bytes = env_bound(DEBUGINFOD_MAXSIZE_ENV_VAR, DEBUGINFOD_FETCH_MAXSIZE);
        /* one try per server: a fetch that failed once is said so, not repeated */
        (void) setenv(DEBUGINFOD_RETRY_LIMIT_ENV_VAR, "1", 0);
        f->client = debuginfod_begin();
        if (!f->client) {
                free(f);
                return -ENOMEM;
        }
        debuginfod_set_user_data(f->client, f);
        debuginfod_set_progressfn(f->client, progress);
        if (f->log_fd >= 0)
                debuginfod_set_verbose_fd(f->client, f->log_fd);
        *ret = f;
        return 0;
}

struct debuginfod_fetch *debuginfod_fetch_free(struct debuginfod_fetch *f) {
        if (!f)
                return NULL;
        debuginfod_end(f->client);
        if (f->log_fd >= 0)
                close(f->log_fd);
        free(f);
        return NULL;
}

/* The HTTP status of the last fetch's error, from libdebuginfod's log: of one server, the first
 * other than 404 if any, else 404; 0 if the log says none. */
static int logged_status(struct debuginfod_fetch *f) {
        static const char key[] = "returned error: ";
        char buf[16384];
        ssize_t n;
        int status = 0;

        if (f->log_fd < 0 || (n = pread(f->log_fd, buf, sizeof buf - 1, 0)) <= 0)
                return 0;
        buf[n] = '\0';
        for (const char *p = buf; (p = strstr(p, key)); p += sizeof key - 1) {
                int s;

                if (sscanf(p + sizeof key - 1, "%d", &s) != 1)
                        continue;
                if (s != 404)
                        return s; /* one server's error beyond "not here" */
                status = s;
        }
        return status;
}

int debuginfod_fetch_http_status(const struct debuginfod_fetch *f) {
        return f->http_status;
}

int debuginfod_fetch_debuginfo(struct debuginfod_fetch *f, const char *build_id, char **ret) {
        size_t len = strlen(build_id);
        char *path = NULL;
        int fd;

        /* a GNU build id is 2 to 64 bytes; libdebuginfod takes lowercase hex */
        if (len < 4 || len > 128 || len % 2 || strspn(build_id, "0123456789abcdef") != len)
                return -EINVAL;
        f->started = now();
        f->too_big = f->too_slow = f->body_seen = false;
        f->http_status = 0;
        if (f->log_fd >= 0 && ftruncate(f->log_fd, 0) == 0)
                (void) lseek(f->log_fd, 0, SEEK_SET);
        fd = debuginfod_find_debuginfo(f->client, (const unsigned char *) build_id, 0, &path);
        if (fd < 0) {
                free(path);
                if (f->too_big)
                        return -EFBIG;
                if (f->too_slow)
                        return -ETIMEDOUT;
                if (fd == -ENOENT) {
                        int status = logged_status(f);

                        if (status == 404)
                                return -ENOENT;
                        f->http_status = status;
                        if (status)
                                return -EREMOTEIO;
                        if (f->body_seen)
                                return now() - f->started >= f->timeout_s ? -ETIMEDOUT : -ECONNRESET;
                }
                return fd;
        }
        close(fd);
        if (!path)
                return -ENOMEM;
        *ret = path;
        return 0;
}

int debuginfod_fetch_server_error(int r) {
        switch (r) {
        case -ETIMEDOUT:
        case -ETIME: /* libdebuginfod's own DEBUGINFOD_MAXTIME */
        case -ECONNREFUSED:
        case -ECONNRESET:
        case -EHOSTUNREACH:
        case -ENETUNREACH:
        case -EHOSTDOWN:
        case -ENETDOWN:
        case -ECANCELED:
                return 1;
        default:
                return 0;
        }
}

const char *debuginfod_fetch_strerror(int r) {
        switch (r) {
        case -ENOENT:
                return "not on any debuginfod server";
        case -ETIMEDOUT:
        case -ETIME:
        case -ECANCELED:
                return "debuginfod server too slow (DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXTIME)";
        case -EFBIG:
                return "debug file larger than DEBUGINFOD_MAXSIZE";
        case -ECONNREFUSED:
        case -ECONNRESET:
        case -EHOSTUNREACH:
        case -ENETUNREACH:
        case -EHOSTDOWN:
        case -ENETDOWN:
                return "debuginfod server down or unreachable";
        case -EINVAL:
                return "no usable build id";
        case -EREMOTEIO:
                return "the debuginfod server answered with an HTTP error";
        default:
                return "debuginfod fetch failed";
        }
}
