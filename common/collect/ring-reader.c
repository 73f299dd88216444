/* The ring reader thread. Each pass snapshots every ring, sorts the records' (time, ring,
 * position) so that records of different CPUs come out in time order, copies them into the
 * queue in that order, and hands the space back to the kernel. Samples with a copied user stack
 * are cut to the bytes the kernel filled on the way (dyn_size, rounded up to 8), which is
 * usually a few KiB of the 16 KiB the ring holds: the queue holds far more samples than the
 * rings, and catching up after a slow moment costs memory rather than samples.
 *
 * Samples whose thread's stacks are known to need nothing past some address (the top of what
 * its unwinds read, which the consumer learns: ring_reader_set_stack_top()) are cut there too:
 * a program's outermost frames lie at the same place in every sample, and the environment and
 * the arguments above them are copied by the kernel for nothing (6 of 8 KiB, for a small
 * program's main thread). A thread's top is forgotten at its exit and at an exec.
 *
 * The queue is two buffers: the thread appends to one under the lock, the consumer swaps it for
 * the other (which it has finished with) under the lock and reads it without. When the queue
 * reaches its bound the thread stops copying and leaves the rest in the rings, so memory stays
 * bounded and the kernel counts what it then drops in PERF_RECORD_LOST, which the consumer
 * reports. The rings are the thread's alone once it runs. */
#include "ring-reader.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "idmap.h"
#include "perf-record.h"
#include "time-util.h"

/* Records sorted per pass. */
#define PASS_RECORDS 16384
/* The niceness the consuming thread takes, below the reader's. */
#define RING_READER_CONSUMER_NICE 10
#define POLL_MS 100
/* The consumer is told of queued records once this many bytes or this much time have gathered
 * (or at once for a sync, a stop or a full queue): each wakeup costs it tens of µs on a VM, and
 * a pass comes at every ring's watermark, a few dozen samples. */
#define NOTIFY_BYTES (256u << 10)
#define NOTIFY_NS (100 * 1000000ULL)
/* A queue buffer's size at first and after a burst; a buffer grown past it is freed again once
 * no take has needed more for QUEUE_SHRINK_NS: growing it again costs page faults (and copies)
 * at every cycle of a sustained high rate. */
#define QUEUE_KEEP_BYTES (1u << 20)
#define QUEUE_SHRINK_NS (5 * 1000000000ULL)
/* Threads whose stack tops are kept: past it the table starts afresh (threads come and go by
 * the thousand on a busy host, and exits that a full queue left unseen would keep theirs). */
#define MAX_STACK_TOPS 16384
/* An event's registers (its idmap value): the sample type, the number of user registers and
 * the stack pointer's index among them (+1; 0: none). */
#define EVENT_TYPE(v) ((v) & ((1ULL << 48) - 1))
#define EVENT_SP(v) ((unsigned) ((v) >> 48 & 0xff))
#define EVENT_N_REGS(v) ((unsigned) ((v) >> 56))

struct entry {
        uint64_t time;
        uint64_t pos;
        uint32_t ring;
        bool hook; /* not given to its hook before (the sample hook for samples) */
};

struct ring_reader {
        struct ring_buffer *const *rings;
        int n_rings;
        size_t max_queued;
        struct idmap *events; /* id -> n_regs << 56 | (sp + 1) << 48 | sample_type */
        pthread_t thread;
        bool started, stopped;
        int notify_fd; /* readable when records are queued */
        int wake_fd;   /* wakes the thread to stop */
        struct entry *entries;
        uint64_t *reached; /* by ring: the first record not yet copied */
        uint64_t *hooked;  /* by ring: the first record not yet given to the hook */
        ring_reader_hook hook, sample_hook;
        void *hook_userdata, *sample_hook_userdata;
        ring_reader_pressure pressure;
        void *pressure_userdata;
        const unsigned *classes; /* by ring: its class, or RING_READER_NO_CLASS; NULL: none */
        unsigned n_classes;
        uint64_t *left; /* by ring: the first record a held class left in this pass */

