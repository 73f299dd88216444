/* Reading lines of text from outside with a bound: getline() grows its buffer for as long as
 * no newline comes, so a newline-free stream (/dev/zero, a hostile file) takes all memory. */
#pragma once

#include <stdio.h>
#include <sys/types.h>

/* The longest line any reader of text from outside accepts (folded stacks, shell scripts), a
 * bound against garbage that still has room for deep stacks of long C++ names. */
#define READ_LINE_MAX (16u * 1024 * 1024)

/* Reads the next line of F, its newline included if it has one, into *line (grown as needed,
 * never past MAX + 1 bytes; the caller frees it) and NUL-terminates it. NUL bytes inside the
 * line are kept: the length says where it ends. Returns the line's length in bytes, 0 at the end
 * of F, -E2BIG as soon as the line is longer than MAX bytes (the rest of it is not read), -EIO
 * if reading failed (errno is kept), -ENOMEM. */
ssize_t read_line(FILE *f, size_t max, char **line, size_t *cap);

/* Reads FD to its end (whatever its size said: a file may be written meanwhile), at most MAX
 * bytes, into *ret (malloc()ed with room for MAX + 1 bytes and NUL-terminated; the caller frees
 * it). Returns the bytes read, -EFBIG past MAX, -ENOMEM, or the negative errno of a failed read. */
ssize_t read_all(int fd, size_t max, char **ret);
