/* Uprobes on glibc's allocation entry points (alloc-probe.h).
 *
 * For each process: its executable mappings (/proc/PID/maps) name the glibc it runs (libc.so.6,
 * or libc-2.NN.so of old ones); the entry points are found in that file's .dynsym (no stripping
 * removes it), each address once (memalign and aligned_alloc are one function before 2.38), as
 * file offsets; one BPF_LINK_CREATE of kind uprobe_multi puts them all on the file, for that
 * process only (the link's pid: a thread group; the kernel installs the breakpoints in its
 * address space, and again as it maps the file after an exec). Closing the link removes them.
 *
 * Not probed, and said so: a process without a shared glibc (a static executable, musl), and
 * one where another object defines malloc (an allocator of its own: glibc's entry points would
 * see only what it leaves them); libc's own forwarders and cppd's, heaptrack's and glibc's
 * debugging preloads are not allocators of their own.
 *
 * Each link on a file is a consumer the kernel walks at every hit in every probed process
 * (+26 ns a call per other process measured), so the daemon caps the processes per libc. */
#include "alloc-probe.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <systemd/sd-login.h>
#include <time.h>
#include <unistd.h>

#include "grow.h"
#include "sampling-bpf.h"
#include "strv.h"

#define N_ENTRIES 8

/* The entry points, by name, and the kind each is counted as. */
static const struct entry {
        const char *name;
        enum sampling_bpf_alloc_kind kind;
} entries[] = {
        { "malloc", SAMPLING_BPF_ALLOC_MALLOC },
        { "calloc", SAMPLING_BPF_ALLOC_CALLOC },
        { "realloc", SAMPLING_BPF_ALLOC_REALLOC },
        { "memalign", SAMPLING_BPF_ALLOC_MEMALIGN },
        { "aligned_alloc", SAMPLING_BPF_ALLOC_ALIGNED_ALLOC }, /* memalign's address before 2.38 */
        { "posix_memalign", SAMPLING_BPF_ALLOC_POSIX_MEMALIGN },
        { "valloc", SAMPLING_BPF_ALLOC_VALLOC },
        { "pvalloc", SAMPLING_BPF_ALLOC_PVALLOC },
};

/* Objects that define malloc only to pass calls on to glibc's: not allocators of their own. */
static const char *const forwarders[] = {
        "libcppd-alloc.so", "libc_malloc_debug.so.0", "libheaptrack_preload.so", "libmemusage.so", NULL,
};

/* A mapped object's file, once read: for a glibc its entry points, for any other whether it
 * defines malloc. */
struct object {
        dev_t dev;
        ino_t ino;
        bool libc;
        bool defines_malloc;
        unsigned n; /* libc: the entry points' file offsets and kinds */
        uint64_t offsets[N_ENTRIES], cookies[N_ENTRIES];
        char version[16]; /* libc: "2.36", or "" */
        unsigned probed;  /* processes probed on it now */
};

struct link {
        pid_t pid;
        dev_t dev;
        ino_t ino;
        int fd;
};

enum op {
        OP_ADD,
        OP_EXITED,
        OP_SETTLE,
};

struct request {
        enum op op;
        pid_t pid;
        uint64_t start_ns;
};

struct alloc_probe {
        struct alloc_probe_config config;
        char **units;
        int prog_fd;
        pthread_t thread;
        bool started;
        pthread_mutex_t lock; /* the queue, the stats, the objects and links */
        pthread_cond_t wake, settled;
        struct request *queue;
        size_t n_queue, cap_queue;
        uint64_t asked, done; /* requests queued and handled, for settling */
        bool stop;
        struct object *objects;
        size_t n_objects, cap_objects;
        struct link *links;
        size_t n_links, cap_links;
        pid_t *refused; /* processes not measured, counted once each */
        size_t n_refused, cap_refused;
        struct alloc_probe_stats stats;
};

static uint64_t monotonic_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

