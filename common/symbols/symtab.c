/* Sorted symbol tables. Symbols are appended in any order, then sorted by start once; aliases
 * (several names for one address, e.g. qsort_r and __qsort_r) collapse to the one of lowest
 * rank, then fewest leading underscores, then shortest, which is the name users know. An
 * unsized symbol inside a sized one (a label within an assembly function) is dropped at the
 * sort, so that it cannot take the rest of its function's addresses. Lookups are binary
 * searches for the last start <= addr. */
#include "symtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

struct symtab *symtab_new(struct name_table *names) {
        struct symtab *t = calloc(1, sizeof *t);

        if (t)
                t->names = names;
        return t;
}

struct symtab *symtab_free(struct symtab *t) {
        if (!t)
                return NULL;
        free(t->entries);
        free(t);
        return NULL;
}

int symtab_add(struct symtab *t, uint64_t start, uint64_t size, const char *name, size_t len, unsigned rank) {
        int64_t id;

        if (len == 0)
                return -EINVAL;
        id = name_table_intern(t->names, name, len);
        if (id < 0)
                return id;
        if (GROW(t->entries, t->cap, t->n + 1) < 0)
                return -ENOMEM;
        t->entries[t->n++] = (struct symtab_entry) {
                .start = start,
                .size = size,
                .name = id,
                .rank = rank > 255 ? 255 : rank,
        };
        t->sorted = false;
        return 0;
}

static _Thread_local const struct symtab *sorting;

static size_t underscores(const char *s) {
        size_t n = 0;

        while (s[n] == '_')
                n++;
        return n;
}

/* Orders by start, and at one start puts the preferred name first. */
static int entry_cmp(const void *a, const void *b) {
        const struct symtab_entry *x = a, *y = b;
        const char *nx, *ny;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        if (x->rank != y->rank)
                return x->rank < y->rank ? -1 : 1;
        nx = name_table_get(sorting->names, x->name);
        ny = name_table_get(sorting->names, y->name);
        if (underscores(nx) != underscores(ny))
                return underscores(nx) < underscores(ny) ? -1 : 1;
        if (strlen(nx) != strlen(ny))
                return strlen(nx) < strlen(ny) ? -1 : 1;
        return strcmp(nx, ny);
}

void symtab_sort(struct symtab *t) {
        uint64_t covered = 0; /* the end of the sized symbols so far */
        size_t n = 0;

        sorting = t;
        if (t->n > 0) /* qsort() wants a pointer even for nothing */
                qsort(t->entries, t->n, sizeof *t->entries, entry_cmp);
        sorting = NULL;
        for (size_t i = 0; i < t->n; i++) {
                struct symtab_entry *e = &t->entries[i];

                if (n > 0 && t->entries[n - 1].start == e->start) {
                        /* An alias: keep the preferred name, and the largest known size. */
                        if (e->size > t->entries[n - 1].size)
                                t->entries[n - 1].size = e->size;
                } else if (e->size > 0 || e->start >= covered)
                        t->entries[n++] = *e;
                else
                        continue;
                if (e->size > 0 && e->start + e->size > covered)
                        covered = e->start + e->size;
        }
        t->n = n;
        t->sorted = true;
}

const struct symtab_entry *symtab_lookup(const struct symtab *t, uint64_t addr) {
        size_t lo = 0, hi = t->n;
        const struct symtab_entry *e;
        uint64_t end;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->entries[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0)
                return NULL;
        e = &t->entries[lo - 1];
        if (addr == e->start)
                return e; /* its own start, even at the top of the address space */
        if (e->size > 0)
                end = e->start + e->size;
        else {
                end = lo < t->n ? t->entries[lo].start : UINT64_MAX;
                if (end - e->start > SYMTAB_UNSIZED_MAX)
                        end = e->start + SYMTAB_UNSIZED_MAX;
        }
        return addr < end ? e : NULL;
}
