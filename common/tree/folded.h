/* Folded stacks, the format of Brendan Gregg's stackcollapse tools and flame graphs: one stack a
 * line, frames root first separated by ';', then a space and a count. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Frames one line may hold: deeper than any kernel or DWARF unwinder goes, and a bound on the
 * scratch space a caller provides. */
#define FOLDED_MAX_FRAMES 8192
/* Bytes one frame name may hold. */
#define FOLDED_MAX_NAME 4096
/* The largest count a line may give: a store's hits are signed 64-bit. */
#define FOLDED_MAX_COUNT INT64_MAX

struct folded_frame {
        const char *name; /* not NUL-terminated */
        size_t len;
};

/* Parses LINE[0..len) (a trailing "\n" or "\r\n" is allowed). Frame names may contain spaces:
 * the count is what follows the last one. FRAMES must have room for FOLDED_MAX_FRAMES; they
 * point into LINE. Returns 1 and sets *ret_n and *ret_count for a stack; 0 for a blank line or a
 * '#' comment; -EBADMSG for a line that is not "f1;...;fn COUNT" (an empty frame, a missing or
 * non-numeric count, an over-long name); -EILSEQ for a NUL byte; -ERANGE for a count past
 * FOLDED_MAX_COUNT; -E2BIG for more than FOLDED_MAX_FRAMES. */
int folded_parse_line(const char *line, size_t len, struct folded_frame *frames, size_t *ret_n,
                      uint64_t *ret_count);
