/* Symbolizing and DWARF-unwinding this very program: its address space from /proc/self/maps,
 * its own ELF file and libc through the symbolizer, and a stack captured by hand in a chain of
 * functions built without frame pointers (see meson.build), unwound through glibc's CFI. */
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc-maps.h"
#include "symbolize.h"
#include "tap.h"
#include "unwind.h"

static struct symbolizer *sym;
static struct proc_maps *maps;

static void load_self(void) {
        FILE *f = fopen("/proc/self/maps", "re");
        char line[4096];

        sym = symbolizer_new();
        maps = proc_maps_new();
        while (f && fgets(line, sizeof line, f)) {
                struct proc_maps_line l;
                uint32_t index = SYMBOLIZER_NO_MODULE;

                if (proc_maps_parse_line(line, &l) < 0 || !l.exec)
                        continue;
                if (l.path[0] == '/' || strcmp(l.path, "[vdso]") == 0)
                        symbolizer_module(sym, l.path, NULL, 0, (uint64_t) l.dev_major << 32 | l.dev_minor,
                                          l.ino, &index);
                proc_maps_add(maps, l.start, l.end, l.pgoff, index);
        }
        if (f)
                fclose(f);
}

/* The frames of PC, innermost first (inlined ones marked), as names joined by ';' into BUF. */
static const char *names_at(uint64_t pc, char *buf, size_t size) {
        const struct mapping *m = proc_maps_find(maps, pc);
        uint32_t first, n;

        buf[0] = '\0';
        if (!m || m->module == SYMBOLIZER_NO_MODULE)
                return strcpy(buf, "(no module)");
        symbolizer_load(sym, m->module, getpid(), m->start, m->end);
        if (symbolizer_resolve(sym, m->module, pc - m->start + m->pgoff, &first, &n) < 0)
                return strcpy(buf, "(error)");
        for (uint32_t i = n; i > 0; i--) {
                const struct frame *f = &sym->frames[first + i - 1];

                if (buf[0])
                        strncat(buf, ";", size - strlen(buf) - 1);
                strncat(buf, name_table_get(sym->names, f->function), size - strlen(buf) - 1);
                if (f->inlined)
                        strncat(buf, "(inlined)", size - strlen(buf) - 1);
        }
        return buf;
}

#if defined(__x86_64__)
static inline __attribute__((always_inline)) uint64_t inner_address(void) {
        uint64_t p;

        /* The address of this lea itself (7 bytes long), which lies in the inlined code; the
         * next instruction's may not. */
        __asm__ volatile("lea -7(%%rip), %0" : "=r"(p));
        return p;
}

__attribute__((noinline)) uint64_t outer_function(void);
__attribute__((noinline)) uint64_t outer_function(void) {
        return inner_address() + 0 * (uint64_t) getpid();
}

/* The sample a profiler would take in chain_c: registers in perf's order for
 * UNWIND_REGS_MASK (ax bx cx dx si di bp sp ip r8-r15) and a copy of the stack. */
static uint64_t regs[UNWIND_N_REGS];
static uint8_t stack_copy[16384];
static size_t stack_len;

__attribute__((noinline)) void chain_c(void);
__attribute__((noinline)) void chain_c(void) {
        uint64_t *r = regs;
        uint64_t sp;

        __asm__ volatile("mov %%rax, 0(%0)\n\t"
                         "mov %%rbx, 8(%0)\n\t"
                         "mov %%rcx, 16(%0)\n\t"
                         "mov %%rdx, 24(%0)\n\t"
                         "mov %%rsi, 32(%0)\n\t"
                         "mov %%rdi, 40(%0)\n\t"
                         "mov %%rbp, 48(%0)\n\t"
                         "mov %%rsp, 56(%0)\n\t"
                         "lea (%%rip), %%rax\n\t"
                         "mov %%rax, 64(%0)\n\t"
                         "mov %%r8, 72(%0)\n\t"
                         "mov %%r9, 80(%0)\n\t"
                         "mov %%r10, 88(%0)\n\t"
                         "mov %%r11, 96(%0)\n\t"
                         "mov %%r12, 104(%0)\n\t"
                         "mov %%r13, 112(%0)\n\t"
                         "mov %%r14, 120(%0)\n\t"
                         "mov %%r15, 128(%0)\n\t"
                         :
                         : "r"(r)
                         : "rax", "memory");
        sp = regs[UNWIND_REG_SP];
        /* The stack from sp up, as the kernel would copy it; never past the stack's top. */
        {
                FILE *f = fopen("/proc/self/maps", "re");
                char line[512];
                uint64_t top = sp + sizeof stack_copy;

                while (f && fgets(line, sizeof line, f)) {
                        unsigned long long s, e;

                        if (sscanf(line, "%llx-%llx", &s, &e) == 2 && sp >= s && sp < e && e < top)
                                top = e;
                }
                if (f)
                        fclose(f);
                stack_len = top - sp;
                memcpy(stack_copy, (const void *) sp, stack_len);
        }
}