        pthread_mutex_t lock; /* guards what follows */
        size_t *class_bytes;  /* by class: bytes it holds in the queue being filled */
        bool *held;           /* by class: over its share until the consumer takes the queue */
        uint8_t *fill;        /* the queue being appended to */
        size_t fill_size, fill_cap;
        bool stop;
        struct ring_reader_stats stats;
        struct idmap *stack_tops;       /* tid -> the address its stack copies are cut at; 0: none */
        struct idmap *stack_ends;       /* tid -> the time of its last exit or exec */
        uint64_t stack_tops_generation; /* counts the table's fresh starts (atomic reads) */
        uint64_t sync_asked, sync_done; /* passes asked for by ring_reader_sync(), and done */
        bool sync_full;                 /* the last pass done left records: the queue bound, a held class */
        pthread_cond_t synced;          /* sync_done moved */
        pthread_cond_t kicked;          /* for the thread: a take, a sync asked, or stop */

        uint8_t *work; /* the consumer's: the last queue taken */
        size_t work_cap;
        uint64_t big_ns; /* when a take last held more than QUEUE_KEEP_BYTES */
};

struct ring_reader *ring_reader_new(struct ring_buffer *const *rings, int n_rings, size_t max_queued) {
        struct ring_reader *r = calloc(1, sizeof *r);
        pthread_condattr_t ca;

        if (!r)
                return NULL;
        r->rings = rings;
        r->n_rings = n_rings;
        r->max_queued = max_queued;
        r->notify_fd = r->wake_fd = -1;
        r->events = idmap_new();
        r->stack_tops = idmap_new();
        r->stack_ends = idmap_new();
        r->entries = malloc(PASS_RECORDS * sizeof *r->entries);
        r->reached = calloc(n_rings ? n_rings : 1, sizeof *r->reached);
        r->hooked = calloc(n_rings ? n_rings : 1, sizeof *r->hooked);
        r->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_init(&r->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&r->synced, &ca);
        pthread_cond_init(&r->kicked, &ca);
        pthread_condattr_destroy(&ca);
        if (!r->events || !r->stack_tops || !r->stack_ends || !r->entries || !r->reached || !r->hooked ||
            r->notify_fd < 0 || r->wake_fd < 0)
                return ring_reader_free(r);
        return r;
}

struct ring_reader *ring_reader_free(struct ring_reader *r) {
        if (!r)
                return NULL;
        ring_reader_stop(r);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->synced);
        pthread_cond_destroy(&r->kicked);
        idmap_free(r->events);
        idmap_free(r->stack_tops);
        idmap_free(r->stack_ends);
        free(r->entries);
        free(r->reached);
        free(r->hooked);
        free(r->class_bytes);
        free(r->held);
        free(r->left);
        free(r->fill);
        free(r->work);
        if (r->notify_fd >= 0)
                close(r->notify_fd);
        if (r->wake_fd >= 0)
                close(r->wake_fd);
        free(r);
        return NULL;
}

int ring_reader_add_event(struct ring_reader *r, uint64_t id, uint64_t sample_type, unsigned n_regs, int sp) {
        uint64_t *slot;

        if (r->started)
                return -EBUSY;
        assert(n_regs < 256 && sp < (int) n_regs && EVENT_TYPE(sample_type) == sample_type);
        return idmap_put(r->events, id, (uint64_t) n_regs << 56 | (uint64_t) (sp + 1) << 48 | sample_type,
                         &slot) < 0 ?
                -ENOMEM :
                0;
}

int ring_reader_set_stack_top(struct ring_reader *r, uint32_t tid, uint64_t top, uint64_t time) {
        uint64_t *slot, *end;
        int q = 0;

        pthread_mutex_lock(&r->lock);
        end = idmap_get(r->stack_ends, tid);
        if (top == 0) {
                slot = idmap_get(r->stack_tops, tid);
                if (slot)
                        *slot = 0;
        } else if (!end || *end < time) {
                /* Not learnt from a sample older than the thread's exit or exec, which this
                 * thread met first: that top was another program's, or another thread's. */
                if (idmap_size(r->stack_tops) >= MAX_STACK_TOPS) {
                        idmap_clear(r->stack_tops);
                        __atomic_add_fetch(&r->stack_tops_generation, 1, __ATOMIC_RELAXED);
                }
                q = idmap_put(r->stack_tops, tid, top, &slot);
                if (q == 0)
                        *slot = top;
        }
        pthread_mutex_unlock(&r->lock);
        return q < 0 ? -ENOMEM : 0;
}

