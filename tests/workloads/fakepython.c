/* A program that looks like CPython 3.11 to anything that reads its symbols, and is not: it
 * exports _PyRuntime and Py_Version (-rdynamic) and spins in spin() for SECONDS, its thread's
 * "thread state" (the 3.11 layout's fields: cframe, thread_id; doc/design/python-frames.md)
 * pointing at frames made to break a walker. For the hostile-input checks of Python frames
 * (test-python.py): whatever it does, the profile keeps its native stacks, a read never crashes
 * or runs unbounded, and what is not a code object is [python: unreadable], counted.
 *
 * Built three times: fakepython (says 3.11.2), fakepython314 (says 3.14.0: no layout, so not
 * walked, and one warning) and fakepython-named (defines neither symbol, and loads a library named
 * libpython3.11.so, argv[3], that defines nothing: not a Python at all).
 *
 * Usage: fakepython MODE SECONDS [LIB], MODE one of
 *   loop      one frame whose caller is itself
 *   cycle     three frames calling each other in a circle (the walk stops at its bound)
 *   garbage   a chain of four frames whose code objects are random bytes
 *   unmapped  a frame whose caller is an address nothing maps
 *   named     (fakepython-named) load LIB and spin */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

#ifndef FAKE_VERSION
#define FAKE_VERSION 0x030b02f0
#endif

#ifndef FAKE_NAMED
/* What a reader finds by name: the 3.11 runtime's first 0x28b20 bytes (its key at +592) and the
 * version. */
__attribute__((visibility("default"))) unsigned char _PyRuntime[0x28b20];
__attribute__((visibility("default"))) const unsigned long Py_Version = FAKE_VERSION;
#endif

/* 3.11's offsets, as the walker follows them. */
enum {
        TS_CFRAME = 56,
        TS_THREAD_ID = 152,
        CF_CURRENT = 8,
        FR_GLOBALS = 8,
        FR_CODE = 32,
        FR_PREVIOUS = 48,
        FR_INSTR = 56,
        FR_ENTRY = 68,
        FR_OWNER = 69,
        FRAME_SIZE = 128,
};

static uint8_t tstate[512], cframe[32], frames[4][FRAME_SIZE], junk[4][256];

static void put(uint8_t *at, uint64_t v) {
        memcpy(at, &v, 8);
}

static void frame(int i, const void *code, const void *previous) {
        put(frames[i] + FR_CODE, (uintptr_t) code);
        put(frames[i] + FR_GLOBALS, (uintptr_t) junk);
        put(frames[i] + FR_INSTR, (uintptr_t) code + 200);
        put(frames[i] + FR_PREVIOUS, (uintptr_t) previous);
        frames[i][FR_ENTRY] = 0;
        frames[i][FR_OWNER] = 0;
}

static volatile uint64_t sink;

WORKLOAD_FUNCTION static void spin(double seconds) {
        struct timespec t0, t;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
                for (int i = 0; i < 100000; i++)
                        sink += (uint64_t) i * i;
                clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((double) (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv) {
        const char *mode = argc > 1 ? argv[1] : "";
        double seconds = argc > 2 ? atof(argv[2]) : 1.0;
        pthread_key_t key;
        int initialized = 1;

        (void) initialized;

        if (argc < 3) {
                fprintf(stderr, "usage: fakepython loop|cycle|garbage|unmapped|named SECONDS [LIB]\n");
                return 2;
        }
        srand(1);
        for (size_t i = 0; i < sizeof junk; i++)
                ((uint8_t *) junk)[i] = (uint8_t) rand();
        if (strcmp(mode, "loop") == 0)
                frame(0, junk[0], frames[0]);
        else if (strcmp(mode, "cycle") == 0) {
                frame(0, junk[0], frames[1]);
                frame(1, junk[1], frames[2]);
                frame(2, junk[2], frames[0]);
        } else if (strcmp(mode, "garbage") == 0) {
                frame(0, junk[0], frames[1]);
                frame(1, junk[1], frames[2]);
                frame(2, junk[2], frames[3]);
                frame(3, junk[3], NULL);
        } else if (strcmp(mode, "unmapped") == 0)
                frame(0, junk[0], (void *) 0x10);
        else if (strcmp(mode, "named") == 0) {
                if (argc < 4 || !dlopen(argv[3], RTLD_NOW)) {
                        fprintf(stderr, "fakepython: cannot load %s: %s\n", argc < 4 ? "(none)" : argv[3],
                                dlerror());
                        return 1;
                }
        } else {
                fprintf(stderr, "fakepython: unknown mode %s\n", mode);
                return 2;
        }
        /* The runtime's key, and this thread's "thread state" under it. */
        if (pthread_key_create(&key, NULL) != 0)
                return 1;
#ifndef FAKE_NAMED
        memcpy(_PyRuntime + 592, &initialized, 4);
        memcpy(_PyRuntime + 596, &key, 4);
#endif
        put(tstate + TS_CFRAME, (uintptr_t) cframe);
        put(tstate + TS_THREAD_ID, (uintptr_t) pthread_self());
        put(cframe + CF_CURRENT, (uintptr_t) frames[0]);
        pthread_setspecific(key, tstate);
        printf("%d\n", (int) getpid());
        fflush(stdout);
        spin(seconds);
        return 0;
}
