/* Sorting stacks in bounded memory, for importers that must write a trie of millions of distinct
 * stacks without holding it: in sorted order the stacks that share a prefix come together, so a
 * writer keeps only the path to the last stack, and knows that a node it has just added has no
 * children but those it is about to add.
 *
 * A stack is a record of 32-bit words, [n][count low][count high][id 1]...[id n], appended to one
 * buffer. When the buffer holds its share of the memory, the records are sorted through an index
 * of 16-byte entries: the offset, and as many of the first ids as fit in 96 bits at the width of
 * the run's largest id (6 ids of up to 13 bits), packed so that comparing the integers compares
 * the ids in order. Stacks share their first frames (all start at main, and a few dozen frames
 * follow it): with two ids, as the index held before, most comparisons went on to the records,
 * two cache misses each in a buffer of 32 MiB. The records are then written
 * to the temporary file as a run, equal stacks summed. The stacks are read back in order from
 * the buffer alone when nothing was spilled, else by merging the runs through a heap of readers,
 * each with a buffer of its own that holds at least one record. Operations: many adds, then one
 * pass of nexts. */
#include "stack-sort.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "grow.h"

/* Words of a record before its ids. */
#define HEADER_WORDS 3
/* The largest record, in words. */
#define RECORD_MAX_WORDS (HEADER_WORDS + STACK_SORT_MAX_IDS)
/* A run reader's buffer, in words: at least a record. */
#define READER_WORDS (2 * RECORD_MAX_WORDS)

struct entry {
        uint64_t head;  /* the first ids, packed (sort_buffer()); 0 past the stack's end */
        uint32_t head2; /* the ids after those, likewise */
        uint32_t off;   /* of the record in the buffer, in words (max_buf fits) */
};

struct reader {
        uint32_t *buf;
        size_t start, end;  /* the words of buf not yet returned */
        off_t pos, run_end; /* in the file, in bytes: what is left of the run */
};

struct stack_sort {
        uint32_t *buf;                  /* the records of the run being collected */
        size_t n_buf, cap_buf, max_buf; /* in words */
        uint32_t max_id;                /* the largest id in the buffer */
        struct entry *index;
        size_t n_index, cap_index;
        uint64_t added;

        int fd;      /* the temporary file; -1 until a run is spilled */
        off_t *runs; /* where each run ends in the file, in bytes (the first starts at 0) */
        size_t n_runs, cap_runs;

        bool reading;
        size_t next; /* reading the buffer alone: the next entry */
        struct reader *readers;
        size_t *heap; /* reader numbers, the smallest current record first */
        size_t n_heap;
        uint32_t out[RECORD_MAX_WORDS];
};

static uint64_t record_count(const uint32_t *r) {
        return r[1] | (uint64_t) r[2] << 32;
}

static int record_compare(const uint32_t *a, const uint32_t *b) {
        size_t n = a[0] < b[0] ? a[0] : b[0];

        for (size_t i = 0; i < n; i++)
                if (a[HEADER_WORDS + i] != b[HEADER_WORDS + i])
                        return a[HEADER_WORDS + i] < b[HEADER_WORDS + i] ? -1 : 1;
        return a[0] < b[0] ? -1 : a[0] > b[0];
}

static int entry_compare(const void *x, const void *y, void *userdata) {
        const struct entry *a = x, *b = y;
        const uint32_t *buf = userdata;

        if (a->head != b->head)
                return a->head < b->head ? -1 : 1;
        if (a->head2 != b->head2)
                return a->head2 < b->head2 ? -1 : 1;
        return record_compare(buf + a->off, buf + b->off); /* the same first ids */
}

struct stack_sort *stack_sort_new(size_t memory) {
        struct stack_sort *s = calloc(1, sizeof *s);

        if (!s)
                return NULL;
        /* A record of a few ids costs as much again in the index: half the memory each. */
        s->max_buf = memory / 2 / sizeof(uint32_t);
        if (s->max_buf < RECORD_MAX_WORDS)
                s->max_buf = RECORD_MAX_WORDS;
        if (s->max_buf > UINT32_MAX)
                s->max_buf = UINT32_MAX; /* an entry's offset is 32 bits */
        s->fd = -1;
        return s;
}

struct stack_sort *stack_sort_free(struct stack_sort *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; s->readers && i < s->n_runs; i++)
                free(s->readers[i].buf);
        free(s->readers);
        free(s->heap);
        free(s->runs);
        free(s->index);
        free(s->buf);
        if (s->fd >= 0)
                close(s->fd);
        free(s);
        return NULL;
}

uint64_t stack_sort_added(const struct stack_sort *s) {
        return s->added;
}

/* Opens the temporary file, unnamed where the file system allows (it goes with the process). */
static int open_temporary(struct stack_sort *s) {
        const char *dir = getenv("TMPDIR");
        _cleanup_free_ char *path = NULL;

        if (!dir || dir[0] != '/')
                dir = "/tmp";
        s->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (s->fd >= 0)
                return 0;
        if (asprintf(&path, "%s/cppd-stacks-XXXXXX", dir) < 0)
                return -ENOMEM;
        s->fd = mkostemp(path, O_CLOEXEC);
        if (s->fd < 0)
                return -errno;
        (void) unlink(path);
        return 0;
}

