/* Separate debug files, found on this machine only (common/symbols/debuginfo-find.c): a stripped
 * workload's .gnu_debuglink beside it and in its .debug/ directory, refused when the build id or,
 * without one, the CRC is not the module's; libc6-dbg's libc by build id. All of it with
 * DEBUGINFOD_URLS naming a server in this process that never answers: no connection reaches it
 * and no socket is opened, whether a module has debug information or not.
 * Usage: test-debuginfo-find LINKED LINKED_NOID, two workloads split by make-debuglink (each
 * with its debug file beside it as NAME.debug), the second built without a build id. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <link.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "module.h"
#include "tap.h"

#define MAX_MODULES 16

static char tmp[] = "/tmp/test-debuginfo-find-XXXXXX";
static struct name_table *names;
static struct module *modules[MAX_MODULES]; /* kept loaded to the end: a client lives as long */
static size_t n_modules;

/* Copies SRC to DST (mode 0755), with one byte more at the end if GROW: the same ELF file with
 * another CRC. */
static int copy_file(const char *src, const char *dst, bool grow) {
        _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        char buf[65536];
        ssize_t n;

        if (in < 0 || out < 0)
                return -errno;
        while ((n = read(in, buf, sizeof buf)) > 0)
                if (write(out, buf, n) != n)
                        return -EIO;
        if (n < 0 || (grow && write(out, "", 1) != 1))
                return -EIO;
        return 0;
}

/* Copies SRC to TMP/DIR/NAME (NAME: SRC's own, if NULL), grown by a byte if GROW, making the
 * directories; its path goes into BUF. Returns BUF, or NULL. */
static const char *place(const char *src, const char *dir, const char *name, bool grow, char *buf,
                         size_t size) {
        char d[1024];

        snprintf(d, sizeof d, "%s/%s", tmp, dir);
        for (char *p = d + strlen(tmp) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                (void) mkdir(d, 0755);
                *p = '/';
        }
        (void) mkdir(d, 0755);
        snprintf(buf, size, "%s/%s", d, name ? name : strrchr(src, '/') ? strrchr(src, '/') + 1 : src);
        return copy_file(src, buf, grow) == 0 ? buf : NULL;
}

/* Loads the module at PATH and keeps it loaded; NULL if it does not load. */
static struct module *load(const char *path) {
        const char *candidates[] = { path, NULL };
        struct module *m;

        if (n_modules == MAX_MODULES || !(m = module_new(MODULE_ELF, path, NULL, 0)))
                return NULL;
        modules[n_modules++] = m;
        return module_load(m, candidates, names) == 0 ? m : NULL;
}

static bool has_symbol(const struct module *m, const char *name) {
        for (size_t i = 0; m && m->symbols && i < m->symbols->n; i++)
                if (strcmp(name_table_get(names, m->symbols->entries[i].name), name) == 0)
                        return true;
        return false;
}

/* Symbolizes addresses of M's code with lines: libdwfl then looks for DWARF too. */
static void symbolize_some(struct module *m) {
        struct module_location locs[MODULE_MAX_INLINE];

        for (size_t i = 0; m && i < m->n_segments; i++)
                if (m->segments[i].exec)
                        for (uint64_t a = 0; a < m->segments[i].filesz; a += 64)
                                (void) module_symbolize(m, m->segments[i].vaddr + a, true, names, locs);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st, (void) flag, (void) ftw;
        return remove(path);
}

static int count_sockets(void) {
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        char target[64];
        int n = 0;

        while (d && (e = readdir(d))) {
                ssize_t len = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);

                if (len > 0 && (target[len] = '\0', strncmp(target, "socket:", 7) == 0))
                        n++;
        }
        if (d)
                closedir(d);
        return n;
}

/* A listening socket on a free loopback port, which never accepts: a connection attempt stays
 * in its queue. Returns it and sets *port, or -1. */
static int listen_loopback(int *port) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof a;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof a) < 0 || listen(fd, 16) < 0 ||
            getsockname(fd, (struct sockaddr *) &a, &len) < 0)
                return safe_close_fd(fd);
        *port = ntohs(a.sin_port);
        return fd;
}

