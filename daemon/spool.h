/* The fleet spool: batches for ClickHouse as files in one folder, waiting to be sent (fleet.c
 * sends them). One file a batch, named by its key so that the folder lists oldest first:
 * "BUCKET-RUN-HOST.batch", the bucket's start zero-padded. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ch-write.h"

/* Bytes of a spool file name, with its NUL. */
#define SPOOL_NAME_MAX 128

struct spool_entry {
        char name[SPOOL_NAME_MAX];
        uint64_t bytes;
};

/* The bytes spool_write() would write for B. */
uint64_t spool_size(const struct ch_batch *b);

/* Writes B into folder DIR as a new file, whole or not at all: to a temporary name, fsync()ed,
 * renamed, the folder fsync()ed. Sets RET_NAME (SPOOL_NAME_MAX bytes) to its name. Returns 0 or
 * a negative errno (-ENOSPC: a full disk). */
int spool_write(const char *dir, const struct ch_batch *b, char *ret_name);

/* Reads the file NAME of DIR back. Returns 0 and sets *ret (ch_batch_free()); -ENOENT if it is
 * gone; -EBADMSG if it is not a whole spool file (its checksum, its lengths); -EFBIG past
 * FLEET_BATCH_MAX; other negative errnos from reading. */
int spool_read(const char *dir, const char *name, uint64_t max_bytes, struct ch_batch **ret);

/* Lists the batches in DIR, oldest first, and removes the temporary files a crash left. Sets
 * *ret (free(); NULL when none) and *ret_n. Returns 0 or a negative errno. */
int spool_list(const char *dir, struct spool_entry **ret, size_t *ret_n);
