/* Fuzz target: perf records as they come out of a ring buffer, through every decoder. The
 * input's first byte picks the sample layout; the rest is one record. */
#include "fuzz.h"
#include "perf-record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const uint64_t layouts[] = {
                RECORD_SAMPLE_TYPE,
                RECORD_SAMPLE_TYPE | PERF_SAMPLE_RAW,
                RECORD_SAMPLE_TYPE | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
                PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                        PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
        };
        uint64_t buf[8192], id, time, lost;
        struct perf_event_header *h = (void *) buf;
        struct record_sample s;
        struct record_mmap2 m;
        struct record_comm c;
        struct record_task t;
        uint32_t pid, tid;
        bool out;

        if (size < 1 + sizeof *h || size - 1 > sizeof buf)
                return 0;
        memcpy(buf, data + 1, size - 1);
        /* A ring buffer never holds a record larger than what was read: keep size honest, as
         * ring_buffer_at() does, and let everything else be hostile. */
        if (h->size > size - 1)
                h->size = size - 1;
        if (h->size < sizeof *h)
                return 0;
        if (record_parse_sample(h, layouts[data[0] % 4], 17, &s) == 0 &&
            (s.nr * 8 > h->size || s.raw_size > h->size || s.stack_size > h->size ||
             s.dyn_size > s.stack_size))
                abort();
        (void) record_time(h, &time);
        (void) record_sample_id(h, &id, &time);
        if (record_parse_mmap2(h, data[0] & 4, &m) == 0 && strlen(m.filename) >= h->size)
                abort();
        if (record_parse_comm(h, &c) == 0 && strlen(c.comm) >= h->size)
                abort();
        (void) record_parse_task(h, &t);
        (void) record_parse_lost(h, &id, &lost);
        (void) record_parse_switch(h, &pid, &tid, &out);
        return 0;
}