uint64_t alloc_probe_max_size(void) {
        uint64_t max = 1ULL << 47, mem = 0, swap = 0, limit = 0, v;
        char line[256];
        int overcommit = 0;
        FILE *f;

        f = fopen("/proc/sys/vm/overcommit_memory", "re");
        if (f) {
                if (fscanf(f, "%d", &overcommit) != 1)
                        overcommit = 0;
                fclose(f);
        }
        f = fopen("/proc/meminfo", "re");
        if (!f)
                return max;
        while (fgets(line, sizeof line, f)) {
                if (sscanf(line, "MemTotal: %" SCNu64, &v) == 1)
                        mem = v * 1024;
                else if (sscanf(line, "SwapTotal: %" SCNu64, &v) == 1)
                        swap = v * 1024;
                else if (sscanf(line, "CommitLimit: %" SCNu64, &v) == 1)
                        limit = v * 1024;
        }
        fclose(f);
        /* overcommit 0 refuses a single mapping past RAM + swap (__vm_enough_memory()), 2 past
         * the commit limit, 1 nothing. */
        if (overcommit == 0 && mem)
                max = MIN(max, mem + swap);
        else if (overcommit == 2 && limit)
                max = MIN(max, limit);
        return max;
}

/* The file offset of address VALUE of ELF E: in the PT_LOAD that holds it. */
static bool file_offset(Elf *e, uint64_t value, uint64_t *ret) {
        size_t n;

        if (elf_getphdrnum(e, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                GElf_Phdr ph;

                if (!gelf_getphdr(e, (int) i, &ph) || ph.p_type != PT_LOAD)
                        continue;
                if (value >= ph.p_vaddr && value < ph.p_vaddr + ph.p_filesz) {
                        *ret = value - ph.p_vaddr + ph.p_offset;
                        return true;
                }
        }
        return false;
}

/* glibc's version from its banner in .rodata ("... release version 2.36."), into O. */
static void read_version(Elf *e, struct object *o) {
        static const char mark[] = "release version ";
        size_t shstrndx;
        Elf_Scn *scn = NULL;

        if (elf_getshdrstrndx(e, &shstrndx) < 0)
                return;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr sh;
                Elf_Data *d;
                const char *name, *at;

                if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
                    strcmp(name, ".rodata") != 0 || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
                        continue;
                at = memmem(d->d_buf, d->d_size, mark, sizeof mark - 1);
                if (at) {
                        size_t i = 0,
                               left = d->d_size - (size_t) (at - (const char *) d->d_buf) - (sizeof mark - 1);

                        at += sizeof mark - 1;
                        while (i < left && i + 1 < sizeof o->version &&
                               (at[i] == '.' || (at[i] >= '0' && at[i] <= '9')))
                                i++;
                        if (i > 0 && at[i - 1] == '.')
                                i--;
                        memcpy(o->version, at, i);
                        o->version[i] = '\0';
                }
                return;
        }
}

/* Reads the defined functions of FD's .dynsym that O needs: for a glibc (LIBC) the entry points,
 * for another object whether it defines malloc. Returns 0 or a negative errno. */
static int read_object(int fd, bool libc, struct object *o) {
        Elf *e;
        Elf_Scn *scn = NULL;
        uint64_t values[ELEMENTSOF(entries)] = {};
        bool found[ELEMENTSOF(entries)] = {};
        int r = -ENOEXEC;

        elf_version(EV_CURRENT);
        e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!e)
                return -ENOEXEC;
        while ((scn = elf_nextscn(e, scn))) {
                GElf_Shdr sh;
                Elf_Data *d;

                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !(d = elf_getdata(scn, NULL)))
                        continue;
                r = 0;
                for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
                        GElf_Sym sym;
                        const char *name;

                        if (!gelf_getsym(d, (int) i, &sym) || sym.st_shndx == SHN_UNDEF ||
                            GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
                            !(name = elf_strptr(e, sh.sh_link, sym.st_name)))
                                continue;
                        for (size_t k = 0; k < ELEMENTSOF(entries); k++)
                                if (strcmp(name, entries[k].name) == 0) {
                                        values[k] = sym.st_value;
                                        found[k] = true;
                                }
                }
                break;
        }
        o->defines_malloc = found[0];
        if (libc && r == 0) {
                for (size_t k = 0; k < ELEMENTSOF(entries); k++) {
                        bool seen = false;
                        uint64_t off;

                        if (!found[k])
                                continue;
                        /* Each address once: aligned_alloc is memalign before glibc 2.38. */
                        for (size_t j = 0; j < k; j++)
                                seen |= found[j] && values[j] == values[k];
                        if (seen || !file_offset(e, values[k], &off))
                                continue;
                        o->offsets[o->n] = off;
                        o->cookies[o->n] = entries[k].kind;
                        o->n++;
                }
                read_version(e, o);
                if (!found[0])
                        r = -ENOEXEC;
        }
        elf_end(e);
        return r;
}