uint64_t ring_reader_stack_tops_generation(const struct ring_reader *r) {
        return __atomic_load_n(&r->stack_tops_generation, __ATOMIC_RELAXED);
}

/* Forgets the stack top of the thread that H ends (an exit) or starts anew (an exec), and notes
 * when. Called with the lock held. */
static void forget_stack_top(struct ring_reader *r, const struct perf_event_header *h) {
        struct record_task t;
        struct record_comm c;
        uint64_t *slot, time;
        uint32_t tid;

        if (h->type == PERF_RECORD_EXIT && record_parse_task(h, &t) == 0)
                tid = t.tid;
        else if (h->type == PERF_RECORD_COMM && record_parse_comm(h, &c) == 0 && c.exec)
                tid = c.tid;
        else
                return;
        slot = idmap_get(r->stack_tops, tid);
        if (slot)
                *slot = 0;
        if (record_time(h, &time) < 0)
                return;
        if (idmap_size(r->stack_ends) >= MAX_STACK_TOPS)
                idmap_clear(r->stack_ends);
        if (idmap_put(r->stack_ends, tid, time, &slot) == 0)
                *slot = time;
}

void ring_reader_set_pressure(struct ring_reader *r, ring_reader_pressure pressure, void *userdata) {
        r->pressure = pressure;
        r->pressure_userdata = userdata;
}

int ring_reader_set_classes(struct ring_reader *r, const unsigned *classes, unsigned n_classes) {
        r->class_bytes = calloc(n_classes ? n_classes : 1, sizeof *r->class_bytes);
        r->held = calloc(n_classes ? n_classes : 1, sizeof *r->held);
        r->left = calloc(r->n_rings ? r->n_rings : 1, sizeof *r->left);
        if (!r->class_bytes || !r->held || !r->left)
                return -ENOMEM;
        r->classes = classes;
        r->n_classes = n_classes;
        return 0;
}

/* The class of ring I, or RING_READER_NO_CLASS. */
static unsigned class_of(const struct ring_reader *r, int i) {
        return r->classes && r->classes[i] < r->n_classes ? r->classes[i] : RING_READER_NO_CLASS;
}

static bool hook_only(const struct ring_reader *r, int i) {
        return r->classes && r->classes[i] == RING_READER_HOOK_ONLY;
}

/* The hooks of ring I's records not yet hooked, in ring order: a held ring's records wait for
 * the consumer, but a clock's next interval (the sample hook) must not. */
static void hook_held(struct ring_reader *r, int i) {
        struct ring_buffer *ring = r->rings[i];
        const struct perf_event_header *h;
        uint64_t pos, next;

        ring_buffer_peek(ring);
        for (pos = MAX(ring->tail, r->hooked[i]); ring_buffer_at(ring, pos, &h, &next) > 0; pos = next) {
                if (h->type == PERF_RECORD_SAMPLE && r->sample_hook)
                        r->sample_hook(r->sample_hook_userdata, h);
                else if (h->type != PERF_RECORD_SAMPLE && r->hook)
                        r->hook(r->hook_userdata, h);
                r->hooked[i] = next;
        }
}

/* Whether ring I's class is held (called with the lock held). */
static bool ring_held(const struct ring_reader *r, int i) {
        unsigned c = class_of(r, i);

        return c != RING_READER_NO_CLASS && r->held[c];
}

void ring_reader_set_sample_hook(struct ring_reader *r, ring_reader_hook hook, void *userdata) {
        r->sample_hook = hook;
        r->sample_hook_userdata = userdata;
}

void ring_reader_set_hook(struct ring_reader *r, ring_reader_hook hook, void *userdata) {
        r->hook = hook;
        r->hook_userdata = userdata;
}

