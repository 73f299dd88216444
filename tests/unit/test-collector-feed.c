/* The collector fed records by hand (collector_feed(), as cppctl import perf.data does): samples
 * of several threads across time buckets, with threads exiting in between. A record of a later
 * bucket flushes the earlier one, and the flush forgets exited threads and renumbers the others'
 * slots: hits must land on the right thread, and nothing may use a forgotten one (the daemon
 * crashed so under bursts of short-lived processes before flush_before()). An exec whose COMM
 * comes after its program's MMAP2 (two CPUs' rings): the program is still the executable. And the idle task,
 * pid 0, whose samples have no stack: it is named swapper, its frame is swapper and not an
 * unsymbolized [unknown], and --no-idle (store_filter.no_idle) leaves it out. */
#include <linux/perf_event.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "sample-tree.h"
#include "store.h"
#include "tap.h"

#define SEC UINT64_C(1000000000)

static uint64_t buf[64];

/* A sample of PID/TID at TIME (ns) in the collector's offline layout: no stack at all, so it
 * lands on [unknown]. */
static const struct perf_event_header *sample(uint64_t id, uint32_t pid, uint32_t tid, uint64_t time) {
        struct perf_event_header *h = (void *) buf;
        uint64_t *p = buf + 1;

        *p++ = id;
        *p++ = 0x1000; /* ip */
        *p++ = (uint64_t) tid << 32 | pid;
        *p++ = time;
        *p++ = 0; /* callchain: none */
        *p++ = 0; /* REGS_USER abi: none */
        *p++ = 0; /* STACK_USER size: 0 */
        *h = (struct perf_event_header) { .type = PERF_RECORD_SAMPLE,
                                          .size = (uint16_t) ((uint8_t *) p - (uint8_t *) buf) };
        return h;
}

static const struct perf_event_header *task(uint32_t type, uint32_t pid, uint32_t tid, uint64_t time) {
        struct perf_event_header *h = (void *) buf;
        uint32_t *q = (uint32_t *) (buf + 1);

        q[0] = pid;
        q[1] = 1;
        q[2] = tid;
        q[3] = 1;
        memcpy(q + 4, &time, 8);
        *h = (struct perf_event_header) { .type = type, .size = sizeof *h + 24 };
        return h;
}

/* Appends a sample_id trailer ({pid, tid}, time, id) at P; returns the record's end. */
static uint8_t *trailer(uint8_t *p, uint32_t pid, uint32_t tid, uint64_t time) {
        uint64_t id = 0;

        memcpy(p, &pid, 4);
        memcpy(p + 4, &tid, 4);
        memcpy(p + 8, &time, 8);
        memcpy(p + 16, &id, 8);
        return p + 24;
}

/* An executable mapping of FILE at ADDR by PID at TIME (an MMAP2 without a build id). */
static const struct perf_event_header *mmap2(uint32_t pid, uint64_t addr, const char *file, uint64_t time) {
        struct perf_event_header *h = (void *) buf;
        uint8_t *p = (uint8_t *) (h + 1);
        uint32_t prot = 5 /* PROT_READ | PROT_EXEC */, flags = 2 /* MAP_PRIVATE */;
        uint64_t len = 0x1000, zero = 0;
        size_t n = (strlen(file) + 8) & ~(size_t) 7;

        memset(buf, 0, sizeof buf);
        memcpy(p, &pid, 4);
        memcpy(p + 4, &pid, 4);
        memcpy(p + 8, &addr, 8);
        memcpy(p + 16, &len, 8);
        memcpy(p + 24, &zero, 8); /* pgoff */
        memcpy(p + 32, &zero, 8); /* maj, min */
        memcpy(p + 40, &time, 8); /* ino: any number */
        memcpy(p + 48, &zero, 8); /* ino_generation */
        memcpy(p + 56, &prot, 4);
        memcpy(p + 60, &flags, 4);
        memcpy(p + 64, file, strlen(file));
        p = trailer(p + 64 + n, pid, pid, time);
        *h = (struct perf_event_header) { .type = PERF_RECORD_MMAP2,
                                          .size = (uint16_t) (p - (uint8_t *) buf) };
        return h;
}

