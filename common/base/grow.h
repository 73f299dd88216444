/* Arrays that grow by appending: one rule for all of them. */
#pragma once

#include <stddef.h>

/* Makes *ARRAY, which has room for *CAP elements of SIZE bytes, hold at least NEED: doubles the
 * room (from 16 elements) until it does, through realloc(). Returns 0, or -ENOMEM (also when the
 * size overflows) with *ARRAY and *CAP as they were. */
int grow_array(void **array, size_t *cap, size_t need, size_t size);

/* grow_array() for an array ARRAY of any element type, its room CAP a size_t:
 *     r = GROW(t->items, t->cap_items, t->n_items + 1);  */
#define GROW(array, cap, need) \
        __extension__({ \
                void *grow_p_ = (array); \
                int grow_r_ = grow_array(&grow_p_, &(cap), (need), sizeof *(array)); \
                (array) = grow_p_; \
                grow_r_; \
        })