static int entry_cmp(const void *a, const void *b) {
        const struct entry *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        if (x->ring != y->ring)
                return x->ring < y->ring ? -1 : 1;
        return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Appends H to the fill buffer, cut to its filled stack if it has one, and that to its
 * thread's stack top if known. Returns false if it does not fit under LIMIT (or in memory).
 * Called with the lock held. */
static bool append(struct ring_reader *r, const struct perf_event_header *h, size_t limit) {
        const uint8_t *src = (const uint8_t *) h;
        struct record_sample s;
        size_t prefix = h->size, keep = 0, size;
        uint64_t *slot, type, dyn8 = 0;
        struct perf_event_header *out;
        uint8_t *p;

        if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof *h + 8) {
                uint64_t id;

                memcpy(&id, h + 1, 8);
                slot = idmap_get(r->events, id);
                type = slot ? EVENT_TYPE(*slot) : 0;
                if ((type & PERF_SAMPLE_STACK_USER) &&
                    record_parse_sample(h, type, EVENT_N_REGS(*slot), &s) == 0 && s.stack) {
                        unsigned sp = EVENT_SP(*slot);
                        uint64_t *top = sp > 0 && s.regs && s.abi != PERF_SAMPLE_REGS_ABI_NONE ?
                                idmap_get(r->stack_tops, s.tid) :
                                NULL;

                        prefix = (const uint8_t *) s.stack - 8 - src;
                        if (top && *top > s.regs[sp - 1] && *top - s.regs[sp - 1] < s.dyn_size) {
                                s.dyn_size = *top - s.regs[sp - 1];
                                r->stats.stacks_cut++;
                        }
                        dyn8 = (s.dyn_size + 7) & ~7ULL;
                        keep = 1;
                }
        } else if (h->type == PERF_RECORD_EXIT || h->type == PERF_RECORD_COMM)
                forget_stack_top(r, h);
        size = keep ? prefix + 8 + dyn8 + 8 : h->size;
        if (r->fill_size + size > limit)
                return false;
        if (r->fill_size + size > r->fill_cap) {
                size_t cap = r->fill_cap ? r->fill_cap * 2 : QUEUE_KEEP_BYTES;
                uint8_t *a;

                while (cap < r->fill_size + size)
                        cap *= 2;
                a = realloc(r->fill, cap);
                if (!a)
                        return false;
                r->fill = a;
                r->fill_cap = cap;
        }
        p = r->fill + r->fill_size;
        if (!keep)
                memcpy(p, src, size);
        else {
                memcpy(p, src, prefix);
                memcpy(p + prefix, &dyn8, 8);
                memcpy(p + prefix + 8, s.stack, dyn8);
                memcpy(p + prefix + 8 + dyn8, &s.dyn_size, 8);
                out = (struct perf_event_header *) p;
                out->size = size;
        }
        r->fill_size += size;
        r->stats.records++;
        r->stats.bytes_in += h->size;
        r->stats.bytes_queued += size;
        return true;
}

/* One pass over the rings. Returns how many records were queued, and sets *ret_more when a
 * ring may hold more (the pass was full) and *ret_full when the queue bound stopped it. */
