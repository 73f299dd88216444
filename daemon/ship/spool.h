/* The fleet spool: batches for ClickHouse as files in one folder, waiting to be sent (shipper.c
 * sends them). One file a batch, named by its key so that the folder lists oldest first:
 * "BUCKET-RUN-HOST.batch", the bucket's start zero-padded; a batch found damaged is set aside
 * as "BUCKET-RUN-HOST.batch.bad". Every file is reached through the folder's descriptor. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ch-write.h"

/* Bytes of a spool file name, with its NUL. */
#define SPOOL_NAME_MAX 128

struct spool_entry {
        char name[SPOOL_NAME_MAX];
        uint64_t bytes;
        bool damaged; /* a .bad file, set aside */
};

/* The bytes spool_write() would write for B. */
uint64_t spool_size(const struct ch_batch *b);

/* Opens the spool folder DIR, making it (0700) if missing: it must belong to the effective uid
 * and be writable by no group or other, who could plant links or files where cppd writes as
 * root. Returns 0 and sets *ret_fd; -EPERM for a folder of another user or that others may
 * write, or mkdir()'s and open()'s errors; ERROR (ERROR_SIZE bytes) says what in words. */
int spool_open(const char *dir, int *ret_fd, char *error, size_t error_size);

/* Writes the file NAME in the spool folder DFD, whole or not at all: FILL writes its bytes to a
 * temporary name (".tmp-NAME", made new: a stale file or a link there is removed first, and
 * O_EXCL|O_NOFOLLOW refuse one that comes back), which is fsync()ed, renamed and the folder
 * fsync()ed. FILL returns 0 or a negative errno. Returns 0 or a negative errno. */
int spool_write_file(int dfd, const char *name, int (*fill)(FILE *f, void *userdata), void *userdata);

/* Writes B into the spool folder DFD as a new file (spool_write_file()). Sets RET_NAME
 * (SPOOL_NAME_MAX bytes) to its name. Returns 0 or a negative errno (-ENOSPC: a full disk). */
int spool_write(int dfd, const struct ch_batch *b, char *ret_name);

/* Reads the file NAME of DFD back. Returns 0 and sets *ret (ch_batch_free()); -ENOENT if it is
 * gone; -EBADMSG if it is not a whole spool file (its checksum, its lengths) or not a regular
 * file (a link, a FIFO: never followed or waited on); -EFBIG past MAX_BYTES; other negative
 * errnos from reading. */
int spool_read(int dfd, const char *name, uint64_t max_bytes, struct ch_batch **ret);

/* Sets the batch file NAME of DFD aside, damaged, as NAME.bad, and sets RET_NAME (SPOOL_NAME_MAX
 * bytes) to that. Returns 0 or a negative errno. */
int spool_set_aside(int dfd, const char *name, char *ret_name);

/* Lists the batches in DFD, and the damaged ones set aside, each in name order (oldest bucket
 * first), and removes the temporary files a crash left. Sets *ret (free(); NULL when none) and
 * *ret_n. Returns 0 or a negative errno. */
int spool_list(int dfd, struct spool_entry **ret, size_t *ret_n);
