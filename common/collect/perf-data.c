/* perf.data, file mode. The file is mapped and read in place through bounds-checked accessors;
 * nothing is trusted: counts are checked against the bytes that would hold them before any
 * allocation, so a lying header costs an error, not memory.
 *
 *     header    magic "PERFILE2", header size, attr entry size, then (offset, size) of the
 *               attrs, data and event types sections, and a 256-bit map of feature sections
 *     attrs     per event: perf_event_attr (entry size - 16 bytes), then (offset, size) of
 *               its u64 sample ids
 *     data      records, each a perf_event_header and its body
 *     features  after the data section: one (offset, size) per feature bit set, in bit order */
#include "perf-data.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC UINT64_C(0x32454c4946524550) /* "PERFILE2", little-endian */
#define MAGIC_SWAPPED UINT64_C(0x50455246494c4532)
#define HEADER_SIZE 104
#define FEATURE_HOSTNAME 3
#define FEATURE_CMDLINE 11
#define FEATURE_EVENT_DESC 12
#define RECORD_COMPRESSED 81
#define RECORD_USER_FIRST 64   /* perf's own records (FINISHED_ROUND...) from here */
#define WINDOW_READ (4u << 20) /* bytes read at a time: few system calls, little memory */
/* What works with the perf of Debian 12 (6.1) for the files cppd does not read: perf script
 * reads them and folds the stacks, counting samples. */
#define PERF_DATA_FOLD_ADVICE \
        "'perf script report stackcollapse -i FILE | cppctl import --folded - --resource EVENT'"

static _Thread_local char last_error[256];

const char *perf_data_last_error(void) {
        return last_error;
}

__attribute__((format(printf, 2, 3))) static int bad(struct perf_data *d, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(d->error, sizeof d->error, fmt, ap);
        va_end(ap);
        return -EBADMSG;
}

/* Whether [OFFSET, OFFSET + SIZE) lies inside the file. */
static bool in_file(const struct perf_data *d, uint64_t offset, uint64_t size) {
        return offset <= d->size && size <= d->size - offset;
}

static uint64_t u64_at(const struct perf_data *d, uint64_t offset) {
        uint64_t v;

        memcpy(&v, d->data + offset, 8);
        return v;
}

static uint32_t u32_at(const struct perf_data *d, uint64_t offset) {
        uint32_t v;

        memcpy(&v, d->data + offset, 4);
        return v;
}

/* A perf string at *OFFSET within [.., END): u32 length, then that many bytes holding a
 * NUL-terminated string. Returns a copy, advancing *OFFSET; NULL (with d->error) if it does not
 * fit or is not terminated, or without memory. */
static char *string_at(struct perf_data *d, uint64_t *offset, uint64_t end) {
        uint32_t len;
        const char *s;

        if (*offset > end || end - *offset < 4) {
                bad(d, "a string at offset %" PRIu64 " runs past its section", *offset);
                return NULL;
        }
        len = u32_at(d, *offset);
        if (len == 0 || end - *offset - 4 < len) {
                bad(d, "a string of %u bytes at offset %" PRIu64 " runs past its section", len, *offset);
                return NULL;
        }
        s = (const char *) d->data + *offset + 4;
        if (!memchr(s, '\0', len)) {
                bad(d, "the string at offset %" PRIu64 " is not terminated", *offset);
                return NULL;
        }
        *offset += 4 + (uint64_t) len;
        return strdup(s);
}