static size_t pass(struct ring_reader *r, bool final, bool *ret_more, bool *ret_full) {
        size_t n = 0, copied = 0, first;
        bool full = false, held;
        unsigned newly_held = RING_READER_NO_CLASS;

        for (int i = 0; i < r->n_rings; i++) {
                struct ring_buffer *ring = r->rings[i];
                const struct perf_event_header *h;
                uint64_t pos, next, time;

                pthread_mutex_lock(&r->lock);
                held = !final && ring_held(r, i);
                pthread_mutex_unlock(&r->lock);
                if (r->left)
                        r->left[i] = UINT64_MAX;
                if (held) {
                        r->reached[i] = ring->tail; /* left in the ring for the kernel to count */
                        hook_held(r, i);
                        continue;
                }
                ring_buffer_peek(ring);
                first = n;
                for (pos = ring->tail; n < PASS_RECORDS; pos = next) {
                        int q = ring_buffer_at(ring, pos, &h, &next);

                        if (q == 0)
                                break;
                        if (q < 0 || record_time(h, &time) < 0) {
                                /* Nonsense sizes: skip what is left of this ring. */
                                pthread_mutex_lock(&r->lock);
                                r->stats.bad++;
                                pthread_mutex_unlock(&r->lock);
                                pos = ring->head;
                                break;
                        }
                        r->entries[n++] = (struct entry) {
                                .time = time,
                                .pos = pos,
                                .ring = i,
                                .hook = pos >= r->hooked[i] &&
                                        (h->type == PERF_RECORD_SAMPLE ? r->sample_hook != NULL :
                                                                         r->hook != NULL),
                        };
                }
                r->reached[i] = pos;
                /* The kernel stamps a sample before the program at its overflow runs, which may
                 * write a record of its own first (Python frames' companion: sampling-bpf.h): a
                 * ring's order is the order of writing, so such a record sorts with the next. */
                for (size_t j = n; j-- > first + 1;)
                        if (r->entries[j - 1].time > r->entries[j].time)
                                r->entries[j - 1].time = r->entries[j].time;
        }
        qsort(r->entries, n, sizeof *r->entries, entry_cmp);

        /* The hook first, outside the lock (it reads /proc: a take must not wait on it), and once
         * a record: one that a full queue leaves in the rings is hooked in the pass that first
         * meets it, while its process more surely lives, and not again when copied later. */
        for (size_t i = 0; (r->hook || r->sample_hook) && i < n; i++) {
                const struct entry *e = &r->entries[i];
                const struct perf_event_header *h;
                uint64_t next;

                if (!e->hook || ring_buffer_at(r->rings[e->ring], e->pos, &h, &next) <= 0)
                        continue;
                if (h->type == PERF_RECORD_SAMPLE)
                        r->sample_hook(r->sample_hook_userdata, h);
                else
                        r->hook(r->hook_userdata, h);
                r->hooked[e->ring] = next;
        }
        if (r->sample_hook)
                r->sample_hook(r->sample_hook_userdata, NULL); /* the pass's samples all seen */

        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < n; i++) {
                const struct perf_event_header *h;
                uint64_t next;
                unsigned c = class_of(r, (int) r->entries[i].ring);
                size_t before = r->fill_size;

                if (r->left && r->left[r->entries[i].ring] != UINT64_MAX)
                        continue; /* its class is held: this ring's later records stay too */
                if (hook_only(r, (int) r->entries[i].ring))
                        continue; /* hooked above, and consumed */
                if (ring_buffer_at(r->rings[r->entries[i].ring], r->entries[i].pos, &h, &next) <= 0)
                        continue;
                /* One class (a resource) may fill at most half the queue, so that a flood of
                 * one leaves room for the others' records while the consumer is behind: past
                 * it, its rings keep their records (and lose what they cannot hold) until the
                 * consumer takes the queue. */
                if (c != RING_READER_NO_CLASS && !final && r->class_bytes[c] + h->size > r->max_queued / 2) {
                        r->left[r->entries[i].ring] = r->entries[i].pos;
                        if (!r->held[c])
                                newly_held = c;
                        r->held[c] = true;
                        continue;
                }
                if (!append(r, h, final ? SIZE_MAX : r->max_queued)) {
                        /* Leave this record and every later one in the rings. Per ring the
                         * sorted entries are in ring order, so the first left is the lowest. */
                        for (int k = 0; k < r->n_rings; k++)
                                for (size_t j = n; j > i; j--)
                                        if (r->entries[j - 1].ring == (uint32_t) k)
                                                r->reached[k] = r->entries[j - 1].pos;
                        full = true;
                        r->stats.full++;
                        break;
                }
                if (c != RING_READER_NO_CLASS)
                        r->class_bytes[c] += r->fill_size - before;
                copied++;
        }
        pthread_mutex_unlock(&r->lock);

        for (int i = 0; i < r->n_rings; i++) {
                if (r->left && r->left[i] < r->reached[i])
                        r->reached[i] = r->left[i];
                ring_buffer_consume(r->rings[i], r->reached[i]);
        }
        *ret_more = n == PASS_RECORDS && copied > 0;
        *ret_full = full;
        if (full && r->pressure)
                r->pressure(r->pressure_userdata, RING_READER_NO_CLASS);
        else if (newly_held != RING_READER_NO_CLASS && r->pressure)
                r->pressure(r->pressure_userdata, newly_held);
        return copied;
}

