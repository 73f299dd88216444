/* The ring buffer. The kernel advances data_head after writing (we load it with acquire
 * semantics) and reads data_tail to know what it may overwrite (we store it with release
 * semantics, after we are done with the records). Reading is split into peek, at and consume
 * so the collector can look at the records of every CPU's ring, sort them by time, process
 * them in place, and only then let the kernel reuse the space. Records are 8-byte aligned, so a
 * header never wraps; a record that does is copied into scratch space sized by the format's own
 * limit (the header's u16 size). */
#include "ring-buffer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int ring_buffer_map(int fd, size_t data_size, struct ring_buffer **ret) {
        long page = sysconf(_SC_PAGESIZE);
        struct ring_buffer *r;
        void *m;

        if (data_size < (size_t) page || (data_size & (data_size - 1)))
                return -EINVAL;
        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->map_size = page + data_size;
        m = mmap(NULL, r->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
                int e = errno;

                free(r);
                return -e;
        }
        r->fd = fd;
        r->meta = m;
        r->data = (uint8_t *) m + page;
        r->mask = data_size - 1;
        r->tail = r->head = 0;
        *ret = r;
        return 0;
}

struct ring_buffer *ring_buffer_free(struct ring_buffer *r) {
        if (!r)
                return NULL;
        munmap(r->meta, r->map_size);
        free(r);
        return NULL;
}

void ring_buffer_peek(struct ring_buffer *r) {
        r->head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
}

int ring_buffer_at(struct ring_buffer *r, uint64_t pos, const struct perf_event_header **ret,
                   uint64_t *ret_next) {
        uint64_t avail = r->head - pos;
        size_t off = pos & r->mask;
        const struct perf_event_header *h;

        if (avail == 0)
                return 0;
        if (avail < sizeof *h || avail > r->mask + 1 || (pos & 7))
                return -EBADMSG;
        h = (const void *) (r->data + off);
        if (h->size < sizeof *h || h->size > avail || (h->size & 7))
                return -EBADMSG;
        if (off + h->size > r->mask + 1) {
                size_t first = r->mask + 1 - off;

                memcpy(r->scratch, r->data + off, first);
                memcpy(r->scratch + first, r->data, h->size - first);
                h = (const void *) r->scratch;
        }
        *ret = h;
        *ret_next = pos + h->size;
        return 1;
}

void ring_buffer_consume(struct ring_buffer *r, uint64_t pos) {
        r->tail = pos;
        __atomic_store_n(&r->meta->data_tail, pos, __ATOMIC_RELEASE);
}