__attribute__((noinline)) void chain_b(void);
__attribute__((noinline)) void chain_b(void) {
        chain_c();
        __asm__ volatile("" ::: "memory"); /* no tail call */
}

__attribute__((noinline)) void chain_a(void);
__attribute__((noinline)) void chain_a(void) {
        chain_b();
        __asm__ volatile("" ::: "memory");
}

static int cmp(const void *a, const void *b) {
        chain_a();
        return (*(const int *) a > *(const int *) b) - (*(const int *) a < *(const int *) b);
}

static int find_module(void *userdata, uint64_t pc, struct unwind_module *ret) {
        const struct mapping *m = proc_maps_find(maps, pc);
        struct module *mod;
        uint64_t bias;

        if (!m || m->module == SYMBOLIZER_NO_MODULE)
                return -ENOENT;
        mod = symbolizer_get_module(sym, m->module);
        if (symbolizer_load(sym, m->module, getpid(), m->start, m->end) < 0 ||
            module_bias(mod, m->start, m->pgoff, &bias) < 0)
                return -ENOENT;
        *ret = (struct unwind_module) { .key = m->module, .cfi = module_cfi(mod), .bias = bias };
        return 0;
}

static void test_unwind(void) {
        _cleanup_(unwinder_freep) struct unwinder *u = unwinder_new();
        struct unwind_stats stats;
        uint64_t pcs[64], again[64], top, top_again;
        char buf[512], all[4096] = "";
        int v[2] = { 2, 1 };
        size_t n;

        /* Through qsort, so the chain crosses glibc, which has no frame pointers. */
        qsort(v, 2, sizeof *v, cmp);
        n = unwinder_unwind(u, find_module, NULL, 0, regs, stack_copy, stack_len, pcs, 64, &top);
        for (size_t i = 0; i < n; i++) {
                strncat(all, names_at(pcs[i], buf, sizeof buf), sizeof all - strlen(all) - 2);
                strcat(all, " ");
        }
        printf("# unwound: %s\n", all);
        ok(n >= 6, "the copied stack unwinds %zu frames deep", n);
        ok(strstr(all, "chain_c chain_b chain_a cmp ") == all,
           "chain_c, chain_b, chain_a, cmp: innermost first");
        ok(strstr(all, "qsort_r") != NULL, "through glibc's qsort_r, which has no frame pointers");
        ok(strstr(all, "test_unwind") != NULL && strstr(all, " main ") != NULL,
           "and on to the caller of qsort, and main");
        ok(top > regs[UNWIND_REG_SP] && top <= regs[UNWIND_REG_SP] + stack_len,
           "it reached the outermost frame, whose needs end %llu bytes above the stack pointer, within the %zu copied",
           (unsigned long long) (top - regs[UNWIND_REG_SP]), stack_len);

        /* A second time every row is known: the same frames, and nothing more learnt. */
        unwinder_stats(u, &stats);
        {
                uint64_t rows = stats.rows;
                size_t m = unwinder_unwind(u, find_module, NULL, 0, regs, stack_copy, stack_len, again, 64,
                                           &top_again);

                unwinder_stats(u, &stats);
                ok(m == n && memcmp(again, pcs, n * sizeof *pcs) == 0 && stats.rows == rows &&
                           stats.cached == 0,
                   "unwound again from the rows learnt: the same %zu frames, %llu rows, no cache without a space",
                   m, (unsigned long long) rows);
        }
        /* Naming the address space: the first walk fills the PC cache, the second is answered from
         * it, with the same frames; forgotten, it is filled again. */
        for (int round = 0; round < 3; round++) {
                uint64_t cached;
                size_t m;

                unwinder_stats(u, &stats);
                cached = stats.cached;
                m = unwinder_unwind(u, find_module, NULL, maps->generation, regs, stack_copy, stack_len,
                                    again, 64, &top_again);
                unwinder_stats(u, &stats);
                if (round == 0)
                        ok(m == n && memcmp(again, pcs, n * sizeof *pcs) == 0 && stats.cached == cached,
                           "with a space: the same frames, the cache filled and not yet asked");
                else if (round == 1)
                        ok(m == n && memcmp(again, pcs, n * sizeof *pcs) == 0 &&
                                   stats.cached >= cached + n - 1,
                           "again: the same frames, %llu of them from the cache",
                           (unsigned long long) (stats.cached - cached));
                else
                        ok(m == n && memcmp(again, pcs, n * sizeof *pcs) == 0 && stats.cached == cached,
                           "after unwinder_forget_modules(): the same frames, none from the cache");
                if (round == 1)
                        unwinder_forget_modules(u);
        }
        /* The stack copied up to that top is enough for every frame; a stack cut short ends the
         * chain early, without a top; a stack of nothing leaves the IP. */
        ok(unwinder_unwind(u, find_module, NULL, 0, regs, stack_copy, top - regs[UNWIND_REG_SP], again, 64,
                           &top_again) == n &&
                   memcmp(again, pcs, n * sizeof *pcs) == 0 && top_again == top,
           "copied only up to that top: the same %zu frames, the same top", n);
        ok(unwinder_unwind(u, find_module, NULL, 0, regs, stack_copy, top - regs[UNWIND_REG_SP] - 8, again,
                           64, &top_again) < n &&
                   top_again == UNWIND_SHORT,
           "8 bytes short of it: fewer frames, and it says the copy fell short");
        ok(unwinder_unwind(u, find_module, NULL, 0, regs, stack_copy, 64, again, 64, &top_again) < n &&
                   top_again == UNWIND_SHORT,
           "64 bytes of stack: fewer frames, short");
        ok(unwinder_unwind(u, find_module, NULL, 0, regs, NULL, 0, again, 64, &top_again) >= 1 &&
                   again[0] == regs[UNWIND_REG_IP] && top_again == UNWIND_SHORT,
           "no stack: the IP alone, or what the registers reach; short");
}

