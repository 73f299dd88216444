/* The ring reader over rings in memory, read without its thread: records of two rings come out
 * in time order; past the queue's bound they stay in the rings, handed back to the kernel only
 * up to what was taken, for the next take; nothing is lost or reordered. With its thread: a sync
 * makes every record written before it takeable at once, bound or not. */
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "perf-record.h"
#include "ring-buffer.h"
#include "ring-reader.h"
#include "tap.h"

#define RING_BYTES 65536
#define SAMPLE_BYTES 40 /* header, id, ip, pid/tid, time */
#define COMM_BYTES 48   /* header, pid/tid, "x", then pid/tid, time, id */

static struct ring_buffer *fake_ring(void) {
        struct ring_buffer *r = calloc(1, sizeof *r);

        r->fd = -1;
        r->meta = calloc(1, sizeof *r->meta);
        r->data = calloc(1, RING_BYTES);
        r->mask = RING_BYTES - 1;
        return r;
}

static void fake_ring_free(struct ring_buffer *r) {
        free(r->meta);
        free(r->data);
        free(r);
}

static void put(struct ring_buffer *r, const void *record, size_t size) {
        uint64_t head = r->meta->data_head;

        for (size_t i = 0; i < size; i++)
                r->data[(head + i) & r->mask] = ((const uint8_t *) record)[i];
        r->meta->data_head = head + size;
}

static void put_sample(struct ring_buffer *r, uint64_t id, uint64_t time) {
        uint64_t rec[SAMPLE_BYTES / 8] = { 0, id, 0x1000 + time, 7 | 7ULL << 32, time };
        struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = SAMPLE_BYTES };

        memcpy(rec, &h, sizeof h);
        put(r, rec, sizeof rec);
}

static void put_comm(struct ring_buffer *r, uint64_t id, uint64_t time) {
        uint64_t rec[COMM_BYTES / 8] = { 0, 7 | 7ULL << 32, 'x', 7 | 7ULL << 32, time, id };
        struct perf_event_header h = { .type = PERF_RECORD_COMM, .size = COMM_BYTES };

        memcpy(rec, &h, sizeof h);
        put(r, rec, sizeof rec);
}

/* Walks a taken queue: how many samples and COMMs, and whether times never go back. */
static void walk(const uint8_t *q, size_t size, unsigned *ret_samples, unsigned *ret_comms,
                 bool *ret_ordered) {
        uint64_t last = 0, time;

        *ret_samples = *ret_comms = 0;
        *ret_ordered = true;
        for (size_t off = 0; off + sizeof(struct perf_event_header) <= size;) {
                const struct perf_event_header *h = (const void *) (q + off);

                if (h->size == 0 || record_time(h, &time) < 0) {
                        *ret_ordered = false;
                        return;
                }
                if (time < last)
                        *ret_ordered = false;
                last = time;
                *ret_samples += h->type == PERF_RECORD_SAMPLE;
                *ret_comms += h->type == PERF_RECORD_COMM;
                off += h->size;
        }
}

/* The hook: how often it was called, and with which records' times; and the ends of passes
 * (a sample hook's NULL), with the samples seen before the last. */
static unsigned hooks, hooks_samples, hook_passes, hooks_samples_at_pass;
static uint64_t hook_times;

static void count_hook(void *userdata, const struct perf_event_header *h) {
        uint64_t time = 0;

        if (!h) {
                hook_passes++;
                hooks_samples_at_pass = hooks_samples;
                return;
        }
        hooks++;
        hooks_samples += h->type == PERF_RECORD_SAMPLE;
        (void) record_time(h, &time);
        hook_times += time;
}