static int read_attrs(struct perf_data *d, uint64_t attr_entry, uint64_t offset, uint64_t size,
                      uint64_t header_size) {
        uint64_t attr_size;

        if (attr_entry <= 16 || attr_entry > 4096)
                return bad(d, "attr entries of %" PRIu64 " bytes", attr_entry);
        attr_size = attr_entry - 16;
        if (attr_size < PERF_ATTR_SIZE_VER0)
                return bad(d, "attributes of %" PRIu64 " bytes, smaller than any perf's", attr_size);
        if (!in_file(d, offset, size) || size % attr_entry != 0 || size == 0)
                return bad(d,
                           "the attrs section (%" PRIu64 " bytes at offset %" PRIu64
                           ") does not fit the file",
                           size, offset);
        /* Attrs read out of the header would be its numbers taken for events (perf refuses such
         * files). */
        if (offset < header_size)
                return bad(d,
                           "the attrs section (%" PRIu64 " bytes at offset %" PRIu64 ") overlaps the %" PRIu64
                           "-byte header",
                           size, offset, header_size);
        d->n_events = size / attr_entry;
        d->events = calloc(d->n_events, sizeof *d->events);
        if (!d->events)
                return -ENOMEM;
        for (size_t i = 0; i < d->n_events; i++) {
                struct perf_data_event *e = &d->events[i];
                uint64_t at = offset + i * attr_entry, ids_offset, ids_size;

                memcpy(&e->attr, d->data + at, MIN(attr_size, sizeof e->attr));
                /* The attr's own size: 0 (perf reads it as the first version's) or what the file
                 * has room for. */
                if (e->attr.size > attr_size || (e->attr.size != 0 && e->attr.size < PERF_ATTR_SIZE_VER0))
                        return bad(d, "event %zu's attributes say they are %u bytes, in entries of %" PRIu64,
                                   i, e->attr.size, attr_size);
                ids_offset = u64_at(d, at + attr_size);
                ids_size = u64_at(d, at + attr_size + 8);
                if (!in_file(d, ids_offset, ids_size) || ids_size % 8 != 0 ||
                    (ids_size > 0 && ids_offset < header_size))
                        return bad(d,
                                   "event %zu's ids (%" PRIu64 " bytes at offset %" PRIu64
                                   ") do not fit the file",
                                   i, ids_size, ids_offset);
                if (ids_offset % 8 != 0 && ids_size > 0)
                        return bad(d, "event %zu's ids at offset %" PRIu64 " are not aligned", i, ids_offset);
                e->ids = (const uint64_t *) (d->data + ids_offset);
                e->n_ids = ids_size / 8;
        }
        return 0;
}

/* HEADER_EVENT_DESC: names of the events, in the attrs' order. */
static int read_event_desc(struct perf_data *d, uint64_t offset, uint64_t end) {
        uint32_t nr, attr_size;

        if (end - offset < 8)
                return bad(d, "the event descriptions at offset %" PRIu64 " are truncated", offset);
        nr = u32_at(d, offset);
        attr_size = u32_at(d, offset + 4);
        offset += 8;
        if (nr != d->n_events)
                return 0; /* not ours to match by order: leave the names out */
        for (uint32_t i = 0; i < nr; i++) {
                uint32_t n_ids;

                if (end - offset < (uint64_t) attr_size + 4)
                        return bad(d, "event description %u at offset %" PRIu64 " is truncated", i, offset);
                offset += attr_size;
                n_ids = u32_at(d, offset);
                offset += 4;
                d->events[i].name = string_at(d, &offset, end);
                if (!d->events[i].name)
                        return d->error[0] ? -EBADMSG : -ENOMEM;
                if ((end - offset) / 8 < n_ids)
                        return bad(d, "event description %u's %u ids run past the section", i, n_ids);
                offset += (uint64_t) n_ids * 8;
        }
        return 0;
}

static int read_features(struct perf_data *d, const uint64_t features[4]) {
        uint64_t table = d->data_offset + d->data_size;
        unsigned k = 0;
        int r = 0;

        for (unsigned bit = 0; bit < 256 && r >= 0; bit++) {
                uint64_t offset, size, end, at;

                if (!(features[bit / 64] & (UINT64_C(1) << (bit % 64))))
                        continue;
                at = table + 16 * (uint64_t) k++;
                if (!in_file(d, at, 16))
                        return bad(d, "the feature table at offset %" PRIu64 " is truncated", table);
                offset = u64_at(d, at);
                size = u64_at(d, at + 8);
                if (!in_file(d, offset, size))
                        return bad(d,
                                   "feature %u (%" PRIu64 " bytes at offset %" PRIu64
                                   ") does not fit the file",
                                   bit, size, offset);
                end = offset + size;
                switch (bit) {
                case FEATURE_HOSTNAME:
                        d->hostname = string_at(d, &offset, end);
                        r = d->hostname ? 0 : d->error[0] ? -EBADMSG : -ENOMEM;
                        break;
                case FEATURE_CMDLINE: {
                        uint32_t nr;
                        size_t len = 0;

                        if (size < 4)
                                return bad(d, "the command line at offset %" PRIu64 " is truncated", offset);
                        nr = u32_at(d, offset);
                        offset += 4;
                        for (uint32_t i = 0; i < nr && r >= 0; i++) {
                                _cleanup_free_ char *arg = string_at(d, &offset, end);
                                char *c;

                                if (!arg)
                                        return d->error[0] ? -EBADMSG : -ENOMEM;
                                c = realloc(d->cmdline, len + strlen(arg) + 2);
                                if (!c)
                                        return -ENOMEM;
                                d->cmdline = c;
                                len += (size_t) sprintf(c + len, "%s%s", len ? " " : "", arg);
                        }
                        break;
                }
                case FEATURE_EVENT_DESC:
                        r = read_event_desc(d, offset, end);
                        break;
                }
        }
        return r;
}

