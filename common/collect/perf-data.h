/* Reading perf's file format (perf.data, "PERFILE2", file mode): the header, the events'
 * attributes with their sample ids, the feature sections we use (event names, host name,
 * command line) and the data section's records. The file is untrusted: every offset and length
 * is checked, and a file that does not add up is -EBADMSG with the offset where it stopped
 * adding up. Layouts: tools/perf/Documentation/perf.data-file-format.txt. */
#pragma once

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

struct perf_data_event {
        struct perf_event_attr attr; /* copied; fields past the file's attr_size are 0 */
        char *name;                  /* from HEADER_EVENT_DESC; NULL when absent */
        const uint64_t *ids;         /* the sample ids of this event, in the file */
        size_t n_ids;
};

struct perf_data {
        const uint8_t *data; /* the whole file: a buffer, or mapped for the headers */
        size_t size;
        void *map;       /* for munmap(), NULL for a buffer */
        int fd;          /* a file's records are read, not mapped; -1 for a buffer */
        uint8_t *window; /* data section bytes [window_start, + window_len) */
        size_t window_len, window_cap;
        uint64_t window_start;
        uint64_t hold; /* records from here on stay in the window */
        struct perf_data_event *events;
        size_t n_events;
        uint64_t data_offset, data_size;
        char *hostname, *cmdline; /* NULL when absent */
        char error[256];          /* why the last call failed, with the offset */
};

/* Opens PATH (mapped) or a buffer BUF of SIZE bytes (borrowed; for fuzzing) and checks the
 * header, the attributes and the feature sections. Returns 0 and sets *ret; -EBADMSG for a
 * corrupt or truncated file, -EPROTONOSUPPORT for a pipe-mode or big-endian one, -ENOENT,
 * -EACCES, -ENOMEM. On failure perf_data_last_error() says why, with the offset. */
int perf_data_open(const char *path, struct perf_data **ret);
int perf_data_open_buffer(const void *buf, size_t size, struct perf_data **ret);
struct perf_data *perf_data_free(struct perf_data *d);
DEFINE_CLEANUP(struct perf_data *, perf_data_free);

/* Why the last perf_data_open*() in this thread failed. */
const char *perf_data_last_error(void);

/* The next record of the data section from *OFFSET (start at 0; advanced). Returns 1 and sets
 * *ret, valid until the next call; 0 at the end; -EBADMSG for a record that does not fit
 * (d->error says where), -EOPNOTSUPP for a compressed record (perf record -z), -EIO or
 * -ENOMEM. A file's records are read into a window that slides on (page faults on a mapping
 * of the whole file cost more than reading it, twice over on a VM); a record is copied once. */
int perf_data_next(struct perf_data *d, uint64_t *offset, const struct perf_event_header **ret);

/* Keeps the records from data offset OFFSET on readable by perf_data_record() (a round of them,
 * to be sorted) until the next call. */
void perf_data_hold(struct perf_data *d, uint64_t offset);

/* The record at OFFSET, read by perf_data_next() since perf_data_hold() of an offset at or
 * before it: valid until the next perf_data_next(). */
const struct perf_event_header *perf_data_record(const struct perf_data *d, uint64_t offset);

/* The event of sample H: by its PERF_SAMPLE_IDENTIFIER or PERF_SAMPLE_ID, or the only event.
 * NULL when it cannot be told. */
const struct perf_data_event *perf_data_sample_event(const struct perf_data *d,
                                                     const struct perf_event_header *h);

/* What record H says was lost, if it is a PERF_RECORD_LOST (records the kernel dropped from a
 * full ring, charged to the event whose id it names) or a PERF_RECORD_LOST_SAMPLES (the
 * samples an event lost, from the event's own counter, which perf record reads at the end; the
 * event is the one its sample_id trailer names). Returns 1 and sets *ret_lost and *ret_event
 * (NULL when no event of D has that id); 0 if H is another record; -EBADMSG if it is too short. */
int perf_data_parse_lost(const struct perf_data *d, const struct perf_event_header *h,
                         const struct perf_data_event **ret_event, uint64_t *ret_lost);

/* The time of record H (a sample's, or the sample_id trailer of another record's with
 * sample_id_all); 0 when it has none. */
uint64_t perf_data_record_time(const struct perf_data *d, const struct perf_event_header *h);

/* A sample, decoded for the fields cppd uses; the pointers point into the record. */
struct perf_data_sample {
        uint64_t ip, time, period;
        uint32_t pid, tid;
        uint64_t nr; /* callchain, with PERF_CONTEXT_* markers */
        const uint64_t *ips;
        uint64_t abi;         /* PERF_SAMPLE_REGS_USER; 0: none */
        const uint64_t *regs; /* in the order of the bits of attr.sample_regs_user */
        uint64_t stack_size, dyn_size;
        const uint8_t *stack;
};

/* Decodes sample H of event E. Returns 0, -EBADMSG, or -EOPNOTSUPP for sample fields cppd
 * cannot skip (PERF_SAMPLE_READ, PERF_SAMPLE_BRANCH_STACK). */
int perf_data_parse_sample(const struct perf_data_event *e, const struct perf_event_header *h,
                           struct perf_data_sample *ret);
