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
        test_read_all();
        test_perf_map();
        return tap_done();
}