static void *thread_main(void *arg) {
        struct ring_reader *r = arg;
        struct pollfd *pfd = calloc(r->n_rings + 1, sizeof *pfd);
        uint64_t notified_ns = 0, last_asked = 0;
        bool untold = false; /* records queued that the consumer was not told of */

        if (!pfd)
                return NULL;
        for (int i = 0; i < r->n_rings; i++)
                pfd[i] = (struct pollfd) { .fd = r->rings[i]->fd, .events = POLLIN };
        pfd[r->n_rings] = (struct pollfd) { .fd = r->wake_fd, .events = POLLIN };

        for (;;) {
                bool stopping, more, full;
                uint64_t one = 1, asked, count, now;
                size_t queued = 0, filled;

                /* A held class's rings would wake us at once, for records we leave: not polled
                 * until the consumer takes the queue (which wakes us through wake_fd). */
                pthread_mutex_lock(&r->lock);
                for (int i = 0; i < r->n_rings; i++)
                        pfd[i].events = ring_held(r, i) ? 0 : POLLIN;
                pthread_mutex_unlock(&r->lock);
                (void) poll(pfd, r->n_rings + 1, POLL_MS);
                if (pfd[r->n_rings].revents & POLLIN)
                        (void) !read(r->wake_fd, &count, sizeof count);
                pthread_mutex_lock(&r->lock);
                stopping = r->stop;
                asked = r->sync_asked;
                pthread_mutex_unlock(&r->lock);
                do
                        queued += pass(r, stopping, &more, &full);
                while (more && !full);
                pthread_mutex_lock(&r->lock);
                filled = r->fill_size;
                pthread_mutex_unlock(&r->lock);
                now = now_ns(CLOCK_MONOTONIC);
                untold = (untold || queued > 0) && filled > 0;
                if (untold &&
                    (stopping || full || asked != last_asked || filled >= NOTIFY_BYTES ||
                     now - notified_ns >= NOTIFY_NS)) {
                        (void) !write(r->notify_fd, &one, sizeof one);
                        untold = false;
                        notified_ns = now;
                }
                last_asked = asked;
                pthread_mutex_lock(&r->lock);
                r->sync_done = asked;
                /* A held class left records in its rings as surely as a full queue: the sync is
                 * not complete until the consumer takes the queue and a pass reads them. (The
                 * thread itself goes on reading the other classes' rings.) */
                r->sync_full = full;
                for (unsigned c = 0; c < r->n_classes; c++)
                        r->sync_full |= r->held[c];
                pthread_cond_broadcast(&r->synced);
                pthread_mutex_unlock(&r->lock);
                if (stopping)
                        break;
                if (full) {
                        /* The consumer is behind: sleep until it takes the queue (or a sync or
                         * stop asks), rather than pass again and again, sorting the rings'
                         * records for nothing, on the CPU the consumer lacks. */
                        struct timespec end = monotonic_in(POLL_MS * 1000000ULL);
                        int e = 0;

                        pthread_mutex_lock(&r->lock);
                        while (r->fill_size > 0 && !r->stop && r->sync_asked == asked && e == 0)
                                e = pthread_cond_timedwait(&r->kicked, &r->lock, &end);
                        pthread_mutex_unlock(&r->lock);
                }
        }
        free(pfd);
        return NULL;
}

int ring_reader_start(struct ring_reader *r) {
        int e;

        if (r->started)
                return -EBUSY;
        e = pthread_create(&r->thread, NULL, thread_main, r);
        if (e != 0)
                return -e;
        r->started = true;
        /* The thread that handles records (ours) yields the CPU to the reader, so that on a
         * busy machine the rings are emptied first and handling waits: waiting costs memory in
         * the queue, not samples. Raising the reader instead would need CAP_SYS_NICE. */
        (void) setpriority(PRIO_PROCESS, gettid(), RING_READER_CONSUMER_NICE);
        return 0;
}

