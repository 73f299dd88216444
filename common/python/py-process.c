/* Finding a running CPython: its mapped files' dynamic symbols say which file is the interpreter
 * (it defines _PyRuntime and Py_Version: the executable, or libpython for an embedder), the
 * process's memory says which version runs (Py_Version), and its glibc's pthread_getspecific
 * says where a thread's pthread-specific data is, which the kernel's walker reads to find a
 * thread's state (doc/design/python-frames.md, §1.1, §1.2, §3.4). */
#include "py-process.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cleanup.h"
#include "proc-maps.h"
#include "read-line.h"

/* Files looked at per process, at most. */
#define MAX_FILES 64

int py_read_memory(pid_t pid, uint64_t addr, void *buf, size_t n) {
        struct iovec local = { .iov_base = buf, .iov_len = n };
        struct iovec remote = { .iov_base = (void *) (uintptr_t) addr, .iov_len = n };
        ssize_t k = process_vm_readv(pid, &local, 1, &remote, 1, 0);

        if (k == (ssize_t) n)
                return 0;
        if (k < 0 && errno == ESRCH)
                return -ESRCH;
        if (k < 0 && (errno == EPERM || errno == EACCES))
                return -errno;
        return -EFAULT;
}

/* The symbols of a file this reads, by their index in NAMES. */
enum {
        S_RUNTIME,
        S_VERSION,
        S_CODE,
        S_UNICODE,
        S_BYTES,
        S_GETSPECIFIC,
        S_GETSPECIFIC_OLD,
        N_SYMBOLS
};
static const char *const names[N_SYMBOLS] = {
        [S_RUNTIME] = "_PyRuntime",
        [S_VERSION] = "Py_Version",
        [S_CODE] = "PyCode_Type",
        [S_UNICODE] = "PyUnicode_Type",
        [S_BYTES] = "PyBytes_Type",
        [S_GETSPECIFIC] = "pthread_getspecific",
        [S_GETSPECIFIC_OLD] = "__pthread_getspecific",
};

struct elf_file {
        uint64_t value[N_SYMBOLS]; /* ELF addresses; 0: not defined */
        uint64_t bias;             /* run-time address less ELF address, where it is mapped */
        uint8_t code[128];         /* pthread_getspecific's first bytes (a glibc): both branches */
        size_t n_code;             /* how many were read: 0, none */
};

/* The defined symbols of NAMES in E's .dynsym. */
static void read_symbols(Elf *e, struct elf_file *f) {
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr sh;
                Elf_Data *d;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !(d = elf_getdata(scn, NULL)) ||
                    sh.sh_entsize == 0)
                        continue;
                for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
                        GElf_Sym sym;
                        const char *name;

                        if (!gelf_getsym(d, (int) i, &sym) || sym.st_shndx == SHN_UNDEF ||
                            sym.st_value == 0 || !(name = elf_strptr(e, sh.sh_link, sym.st_name)))
                                continue;
                        for (int k = 0; k < N_SYMBOLS; k++)
                                if (f->value[k] == 0 && strcmp(name, names[k]) == 0)
                                        f->value[k] = sym.st_value;
                }
        }
}

/* The PT_LOAD of E that holds file offset PGOFF: the load bias of a mapping of it at START. */
static bool load_bias(Elf *e, uint64_t start, uint64_t pgoff, uint64_t *ret) {
        size_t n;

        if (elf_getphdrnum(e, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(e, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (pgoff + 4096 > ph.p_offset && pgoff < ph.p_offset + ph.p_filesz) {
                        *ret = start - (ph.p_vaddr - ph.p_offset + pgoff);
                        return true;
                }
        }
        return false;
}

/* The first bytes, N at most, of the function at ELF address VALUE, from the file: how many were
 * read (fewer where its segment ends), 0 if none. */
static size_t read_code(int fd, Elf *e, uint64_t value, uint8_t *buf, size_t n) {
        size_t k;

        if (elf_getphdrnum(e, &k) < 0)
                return 0;
        for (size_t i = 0; i < k; i++) {
                GElf_Phdr ph;
                ssize_t got;

                if (!gelf_getphdr(e, (int) i, &ph) || ph.p_type != PT_LOAD || value < ph.p_vaddr ||
                    value >= ph.p_vaddr + ph.p_filesz)
                        continue;
                if (n > ph.p_vaddr + ph.p_filesz - value)
                        n = ph.p_vaddr + ph.p_filesz - value;
                got = pread(fd, buf, n, (off_t) (value - ph.p_vaddr + ph.p_offset));
                return got > 0 ? (size_t) got : 0;
        }
        return 0;
}

/* Reads the file of mapping L of process PID (through map_files, which finds a deleted or
 * replaced file, else through the process's root). */
static int read_elf(pid_t pid, const struct proc_maps_line *l, struct elf_file *ret) {
        char path[PATH_MAX + 64];
        _cleanup_close_ int fd = -1;
        Elf *e;

        snprintf(path, sizeof path, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int) pid, l->start, l->end);
        fd = read_open(AT_FDCWD, path, 0, NULL);
        if (fd < 0) {
                snprintf(path, sizeof path, "/proc/%d/root%s", (int) pid, l->path);
                fd = read_open(AT_FDCWD, path, 0, NULL);
        }
        if (fd < 0)
                return fd;
        elf_version(EV_CURRENT);
        e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e)
                return -EBADMSG;
        *ret = (struct elf_file) {};
        read_symbols(e, ret);
        if (!load_bias(e, l->start, l->pgoff, &ret->bias))
                ret->value[S_RUNTIME] = 0; /* no PT_LOAD at that offset: not usable */
        {
                uint64_t gs = ret->value[S_GETSPECIFIC] ?: ret->value[S_GETSPECIFIC_OLD];

                ret->n_code = gs ? read_code(fd, e, gs, ret->code, sizeof ret->code) : 0;
        }
        elf_end(e);
        return 0;
}