static bool is_libc(const char *base) {
        return strcmp(base, "libc.so.6") == 0 ||
                (strncmp(base, "libc-2.", 7) == 0 && strlen(base) > 10 &&
                 strcmp(base + strlen(base) - 3, ".so") == 0);
}

/* The object of the file mapped at PATH in PID (device and inode from its maps), read once. */
static struct object *object_get(struct alloc_probe *a, pid_t pid, const char *path, dev_t dev, ino_t ino,
                                 const char *range, bool libc, int *ret_err) {
        struct object *o;
        char proc_path[4200];
        struct stat st;
        int fd, r;

        for (size_t i = 0; i < a->n_objects; i++)
                if (a->objects[i].dev == dev && a->objects[i].ino == ino)
                        return &a->objects[i];
        /* As the process sees it (containers), checked to be the file it maps; a file replaced
         * on disk since, through the mapping itself. */
        snprintf(proc_path, sizeof proc_path, "/proc/%d/root%s", (int) pid, path);
        fd = open(proc_path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_ino != ino)) {
                close(fd);
                fd = -1;
        }
        if (fd < 0) {
                snprintf(proc_path, sizeof proc_path, "/proc/%d/map_files/%s", (int) pid, range);
                fd = open(proc_path, O_RDONLY | O_CLOEXEC);
        }
        if (fd < 0) {
                *ret_err = -errno;
                return NULL;
        }
        r = GROW(a->objects, a->cap_objects, a->n_objects + 1);
        if (r < 0) {
                close(fd);
                *ret_err = r;
                return NULL;
        }
        o = &a->objects[a->n_objects];
        *o = (struct object) { .dev = dev, .ino = ino, .libc = libc };
        r = read_object(fd, libc, o);
        close(fd);
        if (r < 0 && libc) {
                *ret_err = r;
                return NULL;
        }
        a->n_objects++;
        return o;
}

/* A uprobe_multi link of the program on O's entry points in file PATH, for process PID. The
 * layout of link_create.uprobe_multi (Linux 6.6) after its four u32s, written by offset since
 * older uapi headers lack it. */
static int link_create(struct alloc_probe *a, const struct object *o, const char *path, pid_t pid) {
        union bpf_attr attr;
        char *raw = (char *) &attr;
        uint32_t u32;
        uint64_t u64;
        long fd;

        static_assert(sizeof attr >= 60, "bpf_attr holds link_create.uprobe_multi");
        memset(&attr, 0, sizeof attr);
        u32 = (uint32_t) a->prog_fd;
        memcpy(raw + 0, &u32, 4); /* prog_fd */
        u32 = SAMPLING_BPF_TRACE_UPROBE_MULTI;
        memcpy(raw + 8, &u32, 4); /* attach_type */
        u64 = (uint64_t) (uintptr_t) path;
        memcpy(raw + 16, &u64, 8);
        u64 = (uint64_t) (uintptr_t) o->offsets;
        memcpy(raw + 24, &u64, 8);
        u64 = (uint64_t) (uintptr_t) o->cookies;
        memcpy(raw + 40, &u64, 8);
        u32 = o->n;
        memcpy(raw + 48, &u32, 4); /* cnt */
        u32 = (uint32_t) pid;
        memcpy(raw + 56, &u32, 4); /* pid */
        fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof attr);
        return fd < 0 ? -errno : (int) fd;
}

static bool wanted_unit(const struct alloc_probe *a, pid_t pid) {
        _cleanup_free_ char *unit = NULL;

        if (!a->units)
                return true;
        if (sd_pid_get_unit(pid, &unit) < 0 && sd_pid_get_user_unit(pid, &unit) < 0)
                return false;
        return strv_contains(a->units, unit);
}

