/* The folded-stack line parser. Input comes from files of unknown origin, so every length is
 * checked before use and anything odd is -EBADMSG for the caller to report with a line number. */
#include "folded.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

int folded_parse_line(const char *line, size_t len, struct folded_frame *frames, size_t *ret_n,
                      uint64_t *ret_count) {
        size_t n = 0, space, start;
        uint64_t count = 0;

        if (len > 0 && line[len - 1] == '\n')
                len--;
        if (len > 0 && line[len - 1] == '\r')
                len--;
        if (memchr(line, '\0', len))
                return -EILSEQ;

        start = 0;
        while (start < len && (line[start] == ' ' || line[start] == '\t'))
                start++;
        if (start == len || line[start] == '#')
                return 0;

        /* The count: the digits after the last space. */
        for (space = len; space > start && line[space - 1] != ' '; space--)
                ;
        if (space == start || space == len)
                return -EBADMSG;
        for (size_t i = space; i < len; i++) {
                uint64_t d = (uint64_t) (line[i] - '0');

                if (!isdigit((unsigned char) line[i]))
                        return -EBADMSG;
                if (count > (FOLDED_MAX_COUNT - d) / 10)
                        return -ERANGE;
                count = count * 10 + d;
        }

        /* The frames: [start, end), split at ';', where end drops the spaces before the count. */
        size_t end = space - 1;
        while (end > start && line[end - 1] == ' ')
                end--;
        if (end == start)
                return -EBADMSG;
        for (size_t i = start;;) {
                const char *semi = memchr(line + i, ';', end - i);
                size_t stop = semi ? (size_t) (semi - line) : end;

                if (stop == i || stop - i > FOLDED_MAX_NAME)
                        return -EBADMSG;
                if (n == FOLDED_MAX_FRAMES)
                        return -E2BIG;
                frames[n++] = (struct folded_frame) { .name = line + i, .len = stop - i };
                if (!semi)
                        break;
                i = stop + 1;
        }

        *ret_n = n;
        *ret_count = count;
        return 1;
}
