/* A perf ring buffer: the mmap()ed metadata page and the data pages the kernel writes records
 * into, read without copying except for records that wrap around its end. */
#pragma once

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

struct ring_buffer {
        int fd; /* the event that owns the buffer */
        struct perf_event_mmap_page *meta;
        uint8_t *data;
        uint64_t mask; /* data size - 1 */
        uint64_t tail; /* our read position */
        uint64_t head; /* the kernel's write position at the last peek */
        size_t map_size;
        uint8_t scratch[65536]; /* a wrapped record reassembled; records are < 64 KiB */
};

/* Maps DATA_SIZE bytes (a power of two, at least a page) of FD's ring. Returns 0 and sets
 * *ret; -EPERM when the locked-memory budget is exhausted (perf_event_mlock_kb,
 * RLIMIT_MEMLOCK); -ENOMEM; -EINVAL. */
int ring_buffer_map(int fd, size_t data_size, struct ring_buffer **ret);
struct ring_buffer *ring_buffer_free(struct ring_buffer *r);
DEFINE_CLEANUP(struct ring_buffer *, ring_buffer_free);

/* Snapshots the kernel's head: records up to it can be read. */
void ring_buffer_peek(struct ring_buffer *r);

/* Returns 1 and points *ret at the record at offset POS (absolute, tail <= POS < head), valid
 * until ring_buffer_consume() or the next call for a wrapped record; 0 at head; -EBADMSG when
 * the sizes make no sense. Sets *ret_next to the following record's offset. */
int ring_buffer_at(struct ring_buffer *r, uint64_t pos, const struct perf_event_header **ret,
                   uint64_t *ret_next);

/* Hands everything up to POS back to the kernel. */
void ring_buffer_consume(struct ring_buffer *r, uint64_t pos);
