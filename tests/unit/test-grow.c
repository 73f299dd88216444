/* The growth helper: appends keep what was there, room doubles, overflow is refused. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"
#include "tap.h"

struct item {
        uint64_t key;
        char tag;
};

int main(void) {
        struct item *items = NULL;
        size_t cap = 0, n = 0, reallocs = 0, wrong = 0;
        uint64_t *big = NULL;
        size_t big_cap = 0;

        for (size_t i = 0; i < 100000; i++) {
                size_t before = cap;

                if (GROW(items, cap, n + 1) < 0)
                        break;
                reallocs += cap != before;
                items[n++] = (struct item) { .key = i * 3, .tag = (char) i };
        }
        is_int(n, 100000, "100,000 appends");
        for (size_t i = 0; i < n; i++)
                wrong += items[i].key != i * 3 || items[i].tag != (char) i;
        is_int(wrong, 0, "every element kept through the moves");
        ok(cap >= n && cap < 2 * n + 16, "room %zu for %zu: doubled, not more", cap, n);
        ok(reallocs <= 14, "%zu reallocations for 100,000 appends", reallocs);
        is_int(GROW(items, cap, 10), 0, "a need below the room changes nothing");

        is_int(GROW(big, big_cap, SIZE_MAX / 4), -ENOMEM, "a size past SIZE_MAX: -ENOMEM");
        ok(big == NULL && big_cap == 0, "and the array and its room as they were");
        is_int(GROW(big, big_cap, 1), 0, "then one element");
        is_int(big_cap, 16, "room starts at 16");
        free(items);
        free(big);
        return tap_done();
}