static int parse(struct perf_data *d) {
        uint64_t magic, header_size, attr_entry, features[4];

        if (d->size < 16)
                return bad(d, "%zu bytes: too short for a perf.data header", d->size);
        magic = u64_at(d, 0);
        if (magic == MAGIC_SWAPPED) {
                snprintf(d->error, sizeof d->error, "a big-endian perf.data; record on this machine");
                return -EPROTONOSUPPORT;
        }
        if (magic != MAGIC)
                return bad(d, "not a perf.data file (no PERFILE2 magic)");
        header_size = u64_at(d, 8);
        /* perf inject does not help here: perf 6.1's output of a pipe-mode input is a file perf
         * report refuses too, and it keeps -z's compression. perf script folds either. */
        if (header_size == 16) {
                snprintf(d->error, sizeof d->error,
                         "a pipe-mode perf.data (perf record -o -), which cppd does not "
                         "read; record to a file, or fold it with perf: " PERF_DATA_FOLD_ADVICE);
                return -EPROTONOSUPPORT;
        }
        if (header_size < HEADER_SIZE || d->size < HEADER_SIZE || header_size > d->size)
                return bad(d, "a header of %" PRIu64 " bytes in a file of %zu", header_size, d->size);
        attr_entry = u64_at(d, 16);
        d->data_offset = u64_at(d, 40);
        d->data_size = u64_at(d, 48);
        if (!in_file(d, d->data_offset, d->data_size))
                return bad(d,
                           "the data section (%" PRIu64 " bytes at offset %" PRIu64 ") does not fit the "
                           "file of %zu bytes: truncated, or still being written",
                           d->data_size, d->data_offset, d->size);
        if (d->data_offset < header_size)
                return bad(d, "the data section at offset %" PRIu64 " overlaps the %" PRIu64 "-byte header",
                           d->data_offset, header_size);
        for (int i = 0; i < 4; i++)
                features[i] = u64_at(d, 72 + 8 * i);
        if (read_attrs(d, attr_entry, u64_at(d, 24), u64_at(d, 32), header_size) < 0)
                return -EBADMSG;
        return read_features(d, features);
}

static int finish_open(struct perf_data *d, struct perf_data **ret) {
        int r;

        d->hold = UINT64_MAX; /* nothing held: the window slides on */
        r = parse(d);

        if (r < 0) {
                snprintf(last_error, sizeof last_error, "%s", d->error);
                perf_data_free(d);
                return r;
        }
        *ret = d;
        return 0;
}

int perf_data_open_buffer(const void *buf, size_t size, struct perf_data **ret) {
        struct perf_data *d = calloc(1, sizeof *d);

        last_error[0] = '\0';
        if (!d)
                return -ENOMEM;
        d->data = buf;
        d->size = size;
        d->fd = -1;
        return finish_open(d, ret);
}

int perf_data_open(const char *path, struct perf_data **ret) {
        struct perf_data *d;
        struct stat st;
        void *map;
        int fd;

        last_error[0] = '\0';
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                int r = S_ISREG(st.st_mode) ? -errno : -EBADMSG;

                snprintf(last_error, sizeof last_error, "not a regular file");
                close(fd);
                return r;
        }
        if (st.st_size == 0) {
                close(fd);
                snprintf(last_error, sizeof last_error, "the file is empty");
                return -EBADMSG;
        }
        /* Mapped for the header, attributes and features, a few pages; records are read. */
        map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
                close(fd);
                return -errno;
        }
        d = calloc(1, sizeof *d);
        if (!d) {
                munmap(map, st.st_size);
                close(fd);
                return -ENOMEM;
        }
        d->map = map;
        d->data = map;
        d->size = st.st_size;
        d->fd = fd;
        return finish_open(d, ret);
}

