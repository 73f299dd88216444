/* The PLT's stubs named as objdump names them: for each binary given (and libc), every stub
 * objdump labels `NAME@plt` in .plt, .plt.sec or .plt.got, cppd names NAME@plt at its first and
 * last byte; the .plt's first entry (the jump to the dynamic linker) stays unnamed. Binaries:
 * argv[1..], e.g. one linked with a lazy .plt and one with IBT's .plt.sec. Skipped without
 * objdump (binutils). */
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "module.h"
#include "name-table.h"
#include "tap.h"

/* NAME@plt or "" for the symbol cppd gives ELF address VADDR of M. */
static const char *name_at(struct module *m, struct name_table *names, uint64_t vaddr) {
        struct module_location loc[MODULE_MAX_INLINE];
        int n = module_symbolize(m, vaddr, false, names, loc);

        return n > 0 ? name_table_get(names, loc[0].function) : "";
}

/* The ELF address of section NAME of PATH, or 0. */
static uint64_t section_addr(const char *path, const char *name) {
        char cmd[4200], line[512];
        uint64_t addr = 0;
        FILE *p;

        snprintf(cmd, sizeof cmd, "objdump -h '%s'", path);
        p = popen(cmd, "r");
        if (!p)
                return 0;
        while (fgets(line, sizeof line, p)) {
                char sec[64];
                uint64_t size, vma;

                if (sscanf(line, " %*d %63s %" SCNx64 " %" SCNx64, sec, &size, &vma) == 3 &&
                    strcmp(sec, name) == 0)
                        addr = vma;
        }
        pclose(p);
        return addr;
}

static void check_binary(const char *path, unsigned want_at_least) {
        _cleanup_(name_table_freep) struct name_table *names = name_table_new();
        _cleanup_(module_freep) struct module *m = module_new(MODULE_ELF, path, NULL, 0);
        const char *candidates[] = { path, NULL };
        char cmd[4200], line[1024];
        unsigned labels = 0, wrong = 0;
        uint64_t plt0;
        FILE *p;

        if (!ok(m && module_load(m, candidates, names) == 0, "%s loads", path))
                return;
        snprintf(cmd, sizeof cmd, "objdump -d -j .plt -j .plt.sec -j .plt.got '%s' 2>/dev/null", path);
        p = popen(cmd, "r");
        if (!ok(p != NULL, "objdump runs"))
                return;
        while (fgets(line, sizeof line, p)) {
                char label[512], want[512];
                const char *got;
                uint64_t addr;
                size_t len;

                if (sscanf(line, "%" SCNx64 " <%511[^>]>:", &addr, label) != 2)
                        continue;
                len = strlen(label);
                if (len < 5 || strcmp(label + len - 4, "@plt") != 0 || strncmp(label, "*ABS*", 5) == 0)
                        continue; /* the section's own label, or an IRELATIVE stub (no symbol) */
                labels++;
                /* objdump keeps symbol versions out of PLT labels; so do we. */
                snprintf(want, sizeof want, "%s", label);
                got = name_at(m, names, addr);
                if (strcmp(got, want) != 0 || strcmp(name_at(m, names, addr + 7), want) != 0) {
                        char msg[1200];

                        snprintf(msg, sizeof msg, "%s: at 0x%" PRIx64 " objdump says %s, cppd %s", path, addr,
                                 want, got);
                        if (wrong++ < 5)
                                diag(msg);
                }
        }
        pclose(p);
        ok(labels >= want_at_least && wrong == 0, "%s: %u stubs named as objdump names them (%u differ)",
           path, labels, wrong);
        plt0 = section_addr(path, ".plt");
        if (plt0)
                ok(strstr(name_at(m, names, plt0), "@plt") == NULL,
                   "%s: the .plt's first entry, the jump to the dynamic linker, is not a stub of a function (%s)",
                   path, name_at(m, names, plt0));
}

static const char *libc_path(void) {
        static char path[4096];
        char line[4200];
        FILE *f = fopen("/proc/self/maps", "re");

        path[0] = '\0';
        while (f && fgets(line, sizeof line, f)) {
                char *s = strchr(line, '/');

                if (s && strstr(s, "/libc.so.6")) {
                        s[strcspn(s, "\n")] = '\0';
                        snprintf(path, sizeof path, "%s", s);
                        break;
                }
        }
        if (f)
                fclose(f);
        return path;
}

int main(int argc, char **argv) {
        if (system("objdump --version > /dev/null 2>&1") != 0) {
                printf("1..0 # SKIP objdump (binutils) is not installed\n");
                return 0;
        }
        for (int i = 1; i < argc; i++)
                check_binary(argv[i], 2);
        if (*libc_path())
                check_binary(libc_path(), 5);
        return tap_done();
}