int ring_reader_set_realtime(struct ring_reader *r) {
        struct sched_param sp = { .sched_priority = 1 };

        if (!r->started)
                return -EINVAL;
        return -pthread_setschedparam(r->thread, SCHED_FIFO, &sp);
}

int ring_reader_fd(const struct ring_reader *r) {
        return r->notify_fd;
}

int ring_reader_take(struct ring_reader *r, const uint8_t **ret, size_t *ret_size) {
        uint64_t count;
        uint8_t *b;
        size_t cap, size;
        uint64_t now;

        (void) !read(r->notify_fd, &count, sizeof count);
        if (!r->started) {
                /* Not running (yet, or any more): read the rings here. */
                bool more, full;

                do
                        pass(r, r->stopped, &more, &full);
                while (more && !full);
        }
        pthread_mutex_lock(&r->lock);
        b = r->fill;
        cap = r->fill_cap;
        size = r->fill_size;
        r->fill = r->work;
        r->fill_cap = r->work_cap;
        r->fill_size = 0;
        for (unsigned c = 0; c < r->n_classes; c++) {
                /* A held class's rings are not polled: wake the thread to read them again. */
                if (r->held[c] && r->started)
                        (void) !write(r->wake_fd, &(uint64_t) { 1 }, sizeof(uint64_t));
                r->class_bytes[c] = 0;
                r->held[c] = false;
        }
        pthread_cond_signal(&r->kicked);
        r->work = b;
        r->work_cap = cap;
        /* The buffer to fill next (the one handled last, done with) grew in a burst: let it go
         * once the burst is seconds past, rather than hold it for the next. */
        now = now_ns(CLOCK_MONOTONIC);
        if (size > QUEUE_KEEP_BYTES)
                r->big_ns = now;
        if (r->fill_cap > QUEUE_KEEP_BYTES && now - r->big_ns > QUEUE_SHRINK_NS) {
                free(r->fill);
                r->fill = NULL;
                r->fill_cap = 0;
        }
        pthread_mutex_unlock(&r->lock);
        *ret = b;
        *ret_size = size;
        return 0;
}

int ring_reader_sync(struct ring_reader *r, unsigned timeout_ms) {
        struct timespec end = monotonic_in(timeout_ms * 1000000ULL);
        uint64_t one = 1, gen;
        int e = 0, ret;

        if (!r->started)
                return 1; /* ring_reader_take() reads the rings itself */
        pthread_mutex_lock(&r->lock);
        gen = ++r->sync_asked;
        pthread_cond_signal(&r->kicked);
        pthread_mutex_unlock(&r->lock);
        (void) !write(r->wake_fd, &one, sizeof one);
        pthread_mutex_lock(&r->lock);
        while (r->sync_done < gen && e == 0)
                e = pthread_cond_timedwait(&r->synced, &r->lock, &end);
        ret = r->sync_done < gen ? -ETIMEDOUT : !r->sync_full;
        pthread_mutex_unlock(&r->lock);
        return ret;
}

uint64_t ring_reader_oldest(struct ring_reader *r) {
        uint64_t time = 0;

        pthread_mutex_lock(&r->lock);
        if (r->fill_size >= sizeof(struct perf_event_header))
                (void) record_time((const struct perf_event_header *) r->fill, &time);
        pthread_mutex_unlock(&r->lock);
        return time;
}

void ring_reader_stop(struct ring_reader *r) {
        uint64_t one = 1;

        if (!r->started)
                return;
        pthread_mutex_lock(&r->lock);
        r->stop = true;
        pthread_cond_signal(&r->kicked);
        pthread_mutex_unlock(&r->lock);
        (void) !write(r->wake_fd, &one, sizeof one);
        pthread_join(r->thread, NULL);
        r->started = false;
        r->stopped = true;
}

void ring_reader_get_stats(struct ring_reader *r, struct ring_reader_stats *ret) {
        pthread_mutex_lock(&r->lock);
        *ret = r->stats;
        ret->queue_bytes = r->fill_cap + r->work_cap;
        pthread_mutex_unlock(&r->lock);
}
