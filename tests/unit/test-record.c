/* Decoding perf records, from records built by hand: well-formed ones of each type, and ones
 * whose sizes lie, which must be refused rather than read past their end. */
#include <errno.h>
#include <string.h>

#include "perf-record.h"
#include "tap.h"

struct builder {
        uint64_t buf[512];
        size_t n; /* u64 words after the header */
};

static struct perf_event_header *header(struct builder *b) {
        return (struct perf_event_header *) b->buf;
}

static void start(struct builder *b, uint32_t type, uint16_t misc) {
        memset(b, 0, sizeof *b);
        header(b)->type = type;
        header(b)->misc = misc;
        b->n = 1;
}

static void put(struct builder *b, uint64_t v) {
        b->buf[b->n++] = v;
}

static void put2(struct builder *b, uint32_t lo, uint32_t hi) {
        put(b, (uint64_t) hi << 32 | lo);
}

static void put_string(struct builder *b, const char *s) {
        size_t len = strlen(s) + 1, words = (len + 7) / 8;

        memcpy(&b->buf[b->n], s, len);
        b->n += words;
}

static const struct perf_event_header *finish(struct builder *b) {
        header(b)->size = b->n * 8;
        return header(b);
}

static void sample_id(struct builder *b, uint32_t pid, uint32_t tid, uint64_t time, uint64_t id) {
        put2(b, pid, tid);
        put(b, time);
        put(b, id);
}

static void test_sample(void) {
        struct builder b;
        struct record_sample s;
        uint64_t type = RECORD_SAMPLE_TYPE | PERF_SAMPLE_RAW | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        uint64_t time;

        start(&b, PERF_RECORD_SAMPLE, 0);
        put(&b, 77);        /* identifier */
        put(&b, 0x401000);  /* ip */
        put2(&b, 100, 101); /* pid, tid */
        put(&b, 123456789); /* time */
        put(&b, 3);         /* callchain */
        put(&b, (uint64_t) PERF_CONTEXT_USER);
        put(&b, 0x401000);
        put(&b, 0x402000);
        put2(&b, 12, 0x11223344);       /* raw: size 12, then 12 bytes (one word + half) */
        put(&b, 0x5566778899aabbccULL); /* the raw data ends mid-word: 4 + 12 = 16 bytes */
        put(&b, PERF_SAMPLE_REGS_ABI_64);
        put(&b, 1); /* 2 registers */
        put(&b, 2);
        put(&b, 16); /* stack: 16 bytes */
        put(&b, 0xaaaa);
        put(&b, 0xbbbb);
        put(&b, 8); /* dyn_size */
        ok(record_parse_sample(finish(&b), type, 2, &s) == 0, "a sample with every part parses");
        ok(s.id == 77 && s.ip == 0x401000 && s.pid == 100 && s.tid == 101 && s.time == 123456789,
           "id, ip, pid, tid, time");
        ok(s.nr == 3 && s.ips[2] == 0x402000, "callchain");
        ok(s.raw_size == 12, "raw size");
        ok(s.abi == PERF_SAMPLE_REGS_ABI_64 && s.regs[0] == 1 && s.regs[1] == 2, "registers");
        ok(s.stack_size == 16 && s.dyn_size == 8 && s.stack[0] == 0xaa, "stack");
        ok(record_time(finish(&b), &time) == 0 && time == 123456789, "record_time reads a sample's time");

        header(&b)->size -= 8; /* drop dyn_size */
        ok(record_parse_sample(header(&b), type, 2, &s) == -EBADMSG, "a truncated sample: -EBADMSG");

        start(&b, PERF_RECORD_SAMPLE, 0);
        put(&b, 1);
        put(&b, 2);
        put2(&b, 3, 4);
        put(&b, 5);
        put(&b, 1000000); /* a callchain far longer than the record */
        ok(record_parse_sample(finish(&b), RECORD_SAMPLE_TYPE, 0, &s) == -EBADMSG,
           "a callchain count past the end: -EBADMSG");

        start(&b, PERF_RECORD_SAMPLE, 0);
        put(&b, 1);
        put(&b, 2);
        put2(&b, 3, 4);
        put(&b, 5);
        put(&b, 0);
        put(&b, 8); /* stack size 8, then dyn_size 16 > 8 */
        put(&b, 0);
        put(&b, 16);
        ok(record_parse_sample(finish(&b), RECORD_SAMPLE_TYPE | PERF_SAMPLE_STACK_USER, 0, &s) == -EBADMSG,
           "dyn_size above the stack size: -EBADMSG");

        start(&b, PERF_RECORD_SAMPLE, 0);
        put(&b, 1);
        ok(record_parse_sample(finish(&b), RECORD_SAMPLE_TYPE, 0, &s) == -EBADMSG,
           "a sample cut after its id: -EBADMSG");
        ok(record_time(header(&b), &time) == -EBADMSG, "and it has no time");
}

