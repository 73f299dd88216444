/* One character at a time through utf8_decode(): a well-formed one is written as it is, or
 * escaped when JSON requires it; a byte that starts none becomes \ufffd. */
#include "json-string.h"

#include <stdint.h>

#include "utf8.h"

void json_write_string(FILE *f, const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        fputc('"', f);
        while (*p) {
                size_t len = utf8_decode((const char *) p, SIZE_MAX, NULL);

                if (len == 0) {
                        fputs("\\ufffd", f);
                        p++;
                        continue;
                }
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f);
                else if (*p == '\t')
                        fputs("\\t", f);
                else if (*p < 0x20 || *p == 0x7f)
                        fprintf(f, "\\u%04x", *p);
                else
                        fwrite(p, 1, len, f);
                p += len;
        }
        fputc('"', f);
}