struct perf_data *perf_data_free(struct perf_data *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < d->n_events; i++)
                free(d->events[i].name);
        free(d->events);
        free(d->hostname);
        free(d->cmdline);
        if (d->map)
                munmap(d->map, d->size);
        if (d->fd >= 0)
                close(d->fd);
        free(d->window);
        free(d);
        return NULL;
}

/* Points *ret at data section bytes [OFFSET, OFFSET + N), which lie inside the section: in the
 * buffer, or read into the window, which drops what lies before the held records and grows to
 * hold them all. Returns 0, -EIO, -ENOMEM. */
static int window_get(struct perf_data *d, uint64_t offset, uint64_t n, const uint8_t **ret) {
        uint64_t keep = MIN(d->hold, offset), need;

        if (d->fd < 0) {
                *ret = d->data + d->data_offset + offset;
                return 0;
        }
        if (offset >= d->window_start && offset + n <= d->window_start + d->window_len) {
                *ret = d->window + (offset - d->window_start);
                return 0;
        }
        if (keep < d->window_start || keep > d->window_start + d->window_len) {
                d->window_start = keep; /* a jump back (a second pass) or past the window */
                d->window_len = 0;
        } else {
                size_t drop = keep - d->window_start;

                if (d->window_len > drop) /* the window may not exist yet */
                        memmove(d->window, d->window + drop, d->window_len - drop);
                d->window_start = keep;
                d->window_len -= drop;
        }
        need = offset + n - d->window_start;
        if (need > d->window_cap) {
                size_t cap = MAX(d->window_cap * 2, need + WINDOW_READ);
                uint8_t *w = realloc(d->window, cap);

                if (!w)
                        return -ENOMEM;
                d->window = w;
                d->window_cap = cap;
        }
        while (d->window_len < need) {
                uint64_t at = d->window_start + d->window_len;
                size_t want = MIN(d->window_cap - d->window_len, d->data_size - at);
                ssize_t k = pread(d->fd, d->window + d->window_len, MIN(want, (size_t) WINDOW_READ),
                                  (off_t) (d->data_offset + at));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0) {
                        bad(d,
                            "the file ended at data offset %" PRIu64
                            " while being read: truncated meanwhile?",
                            at);
                        return -EIO;
                }
                d->window_len += k;
        }
        *ret = d->window + (offset - d->window_start);
        return 0;
}

int perf_data_next(struct perf_data *d, uint64_t *offset, const struct perf_event_header **ret) {
        const struct perf_event_header *h;
        uint64_t at = d->data_offset + *offset;
        const uint8_t *p;
        int r;

        if (*offset >= d->data_size)
                return 0;
        if (d->data_size - *offset < sizeof *h)
                return bad(d, "a record header at offset %" PRIu64 " is cut off by the end of the data", at);
        if (at % 8 != 0)
                return bad(d, "a record at offset %" PRIu64 " is not aligned", at);
        r = window_get(d, *offset, sizeof *h, &p);
        if (r < 0)
                return r;
        h = (const struct perf_event_header *) p;
        if (h->size < sizeof *h || h->size > d->data_size - *offset)
                return bad(d, "the record at offset %" PRIu64 " claims %u bytes%s", at, h->size,
                           h->size < sizeof *h ? "" : ", past the end of the data");
        if (h->type == RECORD_COMPRESSED) {
                snprintf(d->error, sizeof d->error,
                         "compressed records (perf record -z), which cppd does not "
                         "read; record without -z, or fold it with perf: " PERF_DATA_FOLD_ADVICE);
                return -EOPNOTSUPP;
        }
        r = window_get(d, *offset, h->size, &p);
        if (r < 0)
                return r;
        *offset += ((const struct perf_event_header *) p)->size;
        *ret = (const struct perf_event_header *) p;
        return 1;
}

