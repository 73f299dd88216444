/* The output guard: -o means one thing in every command, a report's file, and no report is
 * ever written over a store, whatever its name; then the report's stream closed with its write
 * errors reported. */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* The first 16 bytes of every SQLite database file, its NUL included (sqlite.org/fileformat). */
#define SQLITE_HEADER "SQLite format 3"

/* Whether the file open at FD starts as an SQLite database or its write-ahead log does. Read
 * through /proc/self/fd: the same file, whatever its name now, and FD may be write-only. */
static bool is_store_file(int fd) {
        static const uint8_t wal_be[] = { 0x37, 0x7f, 0x06, 0x82 }, wal_le[] = { 0x37, 0x7f, 0x06, 0x83 };
        _cleanup_close_ int rfd = -EBADF;
        char path[64], head[sizeof SQLITE_HEADER];

        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        rfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (rfd < 0 || pread(rfd, head, sizeof head, 0) != (ssize_t) sizeof head)
                return false; /* unreadable or too short to be one */
        return memcmp(head, SQLITE_HEADER, sizeof head) == 0 || memcmp(head, wal_be, 4) == 0 ||
                memcmp(head, wal_le, 4) == 0;
}

int output_open(const char *path, const char *store, FILE **ret) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st, store_st;
        FILE *f;

        /* Not O_TRUNC: what is there is looked at first, through this descriptor, so that the
         * file checked is the file cut (symbolic links followed, any name). */
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISREG(st.st_mode)) {
                if ((store && stat(store, &store_st) == 0 && store_st.st_dev == st.st_dev &&
                     store_st.st_ino == st.st_ino) ||
                    (st.st_size > 0 && is_store_file(fd)))
                        return -EEXIST;
                if (ftruncate(fd, 0) < 0)
                        return -errno;
        }
        f = fdopen(fd, "w");
        if (!f)
                return -errno;
        fd = -EBADF;
        *ret = f;
        return 0;
}

int log_output_error(int r, const char *path) {
        if (r == -EEXIST)
                return log_error_errno(
                        EEXIST,
                        "%s is a store (an SQLite database): -o writes a report, and never over "
                        "a store; name another file (the store a command reads or writes is --db)",
                        path);
        return log_error_errno(r, "Cannot create %s: %m", path);
}

FILE *query_output(const struct query_args *q) {
        FILE *f = NULL;
        int r;

        if (!q->output || streq(q->output, "-"))
                return stdout;
        r = output_open(q->output, q->db, &f);
        if (r < 0)
                log_output_error(r, q->output);
        return f;
}

int query_output_close(const struct query_args *q, FILE *out, int r) {
        const char *what = q->output && !streq(q->output, "-") ? q->output : "standard output";

        if (r >= 0 && fflush(out) != 0)
                r = -errno;
        if (out != stdout && fclose(out) != 0 && r >= 0)
                r = -errno;
        if (r < 0) {
                log_error_errno(r, "Cannot write %s: %m", what);
                return EXIT_FAILURE_;
        }
        return EXIT_OK;
}