static void test_symbolize(void) {
        char buf[512];

        ok(strcmp(names_at((uint64_t) (uintptr_t) chain_b + 1, buf, sizeof buf), "chain_b") == 0,
           "a function of this program: %s", buf);
        ok(strcmp(names_at(outer_function(), buf, sizeof buf), "inner_address(inlined);outer_function") == 0,
           "an address inside an inlined function: %s", buf);
        ok(strcmp(names_at((uint64_t) (uintptr_t) qsort, buf, sizeof buf), "qsort") == 0,
           "a libc function: %s", buf);
        {
                /* The vdso has no file: the symbolizer loads its own copy of the image. */
                void *vdso = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
                void *fn = vdso ? dlsym(vdso, "__vdso_clock_gettime") : NULL;

                if (fn)
                        ok(strstr(names_at((uint64_t) (uintptr_t) fn + 1, buf, sizeof buf),
                                  "clock_gettime") != NULL,
                           "a function of the vdso: %s", buf);
                else
                        ok(true, "# SKIP no vdso symbol to look up");
        }
}
#endif

#if defined(__x86_64__)
/* The rule the CFI gives at ELF address VADDR, asked of libdw directly: CFA = rsp + *ret_cfa,
 * the return address saved at CFA + *ret_ra. False where the rule is of another shape. */
static bool cfi_rule(Dwarf_CFI *cfi, uint64_t vaddr, int64_t *ret_cfa, int64_t *ret_ra) {
        Dwarf_Frame *frame = NULL;
        Dwarf_Op mem[3], *ops;
        size_t n;
        bool simple;

        if (dwarf_cfi_addrframe(cfi, vaddr, &frame) != 0)
                return false;
        simple = dwarf_frame_cfa(frame, &ops, &n) == 0 && n == 1 && ops[0].atom == DW_OP_bregx &&
                ops[0].number == 7;
        if (simple)
                *ret_cfa = (int64_t) ops[0].number2;
        simple = simple && dwarf_frame_register(frame, 16, mem, &ops, &n) == 0 && n == 2 &&
                ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst;
        if (simple)
                *ret_ra = (int64_t) ops[1].number; /* negative offsets come wrapped */
        free(frame);
        return simple;
}

