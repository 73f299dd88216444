/* A thread that empties the ring buffers into memory as fast as the kernel fills them, so that
 * the slow part of handling a sample (DWARF unwinding, loading a library's debug information
 * for its first symbol) never leaves a ring full: a full ring drops samples. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "ring-buffer.h"

struct ring_reader;

/* A reader for the N_RINGS rings (borrowed; not NULL), queueing at most MAX_QUEUED bytes of
 * records: when the queue is full it leaves records in the rings, where the kernel counts what
 * it then drops (PERF_RECORD_LOST). NULL: no memory. */
struct ring_reader *ring_reader_new(struct ring_buffer *const *rings, int n_rings, size_t max_queued);
struct ring_reader *ring_reader_free(struct ring_reader *r);
DEFINE_CLEANUP(struct ring_reader *, ring_reader_free);

/* Declares that samples carrying event id ID have SAMPLE_TYPE, with N_REGS user registers of
 * which the stack pointer is number SP (-1: none), so that their copied user stacks are cut to
 * the part the kernel filled (dyn_size) on the way into the queue, and to their thread's stack
 * top. Before ring_reader_start() only. Returns 0 or -ENOMEM. */
int ring_reader_add_event(struct ring_reader *r, uint64_t id, uint64_t sample_type, unsigned n_regs, int sp);

/* Says that thread TID's samples need no stack at or above address TOP (what unwinding them
 * reads ends below it: unwinder_unwind()), as learnt from its sample of TIME (perf clock), so
 * that from now on their copies end there; TOP 0 forgets it. The reader forgets it too at the
 * thread's exit or exec, and ignores tops learnt from samples older than that; it forgets every
 * top when it keeps too many (ring_reader_stack_tops_generation() then changes). Thread-safe.
 * Returns 0 or -ENOMEM. */
int ring_reader_set_stack_top(struct ring_reader *r, uint32_t tid, uint64_t top, uint64_t time);
uint64_t ring_reader_stack_tops_generation(const struct ring_reader *r);

/* Sets a function the reader thread calls for every record but samples, once, in the first pass
 * that meets it (before the consumer sees it, and even when a full queue leaves it in the rings
 * for later), without the queue's lock: for what must be learned while it is still true, such
 * as an exec'd process's cgroup (it may be gone by the time the record is handled). It must be
 * quick and thread-safe. Before ring_reader_start() only. */
typedef void (*ring_reader_hook)(void *userdata, const struct perf_event_header *h);
void ring_reader_set_hook(struct ring_reader *r, ring_reader_hook hook, void *userdata);

/* As ring_reader_set_hook(), for samples: the reader thread calls HOOK once for every sample, in
 * the first pass that meets it, as soon as it is woken for it (for a clock whose next interval
 * is drawn when its sample arrives), and with NULL at the end of each pass (the clock is then
 * redrawn from its latest sample). Before ring_reader_start() only. */
void ring_reader_set_sample_hook(struct ring_reader *r, ring_reader_hook hook, void *userdata);

/* Sets a function the reader thread calls when the consumer is behind, so that overload thinning
 * hears of it before the rings overflow: with CLASS, when that class reached its share of the
 * queue (ring_reader_set_classes()); with RING_READER_NO_CLASS, when a pass stopped at a full
 * queue. It must be quick and thread-safe. Before ring_reader_start() only. */
#define RING_READER_NO_CLASS UINT32_MAX
typedef void (*ring_reader_pressure)(void *userdata, unsigned class);
void ring_reader_set_pressure(struct ring_reader *r, ring_reader_pressure pressure, void *userdata);

/* Groups the rings into N_CLASSES classes (CLASSES, borrowed, by ring: a class below N_CLASSES,
 * or RING_READER_NO_CLASS, never held back, or RING_READER_HOOK_ONLY, whose records the hooks
 * see and the consumer never): while the consumer is behind, one class may hold at most half of
 * the queue; past that its rings keep their records (and the kernel counts what they then drop)
 * until the consumer takes the queue, and the others go on; the hooks still see each record as
 * it arrives. For a ring per resource, one resource's flood costs the others nothing. Before
 * ring_reader_start() only. Returns 0 or -ENOMEM. */
#define RING_READER_HOOK_ONLY (UINT32_MAX - 1)
int ring_reader_set_classes(struct ring_reader *r, const unsigned *classes, unsigned n_classes);

/* Starts the thread, and lowers the calling thread's priority below it (it is the one that
 * handles the records). Returns 0 or a negative errno. */
int ring_reader_start(struct ring_reader *r);

/* Puts the started thread in the real-time class (SCHED_FIFO, the lowest priority), so that it
 * runs as soon as a record wakes it, whatever else wants the CPU: a clock redrawn at each sample
 * (redraw_clock()) is only as punctual as its reader. It sleeps in poll() between passes, and
 * the kernel's real-time throttling bounds what a flood can take. Returns 0, or a negative errno:
 * -EPERM without CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 1 (or where a unit's
 * RestrictRealtime= forbids it). */
int ring_reader_set_realtime(struct ring_reader *r);

/* An eventfd that is readable when records are queued, for poll(). */
int ring_reader_fd(const struct ring_reader *r);

/* Takes everything queued, in time order: sets *ret to the records, one after another, and
 * *ret_size to their bytes; valid until the next call. Returns 0. */
int ring_reader_take(struct ring_reader *r, const uint8_t **ret, size_t *ret_size);

/* Makes the thread empty the rings now, and waits at most TIMEOUT_MS for it: then
 * ring_reader_take() gets every record the kernel wrote before the call. Returns 1, or 0 when
 * the queue bound, or a class's share of it (ring_reader_set_classes()), left records in the
 * rings (take, handle, and call again), or -ETIMEDOUT. */
int ring_reader_sync(struct ring_reader *r, unsigned timeout_ms);

/* The time (perf clock) of the oldest record queued and not yet taken; 0 when none is. */
uint64_t ring_reader_oldest(struct ring_reader *r);

/* Empties the rings one last time and stops the thread; then ring_reader_take() gets the
 * rest. Idempotent. */
void ring_reader_stop(struct ring_reader *r);

struct ring_reader_stats {
        uint64_t records, bytes_in, bytes_queued, bad, full; /* full: passes that found the queue full */
        uint64_t stacks_cut;  /* samples whose stack was cut at its thread's top */
        uint64_t queue_bytes; /* now: the two queues' buffers, as large as the last bursts made them */
};
void ring_reader_get_stats(struct ring_reader *r, struct ring_reader_stats *ret);
