/* Bounded line reading, and the readers of outside text that use it (perf-PID.map): a line
 * past the bound is refused before it is held in memory, NUL bytes are kept; files named from
 * outside are opened without waiting on a FIFO and kept only if regular (read_open()). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static void test_line_reader(void) {
        static const char text[] = "one\nt\0o\n\nlast";
        _cleanup_fclose_ FILE *f = fmemopen((void *) text, sizeof text - 1, "r");
        _cleanup_(line_reader_freep) struct line_reader *r = line_reader_new(f, 16);
        const char *line;

        ok(line_reader_next(r, &line) == 4 && memcmp(line, "one\n", 4) == 0,
           "reader: a line with its newline");
        ok(line_reader_next(r, &line) == 4 && memcmp(line, "t\0o\n", 4) == 0, "reader: a NUL byte is kept");
        ok(line_reader_next(r, &line) == 1 && line[0] == '\n', "reader: an empty line");
        ok(line_reader_next(r, &line) == 4 && memcmp(line, "last", 4) == 0,
           "reader: the last line, without a newline");
        ok(line_reader_next(r, &line) == 0, "reader: then the end");
        ok(line_reader_next(r, &line) == 0, "reader: and the end again");
}

static void test_line_reader_bound(void) {
        size_t size = 4 << 20;
        _cleanup_free_ char *zeros = calloc(1, size);
        _cleanup_fclose_ FILE *f = fmemopen(zeros, size, "r");
        _cleanup_(line_reader_freep) struct line_reader *r = line_reader_new(f, 1000);
        _cleanup_fclose_ FILE *g = NULL;
        _cleanup_(line_reader_freep) struct line_reader *q = NULL;
        const char *line;
        long at;

        ok(line_reader_next(r, &line) == -E2BIG, "reader: a line past the bound: -E2BIG");
        at = ftell(f);
        ok(at <= 1000 + (1 << 20), "reader: at most a chunk past the bound was read (%ld bytes)", at);
        ok(line_reader_next(r, &line) == -E2BIG, "reader: and it fails again");

        /* Exactly MAX bytes with the newline is a line; one more is not. */
        memset(zeros, 'x', size);
        zeros[999] = '\n';
        zeros[2000] = '\n';
        g = fmemopen(zeros, 2001, "r");
        q = line_reader_new(g, 1000);
        ok(line_reader_next(q, &line) == 1000, "reader: a line of MAX bytes, its newline included");
        ok(line_reader_next(q, &line) == -E2BIG, "reader: one of MAX + 1: -E2BIG");
}

/* Lines of random lengths, some past the reader's chunk (1 MiB) so that they straddle refills
 * and grow its buffer, read alike by line_reader_next() and read_line(). */
static void test_line_reader_random(void) {
        size_t size = 6 << 20, n = 0, lines = 0, same = 0, longest = 0;
        _cleanup_free_ char *text = malloc(size), *copy = NULL;
        _cleanup_fclose_ FILE *f = NULL, *g = NULL;
        _cleanup_(line_reader_freep) struct line_reader *r = NULL;
        size_t cap = 0;
        unsigned seed = 27;

        while (n < size) {
                size_t len = rand_r(&seed) % 64 == 0 ? (size_t) rand_r(&seed) % (3 << 20) :
                                                       (size_t) rand_r(&seed) % 200;

                for (size_t i = 0; i < len && n < size; i++)
                        text[n++] = (char) ('a' + rand_r(&seed) % 26);
                if (n < size)
                        text[n++] = '\n';
        }
        f = fmemopen(text, size, "r");
        g = fmemopen(text, size, "r");
        r = line_reader_new(f, 4 << 20);
        for (;;) {
                const char *line;
                ssize_t a = line_reader_next(r, &line), b = read_line(g, 4 << 20, &copy, &cap);

                if (a != b || (a > 0 && memcmp(line, copy, a) != 0))
                        break;
                if (a <= 0) {
                        same = 1;
                        break;
                }
                lines++;
                longest = MAX(longest, (size_t) a);
        }
        ok(same && lines > 100 && longest > (1 << 20),
           "reader: %zu random lines (the longest %zu bytes) read as read_line() reads them", lines, longest);
}

