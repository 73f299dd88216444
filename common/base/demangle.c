/* Demangling, through libiberty's demangler: the one binutils, gdb and perf use. Of the two
 * demanglers Debian 12 ships for C, libstdc++'s __cxa_demangle knows only C++, while libiberty
 * (libiberty-dev, a static libiberty.a built position-independent, so the cppd_sql module can
 * link it too) knows C++ and both Rust manglings: the legacy one, "_ZN...17h<hash>E", which is a
 * valid C++ name as well, and v0, "_R...", which C++ has no word for. Its callback interface
 * writes into our buffer and allocates nothing, where cplus_demangle() mallocs each answer.
 *
 * Rust is tried first, as libiberty's own cplus_demangle() does: a legacy Rust name read as C++
 * would keep its hash as a last "h0123456789abcdef" component. Without DMGL_VERBOSE the Rust
 * demangler leaves the hash out, as perf does.
 *
 * Names are demangled where they are shown (store-read.c labels each stored function once per
 * load), never where they are stored: the store keeps the symbol table's names, lossless and
 * the same as `nm` and perf's raw mode print, so --no-demangle can show them. */
#include "demangle.h"

#include <stdbool.h>
#include <string.h>

#include <libiberty/demangle.h>

struct output {
        char *buf;
        size_t size, len;
        bool overflow;
};

static void append(const char *s, size_t n, void *userdata) {
        struct output *o = userdata;

        if (n == 0)
                return; /* libiberty passes (NULL, 0) for nothing */
        if (o->overflow || n >= o->size - o->len) {
                o->overflow = true;
                return;
        }
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        o->buf[o->len] = '\0';
}

size_t demangle(const char *name, char *buf, size_t size) {
        struct output o = { .buf = buf, .size = size };
        int options = DMGL_PARAMS | DMGL_ANSI;

        /* Every C++ and Rust name starts so; the rest (C, most of any profile) cost two compares. */
        if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') || size == 0)
                return 0;
        if (strnlen(name, DEMANGLE_NAME_MAX + 1) > DEMANGLE_NAME_MAX)
                return 0;

        if (rust_demangle_callback(name, options, append, &o) && !o.overflow && o.len > 0)
                return o.len;
        o = (struct output) { .buf = buf, .size = size };
        if (cplus_demangle_v3_callback(name, options, append, &o) && !o.overflow && o.len > 0)
                return o.len;
        return 0;
}
