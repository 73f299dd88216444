/* Separate debug files, found on this machine only. A module is loaded on the collector's path
 * (its first sample needs its symbols), so whatever the lookup waits for, samples wait for too.
 *
 * libdwfl's own callbacks go to the network. dwfl_standard_find_debuginfo, when its local search
 * finds nothing, and dwfl_build_id_find_elf, when no file has the build id, ask debuginfod
 * (elfutils 0.188: libdwfl/find-debuginfo.c, dwfl_build_id_find_elf.c) through a client made on
 * first use for each Dwfl (dwfl_get_debuginfod_client, debuginfod-client.c): libdebuginfod is
 * dlopen'ed and makes a libcurl multi handle, which holds a socketpair until dwfl_end(), set
 * DEBUGINFOD_URLS or not; set, every module without local debug information costs a request as
 * long as the server takes. These callbacks replace both, and nothing here asks libdwfl for its
 * client, so none is ever made.
 *
 * What is searched, in order, as gdb and libdwfl search locally:
 *   - ROOT/.build-id/xx/yyyy.debug by the module's build id, through dwfl_build_id_find_debuginfo
 *     (local only), which also finds the dwz file a debug file's .gnu_debugaltlink names, by that
 *     file's build id, as Debian installs them;
 *   - the name in the module's .gnu_debuglink, in the module's directory, its .debug/ directory
 *     and ROOT followed by the module's directory. A candidate is taken when its build id is the
 *     module's; a module without one has only the link's CRC to go by, which costs a read of the
 *     whole candidate, so that is checked only then (libdwfl's rule too).
 * ROOT is each directory of debug_roots: /usr/lib/debug, then those debuginfo_find_add_root()
 * added (cppctl's --debug-dir). MiniDebugInfo (.gnu_debugdata) needs no file: libdwfl
 * reads it from the module when no debug file has a symbol table. */
#include "debuginfo-find.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <gelf.h>
#include <zlib.h>

#include "cleanup.h"

/* The debug roots, ':'-separated absolute directories, as libdwfl's debuginfo_path reads them
 * (dwfl_build_id_find_debuginfo takes its build-id directories from here). */
static char debug_roots_text[] = "/usr/lib/debug";
static char *debug_roots = debug_roots_text;

int debuginfo_find_add_root(const char *dir) {
        _cleanup_free_ char *real = realpath(dir, NULL);
        struct stat st;
        char *roots;

        if (!real)
                return -errno;
        if (stat(real, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (strchr(real, ':'))
                return -EINVAL; /* the list's separator */
        for (const char *root = debug_roots, *end; *root; root = *end ? end + 1 : end) {
                end = root + strcspn(root, ":");
                if ((size_t) (end - root) == strlen(real) && strncmp(root, real, end - root) == 0)
                        return 0; /* there already */
        }
        if (asprintf(&roots, "%s:%s", debug_roots, real) < 0)
                return -ENOMEM;
        if (debug_roots != debug_roots_text)
                free(debug_roots);
        debug_roots = roots;
        return 0;
}

const char *debuginfo_find_roots(void) {
        return debug_roots;
}

/* Whether the ELF file FD has the build id ID (ID_LEN bytes). */
static bool has_build_id(int fd, const uint8_t *id, size_t id_len) {
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        const void *found = NULL;
        ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &found) : -1;
        bool same = n > 0 && (size_t) n == id_len && memcmp(found, id, id_len) == 0;

        elf_end(elf);
        return same;
}

/* Whether the CRC-32 of the whole file FD, as .gnu_debuglink computes it, is CRC. */
static bool has_crc(int fd, GElf_Word crc) {
        uint8_t buf[65536];
        uLong sum = crc32(0, NULL, 0);
        off_t at = 0;
        ssize_t n;

        while ((n = pread(fd, buf, sizeof buf, at)) > 0) {
                sum = crc32(sum, buf, (uInt) n);
                at += n;
        }
        return n == 0 && sum == crc;
}

/* A .gnu_debuglink search: the link, and what a candidate must match. */
struct link_search {
        const char *dir; /* the module's directory, DIR_LEN bytes */
        int dir_len;
        const char *link;
        const struct stat *self; /* the module's own file; NULL if it cannot be looked at */
        const unsigned char *id; /* the module's build id, ID_LEN bytes; 0 if it has none */
        size_t id_len;
        GElf_Word crc;
};

/* Opens PATH as the debug file S's link names: a regular file that is not the module itself,
 * with the module's build id or, if it has none, the link's CRC. Returns the descriptor, or -1.
 * Opened without blocking: a FIFO is refused, not waited on. */
static int open_linked(const struct link_search *s, const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return -1;
        if (s->self && st.st_dev == s->self->st_dev && st.st_ino == s->self->st_ino)
                return -1;
        if (s->id_len > 0 ? !has_build_id(fd, s->id, s->id_len) : !has_crc(fd, s->crc))
                return -1;
        return take_fd(&fd);
}

/* Tries ROOT (ROOT_LEN bytes), the module's directory, SUB and the link, joined. Returns a
 * descriptor and sets *RET to the path (malloc'd), or -1. */
static int try_linked(const struct link_search *s, const char *root, int root_len, const char *sub,
                      char **ret) {
        _cleanup_close_ int fd = -1;
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "%.*s%.*s%s/%s", root_len, root, s->dir_len, s->dir, sub,
                         s->link);

        if (n < 0 || (size_t) n >= sizeof path)
                return -1;
        fd = open_linked(s, path);
        if (fd < 0)
                return -1;
        *ret = strdup(path);
        return *ret ? take_fd(&fd) : -1;
}

