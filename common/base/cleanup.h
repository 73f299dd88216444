/* Scope-based cleanup (gcc and clang): a variable declared with _cleanup_(f) has f(&var) run
 * when it leaves scope, on every path, so early returns never leak. take_ptr() hands ownership
 * on and leaves NULL behind for the cleanup to ignore. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline void closep(int *fd) {
        if (*fd >= 0)
                close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* For x_free() functions that accept NULL and return NULL. */
#define DEFINE_CLEANUP(type, func) \
        static inline void func##p(type *p) { \
                *p = func(*p); \
        }

static inline void *take_ptr(void *pp) {
        void **p = pp;
        void *v = *p;

        *p = NULL;
        return v;
}

/* Closes FD if open; returns -1, for "fd = safe_close_fd(fd);". */
static inline int safe_close_fd(int fd) {
        if (fd >= 0)
                close(fd);
        return -1;
}

static inline int take_fd(int *fd) {
        int v = *fd;

        *fd = -1;
        return v;
}

/* Frees P and returns NULL: p = mfree(p). */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define streq(a, b) (strcmp((a), (b)) == 0)
#define startswith(s, prefix) (strncmp((s), (prefix), strlen(prefix)) == 0)