/* glibc x86-64's pthread_getspecific() for a key below 32: the slot is
 *      add $OFF,%rax; shl $4,%rax; add %fs:0x10,%rax; mov 8(%rax),%rdx
 * i.e. struct pthread + (key + OFF) * 16, its data 8 bytes on. Returns the offset of
 * specific_1stblock (OFF * 16: 0x310 in glibc 2.36), or 0 if the code is not of that shape. */
static uint16_t decode_getspecific(const uint8_t *code, size_t n) {
        static const uint8_t shl[] = { 0x48, 0xc1, 0xe0, 0x04 };
        static const uint8_t add_fs[] = { 0x64, 0x48, 0x03, 0x04, 0x25, 0x10, 0x00, 0x00, 0x00 };
        static const uint8_t load[] = { 0x48, 0x8b, 0x50, 0x08 };

        for (size_t i = 0; i + 4 + sizeof shl + sizeof add_fs + sizeof load <= n; i++)
                if (code[i] == 0x48 && code[i + 1] == 0x83 && code[i + 2] == 0xc0 &&
                    memcmp(code + i + 4, shl, sizeof shl) == 0 &&
                    memcmp(code + i + 4 + sizeof shl, add_fs, sizeof add_fs) == 0 &&
                    memcmp(code + i + 4 + sizeof shl + sizeof add_fs, load, sizeof load) == 0)
                        return (uint16_t) (code[i + 3] * 16);
        return 0;
}

/* Its branch for a key of 32 or more: the key's block of 32 entries is
 *      mov %fs:OFF(,%reg,8),%reg
 * i.e. struct pthread's specific[] at OFF (0x510 in glibc 2.36), an array of pointers to blocks.
 * Returns OFF, or 0 if the code is not of that shape. */
static uint16_t decode_getspecific_second(const uint8_t *code, size_t n) {
        for (size_t i = 0; i + 9 <= n; i++) {
                uint32_t off;

                /* fs, REX.W, mov r64 ← r/m64; ModRM: no displacement byte, a SIB; SIB: scale 8,
                 * no base (a 32-bit displacement) */
                if (code[i] != 0x64 || code[i + 1] != 0x48 || code[i + 2] != 0x8b ||
                    (code[i + 3] & 0xc7) != 0x04 || (code[i + 4] & 0xc7) != 0xc5)
                        continue;
                memcpy(&off, code + i + 5, sizeof off);
                if (off > 0 && off < UINT16_MAX)
                        return (uint16_t) off;
        }
        return 0;
}

static bool maybe_interpreter(const char *path) {
        const char *base = strrchr(path, '/');

        return strstr(base ? base + 1 : path, "python") != NULL;
}

static bool is_libc(const char *path) {
        const char *base = strrchr(path, '/');

        base = base ? base + 1 : path;
        return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-2.", 7) == 0;
}