/* Two rings, as the collector has per CPU: samples in one, the side band in the other. */
static void test_order_across_rings(void) {
        struct ring_buffer *rings[2] = { fake_ring(), fake_ring() };
        struct ring_reader *r = ring_reader_new(rings, 2, 10 * SAMPLE_BYTES);
        unsigned samples, comms, total_samples = 0, total_comms = 0, takes = 0;
        bool ordered, all_ordered = true;
        const uint8_t *q;
        size_t size;

        ring_reader_set_hook(r, count_hook, NULL);
        for (uint64_t k = 0; k < 40; k++)
                put_sample(rings[0], 1, 10 + 10 * k);
        for (uint64_t k = 0; k < 8; k++)
                put_comm(rings[1], 2, 15 + 50 * k);

        ring_reader_take(r, &q, &size);
        walk(q, size, &samples, &comms, &ordered);
        ok(ordered && size <= 10 * SAMPLE_BYTES,
           "a take is in time order across the rings, within the bound");
        /* In time order: samples at 10..70 (40 bytes each) and COMMs at 15 and 65 (48) make 376
         * bytes; the sample at 80 would pass 400 and stops the pass. */
        is_int(samples, 7, "7 samples fit, the one at 80 would not");
        is_int(comms, 2, "with the 2 COMMs among them");
        ok(hooks == 8 && hooks_samples == 0,
           "the first pass gave the hook all 8 COMMs, those left in the ring "
           "too, and no sample (%u calls, %u samples)",
           hooks, hooks_samples);
        ok(rings[0]->meta->data_tail == 7 * SAMPLE_BYTES && rings[1]->meta->data_tail == 2 * COMM_BYTES,
           "each ring handed back only up to what was taken");
        total_samples += samples;
        total_comms += comms;
        while (takes++ < 100) {
                ring_reader_take(r, &q, &size);
                if (size == 0)
                        break;
                walk(q, size, &samples, &comms, &ordered);
                all_ordered &= ordered;
                total_samples += samples;
                total_comms += comms;
        }
        ok(all_ordered, "every later take in order too");
        ok(total_samples == 40 && total_comms == 8, "and nothing is lost: %u samples, %u COMMs",
           total_samples, total_comms);
        /* The COMMs' times: 15 + 50k for k < 8. */
        ok(hooks == 8 && hook_times == 8 * 15 + 50 * 28,
           "the later passes gave none of them to the hook again "
           "(%u calls)",
           hooks);
        ok(rings[0]->meta->data_tail == rings[0]->meta->data_head &&
                   rings[1]->meta->data_tail == rings[1]->meta->data_head,
           "both rings empty at the end");

        ring_reader_free(r);
        fake_ring_free(rings[0]);
        fake_ring_free(rings[1]);
}

/* A ring of RING_READER_HOOK_ONLY (a gate's notices): the sample hook sees each of its records,
 * the consumer none, and the ring is emptied all the same. */
static void test_hook_only(void) {
        struct ring_buffer *rings[2] = { fake_ring(), fake_ring() };
        static const unsigned classes[2] = { 0, RING_READER_HOOK_ONLY };
        struct ring_reader *r = ring_reader_new(rings, 2, 64 * SAMPLE_BYTES);
        unsigned samples, comms;
        bool ordered;
        const uint8_t *q;
        size_t size;

        hooks = hooks_samples = hook_passes = hooks_samples_at_pass = 0;
        hook_times = 0;
        ok(ring_reader_set_classes(r, classes, 1) == 0, "classes set");
        ring_reader_set_sample_hook(r, count_hook, NULL);
        for (uint64_t k = 0; k < 10; k++)
                put_sample(rings[0], 1, 10 + 10 * k);
        for (uint64_t k = 0; k < 12; k++)
                put_sample(rings[1], 2, 15 + 10 * k);
        ring_reader_take(r, &q, &size);
        walk(q, size, &samples, &comms, &ordered);
        is_int(samples, 10, "the consumer gets the 10 samples, none of the 12 notices");
        is_int(hooks_samples, 22, "the sample hook saw all 22");
        ok(hook_passes >= 1 && hooks_samples_at_pass == 22,
           "then the end of the pass (NULL), after every sample of it (a clock is redrawn from its latest)");
        ok(rings[1]->meta->data_tail == rings[1]->meta->data_head, "the notices' ring is emptied");
        ring_reader_take(r, &q, &size);
        is_int(hooks_samples, 22, "and a later pass hooks none again");

        ring_reader_free(r);
        fake_ring_free(rings[0]);
        fake_ring_free(rings[1]);
}

/* With the thread running (it polls every 50 ms; a fake ring never wakes it): after a sync a
 * take holds every record put before it. Past the bound the sync says so, and taking and
 * syncing again gets the rest. */
static void test_sync(void) {
        struct ring_buffer *rings[1] = { fake_ring() };
        struct ring_reader *r = ring_reader_new(rings, 1, 10 * SAMPLE_BYTES);
        unsigned samples, comms, total = 0, rounds = 0;
        bool ordered;
        const uint8_t *q;
        size_t size;
        int s;

        ok(ring_reader_start(r) == 0, "the reader thread starts");
        ok(ring_reader_oldest(r) == 0, "nothing queued: no oldest record");
        for (uint64_t k = 0; k < 5; k++)
                put_sample(rings[0], 1, 100 + k);
        is_int(ring_reader_sync(r, 5000), 1, "a sync with room for everything returns 1");
        is_int((int) ring_reader_oldest(r), 100, "the oldest queued record is the first put");
        ring_reader_take(r, &q, &size);
        walk(q, size, &samples, &comms, &ordered);
        is_int(samples, 5, "the take after it holds all 5 samples put before it");

        for (uint64_t k = 0; k < 25; k++)
                put_sample(rings[0], 1, 200 + k);
        while ((s = ring_reader_sync(r, 5000)) >= 0 && rounds++ < 10) {
                ring_reader_take(r, &q, &size);
                walk(q, size, &samples, &comms, &ordered);
                total += samples;
                if (s == 1)
                        break;
        }
        ok(rounds == 3 && total == 25,
           "25 samples through a bound of 10: two syncs say 'full', the third "
           "has them all (%u rounds, %u samples)",
           rounds, total);
        ring_reader_free(r);
        fake_ring_free(rings[0]);
}

