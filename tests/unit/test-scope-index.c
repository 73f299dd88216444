/* Scope indexes over this very program's DWARF (built at -O2 -g, see meson.build): a chain of
 * functions inlined into one another, found at its instructions; and, for every compilation
 * unit of this program, of cppd and of libc's debug file, the index's answer at addresses in
 * and around every scope checked against a naive walk of the unit's DIEs for each address. */
#include <dlfcn.h>
#include <dwarf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>

#include "scope-index.h"
#include "tap.h"

#define MAX_CHAIN 16

/* The hand-made chain: inner_step() is inlined into middle_step(), which is inlined into
 * outer_loop(), which is not inlined. */
static volatile unsigned sink;

static inline __attribute__((always_inline)) void inner_step(unsigned i) {
        sink = sink * 31 + i;
}

static inline __attribute__((always_inline)) void middle_step(unsigned i) {
        inner_step(i);
        sink ^= i;
}

__attribute__((noinline)) void outer_loop(unsigned n);
__attribute__((noinline)) void outer_loop(unsigned n) {
        for (unsigned i = 0; i < n; i++)
                middle_step(i);
}

static const char *name_of(Dwarf_Die *die) {
        Dwarf_Attribute a;
        const char *s;

        return dwarf_attr_integrate(die, DW_AT_name, &a) && (s = dwarf_formstring(&a)) ? s : "?";
}

/* The naive answer: the deepest chain of subprograms and inlined subroutines under PARENT that
 * hold PC, appended to CHAIN[N..] outermost first; returns the new length. */
static size_t naive(Dwarf_Die *parent, uint64_t pc, Dwarf_Die *chain, size_t n, unsigned imports) {
        Dwarf_Die child, unit;
        Dwarf_Attribute a;

        if (dwarf_child(parent, &child) != 0)
                return n;
        do {
                int tag = dwarf_tag(&child);
                size_t m;

                if (tag == DW_TAG_imported_unit) {
                        if (imports < 8 && dwarf_attr(&child, DW_AT_import, &a) &&
                            dwarf_formref_die(&a, &unit) && (m = naive(&unit, pc, chain, n, imports + 1)) > n)
                                return m;
                } else if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
                        if (dwarf_haspc(&child, pc) > 0 && n < 256) {
                                chain[n] = child;
                                return naive(&child, pc, chain, n + 1, imports);
                        }
                } else if (dwarf_haschildren(&child) > 0 && (m = naive(&child, pc, chain, n, imports)) > n)
                        return m;
        } while (dwarf_siblingof(&child, &child) == 0);
        return n;
}

/* Whether the index's answer at PC is the naive one cut at the innermost subprogram. */
static bool agrees(const struct scope_index *x, Dwarf_Die *cu, uint64_t pc) {
        static Dwarf_Die chain[256];
        Dwarf_Die *got[MAX_CHAIN];
        size_t n = naive(cu, pc, chain, 0, 0), k = scope_index_lookup(x, pc, got, MAX_CHAIN), want = 0;

        for (size_t i = n; i > 0; i--) {
                Dwarf_Die *d = &chain[i - 1];

                if (want == MAX_CHAIN - 1 && dwarf_tag(d) != DW_TAG_subprogram)
                        continue;
                if (want >= k || dwarf_dieoffset(got[want]) != dwarf_dieoffset(d))
                        return false;
                want++;
                if (dwarf_tag(d) == DW_TAG_subprogram)
                        break;
        }
        return want == k;
}

static Dwarf *open_dwarf(const char *path, int *ret_fd) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        Dwarf *dw;

        *ret_fd = fd;
        if (fd < 0)
                return NULL;
        dw = dwarf_begin(fd, DWARF_C_READ);
        if (!dw)
                close(fd);
        return dw;
}

/* libc's separate debug file (libc6-dbg), by the build id of the libc this program runs with:
 * DWARF of another compiler's and dwz's making (partial units, imported units). */
static int libc_debug_path(char *buf, size_t size) {
        struct link_map *lm = NULL;
        const void *id;
        ssize_t n;
        void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        int fd, len;
        Elf *elf;

        if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
                return -1;
        elf_version(EV_CURRENT);
        fd = open(lm->l_name, O_RDONLY | O_CLOEXEC);
        elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
        n = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
        len = snprintf(buf, size, "/usr/lib/debug/.build-id/");
        for (ssize_t i = 0; i < n && len + 4 < (int) size; i++)
                len += snprintf(buf + len, size - len, i == 0 ? "%02x/" : "%02x", ((const uint8_t *) id)[i]);
        snprintf(buf + len, size - len, ".debug");
        elf_end(elf);
        if (fd >= 0)
                close(fd);
        dlclose(h);
        return n > 0 ? 0 : -1;
}

