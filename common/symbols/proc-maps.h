/* A process's address space as far as stacks care: its executable mappings, each with the
 * module it maps. Built from /proc/PID/maps at attach time and from MMAP2 records after. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"

struct mapping {
        uint64_t start, end; /* [start, end) */
        uint64_t pgoff;      /* file offset mapped at start */
        uint32_t module;     /* symbolizer index; SYMBOLIZER_NO_MODULE if anonymous */
};

struct proc_maps {
        struct mapping *mappings; /* sorted by start, not overlapping; read-only: shared by
                                         * copies until one of them changes */
        size_t n;
        uint64_t generation; /* names these mappings: every change gives a number never
                                         * used before, in any space; a copy keeps it (the same
                                         * mappings give the same answers) */
};

struct proc_maps *proc_maps_new(void);
struct proc_maps *proc_maps_free(struct proc_maps *m);
DEFINE_CLEANUP(struct proc_maps *, proc_maps_free);

/* Adds [start, end), replacing whatever part of older mappings it overlaps (as mmap(2) does).
 * Returns 0 or -ENOMEM; -EINVAL if start >= end. */
int proc_maps_add(struct proc_maps *m, uint64_t start, uint64_t end, uint64_t pgoff, uint32_t module);

/* The mapping holding ADDR, or NULL. */
const struct mapping *proc_maps_find(const struct proc_maps *m, uint64_t addr);

/* Copies SRC into a new address space (a fork): it shares SRC's mappings until either changes.
 * NULL: no memory. */
struct proc_maps *proc_maps_copy(const struct proc_maps *src);

/* Forgets every mapping (an exec). */
void proc_maps_clear(struct proc_maps *m);

struct proc_maps_line {
        uint64_t start, end, pgoff;
        bool exec;
        unsigned dev_major, dev_minor;
        uint64_t ino;
        const char *path; /* into the line; "" for anonymous mappings */
        bool deleted;     /* the path ended in " (deleted)", which is stripped */
};

/* Parses one /proc/PID/maps line in place (the path is NUL-terminated and " (deleted)" cut).
 * Returns 0, or -EBADMSG. */
int proc_maps_parse_line(char *line, struct proc_maps_line *ret);