/* The rows the unwinder learns hold for the addresses they were learnt for, whatever the order
 * they are met in: every address of a stretch of libc (code without frame pointers, rows
 * changing at each push, pop and ret), unwound from a synthetic stack whose words name their
 * offsets, first from the stretch's end down, then up, must take its return address from where
 * libdw says, asked directly. (libdw 0.188 reports for a row the start of the row before it;
 * rows ranged from there carried a `ret` the CFA of the body above it.) */
static void test_rows_in_any_order(void) {
        _cleanup_(unwinder_freep) struct unwinder *u = unwinder_new();
        /* libc's own qsort: AddressSanitizer puts one of its own in front of it. */
        void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        uint64_t code = libc && dlsym(libc, "qsort") ? (uint64_t) (uintptr_t) dlsym(libc, "qsort") : 0;
        const struct mapping *m = proc_maps_find(maps, code);
        struct module *mod;
        uint64_t words[64], pcs[4], top, bias, r[UNWIND_N_REGS] = {}, base;
        unsigned checked = 0, wrong = 0;

        if (!m || m->module == SYMBOLIZER_NO_MODULE ||
            symbolizer_load(sym, m->module, getpid(), m->start, m->end) < 0 ||
            module_bias(mod = symbolizer_get_module(sym, m->module), m->start, m->pgoff, &bias) < 0 ||
            !module_cfi(mod)) {
                ok(false, "libc's CFI is loaded");
                if (libc)
                        dlclose(libc);
                return;
        }
        for (size_t i = 0; i < 64; i++)
                words[i] = 0x100000 + 0x100 * i; /* no module's address: the unwind stops there */
        base = 0x7f0000000000;
        for (int pass = 0; pass < 2; pass++)
                for (uint64_t k = 0; k < 0x800; k++) {
                        uint64_t pc = code + (pass == 0 ? 0x7ff - k : k);
                        int64_t cfa, ra;
                        size_t n;

                        if (!cfi_rule(module_cfi(mod), pc - bias, &cfa, &ra) || cfa + ra < 0 ||
                            cfa + ra >= 64 * 8 || (cfa + ra) % 8)
                                continue;
                        r[UNWIND_REG_IP] = pc;
                        r[UNWIND_REG_SP] = base;
                        n = unwinder_unwind(u, find_module, NULL, 0, r, (const uint8_t *) words, sizeof words,
                                            pcs, 2, &top);
                        checked++;
                        if (n != 2 || pcs[1] != words[(cfa + ra) / 8] - 1)
                                wrong++;
                }
        dlclose(libc);
        ok(checked > 500 && wrong == 0,
           "rows learnt in any order hold where they were learnt: %u of %u addresses of libc took a wrong return address",
           wrong, checked);
}
#endif

static void test_modules(void) {
        _cleanup_(name_table_freep) struct name_table *names = name_table_new();
        const uint8_t bogus[20] = { 1, 2, 3 };
        char self[4096], text[] = "/tmp/test-symbolize-XXXXXX";
        const char *candidates[2] = { self, NULL };
        struct module *m;
        ssize_t n;
        int fd;

        n = readlink("/proc/self/exe", self, sizeof self - 1);
        self[n > 0 ? n : 0] = '\0';
        m = module_new(MODULE_ELF, self, bogus, sizeof bogus);
        ok(module_load(m, candidates, names) == -ESTALE,
           "a file with another build id: -ESTALE (a replaced binary)");
        module_free(m);

        candidates[0] = "/nonexistent/lib.so";
        m = module_new(MODULE_ELF, candidates[0], NULL, 0);
        ok(module_load(m, candidates, names) == -ENOENT, "a missing file: -ENOENT");
        module_free(m);

        fd = mkstemp(text);
        (void) !write(fd, "hello\n", 6);
        close(fd);
        candidates[0] = text;
        m = module_new(MODULE_ELF, text, NULL, 0);
        ok(module_load(m, candidates, names) == -EBADMSG, "a text file: -EBADMSG");
        module_free(m);
        unlink(text);

        {
                uint32_t index, first, count;

                ok(symbolizer_module(sym, "/nonexistent/libgone.so.1", NULL, 0, 1, 2, &index) == 0 &&
                           symbolizer_load(sym, index, 0, 0, 0) == -ENOENT,
                   "a module whose file is gone");
                ok(symbolizer_resolve(sym, index, 0x1234, &first, &count) == 0 && count == 1 &&
                           sym->frames[first].unknown &&
                           strcmp(name_table_get(sym->names, sym->frames[first].function),
                                  "libgone.so.1+0x1234") == 0,
                   "its addresses are kept as module+offset, marked unknown");
        }
}

