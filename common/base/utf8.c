/* UTF-8 decoding by RFC 3629's table of well-formed sequences, byte by byte: the ranges of the
 * second byte after E0, ED, F0 and F4 are what rule out overlong forms, surrogates and code
 * points past U+10FFFF. Every writer of text for others (JSON, XML, dot, pprof, OTLP, messages)
 * decodes through utf8_decode(), so that they agree on what is UTF-8. */
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t utf8_decode(const char *s, size_t left, uint32_t *ret_cp) {
        const unsigned char *p = (const unsigned char *) s;
        unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
        size_t n;
        uint32_t cp;

        if (left == 0)
                return 0;
        if (p[0] < 0x80) {
                n = 1;
                cp = p[0];
        } else if (p[0] >= 0xc2 && p[0] <= 0xdf) {
                n = 2;
                cp = p[0] & 0x1f;
        } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
                n = 3;
                cp = p[0] & 0x0f;
                lo = p[0] == 0xe0 ? 0xa0 : 0x80; /* E0 80..9F: overlong */
                hi = p[0] == 0xed ? 0x9f : 0xbf; /* ED A0..BF: surrogates */
        } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                n = 4;
                cp = p[0] & 0x07;
                lo = p[0] == 0xf0 ? 0x90 : 0x80; /* F0 80..8F: overlong */
                hi = p[0] == 0xf4 ? 0x8f : 0xbf; /* F4 90..: past U+10FFFF */
        } else
                return 0; /* a continuation byte, C0, C1 (overlong) or F5..FF */
        for (size_t i = 1; i < n; i++) {
                /* Stops at a NUL, or at the end of LEFT, before reading further. */
                if (i >= left || p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xbf))
                        return 0;
                cp = cp << 6 | (p[i] & 0x3f);
        }
        if (ret_cp)
                *ret_cp = cp;
        return n;
}

bool utf8_is_valid(const char *s) {
        for (size_t k; *s; s += k) {
                k = utf8_decode(s, SIZE_MAX, NULL);
                if (k == 0)
                        return false;
        }
        return true;
}

char *utf8_make_valid(const char *s) {
        size_t len = strlen(s), n = 0;
        char *out;

        /* At most three bytes for each one replaced. */
        out = malloc(3 * len + 1);
        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                size_t k = utf8_decode(s + i, len - i, NULL);

                if (k == 0) {
                        memcpy(out + n, UTF8_REPLACEMENT, 3);
                        n += 3;
                        i++;
                        continue;
                }
                memcpy(out + n, s + i, k);
                n += k;
                i += k;
        }
        out[n] = '\0';
        return out;
}

char *utf8_escape(const char *s, size_t len, char *buf, size_t size) {
        size_t n = 0;

        for (size_t i = 0; i < len;) {
                uint32_t cp = 0;
                size_t k = utf8_decode(s + i, len - i, &cp);
                bool control = k == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
                size_t need = control ? 4 * (k ? k : 1) : k;

                if (n + need >= size)
                        break;
                if (control)
                        for (size_t j = 0; j < (k ? k : 1); j++)
                                n += (size_t) snprintf(buf + n, size - n, "\\x%02x",
                                                       (unsigned char) s[i + j]);
                else {
                        memcpy(buf + n, s + i, k);
                        n += k;
                }
                i += k ? k : 1;
        }
        buf[n] = '\0';
        return buf;
}