static void test_inline_chain(Dwarf *dw) {
        Dwarf_Off off = 0, next;
        size_t header;
        bool found = false, all_in = true;

        outer_loop(3);
        while (!found && dwarf_nextcu(dw, off, &next, &header, NULL, NULL, NULL) == 0) {
                Dwarf_Die cu, fn, child;
                struct scope_index *x = NULL;
                Dwarf_Addr low, high;

                if (dwarf_offdie(dw, off + header, &cu) && dwarf_child(&cu, &child) == 0)
                        do {
                                if (dwarf_tag(&child) != DW_TAG_subprogram ||
                                    strcmp(name_of(&child), "outer_loop") != 0 ||
                                    dwarf_lowpc(&child, &low) != 0 || dwarf_highpc(&child, &high) != 0)
                                        continue;
                                fn = child;
                                found = true;
                        } while (!found && dwarf_siblingof(&child, &child) == 0);
                if (found && scope_index_build(&cu, &x) == 0) {
                        bool chain = false;

                        for (uint64_t pc = low; pc < high; pc++) {
                                Dwarf_Die *got[MAX_CHAIN];
                                size_t k = scope_index_lookup(x, pc, got, MAX_CHAIN);

                                all_in = all_in && k > 0 &&
                                        dwarf_dieoffset(got[k - 1]) == dwarf_dieoffset(&fn);
                                chain = chain ||
                                        (k == 3 && strcmp(name_of(got[0]), "inner_step") == 0 &&
                                         strcmp(name_of(got[1]), "middle_step") == 0);
                        }
                        ok(chain,
                           "an instruction of outer_loop() is in inner_step() inlined into middle_step() "
                           "inlined into it");
                        ok(all_in, "every address of outer_loop() ends its chain at outer_loop()");
                        {
                                Dwarf_Die *got[MAX_CHAIN];
                                size_t k = scope_index_lookup(x, high, got, MAX_CHAIN);

                                ok(k == 0 || dwarf_dieoffset(got[k - 1]) != dwarf_dieoffset(&fn),
                                   "the address past its end is not in it");
                        }
                }
                scope_index_free(x);
                off = next;
        }
        ok(found, "outer_loop() is in the DWARF");
}

/* Appends to PCS the addresses where the scopes under PARENT begin and end, and those beside
 * them, and one in the middle of each range. */
static void boundaries(Dwarf_Die *parent, uint64_t *pcs, size_t *n, size_t max) {
        Dwarf_Die child;

        if (dwarf_child(parent, &child) != 0)
                return;
        do {
                int tag = dwarf_tag(&child);
                Dwarf_Addr base, low, high;
                ptrdiff_t r = 0;

                if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
                        while ((r = dwarf_ranges(&child, r, &base, &low, &high)) > 0 && *n + 5 <= max) {
                                pcs[(*n)++] = low - 1;
                                pcs[(*n)++] = low;
                                pcs[(*n)++] = low + (high - low) / 2;
                                pcs[(*n)++] = high - 1;
                                pcs[(*n)++] = high;
                        }
                if (dwarf_haschildren(&child) > 0)
                        boundaries(&child, pcs, n, max);
        } while (dwarf_siblingof(&child, &child) == 0);
}

/* Every CU of DW (WHAT): the index against the naive walk at each scope's first and last
 * address, the ones beside them, and its middle. */
static void test_model(Dwarf *dw, const char *what) {
        Dwarf_Off off = 0, next;
        size_t header, n_cus = 0, n_pcs = 0, bad = 0;
        char first_bad[160] = "";

        while (dwarf_nextcu(dw, off, &next, &header, NULL, NULL, NULL) == 0) {
                static uint64_t pcs[20000];
                Dwarf_Die cu, *got[MAX_CHAIN];
                struct scope_index *x = NULL;
                size_t n;

                if (!dwarf_offdie(dw, off + header, &cu) || scope_index_build(&cu, &x) < 0) {
                        off = next;
                        continue;
                }
                n_cus++;
                n = 0;
                boundaries(&cu, pcs, &n, ELEMENTSOF(pcs));
                for (size_t i = 0; i < n; i++) {
                        n_pcs++;
                        if (!agrees(x, &cu, pcs[i]) && bad++ == 0)
                                snprintf(first_bad, sizeof first_bad,
                                         "CU at %#llx, pc %#llx: the index says %zu scopes",
                                         (unsigned long long) off, (unsigned long long) pcs[i],
                                         scope_index_lookup(x, pcs[i], got, MAX_CHAIN));
                }
                scope_index_free(x);
                off = next;
        }
        if (bad)
                diag(first_bad);
        ok(n_cus > 0 && n_pcs > 100, "%s: %zu compilation units, %zu addresses checked", what, n_cus, n_pcs);
        ok(bad == 0, "%s: the index answers as the naive walk everywhere (%zu differ)", what, bad);
}

/* Usage: test-scope-index [ELF...]: this program, then each ELF file given (cppd's meson
 * passes cppd itself), then libc's debug file where it is installed. */
int main(int argc, char **argv) {
        char libc[256];
        int fd;
        Dwarf *dw = open_dwarf("/proc/self/exe", &fd);

        if (!ok(dw != NULL, "this program's DWARF opens"))
                return tap_done();
        test_inline_chain(dw);
        test_model(dw, "this program");
        dwarf_end(dw);
        close(fd);
        for (int i = 1; i < argc; i++) {
                dw = open_dwarf(argv[i], &fd);
                if (ok(dw != NULL, "%s: its DWARF opens", argv[i]))
                        test_model(dw, argv[i]);
                dwarf_end(dw);
                if (fd >= 0)
                        close(fd);
        }
        if (libc_debug_path(libc, sizeof libc) == 0 && (dw = open_dwarf(libc, &fd))) {
                test_model(dw, "libc's debug file");
                dwarf_end(dw);
                close(fd);
        } else
                diag("libc's debug file (libc6-dbg) is not installed: not checked");
        return tap_done();
}
