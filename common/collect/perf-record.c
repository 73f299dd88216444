/* Decoding perf records with a cursor that refuses to read past the record's end. The layouts
 * are those of include/uapi/linux/perf_event.h for the sample_type in record.h. */
#include "perf-record.h"

#include <errno.h>
#include <string.h>

struct cursor {
        const uint8_t *p, *end;
};

static bool take(struct cursor *c, size_t n, const void **ret) {
        if ((size_t) (c->end - c->p) < n)
                return false;
        *ret = c->p;
        c->p += n;
        return true;
}

static bool take_u64(struct cursor *c, uint64_t *ret) {
        const void *p;

        if (!take(c, sizeof *ret, &p))
                return false;
        memcpy(ret, p, sizeof *ret);
        return true;
}

static bool take_u32(struct cursor *c, uint32_t *ret) {
        const void *p;

        if (!take(c, sizeof *ret, &p))
                return false;
        memcpy(ret, p, sizeof *ret);
        return true;
}

static struct cursor body(const struct perf_event_header *h) {
        return (struct cursor) {
                .p = (const uint8_t *) (h + 1),
                .end = (const uint8_t *) h + h->size,
        };
}

int record_parse_sample(const struct perf_event_header *h, uint64_t sample_type, unsigned n_regs,
                        struct record_sample *ret) {
        struct cursor c = body(h);
        struct record_sample s = {};
        const void *p;

        if (h->type != PERF_RECORD_SAMPLE)
                return -EBADMSG;
        if ((sample_type & PERF_SAMPLE_IDENTIFIER) && !take_u64(&c, &s.id))
                return -EBADMSG;
        if ((sample_type & PERF_SAMPLE_IP) && !take_u64(&c, &s.ip))
                return -EBADMSG;
        if ((sample_type & PERF_SAMPLE_TID) && (!take_u32(&c, &s.pid) || !take_u32(&c, &s.tid)))
                return -EBADMSG;
        if ((sample_type & PERF_SAMPLE_TIME) && !take_u64(&c, &s.time))
                return -EBADMSG;
        if (sample_type & PERF_SAMPLE_CALLCHAIN) {
                if (!take_u64(&c, &s.nr) || s.nr > (uint64_t) (c.end - c.p) / 8 || !take(&c, s.nr * 8, &p))
                        return -EBADMSG;
                s.ips = p;
        }
        if (sample_type & PERF_SAMPLE_RAW) {
                if (!take_u32(&c, &s.raw_size) || !take(&c, s.raw_size, &p))
                        return -EBADMSG;
                s.raw = p;
        }
        if (sample_type & PERF_SAMPLE_REGS_USER) {
                if (!take_u64(&c, &s.abi))
                        return -EBADMSG;
                if (s.abi != 0) {
                        if (!take(&c, (size_t) n_regs * 8, &p))
                                return -EBADMSG;
                        s.regs = p;
                }
        }
        if (sample_type & PERF_SAMPLE_STACK_USER) {
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

int record_sample_id(const struct perf_event_header *h, uint64_t *ret_id, uint64_t *ret_time) {
        const uint8_t *end = (const uint8_t *) h + h->size;

        if (h->size < sizeof *h + 24)
                return -EBADMSG;
        memcpy(ret_time, end - 16, 8);
        memcpy(ret_id, end - 8, 8);
        return 0;
}

int record_time(const struct perf_event_header *h, uint64_t *ret) {
        uint64_t id;

        if (h->type == PERF_RECORD_SAMPLE) {
                /* IDENTIFIER, IP, {pid, tid}, then TIME. */
                if (h->size < sizeof *h + 32)
                        return -EBADMSG;
                memcpy(ret, (const uint8_t *) (h + 1) + 24, 8);
                return 0;
        }
        return record_sample_id(h, &id, ret);
}

/* Points *ret at a NUL-terminated string starting at the cursor, which the kernel pads to 8
 * bytes inside the record. */
static bool take_string(struct cursor *c, const char **ret) {
        const uint8_t *nul = memchr(c->p, '\0', c->end - c->p);

        if (!nul)
                return false;
        *ret = (const char *) c->p;
        c->p = nul + 1;
        return true;
}

int record_parse_mmap2(const struct perf_event_header *h, bool build_ids, struct record_mmap2 *ret) {
        struct cursor c = body(h);
        struct record_mmap2 m = {};
        const uint8_t *ids;
        const void *p;

        if (h->type != PERF_RECORD_MMAP2)
                return -EBADMSG;
        if (!take_u32(&c, &m.pid) || !take_u32(&c, &m.tid) || !take_u64(&c, &m.addr) ||
            !take_u64(&c, &m.len) || !take_u64(&c, &m.pgoff) || !take(&c, 24, &p))
                return -EBADMSG;
        ids = p;
        if (build_ids && (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
                m.has_build_id = true;
                m.build_id_size = ids[0];
                if (m.build_id_size > sizeof m.build_id)
                        return -EBADMSG;
                memcpy(m.build_id, ids + 4, m.build_id_size);
        } else {
                memcpy(&m.maj, ids, 4);
                memcpy(&m.min, ids + 4, 4);
                memcpy(&m.ino, ids + 8, 8);
        }
        if (!take_u32(&c, &m.prot) || !take_u32(&c, &m.flags) || !take_string(&c, &m.filename))
                return -EBADMSG;
        *ret = m;
        return 0;
}

int record_parse_comm(const struct perf_event_header *h, struct record_comm *ret) {
        struct cursor c = body(h);
        struct record_comm m = {};

        if (h->type != PERF_RECORD_COMM)
                return -EBADMSG;
        if (!take_u32(&c, &m.pid) || !take_u32(&c, &m.tid) || !take_string(&c, &m.comm))
                return -EBADMSG;
        m.exec = h->misc & PERF_RECORD_MISC_COMM_EXEC;
        *ret = m;
        return 0;
}

int record_parse_task(const struct perf_event_header *h, struct record_task *ret) {
        struct cursor c = body(h);
        struct record_task t = {};

        if (h->type != PERF_RECORD_FORK && h->type != PERF_RECORD_EXIT)
                return -EBADMSG;
        if (!take_u32(&c, &t.pid) || !take_u32(&c, &t.ppid) || !take_u32(&c, &t.tid) ||
            !take_u32(&c, &t.ptid) || !take_u64(&c, &t.time))
                return -EBADMSG;
        *ret = t;
        return 0;
}

int record_parse_lost(const struct perf_event_header *h, uint64_t *ret_id, uint64_t *ret_lost) {
        struct cursor c = body(h);

        if (h->type != PERF_RECORD_LOST || !take_u64(&c, ret_id) || !take_u64(&c, ret_lost))
                return -EBADMSG;
        return 0;
}

int record_parse_switch(const struct perf_event_header *h, uint32_t *ret_pid, uint32_t *ret_tid,
                        bool *ret_out) {
        const uint8_t *end = (const uint8_t *) h + h->size;

        /* The body is empty: the thread is in the sample_id, {pid, tid} first of its 24 bytes. */
        if (h->type != PERF_RECORD_SWITCH || h->size < sizeof *h + 24)
                return -EBADMSG;
        memcpy(ret_pid, end - 24, 4);
        memcpy(ret_tid, end - 20, 4);
        *ret_out = h->misc & PERF_RECORD_MISC_SWITCH_OUT;
        return 0;
}