static void read_comm(pid_t pid, char comm[static 16]) {
        char path[64];
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/%d/comm", (int) pid);
        comm[0] = '\0';
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        n = read(fd, comm, 15);
        close(fd);
        comm[n > 0 ? n : 0] = '\0';
        comm[strcspn(comm, "\n")] = '\0';
}

static bool was_refused(const struct alloc_probe *a, pid_t pid) {
        for (size_t i = 0; i < a->n_refused; i++)
                if (a->refused[i] == pid)
                        return true;
        return false;
}

/* Under the lock: counts PID as not measured (once), for WHY. */
static void not_measured(struct alloc_probe *a, pid_t pid, const char *why) {
        if (was_refused(a, pid))
                return;
        if (GROW(a->refused, a->cap_refused, a->n_refused + 1) >= 0)
                a->refused[a->n_refused++] = pid;
        if (a->stats.not_measured++ == 0) {
                a->stats.first_pid = pid;
                read_comm(pid, a->stats.first_comm);
                snprintf(a->stats.first_why, sizeof a->stats.first_why, "%s", why);
        }
}

static bool linked(const struct alloc_probe *a, pid_t pid, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < a->n_links; i++)
                if (a->links[i].pid == pid && a->links[i].dev == dev && a->links[i].ino == ino)
                        return true;
        return false;
}

static bool was_probed(const struct alloc_probe *a, pid_t pid) {
        for (size_t i = 0; i < a->n_links; i++)
                if (a->links[i].pid == pid)
                        return true;
        return false;
}

/* Under the lock. See alloc_probe_process(). */
static int probe(struct alloc_probe *a, pid_t pid, char *why, size_t why_size) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[128], line[4400], libc_path[4200] = "", libc_range[80] = "";
        struct object *libc = NULL, *own = NULL;
        const char *own_name = NULL;
        _cleanup_free_ char *own_copy = NULL;
        bool any = false, musl = false;
        int libc_err = 0;
        dev_t libc_dev = 0;
        ino_t libc_ino = 0;
        int r;

        why[0] = '\0';
        snprintf(path, sizeof path, "/proc/%d/maps", (int) pid);
        f = fopen(path, "re");
        if (!f) {
                snprintf(why, why_size, "cannot read /proc/%d/maps: %s", (int) pid, strerror(errno));
                return errno == ENOENT ? -ESRCH : -errno;
        }
        while (fgets(line, sizeof line, f)) {
                unsigned long long start, end, inode;
                unsigned major, minor;
                char perms[8], range[80];
                int name_at = 0;
                const char *name, *base;
                struct object *o;

                if (sscanf(line, "%llx-%llx %7s %*x %x:%x %llu %n", &start, &end, perms, &major, &minor,
                           &inode, &name_at) < 6 ||
                    name_at == 0)
                        continue;
                any = true;
                name = line + name_at;
                ((char *) name)[strcspn(name, "\n")] = '\0';
                if (perms[2] != 'x' || inode == 0 || name[0] != '/')
                        continue;
                base = strrchr(name, '/') + 1;
                if (strstr(base, "ld-musl") || strstr(base, "libc.musl"))
                        musl = true;
                snprintf(range, sizeof range, "%llx-%llx", start, end);
                if (strstr(name, " (deleted)"))
                        *strstr(name, " (deleted)") = '\0';
                o = object_get(a, pid, name, makedev(major, minor), (ino_t) inode, range, is_libc(base), &r);
                if (!o && is_libc(base) && !libc) {
                        /* Said if no other libc does: a file named so may be anything. */
                        snprintf(why, why_size, "cannot read its glibc %s: %s", name,
                                 r == -ENOEXEC ? "no malloc in its dynamic symbols" : strerror(-r));
                        libc_err = r;
                }
                if (!o)
                        continue;
                if (o->libc) {
                        libc = o;
                        libc_dev = o->dev;
                        libc_ino = o->ino;
                        snprintf(libc_path, sizeof libc_path, "%s", name);
                        snprintf(libc_range, sizeof libc_range, "%s", range);
                } else if (o->defines_malloc && !strv_contains((char *const *) forwarders, base) && !own) {
                        own = o;
                        own_name = own_copy = strdup(base);
                }
        }
        if (!any)
                return 0; /* a kernel thread, or gone */
        if (own) {
                snprintf(why, why_size, "an allocator of its own (%s defines malloc)",
                         own_name ?: "an object");
                return -ENOEXEC;
        }
        if (!libc && libc_err)
                return libc_err;
        if (!libc) {
                snprintf(why, why_size, "%s",
                         musl ? "musl libc, whose allocator is not probed" :
                                "no shared glibc (a static executable?)");
                return -ENOEXEC;
        }
        why[0] = '\0';
        if (linked(a, pid, libc_dev, libc_ino))
                return 1;
        if (a->config.max_per_libc && libc->probed >= a->config.max_per_libc) {
                snprintf(why, why_size, "%u processes probed on its libc already (max_processes)",
                         a->config.max_per_libc);
                return -EUSERS;
        }
        r = GROW(a->links, a->cap_links, a->n_links + 1);
        if (r < 0)
                return r;
        snprintf(line, sizeof line, "/proc/%d/root%s", (int) pid, libc_path);
        r = link_create(a, libc, line, pid);
        if (r < 0 && r != -ESRCH && r != -EPERM) {
                snprintf(line, sizeof line, "/proc/%d/map_files/%s", (int) pid, libc_range);
                r = link_create(a, libc, line, pid);
        }
        if (r < 0) {
                snprintf(why, why_size, "%s",
                         r == -EINVAL || r == -EOPNOTSUPP ?
                                 "needs Linux 6.6 or later (BPF uprobe_multi links)" :
                                 r == -EPERM ? "needs CAP_BPF and CAP_PERFMON" :
                                 r == -ESRCH ? "it exited" :
                                               strerror(-r));
                return r;
        }
        a->links[a->n_links++] = (struct link) { .pid = pid, .dev = libc_dev, .ino = libc_ino, .fd = r };
        libc->probed++;
        a->stats.probed++;
        a->stats.ever++;
        if (!a->stats.libc[0])
                snprintf(a->stats.libc, sizeof a->stats.libc, "glibc %s (%s)",
                         libc->version[0] ? libc->version : "?", libc_path);
        return 1;
}