static void test_debuglink(const char *linked, const char *noid) {
        char path[4096], debug[4096], noid_debug[4096];
        const char *link; /* the name LINKED's .gnu_debuglink holds */

        snprintf(debug, sizeof debug, "%s.debug", linked);
        link = strrchr(debug, '/') ? strrchr(debug, '/') + 1 : debug;
        snprintf(noid_debug, sizeof noid_debug, "%s.debug", noid);
        ok(!has_symbol(load(place(linked, "none", NULL, false, path, sizeof path)), "recurse"),
           "a stripped file whose debug file is nowhere: no static function named");
        ok(place(debug, "beside", NULL, false, path, sizeof path) &&
                   has_symbol(load(place(linked, "beside", NULL, false, path, sizeof path)), "recurse"),
           "its .gnu_debuglink names the file beside it: its static functions are named");
        ok(place(debug, "sub/.debug", NULL, false, path, sizeof path) &&
                   has_symbol(load(place(linked, "sub", NULL, false, path, sizeof path)), "recurse"),
           "and in its .debug directory");
        /* Another build's debug file under the linked name: it has no build id, the module has. */
        ok(place(noid_debug, "wrong-id", link, false, path, sizeof path) &&
                   !has_symbol(load(place(linked, "wrong-id", NULL, false, path, sizeof path)), "recurse"),
           "a linked file whose build id is not the module's is refused");
        ok(place(noid_debug, "crc", NULL, false, path, sizeof path) &&
                   has_symbol(load(place(noid, "crc", NULL, false, path, sizeof path)), "recurse"),
           "without a build id, the linked file whose CRC is the link's is taken");
        ok(place(noid_debug, "bad-crc", NULL, true, path, sizeof path) &&
                   !has_symbol(load(place(noid, "bad-crc", NULL, false, path, sizeof path)), "recurse"),
           "and one whose CRC is not is refused");
}

/* libc6-dbg's debug file of the libc this program runs with, found by build id: a static
 * function that only its .symtab has. */
static void test_build_id(void) {
        struct link_map *lm = NULL;
        void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        char debug[128];
        struct module *m;

        if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !(m = load(lm->l_name))) {
                ok(false, "libc loads");
                return;
        }
        snprintf(debug, sizeof debug, "/usr/lib/debug/.build-id/%.2s/%s.debug", m->build_id, m->build_id + 2);
        if (access(debug, F_OK) < 0)
                ok(true, "# SKIP libc's debug file is not installed (apt install libc6-dbg)");
        else
                ok(has_symbol(m, "__libc_start_call_main"),
                   "libc's static functions are named from its debug file, found by build id");
        symbolize_some(m);
        dlclose(h);
}

int main(int argc, char **argv) {
        char env[64], cache[128];
        int port = 0, before, listener;
        struct pollfd p;

        if (argc != 3) {
                fprintf(stderr, "Usage: %s LINKED LINKED_NOID\n", argv[0]);
                return 2;
        }
        if (!mkdtemp(tmp) || !(names = name_table_new()))
                return 1;
        listener = listen_loopback(&port);
        if (!ok(listener >= 0, "a listening socket on the loopback"))
                return tap_done();
        snprintf(env, sizeof env, "http://127.0.0.1:%d", port);
        snprintf(cache, sizeof cache, "%s/cache", tmp);
        setenv("DEBUGINFOD_URLS", env, 1);
        setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
        setenv("DEBUGINFOD_TIMEOUT", "1", 1); /* were a request made, it would give up soon */
        before = count_sockets();

        test_debuglink(argv[1], argv[2]);
        test_build_id();
        for (size_t i = 0; i < n_modules; i++)
                symbolize_some(modules[i]);

        p = (struct pollfd) { .fd = listener, .events = POLLIN };
        ok(poll(&p, 1, 0) == 0, "DEBUGINFOD_URLS names a server: not one connection was made to it");
        is_int(count_sockets() - before, 0, "no socket opened by %zu modules' libdw sessions", n_modules);

        for (size_t i = 0; i < n_modules; i++)
                module_free(modules[i]);
        name_table_free(names);
        close(listener);
        (void) nftw(tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        return tap_done();
}