/* read_all() on a pipe holding SIZE bytes of 'x', bounded at MAX. */
static ssize_t read_pipe(size_t size, size_t max, char **ret) {
        int fd[2];
        char buf[4096];
        ssize_t n;

        if (pipe(fd) < 0)
                return -errno;
        memset(buf, 'x', sizeof buf);
        for (size_t left = size; left > 0;) {
                size_t k = left < sizeof buf ? left : sizeof buf;

                if (write(fd[1], buf, k) != (ssize_t) k)
                        return -EIO;
                left -= k;
        }
        close(fd[1]);
        n = read_all(fd[0], max, ret);
        close(fd[0]);
        return n;
}

static void test_read_all(void) {
        _cleanup_free_ char *text = NULL;

        is_int(read_pipe(4000, 4000, &text), 4000, "read_all: exactly the bound is read");
        ok(text && strlen(text) == 4000, "read_all: NUL-terminated");
        text = mfree(text);
        is_int(read_pipe(4001, 4000, &text), -EFBIG, "read_all: a byte past the bound is -EFBIG");
        ok(!text, "read_all: nothing returned then");
        is_int(read_pipe(0, 4000, &text), 0, "read_all: an empty file is 0 bytes");
        ok(text && text[0] == '\0', "read_all: an empty string");
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

/* Files named from outside: a FIFO with no writer, a device, a folder, a link where none is
 * expected, a file of another user where a secret is expected: refused at once. */
static void test_read_open(void) {
        char dir[] = "/tmp/test-read-open-XXXXXX", path[256], link[256], fifo[256];
        _cleanup_free_ char *text = NULL;
        struct stat st;
        FILE *f = NULL;
        int fd;

        if (!mkdtemp(dir))
                abort();
        snprintf(path, sizeof path, "%s/file", dir);
        snprintf(link, sizeof link, "%s/link", dir);
        snprintf(fifo, sizeof fifo, "%s/fifo", dir);
        fd = open(path, O_WRONLY | O_CREAT, 0600);
        if (fd < 0 || write(fd, "a\nb\n", 4) != 4 || symlink(path, link) < 0 || mkfifo(fifo, 0600) < 0)
                abort();
        close(fd);
        ok(read_file(AT_FDCWD, path, READ_SECRET, 64, &text, &st) == 4 && streq(text, "a\nb\n") &&
                   st.st_size == 4,
           "read_file: a regular file of one's own, whole");
        text = mfree(text);
        ok(read_file(AT_FDCWD, path, 0, 3, &text, NULL) == -EFBIG && !text,
           "read_file: past its bound, -EFBIG");
        ok(read_file(AT_FDCWD, fifo, 0, 64, &text, NULL) == -EBADFD,
           "a FIFO with no writer: -EBADFD, not waited on");
        ok(read_open(AT_FDCWD, "/dev/null", 0, NULL) == -EBADFD, "a device: -EBADFD");
        ok(read_open(AT_FDCWD, dir, 0, NULL) == -EISDIR, "a folder: -EISDIR");
        fd = read_open(AT_FDCWD, link, 0, NULL);
        ok(fd >= 0, "a link, where one may be: followed");
        safe_close_fd(fd);
        ok(read_open(AT_FDCWD, link, READ_NOFOLLOW, NULL) == -ELOOP, "a link under READ_NOFOLLOW: -ELOOP");
        ok(streq(read_strerror(-EBADFD), "not a regular file (a FIFO, a socket or a device)"),
           "read_strerror() says what -EBADFD means here");
        if (geteuid() != 0)
                ok(true, "# SKIP a secret of another user needs root to chown");
        else
                ok(chown(path, 65534, 65534) == 0 && read_open(AT_FDCWD, path, READ_SECRET, NULL) == -EPERM &&
                           (fd = read_open(AT_FDCWD, path, 0, NULL)) >= 0,
                   "a secret of another user: -EPERM; the same file as no secret: read");
        safe_close_fd(fd);
        ok(perf_map_open(fifo, &f) == -EBADFD && !f, "perf-PID.map a FIFO: refused, not waited on");
        ok(perf_map_open(link, &f) == -ELOOP && !f, "perf-PID.map a link: not followed");
        ok(perf_map_open(path, &f) == 0 && f, "perf-PID.map a file: opened");
        if (f)
                fclose(f);
        unlink(path);
        unlink(link);
        unlink(fifo);
        rmdir(dir);
}

int main(void) {
        test_read_line();
        test_read_open();
        test_bound();
        test_line_reader();
        test_line_reader_bound();
        test_line_reader_random();
        test_read_all();
        test_perf_map();
        return tap_done();
}