int alloc_probe_process(struct alloc_probe *a, pid_t pid, char *why, size_t why_size) {
        int r;

        pthread_mutex_lock(&a->lock);
        r = wanted_unit(a, pid) ? probe(a, pid, why, why_size) : 0;
        if (r < 0 && r != -ESRCH) {
                a->stats.over_cap += r == -EUSERS && !was_refused(a, pid);
                not_measured(a, pid, why);
        }
        pthread_mutex_unlock(&a->lock);
        return r;
}

/* Under the lock: closes PID's links. */
static void forget(struct alloc_probe *a, pid_t pid) {
        size_t kept = 0;

        for (size_t i = 0; i < a->n_links; i++) {
                struct link *l = &a->links[i];

                if (l->pid != pid) {
                        a->links[kept++] = *l;
                        continue;
                }
                close(l->fd);
                for (size_t j = 0; j < a->n_objects; j++)
                        if (a->objects[j].dev == l->dev && a->objects[j].ino == l->ino &&
                            a->objects[j].probed)
                                a->objects[j].probed--;
        }
        if (kept < a->n_links && a->stats.probed)
                a->stats.probed--;
        a->n_links = kept;
        for (size_t i = 0; i < a->n_refused; i++)
                if (a->refused[i] == pid)
                        a->refused[i] = a->refused[--a->n_refused];
}