static int write_all(int fd, const void *p, size_t size, off_t *pos) {
        while (size > 0) {
                ssize_t n = pwrite(fd, p, size, *pos);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p = (const char *) p + n;
                size -= n;
                *pos += n;
        }
        return 0;
}

/* Packs ids FROM..FROM + K of the record at REC into K fields of W bits, the first highest, 0
 * past the record's end: a shorter stack sorts first, as in record_compare(), which orders what
 * ties (an id 0, were there one, ties with the end). */
static uint64_t pack_ids(const uint32_t *rec, size_t from, unsigned k, unsigned w) {
        uint64_t v = 0;

        for (size_t i = from; i < from + k; i++)
                v = v << w | (i < rec[0] ? rec[HEADER_WORDS + i] : 0);
        return v;
}

static void sort_buffer(struct stack_sort *s) {
        unsigned w = s->max_id ? 32 - (unsigned) __builtin_clz(s->max_id) : 1;
        unsigned k = 64 / w, k2 = 32 / w;

        if (s->n_index == 0) /* an empty buffer has no index yet: qsort_r() wants one all the same */
                return;
        for (size_t i = 0; i < s->n_index; i++) {
                const uint32_t *rec = s->buf + s->index[i].off;

                s->index[i].head = pack_ids(rec, 0, k, w);
                s->index[i].head2 = (uint32_t) pack_ids(rec, k, k2, w);
        }
        qsort_r(s->index, s->n_index, sizeof *s->index, entry_compare, s->buf);
}

/* Sorts the buffer and appends it to the file as a run, equal stacks summed; empties the buffer. */
static int spill(struct stack_sort *s) {
        _cleanup_free_ uint32_t *chunk = NULL;
        size_t n_chunk = 0, cap_chunk = 1u << 16, last = SIZE_MAX;
        off_t pos = s->n_runs ? s->runs[s->n_runs - 1] : 0;
        int r;

        if (s->n_index == 0)
                return 0;
        if (s->fd < 0 && (r = open_temporary(s)) < 0)
                return r;
        r = GROW(s->runs, s->cap_runs, s->n_runs + 1);
        if (r < 0)
                return r;
        chunk = malloc((cap_chunk + RECORD_MAX_WORDS) * sizeof *chunk);
        if (!chunk)
                return -ENOMEM;
        sort_buffer(s);
        for (size_t i = 0; i < s->n_index; i++) {
                const uint32_t *rec = s->buf + s->index[i].off;
                size_t words = HEADER_WORDS + rec[0];

                if (last != SIZE_MAX && record_compare(chunk + last, rec) == 0) {
                        uint64_t sum = record_count(chunk + last) + record_count(rec);

                        chunk[last + 1] = (uint32_t) sum;
                        chunk[last + 2] = (uint32_t) (sum >> 32);
                        continue;
                }
                if (n_chunk >= cap_chunk) {
                        /* The last record stays: the next one may be equal to it. */
                        r = write_all(s->fd, chunk, last * sizeof *chunk, &pos);
                        if (r < 0)
                                return r;
                        memmove(chunk, chunk + last, (n_chunk - last) * sizeof *chunk);
                        n_chunk -= last;
                        last = 0;
                }
                last = n_chunk;
                memcpy(chunk + n_chunk, rec, words * sizeof *chunk);
                n_chunk += words;
        }
        r = write_all(s->fd, chunk, n_chunk * sizeof *chunk, &pos);
        if (r < 0)
                return r;
        s->runs[s->n_runs++] = pos;
        s->n_buf = s->n_index = 0;
        s->max_id = 0;
        return 0;
}

int stack_sort_add(struct stack_sort *s, const uint32_t *ids, size_t n, uint64_t count) {
        size_t words = HEADER_WORDS + n;
        uint32_t *rec;
        int r;

        if (n == 0 || n > STACK_SORT_MAX_IDS || s->reading)
                return -EINVAL;
        if (s->n_buf + words > s->max_buf) {
                r = spill(s);
                if (r < 0)
                        return r;
        }
        r = GROW(s->buf, s->cap_buf, s->n_buf + words);
        if (r < 0)
                return r;
        r = GROW(s->index, s->cap_index, s->n_index + 1);
        if (r < 0)
                return r;
        rec = s->buf + s->n_buf;
        rec[0] = (uint32_t) n;
        rec[1] = (uint32_t) count;
        rec[2] = (uint32_t) (count >> 32);
        memcpy(rec + HEADER_WORDS, ids, n * sizeof *ids);
        s->index[s->n_index++] = (struct entry) { .off = (uint32_t) s->n_buf };
        for (size_t i = 0; i < n; i++)
                s->max_id = MAX(s->max_id, ids[i]);
        s->n_buf += words;
        s->added++;
        return 0;
}

