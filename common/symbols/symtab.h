/* A sorted table of function symbols (start, size, name): ELF symbol tables, /proc/kallsyms and
 * JIT maps all become one, so that an address is found by binary search in ~35 ns instead of
 * libdwfl's linear scan (~168 µs in libc, env-probe.md). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "name-table.h"

struct symtab_entry {
        uint64_t start;
        uint64_t size; /* 0: unknown, the symbol runs to the next one */
        uint32_t name; /* id in the table's name table */
        uint8_t rank;  /* among symbols at one address the lowest rank names it */
};

struct symtab {
        struct symtab_entry *entries;
        size_t n, cap;
        struct name_table *names; /* borrowed */
        bool sorted;
};

/* An empty table whose names go into NAMES (which must outlive it). NULL: no memory. */
struct symtab *symtab_new(struct name_table *names);
struct symtab *symtab_free(struct symtab *t);
DEFINE_CLEANUP(struct symtab *, symtab_free);

/* Adds symbol NAME[0..len) at [start, start + size), interning the name. RANK breaks ties
 * between aliases (lower wins: e.g. 0 global, 1 weak, 2 local). Returns 0, -ENOMEM, -EINVAL
 * (empty name, or one with a NUL). */
int symtab_add(struct symtab *t, uint64_t start, uint64_t size, const char *name, size_t len, unsigned rank);

/* Sorts, drops aliases and unsized symbols inside sized ones; call once after adding. */
void symtab_sort(struct symtab *t);

/* The symbol covering ADDR, or NULL. A symbol of size 0 covers up to the next symbol, at most
 * SYMTAB_UNSIZED_MAX bytes, so an address past the last symbol of a stripped file is not
 * blamed on it. */
#define SYMTAB_UNSIZED_MAX (1u << 20)
const struct symtab_entry *symtab_lookup(const struct symtab *t, uint64_t addr);
