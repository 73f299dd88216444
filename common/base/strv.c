/* NULL-terminated string arrays: lists of names for messages and options. Small, so every
 * append reallocates. */
#include "strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char **strv_free(char **v) {
        if (!v)
                return NULL;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
        return NULL;
}

size_t strv_length(char *const *v) {
        size_t n = 0;

        while (v && v[n])
                n++;
        return n;
}

bool strv_contains(char *const *v, const char *s) {
        for (size_t i = 0; v && v[i]; i++)
                if (strcmp(v[i], s) == 0)
                        return true;
        return false;
}

int strv_extend(char ***v, const char *s) {
        size_t n = strv_length(*v);
        char *copy = strdup(s);
        char **a;

        if (!copy)
                return -ENOMEM;
        a = realloc(*v, (n + 2) * sizeof *a);
        if (!a) {
                free(copy);
                return -ENOMEM;
        }
        a[n] = copy;
        a[n + 1] = NULL;
        *v = a;
        return 0;
}

char *strv_join(char *const *v, const char *sep) {
        size_t len = 0, seplen = strlen(sep), n = strv_length(v);
        char *s, *p;

        for (size_t i = 0; i < n; i++)
                len += strlen(v[i]) + seplen;
        p = s = malloc(len + 1);
        if (!s)
                return NULL;
        *p = '\0';
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        p = stpcpy(p, sep);
                p = stpcpy(p, v[i]);
        }
        return s;
}