void perf_data_hold(struct perf_data *d, uint64_t offset) {
        d->hold = offset;
}

const struct perf_event_header *perf_data_record(const struct perf_data *d, uint64_t offset) {
        if (d->fd < 0)
                return (const struct perf_event_header *) (d->data + d->data_offset + offset);
        assert(offset >= d->window_start && offset - d->window_start < d->window_len);
        return (const struct perf_event_header *) (d->window + (offset - d->window_start));
}

static const struct perf_data_event *event_by_id(const struct perf_data *d, uint64_t id) {
        for (size_t i = 0; i < d->n_events; i++)
                for (size_t k = 0; k < d->events[i].n_ids; k++)
                        if (d->events[i].ids[k] == id)
                                return &d->events[i];
        return NULL;
}

const struct perf_data_event *perf_data_sample_event(const struct perf_data *d,
                                                     const struct perf_event_header *h) {
        uint64_t type, id, offset = sizeof *h;

        if (d->n_events == 1)
                return &d->events[0];
        /* perf gives every event the same id layout when there are several. */
        type = d->events[0].attr.sample_type;
        if (type & PERF_SAMPLE_IDENTIFIER) {
                if (h->size < offset + 8)
                        return NULL;
                memcpy(&id, (const uint8_t *) h + offset, 8);
                return event_by_id(d, id);
        }
        if (!(type & PERF_SAMPLE_ID))
                return NULL;
        offset += 8 *
                (!!(type & PERF_SAMPLE_IP) + !!(type & PERF_SAMPLE_TID) + !!(type & PERF_SAMPLE_TIME) +
                 !!(type & PERF_SAMPLE_ADDR));
        if (h->size < offset + 8)
                return NULL;
        memcpy(&id, (const uint8_t *) h + offset, 8);
        return event_by_id(d, id);
}

int perf_data_parse_lost(const struct perf_data *d, const struct perf_event_header *h,
                         const struct perf_data_event **ret_event, uint64_t *ret_lost) {
        uint64_t type = d->events[0].attr.sample_type, id = 0, lost, from_end;
        const uint8_t *body = (const uint8_t *) (h + 1);
        bool have_id = false;

        if (h->type == PERF_RECORD_LOST) {
                /* struct { u64 id, lost; struct sample_id; } */
                if (h->size < sizeof *h + 16)
                        return -EBADMSG;
                memcpy(&id, body, 8);
                memcpy(&lost, body + 8, 8);
                have_id = true;
        } else if (h->type == PERF_RECORD_LOST_SAMPLES) {
                /* struct { u64 lost; struct sample_id; }: the id from the trailer, whose fields
                 * are TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER, as set. */
                if (h->size < sizeof *h + 8)
                        return -EBADMSG;
                memcpy(&lost, body, 8);
                from_end = (type & PERF_SAMPLE_IDENTIFIER) ?
                        8 :
                        8 * (!!(type & PERF_SAMPLE_STREAM_ID) + !!(type & PERF_SAMPLE_CPU) + 1);
                if (d->events[0].attr.sample_id_all && (type & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID)) &&
                    h->size >= sizeof *h + 8 + from_end) {
                        memcpy(&id, (const uint8_t *) h + h->size - from_end, 8);
                        have_id = true;
                }
        } else
                return 0;

        *ret_event = d->n_events == 1 ? &d->events[0] : have_id ? event_by_id(d, id) : NULL;
        *ret_lost = lost;
        return 1;
}

uint64_t perf_data_record_time(const struct perf_data *d, const struct perf_event_header *h) {
        uint64_t type = d->events[0].attr.sample_type, t = 0, after;

        if (!(type & PERF_SAMPLE_TIME))
                return 0;
        if (h->type == PERF_RECORD_SAMPLE) {
                uint64_t offset = sizeof *h +
                        8 *
                                (!!(type & PERF_SAMPLE_IDENTIFIER) + !!(type & PERF_SAMPLE_IP) +
                                 !!(type & PERF_SAMPLE_TID));

                if (h->size >= offset + 8)
                        memcpy(&t, (const uint8_t *) h + offset, 8);
                return t;
        }
        if (h->type >= RECORD_USER_FIRST || !d->events[0].attr.sample_id_all)
                return 0;
        /* The sample_id trailer: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER, as set. */
        after = 8 *
                (!!(type & PERF_SAMPLE_ID) + !!(type & PERF_SAMPLE_STREAM_ID) + !!(type & PERF_SAMPLE_CPU) +
                 !!(type & PERF_SAMPLE_IDENTIFIER));
        if (h->size >= sizeof *h + after + 8)
                memcpy(&t, (const uint8_t *) h + h->size - after - 8, 8);
        return t;
}

