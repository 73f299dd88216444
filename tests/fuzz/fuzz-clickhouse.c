/* Fuzz target: what the fleet client reads from outside but the server's rows: clickhouse:// URLs
 * (the first line) and TabSeparated fields (each further line), unescaped as ClickHouse's answers
 * are and escaped back, which must give the field again. */
#include <errno.h>

#include "ch-client.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *p = (const char *) data, *end = p + size, *nl = memchr(p, '\n', size);
        char *url = strndup(p, nl ? (size_t) (nl - p) : size);
        struct ch_url u = {};
        const char *why = NULL;

        if (!url)
                abort();
        if (ch_url_parse(url, &u, &why) == 0) {
                if (!u.host || !*u.host || !u.db || !*u.db || u.port == 0)
                        abort(); /* parsed, yet without a part */
                ch_url_done(&u);
        } else if (!why)
                abort(); /* refused without saying why */
        free(url);

        for (p = nl ? nl + 1 : end; p < end;) {
                const char *eol = memchr(p, '\n', end - p) ?: end;
                size_t len = eol - p;
                char *field = malloc(len + 1);
                int n;

                if (!field)
                        abort();
                memcpy(field, p, len);
                n = ch_tsv_unescape(field, len);
                if (n >= 0 && !memchr(field, 0, n)) {
                        struct ch_buf b = {};
                        char *again;

                        /* escaping and unescaping again gives the field back */
                        if (ch_buf_tsv(&b, field) < 0)
                                abort();
                        again = b.data ?: strdup("");
                        if (!again || ch_tsv_unescape(again, b.len) != n || memcmp(again, field, n) != 0)
                                abort();
                        if (again != b.data)
                                free(again);
                        ch_buf_done(&b);
                } else if (n < 0 && n != -EBADMSG)
                        abort();
                free(field);
                p = eol + 1;
        }
        return 0;
}