/* PID's exec of a program named COMM at TIME. */
static const struct perf_event_header *exec_comm(uint32_t pid, const char *comm, uint64_t time) {
        struct perf_event_header *h = (void *) buf;
        uint8_t *p = (uint8_t *) (h + 1);
        size_t n = (strlen(comm) + 8) & ~(size_t) 7;

        memset(buf, 0, sizeof buf);
        memcpy(p, &pid, 4);
        memcpy(p + 4, &pid, 4);
        memcpy(p + 8, comm, strlen(comm));
        p = trailer(p + 8 + n, pid, pid, time);
        *h = (struct perf_event_header) { .type = PERF_RECORD_COMM,
                                          .misc = PERF_RECORD_MISC_COMM_EXEC,
                                          .size = (uint16_t) (p - (uint8_t *) buf) };
        return h;
}

static int64_t query(const char *db, const char *sql) {
        sqlite3 *c = NULL;
        sqlite3_stmt *st = NULL;
        int64_t v = -1;

        if (sqlite3_open_v2(db, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(c, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(c);
        return v;
}

int main(void) {
        char dir[] = "/tmp/test-collector-XXXXXX", db[64];
        struct collector_config config = COLLECTOR_CONFIG_DEFAULT;
        struct store *s = NULL;
        struct collector *c = NULL;
        uint64_t id;
        int r;

        if (!mkdtemp(dir))
                return 1;
        snprintf(db, sizeof db, "%s/s.db", dir);
        config.unwind = UNWIND_FP;
        config.bucket_seconds = 1;
        ok(store_open(db, STORE_WRITE, &s) == 0, "a store");
        ok(collector_new(&config, s, &c) == 0, "a collector");
        ok(collector_add_offline_resource(c, "cpu-clock", "1 ns of CPU time", "test", 1, &id) == 0,
           "an offline resource");
        ok(collector_set_origin(c, "testhost", 1000, 0) == 0, "its origin: clock 0 is the epoch");

        /* Bucket 0: threads 101, 102 (exits), 103 of process 100. */
        r = collector_feed(c, sample(id, 100, 101, 0 * SEC + 1), 1);
        r |= collector_feed(c, sample(id, 100, 102, 0 * SEC + 2), 2);
        r |= collector_feed(c, sample(id, 100, 103, 0 * SEC + 3), 4);
        r |= collector_feed(c, task(PERF_RECORD_EXIT, 100, 102, 0 * SEC + 4), 0);
        /* Bucket 1 flushes bucket 0 and forgets 102; 103's slot moves from 2 to 1. */
        r |= collector_feed(c, sample(id, 100, 103, 1 * SEC + 1), 8);
        r |= collector_feed(c, task(PERF_RECORD_EXIT, 100, 101, 1 * SEC + 2), 0);
        r |= collector_feed(c, task(PERF_RECORD_EXIT, 100, 103, 1 * SEC + 3), 0);
        /* Bucket 2: both gone; a new thread 104 takes the first slot. */
        r |= collector_feed(c, sample(id, 100, 104, 2 * SEC + 1), 16);
        /* And an idle CPU: the idle task's sample, pid and tid 0, no stack. */
        r |= collector_feed(c, sample(id, 0, 0, 2 * SEC + 2), 32);
        /* Process 200 execs /opt/t/prog, which moved to another CPU during the exec: its program's
         * MMAP2 (the other CPU's ring) comes before the exec's COMM, then ld.so's. */
        r |= collector_feed(c, mmap2(200, 0x400000, "/opt/t/prog", 2 * SEC + 20), 0);
        r |= collector_feed(c, exec_comm(200, "prog", 2 * SEC + 10), 0);
        r |= collector_feed(c, mmap2(200, 0x7f0000000000, "/opt/t/ld.so", 2 * SEC + 30), 0);
        r |= collector_feed(c, sample(id, 200, 200, 2 * SEC + 40), 64);
        ok(r == 0, "every record fed");
        ok(collector_flush(c, true) == 0, "the last flush");
        c = collector_free(c);
        s = store_close(s);

        is_int(query(db, "SELECT sum(hits) FROM sample"), 127,
               "127 hits stored: 31 of process 100, 32 idle, 64 of process 200");
        is_int(query(db, "SELECT count(*) FROM process WHERE pid = 200 AND exe = '/opt/t/prog'"), 1,
               "an exec met after its program's MMAP2: the process row names the program, not ld.so");
        is_int(query(db,
                     "SELECT sum(s.hits) FROM sample s JOIN thread t ON t.id = s.thread_id WHERE t.tid = 101"),
               1, "thread 101: 1");
        is_int(query(db,
                     "SELECT sum(s.hits) FROM sample s JOIN thread t ON t.id = s.thread_id WHERE t.tid = 102"),
               2, "thread 102: 2");
        is_int(query(db,
                     "SELECT sum(s.hits) FROM sample s JOIN thread t ON t.id = s.thread_id WHERE t.tid = 103"),
               12, "thread 103: 4 + 8, in two buckets, across the renumbering of slots");
        is_int(query(db,
                     "SELECT sum(s.hits) FROM sample s JOIN thread t ON t.id = s.thread_id WHERE t.tid = 104"),
               16, "thread 104: 16");
        is_int(query(db, "SELECT count(DISTINCT bucket) FROM sample"), 3, "three buckets");
        is_int(query(db, "SELECT count(*) FROM run WHERE host = 'testhost' AND started = 1000"), 1,
               "the run has the origin's host and start");

        is_int(query(db, "SELECT count(*) FROM process WHERE pid = 0 AND comm = 'swapper'"), 1,
               "the idle task is stored as pid 0 named swapper");
        is_int(query(db, "SELECT count(*) FROM thread WHERE tid = 0 AND comm = 'swapper'"), 1,
               "so is its thread");
        is_int(query(db,
                     "SELECT sum(s.hits) FROM sample s JOIN thread t ON t.id = s.thread_id "
                     "JOIN stack k ON k.id = s.stack_id JOIN frame f ON f.id = k.frame_id "
                     "JOIN function fn ON fn.id = f.function_id WHERE t.tid = 0 AND fn.name = 'swapper' AND fn.unknown = 0"),
               32, "its samples' stack is the frame swapper, a known name");
        ok(store_open(db, STORE_READ, &s) == 0, "the store, to read");
        {
                struct store_filter f = { .resource = "cpu-clock" };
                struct sample_tree *t = NULL;

                ok(store_load_tree(s, &f, &t) == 0, "its tree");
                is_int(t->total, 127, "every hit, the idle task's too (shown by default, as perf does)");
                is_int(t->info.frames_unsymbolized, 95,
                       "only processes 100's and 200's [unknown] frames are unsymbolized");
                t = sample_tree_free(t);
                f.no_idle = true;
                ok(store_load_tree(s, &f, &t) == 0, "its tree with no_idle");
                is_int(t->total, 95, "no_idle leaves out the idle task's 32 hits");
                is_int(t->info.samples, 6, "and its sample");
                t = sample_tree_free(t);
        }
        s = store_close(s);
        unlink(db);

        /* A time near the end of the clock, with today's offset to the wall clock: the bucket
         * saturates rather than overflowing (UBSan: signed integer overflow in bucket_of()). */
        r = store_open(db, STORE_WRITE, &s);
        r |= collector_new(&config, s, &c);
        r |= collector_add_offline_resource(c, "cpu-clock", "1 ns of CPU time", "test", 1, &id);
        r |= collector_set_origin(c, "testhost", 1000, 1764000000 * SEC);
        ok(r == 0, "a collector at today's offset from the wall clock");
        r = collector_feed(c, sample(id, 100, 101, UINT64_MAX / 2 - 1), 1);
        r |= collector_feed(c, sample(id, 100, 101, UINT64_MAX - 1), 2);
        ok(r == 0 && collector_flush(c, true) == 0, "samples at the clock's end are fed and flushed");
        c = collector_free(c);
        s = store_close(s);
        is_int(query(db, "SELECT sum(hits) FROM sample"), 3, "and stored");
        unlink(db);
        rmdir(dir);
        return tap_done();
}