static int say(char **ret_why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(char **ret_why, const char *fmt, ...) {
        va_list ap;

        if (!ret_why)
                return -EOPNOTSUPP;
        va_start(ap, fmt);
        if (vasprintf(ret_why, fmt, ap) < 0)
                *ret_why = NULL;
        va_end(ap);
        return -EOPNOTSUPP;
}

int py_process_inspect(pid_t pid, struct py_process *ret, char **ret_why) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char path[64], seen[MAX_FILES][64];
        struct elf_file python = {}, libc = {};
        char python_path[256] = "", libc_path[256] = "";
        bool have_python = false, have_libc = false;
        size_t cap = 0, n_seen = 0;
        const struct py_layout *l;
        uint64_t version, key;
        uint16_t tsd;
        int r;

        if (ret_why)
                *ret_why = NULL;
        snprintf(path, sizeof path, "/proc/%d/maps", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? -ESRCH : -errno;
        while (getline(&line, &cap, f) > 0) {
                struct proc_maps_line m;
                bool known = false;
                struct elf_file e;

                if (proc_maps_parse_line(line, &m) < 0 || !m.exec || m.path[0] != '/')
                        continue;
                /* Only what can be the interpreter (a file named like one: the name is where to
                 * look, its symbols what is believed) or glibc: PyTorch maps hundreds of others,
                 * some with 100,000 symbols. */
                if (!(is_libc(m.path) ? !have_libc : !have_python && maybe_interpreter(m.path)))
                        continue;
                /* Each file once (by device and inode). */
                snprintf(path, sizeof path, "%u:%u:%" PRIu64, m.dev_major, m.dev_minor, m.ino);
                for (size_t i = 0; i < n_seen && !known; i++)
                        known = strcmp(seen[i], path) == 0;
                if (known)
                        continue;
                if (n_seen < MAX_FILES)
                        memcpy(seen[n_seen++], path, sizeof path);
                if (read_elf(pid, &m, &e) < 0)
                        continue;
                if (!have_python && e.value[S_RUNTIME] && e.value[S_VERSION]) {
                        python = e;
                        have_python = true;
                        snprintf(python_path, sizeof python_path, "%s", m.path);
                }
                if (!have_libc && is_libc(m.path) && e.n_code > 0) {
                        libc = e;
                        have_libc = true;
                        snprintf(libc_path, sizeof libc_path, "%s", m.path);
                }
                if (have_python && have_libc)
                        break; /* the rest of a large program's maps (PyTorch's) are not read */
        }
        if (!have_python)
                return -ENOENT;

        r = py_read_memory(pid, python.value[S_VERSION] + python.bias, &version, sizeof version);
        if (r < 0)
                return r == -EFAULT ? say(ret_why, "%s: Py_Version cannot be read", python_path) : r;
        l = py_layout_find((uint32_t) version);
        if (!l || (version >> 32) != 0)
                return say(ret_why, "python %u.%u.%u (%s): no layout for this version: native frames only",
                           (unsigned) (version >> 24 & 0xff), (unsigned) (version >> 16 & 0xff),
                           (unsigned) (version >> 8 & 0xff), python_path);
        if ((version >> 16 & 0xffff) >= 0x030d) {
                /* 3.13 publishes its own offsets: a cookie, its version, whether free-threaded. */
                struct {
                        char cookie[8];
                        uint64_t version, free_threaded;
                } d;

                r = py_read_memory(pid, python.value[S_RUNTIME] + python.bias, &d, sizeof d);
                if (r < 0 || memcmp(d.cookie, "xdebugpy", 8) != 0 || d.version != version)
                        return say(ret_why, "python %s (%s): its _Py_DebugOffsets do not say it is", l->name,
                                   python_path);
                if (d.free_threaded)
                        return say(ret_why, "python %s (%s): a free-threaded build: native frames only",
                                   l->name, python_path);
        }
        /* The key the walker reads at each sample: {int initialized; unsigned key}, initialized
         * 0 or 1 (not yet before Py_Initialize()), the key one of glibc's 1024 either way (0
         * while unset): what a wrong offset is unlikely to hold. */
        r = py_read_memory(pid, python.value[S_RUNTIME] + python.bias + l->runtime_tss_key, &key, sizeof key);
        if (r < 0 || (uint32_t) key > 1 || (key >> 32) >= 1024)
                return say(ret_why, "python %s (%s): no thread-specific key where its layout says", l->name,
                           python_path);
        if (!have_libc)
                return -EAGAIN; /* not mapped yet (a process just exec'd), or none: musl, static */
        tsd = decode_getspecific(libc.code, libc.n_code);
        if (!tsd)
                return say(ret_why, "python %s (%s): %s's pthread_getspecific() is of no known shape",
                           l->name, python_path, libc_path);
        *ret = (struct py_process) {
                .layout = l,
                .version = (uint32_t) version,
                .runtime = python.value[S_RUNTIME] + python.bias,
                .key_addr = python.value[S_RUNTIME] + python.bias + l->runtime_tss_key,
                .code_type = python.value[S_CODE] ? python.value[S_CODE] + python.bias : 0,
                .unicode_type = python.value[S_UNICODE] ? python.value[S_UNICODE] + python.bias : 0,
                .bytes_type = python.value[S_BYTES] ? python.value[S_BYTES] + python.bias : 0,
                .tsd_first = tsd,
                .tsd_second = decode_getspecific_second(libc.code, libc.n_code),
        };
        snprintf(ret->path, sizeof ret->path, "%s", python_path);
        return 0;
}