/* Hex digits of a build id into bytes; returns how many. */
static size_t unhex(const char *h, uint8_t *ret, size_t max) {
        size_t n = 0;

        for (; n < max && h[2 * n] && h[2 * n + 1]; n++) {
                unsigned v;

                sscanf(h + 2 * n, "%2x", &v);
                ret[n] = v;
        }
        return n;
}

/* One file named by its path (a process found in /proc) and by its build id (an MMAP2 record)
 * is one module, loaded once, whichever came first. */
static void test_one_module_two_keys(void) {
        _cleanup_(symbolizer_freep) struct symbolizer *s = symbolizer_new();
        char self[4096];
        uint8_t id[20];
        uint32_t by_path, by_id, again, first_a, first_b, n_a, n_b;
        struct stat st;
        size_t len;
        ssize_t n;

        n = readlink("/proc/self/exe", self, sizeof self - 1);
        self[n > 0 ? n : 0] = '\0';
        ok(stat(self, &st) == 0 && symbolizer_module(s, self, NULL, 0, st.st_dev, st.st_ino, &by_path) == 0 &&
                   symbolizer_load(s, by_path, 0, 0, 0) == 0,
           "this program, by its path, loaded");
        len = unhex(symbolizer_get_module(s, by_path)->build_id, id, sizeof id);
        ok(len > 0 && symbolizer_module(s, self, id, len, 0, 0, &by_id) == 0 && by_id == by_path,
           "by its build id after: the same module");
        ok(symbolizer_resolve(s, by_path, 0x1000, &first_a, &n_a) == 0 &&
                   symbolizer_resolve(s, by_id, 0x1000, &first_b, &n_b) == 0 && first_a == first_b,
           "and the same frames");

        /* The other way round, in a new symbolizer: by build id first, loaded; then by path. */
        s = symbolizer_free(s);
        s = symbolizer_new();
        ok(symbolizer_module(s, self, id, len, 0, 0, &by_id) == 0 && symbolizer_load(s, by_id, 0, 0, 0) == 0,
           "by its build id first, loaded");
        ok(symbolizer_module(s, self, NULL, 0, st.st_dev, st.st_ino, &by_path) == 0 && by_path != by_id &&
                   symbolizer_load(s, by_path, 0, 0, 0) == 0,
           "then by its path: another index, loaded");
        ok(symbolizer_canonical(s, by_path) == by_id &&
                   symbolizer_get_module(s, by_path) == symbolizer_get_module(s, by_id) &&
                   !s->modules[by_path]->loaded,
           "which stands for the first, its own copy let go");
        ok(symbolizer_resolve(s, by_path, 0x1000, &first_a, &n_a) == 0 &&
                   symbolizer_resolve(s, by_id, 0x1000, &first_b, &n_b) == 0 && first_a == first_b &&
                   s->frames[first_a].module == by_id,
           "its addresses resolve through the first");
        ok(symbolizer_module(s, self, NULL, 0, st.st_dev, st.st_ino, &again) == 0 && again == by_path,
           "and its path still finds it");
}

int main(void) {
        load_self();
        test_one_module_two_keys();
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
        test_symbolize();
        test_unwind();
#else
        /* AddressSanitizer replaces qsort (the stack to unwind no longer crosses glibc) and
         * poisons the stack this test copies by hand. */
        ok(true, "# SKIP the unwinding and libc symbol tests: x86_64 without AddressSanitizer only");
        (void) test_symbolize;
        (void) test_unwind;
#endif
#if defined(__x86_64__)
        test_rows_in_any_order();
#endif
        test_modules();
        proc_maps_free(maps);
        symbolizer_free(sym);
        return tap_done();
}