static void test_side_band(void) {
        struct builder b;
        struct record_mmap2 m;
        struct record_comm cm;
        struct record_task t;
        uint64_t id, time, lost;
        uint32_t pid, tid;
        bool out;

        start(&b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_MMAP_BUILD_ID);
        put2(&b, 10, 11);
        put(&b, 0x7f0000000000);
        put(&b, 0x20000);
        put(&b, 0x1000);
        put(&b, 20 | 0xab00ULL << 0); /* build_id_size 20, then bytes from offset 4 */
        put(&b, 0x0706050403020100ULL);
        put(&b, 0x0f0e0d0c0b0a0908ULL);
        put2(&b, 5, 2); /* prot r-x, flags */
        put_string(&b, "/usr/lib/libc.so.6");
        sample_id(&b, 10, 11, 999, 42);
        ok(record_parse_mmap2(finish(&b), true, &m) == 0, "MMAP2 with a build id parses");
        ok(m.pid == 10 && m.addr == 0x7f0000000000 && m.len == 0x20000 && m.pgoff == 0x1000, "its range");
        ok(m.has_build_id && m.build_id_size == 20 && strcmp(m.filename, "/usr/lib/libc.so.6") == 0,
           "its build id and file name");
        ok(record_sample_id(header(&b), &id, &time) == 0 && id == 42 && time == 999, "its sample_id");

        b.buf[5] = 21; /* a build id longer than 20 bytes */
        ok(record_parse_mmap2(header(&b), true, &m) == -EBADMSG, "a build id size over 20: -EBADMSG");

        /* The kernel's stray flag: an event that did not ask for build ids gets the flag another
         * event's record left in the shared header, over a device and an inode. */
        start(&b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID);
        put2(&b, 10, 11);
        put(&b, 0x7f0000000000);
        put(&b, 0x20000);
        put(&b, 0x1000);
        put2(&b, 254, 1); /* maj 254 reads as a build id of 254 bytes */
        put(&b, 0x512109);
        put(&b, 7); /* ino_generation */
        put2(&b, 5, 2);
        put_string(&b, "/usr/lib/libc.so.6");
        sample_id(&b, 10, 11, 999, 42);
        ok(record_parse_mmap2(finish(&b), false, &m) == 0 && !m.has_build_id && m.maj == 254 && m.min == 1 &&
                   m.ino == 0x512109 && m.prot == 5 && strcmp(m.filename, "/usr/lib/libc.so.6") == 0,
           "the flag from events that did not ask: device and inode read, not a build id");
        ok(record_parse_mmap2(header(&b), true, &m) == -EBADMSG, "read as a build id it makes no sense");

        start(&b, PERF_RECORD_MMAP2, 0);
        put2(&b, 10, 11);
        put(&b, 1);
        put(&b, 2);
        put(&b, 3);
        put(&b, 0);
        put(&b, 0);
        put(&b, 0);
        put2(&b, 5, 2);
        put(&b, 0x4141414141414141ULL); /* a name with no NUL in the record */
        ok(record_parse_mmap2(finish(&b), false, &m) == -EBADMSG, "a file name without its NUL: -EBADMSG");

        start(&b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
        put2(&b, 20, 21);
        put_string(&b, "worker");
        sample_id(&b, 20, 21, 5, 1);
        ok(record_parse_comm(finish(&b), &cm) == 0 && cm.exec && strcmp(cm.comm, "worker") == 0 &&
                   cm.tid == 21,
           "COMM with exec");

        start(&b, PERF_RECORD_FORK, 0);
        put2(&b, 30, 29);
        put2(&b, 31, 28);
        put(&b, 77);
        sample_id(&b, 30, 31, 77, 1);
        ok(record_parse_task(finish(&b), &t) == 0 && t.pid == 30 && t.ppid == 29 && t.tid == 31 &&
                   t.ptid == 28,
           "FORK");

        start(&b, PERF_RECORD_LOST, 0);
        put(&b, 9);
        put(&b, 1234);
        sample_id(&b, 0, 0, 1, 9);
        ok(record_parse_lost(finish(&b), &id, &lost) == 0 && id == 9 && lost == 1234, "LOST");

        start(&b, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT);
        sample_id(&b, 40, 41, 1, 2);
        ok(record_parse_switch(finish(&b), &pid, &tid, &out) == 0 && pid == 40 && tid == 41 && out,
           "SWITCH out");
        start(&b, PERF_RECORD_SWITCH, 0);
        ok(record_parse_switch(finish(&b), &pid, &tid, &out) == -EBADMSG,
           "SWITCH without a sample_id: -EBADMSG");
}

int main(void) {
        test_sample();
        test_side_band();
        return tap_done();
}
