/* The ring reader over rings in memory, read without its thread: records of two rings come out
 * in time order; past the queue's bound they stay in the rings, handed back to the kernel only
 * up to what was taken, for the next take; nothing is lost or reordered. With its thread: a sync
 * makes every record written before it takeable at once, bound or not. */
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "ring-buffer.h"
#include "ring-reader.h"
#include "tap.h"

#define RING_BYTES 65536
#define SAMPLE_BYTES 40         /* header, id, ip, pid/tid, time */
#define COMM_BYTES 48           /* header, pid/tid, "x", then pid/tid, time, id */

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
static void walk(const uint8_t *q, size_t size, unsigned *ret_samples, unsigned *ret_comms, bool *ret_ordered) {
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

/* The hook: how often it was called, and with which records' times. */
static unsigned hooks, hooks_samples;
static uint64_t hook_times;

static void count_hook(void *userdata, const struct perf_event_header *h) {
        uint64_t time = 0;

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
        ok(ordered && size <= 10 * SAMPLE_BYTES, "a take is in time order across the rings, within the bound");
        /* In time order: samples at 10..70 (40 bytes each) and COMMs at 15 and 65 (48) make 376
         * bytes; the sample at 80 would pass 400 and stops the pass. */
        is_int(samples, 7, "7 samples fit, the one at 80 would not");
        is_int(comms, 2, "with the 2 COMMs among them");
        ok(hooks == 8 && hooks_samples == 0, "the first pass gave the hook all 8 COMMs, those left in the ring "
           "too, and no sample (%u calls, %u samples)", hooks, hooks_samples);
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
        ok(total_samples == 40 && total_comms == 8, "and nothing is lost: %u samples, %u COMMs", total_samples,
           total_comms);
        /* The COMMs' times: 15 + 50k for k < 8. */
        ok(hooks == 8 && hook_times == 8 * 15 + 50 * 28, "the later passes gave none of them to the hook again "
           "(%u calls)", hooks);
        ok(rings[0]->meta->data_tail == rings[0]->meta->data_head &&
           rings[1]->meta->data_tail == rings[1]->meta->data_head, "both rings empty at the end");

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
        ok(rounds == 3 && total == 25, "25 samples through a bound of 10: two syncs say 'full', the third "
           "has them all (%u rounds, %u samples)", rounds, total);
        ring_reader_free(r);
        fake_ring_free(rings[0]);
}

int main(void) {
        test_order_across_rings();
        test_sync();
        return tap_done();
}