/* The .gnu_debuglink search for MOD, whose file is FILE_NAME (absolute): LINK beside it, in its
 * .debug/ directory, then under each root by its directory. Returns a descriptor and sets *RET
 * to the file's name (malloc'd), or -1 with *RET untouched. */
static int find_linked(Dwfl_Module *mod, const char *file_name, const char *link, GElf_Word crc, char **ret) {
        GElf_Addr id_vaddr;
        struct stat self;
        struct link_search s = {
                .dir = file_name,
                .dir_len = (int) (strrchr(file_name, '/') - file_name),
                .link = link,
                .self = stat(file_name, &self) == 0 ? &self : NULL,
                .crc = crc,
        };
        int id_len = dwfl_module_build_id(mod, &s.id, &id_vaddr);
        int fd;

        s.id_len = id_len > 0 ? (size_t) id_len : 0;
        fd = try_linked(&s, "", 0, "", ret);
        if (fd < 0)
                fd = try_linked(&s, "", 0, "/.debug", ret);
        for (const char *root = debug_roots, *end; fd < 0 && *root; root = *end ? end + 1 : end) {
                end = root + strcspn(root, ":");
                fd = try_linked(&s, root, (int) (end - root), "", ret);
        }
        return fd;
}

/* libdwfl's find_debuginfo: called for a module whose file lacks a symbol table or DWARF
 * (FILE_NAME, its .gnu_debuglink LINK and CRC, NULL and 0 if none), and for the dwz file its
 * DWARF refers to (then LINK is that file's name from .gnu_debugaltlink). Returns a descriptor
 * and sets *RET to the file's name, or -1 with errno 0 (nothing found). */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *link, GElf_Word crc, char **ret) {
        int fd;

        /* libdwfl asks again for a module whose last file it refused, without freeing that
         * file's name (elfutils 0.188: find_debuginfo() in dwfl_module_getdwarf.c writes over
         * mod->debug.name): the name is ours, from the last call. */
        free(*ret);
        *ret = NULL;
        fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, link, crc, ret);

        /* A link is a file name: one with a slash is the dwz file's, found by build id only, or
         * hostile ("../../etc/..."). Relative module names (the vdso's "[vdso]") have no directory. */
        if (fd < 0 && link && link[0] && !strchr(link, '/') && file_name && file_name[0] == '/')
                fd = find_linked(mod, file_name, link, crc, ret);
        if (fd < 0)
                errno = 0;
        return fd;
}

/* libdwfl's find_elf, never called: module.c reports every module with the file it opened. It
 * finds nothing rather than let dwfl_build_id_find_elf fetch a file, should libdwfl ever ask. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, char **file_name,
                    Elf **ret) {
        *ret = NULL;
        errno = 0;
        return -1;
}

const Dwfl_Callbacks debuginfo_find_callbacks = {
        .find_elf = find_elf,
        .find_debuginfo = find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = &debug_roots,
};
