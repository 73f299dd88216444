/* Address spaces. Lookups come once per user frame of every sample and changes are rare
 * (mmap of executable code), so mappings sit in a sorted array searched by bisection, and an
 * insertion shifts the array. Only executable mappings are kept: they are what PCs fall in.
 *
 * A fork copies its parent's space, and thousands of processes a second may fork (a build, a
 * shell loop) while few of them change it before they exec or exit: so the array is counted and
 * shared by copies, and a space copies it only when it changes it (an exec drops it). */
#include "proc-maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The next generation: spaces change in the collector's thread, but tests and tools may run
 * collectors in several. */
static uint64_t new_generation(void) {
        static uint64_t last;

        return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

/* The array behind proc_maps.mappings. */
struct block {
        size_t refs, cap;
        struct mapping items[];
};

static struct block *block_of(const struct proc_maps *m) {
        return m->mappings ? (struct block *) ((char *) m->mappings - offsetof(struct block, items)) : NULL;
}

/* Lets go of M's array: freed with its last space. */
static void release(struct proc_maps *m) {
        struct block *b = block_of(m);

        if (b && --b->refs == 0)
                free(b);
        m->mappings = NULL;
        m->n = 0;
}

struct proc_maps *proc_maps_new(void) {
        struct proc_maps *m = calloc(1, sizeof(struct proc_maps));

        if (m)
                m->generation = new_generation();
        return m;
}

struct proc_maps *proc_maps_free(struct proc_maps *m) {
        if (!m)
                return NULL;
        release(m);
        free(m);
        return NULL;
}

/* Makes M's array its own, with room for N mappings. Returns 0 or -ENOMEM. */
static int reserve(struct proc_maps *m, size_t n) {
        struct block *b = block_of(m), *a;
        size_t cap = b ? b->cap : 16;

        if (b && b->refs == 1 && n <= b->cap)
                return 0;
        while (cap < n)
                cap *= 2;
        if (b && b->refs == 1)
                a = realloc(b, sizeof *a + cap * sizeof *a->items);
        else {
                a = malloc(sizeof *a + cap * sizeof *a->items);
                if (a && m->n > 0)
                        memcpy(a->items, m->mappings, m->n * sizeof *a->items);
                if (a && b)
                        b->refs--; /* the others keep it */
        }
        if (!a)
                return -ENOMEM;
        a->refs = 1;
        a->cap = cap;
        m->mappings = a->items;
        return 0;
}

int proc_maps_add(struct proc_maps *m, uint64_t start, uint64_t end, uint64_t pgoff, uint32_t module) {
        size_t i = 0, j;

        if (start >= end)
                return -EINVAL;
        /* Room for the new mapping and for one old mapping split in two. */
        if (reserve(m, m->n + 2) < 0)
                return -ENOMEM;

        while (i < m->n && m->mappings[i].end <= start)
                i++;
        /* An old mapping that starts before and runs past the new one: split it. */
        if (i < m->n && m->mappings[i].start < start && m->mappings[i].end > end) {
                struct mapping tail = m->mappings[i];

                tail.pgoff += end - tail.start;
                tail.start = end;
                m->mappings[i].end = start;
                memmove(&m->mappings[i + 2], &m->mappings[i + 1], (m->n - i - 1) * sizeof *m->mappings);
                m->mappings[i + 1] = tail;
                m->n++;
                i++;
        } else if (i < m->n && m->mappings[i].start < start) {
                m->mappings[i].end = start; /* trim its tail */
                i++;
        }
        /* Old mappings inside [start, end) go; one that runs past end loses its head. */
        for (j = i; j < m->n && m->mappings[j].start < end; j++)
                if (m->mappings[j].end > end) {
                        m->mappings[j].pgoff += end - m->mappings[j].start;
                        m->mappings[j].start = end;
                        break;
                }
        memmove(&m->mappings[i + 1], &m->mappings[j], (m->n - j) * sizeof *m->mappings);
        m->n = m->n - (j - i) + 1;
        m->mappings[i] = (struct mapping) { .start = start, .end = end, .pgoff = pgoff, .module = module };
        m->generation = new_generation();
        return 0;
}

const struct mapping *proc_maps_find(const struct proc_maps *m, uint64_t addr) {
        size_t lo = 0, hi = m->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (m->mappings[mid].end <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < m->n && m->mappings[lo].start <= addr ? &m->mappings[lo] : NULL;
}

struct proc_maps *proc_maps_copy(const struct proc_maps *src) {
        struct proc_maps *m = calloc(1, sizeof(struct proc_maps));
        struct block *b = block_of(src);

        if (!m)
                return NULL;
        if (b)
                b->refs++;
        m->mappings = src->mappings;
        m->n = src->n;
        m->generation = src->generation;
        return m;
}

void proc_maps_clear(struct proc_maps *m) {
        struct block *b = block_of(m);

        if (b && b->refs > 1)
                release(m); /* its copies keep the array */
        m->n = 0;
        m->generation = new_generation();
}

int proc_maps_parse_line(char *line, struct proc_maps_line *ret) {
        struct proc_maps_line l = {};
        char perms[5], *path, *nl;
        unsigned long long start, end, pgoff, ino;
        int consumed = 0;
        size_t len;

        /* "7f2c4a000000-7f2c4a022000 r-xp 00028000 fe:01 1234567    /usr/lib/libc.so.6" */
        if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &l.dev_major,
                   &l.dev_minor, &ino, &consumed) < 7 ||
            consumed == 0 || start >= end || strlen(perms) != 4)
                return -EBADMSG;
        l.start = start;
        l.end = end;
        l.pgoff = pgoff;
        l.ino = ino;
        l.exec = perms[2] == 'x';
        path = line + consumed;
        nl = strchr(path, '\n');
        if (nl)
                *nl = '\0';
        len = strlen(path);
        if (len > 10 && streq(path + len - 10, " (deleted)")) {
                path[len - 10] = '\0';
                l.deleted = true;
        }
        l.path = path;
        *ret = l;
        return 0;
}
