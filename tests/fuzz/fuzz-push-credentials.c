/* Fuzz target: the daemon's push credentials file ([fleet] push_credentials). Whatever parses
 * must give headers libcurl can send as they are: a token name, a colon, no line break. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "push-credentials.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct push_credentials c;
        char error[256];
        unsigned line;

        if (push_credentials_parse((const char *) data, size, &c, &line, error, sizeof error) != 0)
                return 0;
        for (int k = 0; k < _PUSH_KIND_MAX; k++) {
                if (c.n_headers[k] > PUSH_CREDENTIALS_MAX_HEADERS)
                        abort();
                for (unsigned i = 0; i < c.n_headers[k]; i++) {
                        const char *h = c.headers[k][i];

                        if (!strchr(h, ':') || strchr(h, ':') == h || strpbrk(h, "\r\n") ||
                            strlen(h) > PUSH_CREDENTIALS_MAX_LINE)
                                abort();
                }
        }
        return 0;
}
