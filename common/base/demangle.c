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
 * Hostile names cost libiberty without bound, two ways, both found by the fuzzer (31 s and more
 * on one name). It goes on after its output no longer fits: so the first byte that does not fit
 * ends the walk, append() longjmp()s back out of it. The callback interfaces keep everything on
 * the stack but one buffer, the Rust demangler's for an identifier's punycode, which such an
 * exit leaks: bounded by the name's length, once per name that hostile. And a Rust v0
 * binder, "G" and a base-62 count of lifetimes right after a function type's "F" or a dyn
 * type's "D", is walked lifetime by lifetime even where nothing is printed (the instantiating
 * crate's path): a v0 name with an "FG" or "DG" and three base-62 digits or more before "_"
 * (3,844 lifetimes and up; real binders have a handful) is left as it is. A disambiguator or
 * identifier that happens to read so stays raw too: the cost of the rule, rare.
 *
 * Names are demangled where they are shown (store-read.c labels each stored function once per
 * load), never where they are stored: the store keeps the symbol table's names, lossless and
 * the same as `nm` and perf's raw mode print, so --no-demangle can show them. */
#include "demangle.h"

#include <setjmp.h>
#include <stdbool.h>
#include <string.h>

#include <libiberty/demangle.h>

struct output {
        char *buf;
        size_t size, len;
        jmp_buf full; /* where a name whose demangling does not fit ends */
};

static void append(const char *s, size_t n, void *userdata) {
        struct output *o = userdata;

        if (n == 0)
                return; /* libiberty passes (NULL, 0) for nothing */
        if (n >= o->size - o->len)
                longjmp(o->full, 1);
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        o->buf[o->len] = '\0';
}

/* NAME demangled by RUST (rust_demangle_callback) or C++'s (cplus_demangle_v3_callback) into O:
 * its length, or 0 if it is not such a name or does not fit. */
static size_t run(int (*fn)(const char *, int, demangle_callbackref, void *), const char *name,
                  struct output *o) {
        o->len = 0;
        if (setjmp(o->full))
                return 0;
        if (!fn(name, DMGL_PARAMS | DMGL_ANSI, append, o))
                return 0;
        return o->len;
}

#define BASE62_DIGITS "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

/* Whether v0 Rust name NAME has what reads as a binder of 3,844 lifetimes or more. A binder
 * only ever follows the F of a function type or the D of a dyn type (RFC 2603), which keeps
 * the base-62 disambiguators out ("Csll8UG4dV9RX_", std's crate, holds a G). */
static bool huge_binder(const char *name) {
        for (const char *g = strchr(name, 'G'); g; g = strchr(g + 1, 'G')) {
                size_t digits = strspn(g + 1, BASE62_DIGITS);

                if ((g[-1] == 'F' || g[-1] == 'D') && digits >= 3 && g[1 + digits] == '_')
                        return true;
        }
        return false;
}

/* demangle() of a name without a suffix of ours. */
static size_t demangle_symbol(const char *name, char *buf, size_t size) {
        struct output o = { .buf = buf, .size = size };
        size_t n;

        if (name[1] == 'R' && huge_binder(name))
                return 0;
        n = run(rust_demangle_callback, name, &o);
        if (n == 0)
                n = run(cplus_demangle_v3_callback, name, &o);
        return n;
}

size_t demangle(const char *name, char *buf, size_t size) {
        static const char plt[] = "@plt";
        char base[DEMANGLE_NAME_MAX + 1];
        size_t len, n;

        /* Every C++ and Rust name starts so; the rest (C, most of any profile) cost two compares. */
        if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') || size == 0)
                return 0;
        len = strnlen(name, DEMANGLE_NAME_MAX + 1);
        if (len > DEMANGLE_NAME_MAX)
                return 0;
        /* A PLT stub (plt.c: "_Z...@plt"): its function's name, then the suffix, as perf shows. */
        if (len > sizeof plt - 1 && memcmp(name + len - (sizeof plt - 1), plt, sizeof plt - 1) == 0) {
                memcpy(base, name, len - (sizeof plt - 1));
                base[len - (sizeof plt - 1)] = '\0';
                n = demangle_symbol(base, buf, size);
                if (n == 0 || n + sizeof plt > size)
                        return 0;
                memcpy(buf + n, plt, sizeof plt);
                return n + sizeof plt - 1;
        }
        return demangle_symbol(name, buf, size);
}