/* A class held at its share of the queue leaves its records in the rings, as a full queue does:
 * the sync says so (0), so that a flush goes on (take, sync again) until it has them all. It
 * said 1, and a daemon's flush stored a profile without the held resource's recent samples. */
static void test_sync_held(void) {
        struct ring_buffer *rings[2] = { fake_ring(), fake_ring() };
        static const unsigned classes[2] = { 0, 1 };
        struct ring_reader *r = ring_reader_new(rings, 2, 10 * SAMPLE_BYTES);
        unsigned samples, comms, total = 0, rounds = 0;
        bool ordered;
        const uint8_t *q;
        size_t size;
        int s, first = -1;

        ok(ring_reader_set_classes(r, classes, 2) == 0, "two classes set");
        ok(ring_reader_start(r) == 0, "the reader thread starts");
        for (uint64_t k = 0; k < 8; k++)
                put_sample(rings[0], 1, 100 + k);
        for (uint64_t k = 0; k < 2; k++)
                put_sample(rings[1], 2, 200 + k);
        while ((s = ring_reader_sync(r, 5000)) >= 0 && rounds++ < 10) {
                if (first < 0)
                        first = s;
                ring_reader_take(r, &q, &size);
                walk(q, size, &samples, &comms, &ordered);
                total += samples;
                if (s == 1)
                        break;
        }
        is_int(first, 0,
               "8 samples of one class against its share of 5: the first sync says records are left");
        ok(s == 1 && total == 10, "taking and syncing again gets them all (%u rounds, %u samples)", rounds,
           total);
        ring_reader_free(r);
        fake_ring_free(rings[0]);
        fake_ring_free(rings[1]);
}

/* Samples with user registers (two: the stack pointer second) and STACK_BYTES of stack, of
 * which DYN filled, the stack's bytes counting up from SP: 64 stack bytes are copied per sample. */
#define STACK_TYPE \
        (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
         PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define STACK_BYTES 64
static void put_stack_sample(struct ring_buffer *r, uint32_t tid, uint64_t time, uint64_t sp, uint64_t dyn) {
        uint64_t rec[(8 + 8 * 4 + 8 + 16 + 8 + STACK_BYTES + 8) / 8] = {
                0,      5,  0x1000,      (uint64_t) tid << 32 | tid, time, PERF_SAMPLE_REGS_ABI_64,
                0x2000, sp, STACK_BYTES,
        };
        struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof rec };

        for (unsigned i = 0; i < STACK_BYTES; i++)
                ((uint8_t *) &rec[9])[i] = (uint8_t) i;
        rec[9 + STACK_BYTES / 8] = dyn;
        memcpy(rec, &h, sizeof h);
        put(r, rec, sizeof rec);
}

/* An EXIT of TID, or its COMM at an exec. */
static void put_task_end(struct ring_buffer *r, uint32_t tid, uint64_t time, bool exec) {
        uint64_t exit[] = { 0,    (uint64_t) tid << 32 | tid, (uint64_t) tid << 32 | tid,
                            time, (uint64_t) tid << 32 | tid, time,
                            9 };
        uint64_t comm[] = { 0, (uint64_t) tid << 32 | tid, 'x', (uint64_t) tid << 32 | tid, time, 9 };
        struct perf_event_header h = { .type = exec ? PERF_RECORD_COMM : PERF_RECORD_EXIT,
                                       .misc = exec ? PERF_RECORD_MISC_COMM_EXEC : 0,
                                       .size = exec ? sizeof comm : sizeof exit };

        memcpy(exec ? comm : exit, &h, sizeof h);
        put(r, exec ? (void *) comm : (void *) exit, h.size);
}

/* The queued samples' stacks: their dyn_size each, in order, and whether their bytes are the
 * first of those put. */
