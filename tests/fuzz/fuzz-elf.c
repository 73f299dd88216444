/* Fuzz target: ELF files as the symbolizer meets them (common/symbols/module.c, symbolize.c): headers,
 * program headers, build ids, .symtab/.dynsym, DWARF lines and inline scopes (compressed
 * sections included, which libelf inflates), and a separate debug file found through
 * .gnu_debuglink. The input is written as the file "fuzz" in a directory of its own and
 * symbolized at the offsets of its symbols and a few fixed ones. If the input holds a second
 * ELF header (past the first 64 bytes), the bytes from there on are instead the file
 * "fuzz.debug" beside it, which a .gnu_debuglink of that name finds. */
#include <fcntl.h>
#include <unistd.h>

#include "fuzz.h"
#include "symbolize.h"

static char dir[256], main_path[300], debug_path[300];

static void remove_dir(void) {
        unlink(main_path);
        unlink(debug_path);
        rmdir(dir);
}

static void write_file(const char *path, const uint8_t *data, size_t size) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t) size))
                abort(); /* the harness cannot do its job: not a finding */
        close(fd);
}

/* Where a second ELF file starts in the input, or SIZE if there is none. */
static size_t second_elf(const uint8_t *data, size_t size) {
        for (size_t i = 64; i + 4 <= size; i++)
                if (memcmp(data + i, "\177ELF", 4) == 0)
                        return i;
        return size;
}

/* Resolves OFFSET and checks what the symbolizer promises: 1 to MODULE_MAX_INLINE frames, all
 * inside its frame array, all but the first marked inlined. */
static void resolve(struct symbolizer *s, uint32_t index, uint64_t offset) {
        uint32_t first, n;

        if (symbolizer_resolve(s, index, offset, &first, &n) < 0)
                return;
        if (n == 0 || n > MODULE_MAX_INLINE || (uint64_t) first + n > s->n_frames)
                abort();
        for (uint32_t i = 1; i < n; i++)
                if (!s->frames[first + i].inlined)
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const uint64_t fixed[] = { 0, 0x40, 0x1000, 0x1234, 0xffffffffffffffff };
        struct symbolizer *s;
        struct module *m;
        size_t split = second_elf(data, size);
        uint32_t index;

        if (!dir[0]) {
                fuzz_make_dir(dir, sizeof dir, "fuzz-elf");
                snprintf(main_path, sizeof main_path, "%s/fuzz", dir);
                snprintf(debug_path, sizeof debug_path, "%s/fuzz.debug", dir);
                atexit(remove_dir);
        }
        write_file(main_path, data, split);
        if (split < size)
                write_file(debug_path, data + split, size - split);
        else
                unlink(debug_path);

        s = symbolizer_new();
        if (!s || symbolizer_module(s, main_path, NULL, 0, 1, 1, &index) < 0)
                abort();
        m = symbolizer_get_module(s, index);
        if (symbolizer_load(s, index, 0, 0, 0) == 0) {
                /* Every symbol's start and middle (where inlined callees are), as file offsets
                 * in the segment that maps them. */
                for (size_t i = 0; m->symbols && i < m->symbols->n && i < 64; i++) {
                        const struct symtab_entry *e = &m->symbols->entries[i];

                        for (size_t j = 0; j < m->n_segments; j++) {
                                const struct module_segment *seg = &m->segments[j];

                                for (int k = 0; k < 2; k++) {
                                        uint64_t a = e->start + k * (e->size / 2);

                                        if (a >= seg->vaddr && a - seg->vaddr < seg->filesz)
                                                resolve(s, index, a - seg->vaddr + seg->offset);
                                }
                        }
                }
                for (size_t j = 0; j < m->n_segments; j++) {
                        uint64_t bias;

                        (void) module_bias(m, 0x7f0000000000, m->segments[j].offset, &bias);
                        resolve(s, index, m->segments[j].offset + 1);
                }
        }
        for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
                resolve(s, index, fixed[i]);
        symbolizer_free(s);
        return 0;
}