static void *prober(void *userdata) {
        struct alloc_probe *a = userdata;
        char why[160];

        pthread_mutex_lock(&a->lock);
        for (;;) {
                struct request q;

                while (a->n_queue == 0 && !a->stop)
                        pthread_cond_wait(&a->wake, &a->lock);
                if (a->stop)
                        break;
                q = a->queue[0];
                memmove(a->queue, a->queue + 1, --a->n_queue * sizeof *a->queue);
                if (q.op == OP_ADD && !was_probed(a, q.pid) && !was_refused(a, q.pid) &&
                    wanted_unit(a, q.pid)) {
                        int r = probe(a, q.pid, why, sizeof why);

                        if (r < 0 && r != -ESRCH) {
                                a->stats.over_cap += r == -EUSERS;
                                not_measured(a, q.pid, why);
                        } else if (r > 0 && q.start_ns) {
                                uint64_t now = monotonic_ns(), late = now > q.start_ns ? now - q.start_ns : 0;

                                a->stats.late++;
                                a->stats.late_max_ns = MAX(a->stats.late_max_ns, late);
                        }
                } else if (q.op == OP_EXITED)
                        forget(a, q.pid);
                a->done++;
                pthread_cond_broadcast(&a->settled);
        }
        pthread_mutex_unlock(&a->lock);
        return NULL;
}

static void ask(struct alloc_probe *a, enum op op, pid_t pid, uint64_t start_ns) {
        pthread_mutex_lock(&a->lock);
        if (GROW(a->queue, a->cap_queue, a->n_queue + 1) >= 0) {
                a->queue[a->n_queue++] = (struct request) { .op = op, .pid = pid, .start_ns = start_ns };
                a->asked++;
                pthread_cond_signal(&a->wake);
        }
        pthread_mutex_unlock(&a->lock);
}

void alloc_probe_add(struct alloc_probe *a, pid_t pid, uint64_t start_ns) {
        ask(a, OP_ADD, pid, start_ns);
}

void alloc_probe_exited(struct alloc_probe *a, pid_t pid) {
        ask(a, OP_EXITED, pid, 0);
}

void alloc_probe_settle(struct alloc_probe *a) {
        uint64_t until;

        pthread_mutex_lock(&a->lock);
        until = a->asked;
        while (a->done < until && !a->stop)
                pthread_cond_wait(&a->settled, &a->lock);
        pthread_mutex_unlock(&a->lock);
}

void alloc_probe_get_stats(struct alloc_probe *a, struct alloc_probe_stats *ret) {
        pthread_mutex_lock(&a->lock);
        *ret = a->stats;
        pthread_mutex_unlock(&a->lock);
}

int alloc_probe_new(const struct alloc_probe_config *config, struct alloc_probe **ret) {
        _cleanup_(alloc_probe_freep) struct alloc_probe *a = NULL;
        int r;

        a = calloc(1, sizeof *a);
        if (!a)
                return -ENOMEM;
        a->config = *config;
        a->prog_fd = fcntl(config->prog_fd, F_DUPFD_CLOEXEC, 3);
        pthread_mutex_init(&a->lock, NULL);
        pthread_cond_init(&a->wake, NULL);
        pthread_cond_init(&a->settled, NULL);
        if (a->prog_fd < 0)
                return -errno;
        for (char *const *u = config->units; u && *u; u++) {
                r = strv_extend(&a->units, *u);
                if (r < 0)
                        return r;
        }
        a->config.units = a->units;
        r = pthread_create(&a->thread, NULL, prober, a);
        if (r != 0)
                return -r;
        a->started = true;
        *ret = take_ptr(&a);
        return 0;
}

struct alloc_probe *alloc_probe_free(struct alloc_probe *a) {
        if (!a)
                return NULL;
        if (a->started) {
                pthread_mutex_lock(&a->lock);
                a->stop = true;
                pthread_cond_broadcast(&a->wake);
                pthread_cond_broadcast(&a->settled);
                pthread_mutex_unlock(&a->lock);
                pthread_join(a->thread, NULL);
        }
        for (size_t i = 0; i < a->n_links; i++)
                close(a->links[i].fd);
        if (a->prog_fd >= 0)
                close(a->prog_fd);
        pthread_mutex_destroy(&a->lock);
        pthread_cond_destroy(&a->wake);
        pthread_cond_destroy(&a->settled);
        free(a->queue);
        free(a->objects);
        free(a->links);
        free(a->refused);
        strv_free(a->units);
        free(a);
        return NULL;
}
