/* Fuzz target: the folded-stack line parser, line by line, as the importer feeds it. */
#include "folded.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct folded_frame frames[FOLDED_MAX_FRAMES];
        const char *p = (const char *) data, *end = p + size;

        while (p < end) {
                const char *nl = memchr(p, '\n', end - p);
                size_t len = nl ? (size_t) (nl - p + 1) : (size_t) (end - p), n;
                uint64_t count;

                if (folded_parse_line(p, len, frames, &n, &count) > 0)
                        for (size_t i = 0; i < n; i++)
                                if (frames[i].len == 0 || frames[i].name < p ||
                                    frames[i].name + frames[i].len > p + len)
                                        abort(); /* a frame outside its line */
                p += len;
        }
        return 0;
}