/* Makes reader D hold a whole record at its start, if its run has one left. Returns 1 when it
 * does, 0 at the run's end, or a negative errno (-EBADMSG: a record cut short, a file that
 * changed under us). */
static int reader_fill(struct stack_sort *s, struct reader *d) {
        size_t have = d->end - d->start;

        if (have >= HEADER_WORDS && d->buf[d->start] <= STACK_SORT_MAX_IDS &&
            have >= HEADER_WORDS + (size_t) d->buf[d->start])
                return 1;
        memmove(d->buf, d->buf + d->start, have * sizeof *d->buf);
        d->start = 0;
        d->end = have;
        while (d->pos < d->run_end && d->end < READER_WORDS) {
                size_t want = (READER_WORDS - d->end) * sizeof *d->buf;
                ssize_t n;

                if ((off_t) want > d->run_end - d->pos)
                        want = d->run_end - d->pos;
                n = pread(s->fd, d->buf + d->end, want, d->pos);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0 || n % sizeof *d->buf)
                        return -EBADMSG;
                d->pos += n;
                d->end += n / sizeof *d->buf;
        }
        have = d->end;
        if (have == 0)
                return 0;
        if (have < HEADER_WORDS || d->buf[0] > STACK_SORT_MAX_IDS || have < HEADER_WORDS + (size_t) d->buf[0])
                return -EBADMSG;
        return 1;
}

static const uint32_t *reader_record(const struct stack_sort *s, size_t i) {
        return s->readers[i].buf + s->readers[i].start;
}

static bool heap_less(const struct stack_sort *s, size_t a, size_t b) {
        return record_compare(reader_record(s, s->heap[a]), reader_record(s, s->heap[b])) < 0;
}

static void heap_down(struct stack_sort *s, size_t i) {
        for (;;) {
                size_t l = 2 * i + 1, m = i, t;

                if (l < s->n_heap && heap_less(s, l, m))
                        m = l;
                if (l + 1 < s->n_heap && heap_less(s, l + 1, m))
                        m = l + 1;
                if (m == i)
                        return;
                t = s->heap[i];
                s->heap[i] = s->heap[m];
                s->heap[m] = t;
                i = m;
        }
}

/* Spills the last run and sets up a reader per run. */
static int start_merge(struct stack_sort *s) {
        int r;

        r = spill(s);
        if (r < 0)
                return r;
        s->buf = mfree(s->buf);
        s->index = mfree(s->index);
        s->cap_buf = s->cap_index = 0;
        s->readers = calloc(s->n_runs, sizeof *s->readers);
        s->heap = calloc(s->n_runs, sizeof *s->heap);
        if (!s->readers || !s->heap)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_runs; i++) {
                struct reader *d = &s->readers[i];

                d->buf = malloc(READER_WORDS * sizeof *d->buf);
                if (!d->buf)
                        return -ENOMEM;
                d->pos = i ? s->runs[i - 1] : 0;
                d->run_end = s->runs[i];
                r = reader_fill(s, d);
                if (r < 0)
                        return r;
                if (r > 0)
                        s->heap[s->n_heap++] = i;
        }
        for (size_t i = s->n_heap; i-- > 0;)
                heap_down(s, i);
        return 0;
}

/* The smallest record not yet returned (NULL: none), and past it. */
static const uint32_t *peek(struct stack_sort *s) {
        if (s->n_runs == 0)
                return s->next < s->n_index ? s->buf + s->index[s->next].off : NULL;
        return s->n_heap ? reader_record(s, s->heap[0]) : NULL;
}

static int advance(struct stack_sort *s) {
        struct reader *d;
        int r;

        if (s->n_runs == 0) {
                s->next++;
                return 0;
        }
        d = &s->readers[s->heap[0]];
        d->start += HEADER_WORDS + d->buf[d->start];
        r = reader_fill(s, d);
        if (r < 0)
                return r;
        if (r == 0)
                s->heap[0] = s->heap[--s->n_heap];
        heap_down(s, 0);
        return 0;
}

int stack_sort_next(struct stack_sort *s, const uint32_t **ret_ids, size_t *ret_n, uint64_t *ret_count) {
        const uint32_t *rec;
        uint64_t count;
        int r;

        if (!s->reading) {
                s->reading = true;
                if (s->n_runs == 0)
                        sort_buffer(s);
                else if ((r = start_merge(s)) < 0)
                        return r;
        }
        rec = peek(s);
        if (!rec)
                return 0;
        memcpy(s->out, rec, (HEADER_WORDS + rec[0]) * sizeof *rec);
        count = record_count(rec);
        for (;;) {
                r = advance(s);
                if (r < 0)
                        return r;
                rec = peek(s);
                if (!rec || record_compare(rec, s->out) != 0)
                        break;
                count += record_count(rec);
        }
        *ret_ids = s->out + HEADER_WORDS;
        *ret_n = s->out[0];
        *ret_count = count;
        return 1;
}
