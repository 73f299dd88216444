/* RFC 3986's authority is what follows "//" up to the first '/', '?' or '#'; its user information
 * ends at its last '@', and the password is what follows the first ':' in it. */
#include "url-util.h"

#include <stdio.h>
#include <string.h>

char *url_redact(const char *url, char *buf, size_t size) {
        const char *authority = strstr(url, "://"), *end, *at = NULL, *colon;

        if (authority) {
                authority += 3;
                end = authority + strcspn(authority, "/?#");
                for (const char *p = authority; p < end; p++)
                        if (*p == '@')
                                at = p;
        }
        colon = at ? memchr(authority, ':', (size_t) (at - authority)) : NULL;
        if (!colon)
                snprintf(buf, size, "%s", url);
        else
                snprintf(buf, size, "%.*s***%s", (int) (colon + 1 - url), url, at);
        return buf;
}
