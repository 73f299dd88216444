/* Bounded line reading. One character at a time through getc_unlocked(), which is a buffer
 * read, so that the bound is checked before the buffer grows and NUL bytes survive (fgets()
 * would hide them, and with them the line's real length). Whole files are read with a bound
 * too, after read_open() has made sure they are files: O_NONBLOCK makes open() of a FIFO
 * return at once, where it would wait for a writer, and fstat() then refuses it before any
 * read() can wait.
 *
 * A line reader keeps a buffer [start, end) of the file not yet returned: a line wholly in it is
 * returned where it lies; a line that runs past its end is moved to the front, and the buffer
 * grown (doubling, up to MAX plus a chunk) only while the line fills it. */
#include "read-line.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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

/* What a line reader reads at a time, and its buffer's size to start with. */
#define LINE_READER_CHUNK (1u << 20)

struct line_reader {
        FILE *f;
        size_t max;
        char *buf;
        size_t size, start, end; /* bytes: of buf; returned before start; read before end */
        size_t scanned;          /* bytes after start known to hold no newline */
        int error;               /* negative: the error every later call returns */
        bool eof;
};

struct line_reader *line_reader_new(FILE *f, size_t max) {
        struct line_reader *r = calloc(1, sizeof *r);

        if (!r)
                return NULL;
        r->f = f;
        r->max = max;
        return r;
}

struct line_reader *line_reader_free(struct line_reader *r) {
        if (r)
                free(r->buf);
        free(r);
        return NULL;
}

/* Reads more of the file after what is in the buffer, moving that to the front and growing the
 * buffer if it is full. Returns 0, or a negative errno; r->eof at the end of the file. */
static int line_reader_fill(struct line_reader *r) {
        size_t n, want;

        if (r->start > 0) {
                memmove(r->buf, r->buf + r->start, r->end - r->start);
                r->end -= r->start;
                r->start = 0;
        }
        if (r->end == r->size) {
                size_t size = r->size ? r->size * 2 : LINE_READER_CHUNK;
                char *p;

                if (size > r->max + LINE_READER_CHUNK)
                        size = r->max + LINE_READER_CHUNK;
                if (size <= r->end)
                        return -E2BIG; /* cannot happen: the caller stops at MAX */
                p = realloc(r->buf, size);
                if (!p)
                        return -ENOMEM;
                r->buf = p;
                r->size = size;
        }
        want = r->size - r->end;
        if (want > LINE_READER_CHUNK)
                want = LINE_READER_CHUNK;
        n = fread(r->buf + r->end, 1, want, r->f);
        r->end += n;
        if (n < want) {
                if (ferror(r->f))
                        return -EIO;
                r->eof = true;
        }
        return 0;
}

ssize_t line_reader_next(struct line_reader *r, const char **ret) {
        const char *nl;
        size_t len;
        int e;

        if (r->error < 0)
                return r->error;
        for (;;) {
                nl = r->end > r->start + r->scanned ?
                        memchr(r->buf + r->start + r->scanned, '\n', r->end - r->start - r->scanned) :
                        NULL;
                if (nl) {
                        len = (size_t) (nl - (r->buf + r->start)) + 1;
                        break;
                }
                r->scanned = r->end - r->start;
                if (r->scanned > r->max)
                        return r->error = -E2BIG;
                if (r->eof) {
                        len = r->scanned; /* the last line, without a newline, or the end */
                        break;
                }
                e = line_reader_fill(r);
                if (e < 0)
                        return r->error = e;
        }
        if (len > r->max)
                return r->error = -E2BIG;
        if (len == 0)
                return 0;
        *ret = r->buf + r->start;
        r->start += len;
        r->scanned = 0;
        return (ssize_t) len;
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
