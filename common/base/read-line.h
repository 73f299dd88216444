/* Reading lines of text from outside with a bound: getline() grows its buffer for as long as
 * no newline comes, so a newline-free stream (/dev/zero, a hostile file) takes all memory. */
#pragma once

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "cleanup.h"

/* The longest line any reader of text from outside accepts (folded stacks, shell scripts), a
 * bound against garbage that still has room for deep stacks of long C++ names. */
#define READ_LINE_MAX (16u * 1024 * 1024)

/* Reads the next line of F, its newline included if it has one, into *line (grown as needed,
 * never past MAX + 1 bytes; the caller frees it) and NUL-terminates it. NUL bytes inside the
 * line are kept: the length says where it ends. Returns the line's length in bytes, 0 at the end
 * of F, -E2BIG as soon as the line is longer than MAX bytes (the rest of it is not read), -EIO
 * if reading failed (errno is kept), -ENOMEM. */
ssize_t read_line(FILE *f, size_t max, char **line, size_t *cap);

/* read_line() for files of millions of lines (imports): a buffer of its own, filled by the
 * mebibyte and searched for newlines with memchr(), where read_line() takes a character at a
 * time and copies it. */
struct line_reader;

/* Reads lines of F (which stays the caller's) of at most MAX bytes. NULL: no memory. */
struct line_reader *line_reader_new(FILE *f, size_t max);
struct line_reader *line_reader_free(struct line_reader *r);
DEFINE_CLEANUP(struct line_reader *, line_reader_free);

/* Points *ret at the next line, its newline included if it has one, valid until the next call;
 * it is not NUL-terminated, and NUL bytes inside it are kept. Returns the line's length in bytes,
 * 0 at the end of the file, -E2BIG when the line is longer than MAX bytes (with at most a buffer
 * of the file past MAX read), -EIO if reading failed (errno is kept), -ENOMEM; once it has
 * failed, it fails again. The buffer never holds more than MAX + 1 MiB. */
ssize_t line_reader_next(struct line_reader *r, const char **ret);

/* Reads FD to its end (whatever its size said: a file may be written meanwhile), at most MAX
 * bytes, into *ret (malloc()ed with room for MAX + 1 bytes and NUL-terminated; the caller frees
 * it). Returns the bytes read, -EFBIG past MAX, -ENOMEM, or the negative errno of a failed read. */
ssize_t read_all(int fd, size_t max, char **ret);

/* How read_open() and read_file() take a file named by a user or a configuration. */
enum {
        /* A symbolic link as the last component is refused (-ELOOP): for names that another
         * user could plant a link at (the spool, /tmp/perf-PID.map). */
        READ_NOFOLLOW = 1 << 0,
        /* A password or a token: the file must belong to the reader's effective uid (-EPERM
         * otherwise), as ssh requires of its keys; a file of another user may be one that user
         * can change or swap. */
        READ_SECRET = 1 << 1,
};

/* Opens PATH (relative to DIRFD; AT_FDCWD: as open() would) for reading, the one way every file
 * named from outside is opened: without blocking (a FIFO or a device there would hold the
 * program in open() or read() forever, with no one writing), then fstat()ed and kept only if it
 * is a regular file. Returns the descriptor (O_CLOEXEC; O_NONBLOCK, which a regular file
 * ignores) and fills *ret_st (may be NULL); -EISDIR for a folder, -ELOOP for a symbolic link
 * under READ_NOFOLLOW, -EBADFD for anything else that is not a regular file (a FIFO, a socket,
 * a device), -EPERM under READ_SECRET for a file of another user, or open()'s errors
 * (read_strerror() puts them in words). */
int read_open(int dirfd, const char *path, unsigned flags, struct stat *ret_st);

/* read_open()s PATH and read_all()s it, at most MAX bytes (-EFBIG past them), into *ret as
 * read_all() does, filling *ret_st (may be NULL) as read_open() does. Returns the bytes read, or
 * read_open()'s and read_all()'s errors. */
ssize_t read_file(int dirfd, const char *path, unsigned flags, size_t max, char **ret, struct stat *ret_st);

/* The error R of read_open() or read_file() in words: "not a regular file (a FIFO, a socket or a
 * device)" for -EBADFD, "a symbolic link" for -ELOOP, "owned by another user" for -EPERM,
 * "larger than allowed" for -EFBIG, strerror() for the rest. Static text. */
const char *read_strerror(int r);