struct cursor {
        const uint8_t *p, *end;
};

static bool take(struct cursor *c, uint64_t n, const void **ret) {
        if ((uint64_t) (c->end - c->p) < n)
                return false;
        if (ret)
                *ret = c->p;
        c->p += n;
        return true;
}

static bool take_u64(struct cursor *c, uint64_t *ret) {
        const void *p;

        if (!take(c, 8, &p))
                return false;
        if (ret)
                memcpy(ret, p, 8);
        return true;
}

int perf_data_parse_sample(const struct perf_data_event *e, const struct perf_event_header *h,
                           struct perf_data_sample *ret) {
        uint64_t type = e->attr.sample_type, tid;
        struct cursor c = { (const uint8_t *) (h + 1), (const uint8_t *) h + h->size };
        struct perf_data_sample s = {};
        const void *p;

        if (h->type != PERF_RECORD_SAMPLE)
                return -EBADMSG;
        if (type & (PERF_SAMPLE_READ | PERF_SAMPLE_BRANCH_STACK))
                return -EOPNOTSUPP;
        if ((type & PERF_SAMPLE_IDENTIFIER) && !take_u64(&c, NULL))
                return -EBADMSG;
        if ((type & PERF_SAMPLE_IP) && !take_u64(&c, &s.ip))
                return -EBADMSG;
        if (type & PERF_SAMPLE_TID) {
                if (!take_u64(&c, &tid))
                        return -EBADMSG;
                s.pid = (uint32_t) tid;
                s.tid = (uint32_t) (tid >> 32);
        }
        if ((type & PERF_SAMPLE_TIME) && !take_u64(&c, &s.time))
                return -EBADMSG;
        if ((type & PERF_SAMPLE_ADDR) && !take_u64(&c, NULL))
                return -EBADMSG;
        if ((type & PERF_SAMPLE_ID) && !take_u64(&c, NULL))
                return -EBADMSG;
        if ((type & PERF_SAMPLE_STREAM_ID) && !take_u64(&c, NULL))
                return -EBADMSG;
        if ((type & PERF_SAMPLE_CPU) && !take_u64(&c, NULL))
                return -EBADMSG;
        s.period = e->attr.freq ? 0 : e->attr.sample_period;
        if ((type & PERF_SAMPLE_PERIOD) && !take_u64(&c, &s.period))
                return -EBADMSG;
        if (type & PERF_SAMPLE_CALLCHAIN) {
                if (!take_u64(&c, &s.nr) || s.nr > (uint64_t) (c.end - c.p) / 8 || !take(&c, s.nr * 8, &p))
                        return -EBADMSG;
                s.ips = p;
        }
        if (type & PERF_SAMPLE_RAW) {
                uint32_t size;

                if (!take(&c, 4, &p))
                        return -EBADMSG;
                memcpy(&size, p, 4);
                if (!take(&c, size, NULL))
                        return -EBADMSG;
        }
        if (type & PERF_SAMPLE_REGS_USER) {
                if (!take_u64(&c, &s.abi))
                        return -EBADMSG;
                if (s.abi != 0) {
                        if (!take(&c, 8 * (uint64_t) __builtin_popcountll(e->attr.sample_regs_user), &p))
                                return -EBADMSG;
                        s.regs = p;
                }
        }
        if (type & PERF_SAMPLE_STACK_USER) {
                if (!take_u64(&c, &s.stack_size) || s.stack_size > (uint64_t) (c.end - c.p))
                        return -EBADMSG;
                if (s.stack_size > 0) {
                        if (!take(&c, s.stack_size, &p) || !take_u64(&c, &s.dyn_size) ||
                            s.dyn_size > s.stack_size)
                                return -EBADMSG;
                        s.stack = p;
                }
        }
        *ret = s;
        return 0;
}