static unsigned queued_stacks(const uint8_t *q, size_t size, uint64_t *dyn, unsigned max, bool *ret_intact) {
        unsigned n = 0;

        *ret_intact = true;
        for (size_t off = 0; off + sizeof(struct perf_event_header) <= size && n < max;) {
                const struct perf_event_header *h = (const void *) (q + off);
                struct record_sample s;

                if (h->type == PERF_RECORD_SAMPLE && record_parse_sample(h, STACK_TYPE, 2, &s) == 0) {
                        dyn[n++] = s.dyn_size;
                        for (uint64_t i = 0; i < s.stack_size && i < s.dyn_size; i++)
                                *ret_intact &= s.stack[i] == (uint8_t) i;
                }
                off += h->size;
        }
        return n;
}

/* A thread's samples are cut at the top it was given, when it lies in what the kernel filled;
 * its exit and an exec forget the top; other threads keep theirs. */
static void test_stack_tops(void) {
        struct ring_buffer *rings[1] = { fake_ring() };
        struct ring_reader *r = ring_reader_new(rings, 1, SIZE_MAX);
        struct ring_reader_stats st;
        uint64_t dyn[16];
        unsigned n;
        const uint8_t *q;
        size_t size;
        bool intact;

        ok(ring_reader_add_event(r, 5, STACK_TYPE, 2, 1) == 0, "an event with registers and stacks");
        ok(ring_reader_set_stack_top(r, 7, 0x8028, 0) == 0 && ring_reader_set_stack_top(r, 8, 0x9040, 0) == 0,
           "tops for threads 7 and 8");
        put_stack_sample(rings[0], 7, 1, 0x8000, 64); /* cut: 0x28 of 64 */
        put_stack_sample(rings[0], 7, 2, 0x8000, 32); /* the kernel filled less: 32 */
        put_stack_sample(rings[0], 7, 3, 0x8030, 16); /* above its top (another stack): 16 */
        put_stack_sample(rings[0], 9, 4, 0x8000, 64); /* no top: 64 */
        put_stack_sample(rings[0], 8, 5, 0x9000, 64); /* top at the end of the copy: 64 */
        put_task_end(rings[0], 7, 6, false);
        put_stack_sample(rings[0], 7, 7, 0x8000, 64); /* exited: 64 */
        ring_reader_take(r, &q, &size);
        n = queued_stacks(q, size, dyn, 16, &intact);
        ok(n == 6 && intact, "6 samples queued, their stacks' bytes kept");
        ok(dyn[0] == 0x28 && dyn[1] == 32 && dyn[2] == 16 && dyn[3] == 64 && dyn[4] == 64 && dyn[5] == 64,
           "cut at the top where it lies in the filled part; not past what was filled, not above or "
           "without a top, not after the exit (%llu %llu %llu %llu %llu %llu)",
           (unsigned long long) dyn[0], (unsigned long long) dyn[1], (unsigned long long) dyn[2],
           (unsigned long long) dyn[3], (unsigned long long) dyn[4], (unsigned long long) dyn[5]);

        ok(ring_reader_set_stack_top(r, 7, 0x8010, 5) == 0,
           "thread 7's top learnt from a sample before its exit");
        put_stack_sample(rings[0], 7, 8, 0x8000, 64);
        ring_reader_take(r, &q, &size);
        n = queued_stacks(q, size, dyn, 16, &intact);
        ok(n == 1 && dyn[0] == 64, "is another thread's: not cut");
        ok(ring_reader_set_stack_top(r, 7, 0x8010, 7) == 0, "thread 7 anew, from its own sample");
        put_stack_sample(rings[0], 8, 8, 0x9010, 64);
        put_stack_sample(rings[0], 7, 9, 0x8000, 64);
        put_task_end(rings[0], 8, 10, true);
        put_stack_sample(rings[0], 8, 11, 0x9010, 64);
        ring_reader_take(r, &q, &size);
        n = queued_stacks(q, size, dyn, 16, &intact);
        ok(n == 3 && intact && dyn[0] == 0x30 && dyn[1] == 0x10 && dyn[2] == 64,
           "7 cut at its new top; 8 kept its top until its exec: %llu %llu %llu", (unsigned long long) dyn[0],
           (unsigned long long) dyn[1], (unsigned long long) dyn[2]);
        ring_reader_get_stats(r, &st);
        is_int((int) st.stacks_cut, 3, "3 copies were cut");
        ok(ring_reader_set_stack_top(r, 7, 0, 12) == 0, "a top forgotten");
        put_stack_sample(rings[0], 7, 12, 0x8000, 64);
        ring_reader_take(r, &q, &size);
        n = queued_stacks(q, size, dyn, 16, &intact);
        ok(n == 1 && dyn[0] == 64, "then nothing is cut");
        ring_reader_free(r);
        fake_ring_free(rings[0]);
}

int main(void) {
        test_order_across_rings();
        test_hook_only();
        test_sync();
        test_sync_held();
        test_stack_tops();
        return tap_done();
}
