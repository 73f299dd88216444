/* Bounded line reading. One character at a time through getc_unlocked(), which is a buffer
 * read, so that the bound is checked before the buffer grows and NUL bytes survive (fgets()
 * would hide them, and with them the line's real length). Whole files are read with a bound
 * too, after read_open() has made sure they are files: O_NONBLOCK makes open() of a FIFO
 * return at once, where it would wait for a writer, and fstat() then refuses it before any
 * read() can wait. */
#include "read-line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

/* The first allocation; each later one doubles, up to the caller's bound. */
#define READ_LINE_START 256

ssize_t read_line(FILE *f, size_t max, char **line, size_t *cap) {
        size_t n = 0;
        int c;

        flockfile(f);
        while ((c = getc_unlocked(f)) != EOF) {
                if (n == max) {
                        funlockfile(f);
                        return -E2BIG;
                }
                if (n + 2 > *cap) {
                        size_t want = *cap < READ_LINE_START ? READ_LINE_START : *cap * 2;
                        char *p;

                        if (want > max + 1)
                                want = max + 1;
                        if (want < n + 2)
                                want = n + 2;
                        p = realloc(*line, want);
                        if (!p) {
                                funlockfile(f);
                                return -ENOMEM;
                        }
                        *line = p;
                        *cap = want;
                }
                (*line)[n++] = (char) c;
                if (c == '\n')
                        break;
        }
        funlockfile(f);
        if (n == 0 && ferror(f))
                return -EIO;
        if (n > 0)
                (*line)[n] = '\0';
        return (ssize_t) n;
}

ssize_t read_all(int fd, size_t max, char **ret) {
        _cleanup_free_ char *text = malloc(max + 1);
        size_t n = 0;

        if (!text)
                return -ENOMEM;
        for (ssize_t k; n <= max; n += (size_t) k) {
                k = read(fd, text + n, max + 1 - n);
                if (k < 0 && errno == EINTR) {
                        k = 0;
                        continue;
                }
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
        }
        if (n > max)
                return -EFBIG;
        text[n] = '\0';
        *ret = take_ptr(&text);
        return (ssize_t) n;
}

int read_open(int dirfd, const char *path, unsigned flags, struct stat *ret_st) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        fd = openat(dirfd, path,
                    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (flags & READ_NOFOLLOW ? O_NOFOLLOW : 0));
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if ((flags & READ_SECRET) && st.st_uid != geteuid())
                return -EPERM;
        if (ret_st)
                *ret_st = st;
        return take_fd(&fd);
}

ssize_t read_file(int dirfd, const char *path, unsigned flags, size_t max, char **ret, struct stat *ret_st) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        ssize_t n;

        fd = read_open(dirfd, path, flags, &st);
        if (fd < 0)
                return fd;
        if ((uint64_t) st.st_size > max)
                return -EFBIG;
        n = read_all(fd, max, ret);
        if (n >= 0 && ret_st)
                *ret_st = st;
        return n;
}

const char *read_strerror(int r) {
        switch (r) {
        case -EBADFD:
                return "not a regular file (a FIFO, a socket or a device)";
        case -ELOOP:
                return "a symbolic link, which is not followed there";
        case -EPERM:
                return "owned by another user";
        case -EFBIG:
                return "larger than allowed";
        default:
                return strerror(-r);
        }
}
