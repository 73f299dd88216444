/* Arrays of tens of MiB and more that are filled once and read at random (a store's stack table
 * by id): mapped anonymous and offered to the kernel for huge pages (MADV_HUGEPAGE, where
 * transparent huge pages are "madvise", as on Debian), so that filling one costs a page fault
 * per 2 MiB rather than per 4 KiB, and a walk at random a TLB entry per 2 MiB. */
#pragma once

#include <stddef.h>

/* N elements of SIZE bytes, zeroed (as calloc()); below 2 MiB in all, calloc()'s. NULL: no
 * memory (or N * SIZE overflows). */
void *big_array_new(size_t n, size_t size);

/* Frees P, made by big_array_new(N, SIZE) with the same N and SIZE. NULL does nothing. Returns
 * NULL. */
void *big_array_free(void *p, size_t n, size_t size);
