/* Spool files. A file holds one batch in this machine's byte order (it never leaves it):
 *
 *   "CPPDSPL1"  run u64  batch u64  rows u64  hits u64  host_len u32  n_tables u32  host
 *   n_tables x ( table_len u32  body_len u64  rows u64  table  body )
 *   FNV-1a 64 of every byte before it
 *
 * Written whole or not at all (a temporary name, fsync, rename, fsync of the folder), so a file
 * under its own name is complete unless the disk damaged it, which the checksum catches: a
 * damaged batch must not be half sent. Reading checks every length against what is left before
 * it allocates.
 *
 * cppd writes the folder as root, and its names are predictable: every file is made and read
 * relative to the folder's descriptor, opened once (spool_open(), which refuses a folder that
 * another user owns or may write), made with O_EXCL and O_NOFOLLOW after a stale file of that
 * name is removed, and read only if it is a regular file (read_open()), so that a link planted
 * there can neither redirect a write nor feed a read. */
#include "spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "grow.h"
#include "read-line.h"

#define SPOOL_MAGIC "CPPDSPL1"
#define SPOOL_SUFFIX ".batch"
#define SPOOL_BAD_SUFFIX ".batch.bad"
#define SPOOL_TMP_PREFIX ".tmp-"
#define SPOOL_MAX_TABLES 64

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
        const unsigned char *c = p;

        for (size_t i = 0; i < n; i++) {
                h ^= c[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)

uint64_t spool_size(const struct ch_batch *b) {
        uint64_t n = 8 + 4 * 8 + 2 * 4 + strlen(b->host) + 8;

        for (size_t i = 0; i < b->n_tables; i++)
                n += 4 + 8 + 8 + strlen(b->tables[i].table) + b->tables[i].len;
        return n;
}

struct writer {
        FILE *f;
        uint64_t hash;
};

static void put(struct writer *w, const void *p, size_t n) {
        fwrite(p, 1, n, w->f);
        w->hash = fnv1a(w->hash, p, n);
}

static void put_u64(struct writer *w, uint64_t v) {
        put(w, &v, sizeof v);
}

static void put_u32(struct writer *w, uint32_t v) {
        put(w, &v, sizeof v);
}

/* The host as it may stand in a file name: letters, digits, '.', '_' and '-'; others become '_'
 * (the file holds the real name). */
static void name_of(const struct ch_batch *b, char *ret) {
        char host[64];
        size_t i;

        for (i = 0; b->host[i] && i < sizeof host - 1; i++) {
                char c = b->host[i];

                host[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                                c == '.' || c == '_' || c == '-' ?
                        c :
                        '_';
        }
        host[i] = '\0';
        snprintf(ret, SPOOL_NAME_MAX, "%012" PRIu64 "-%" PRIu64 "-%s" SPOOL_SUFFIX, b->batch, b->run, host);
}

int spool_open(const char *dir, int *ret_fd, char *error, size_t error_size) {
        _cleanup_close_ int dfd = -1;
        struct stat st;

        /* Batches say where every program spent its time: cppd's user's alone. */
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                snprintf(error, error_size, "cannot make it: %s", strerror(errno));
                return -errno;
        }
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fstat(dfd, &st) < 0) {
                snprintf(error, error_size, "cannot open it: %s", strerror(errno));
                return -errno;
        }
        if (st.st_uid != geteuid()) {
                snprintf(error, error_size,
                         "it belongs to uid %u, not to cppd's user (uid %u), who could find its files "
                         "replaced; chown it, or name another",
                         (unsigned) st.st_uid, (unsigned) geteuid());
                return -EPERM;
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                snprintf(error, error_size,
                         "group or others may write in it (mode %04o), and so plant files or links "
                         "there; chmod go-w it",
                         (unsigned) (st.st_mode & 07777));
                return -EPERM;
        }
        *ret_fd = take_fd(&dfd);
        return 0;
}

/* Makes NAME in DFD for writing, new: a stale file or a link of that name is removed first,
 * and O_EXCL with O_NOFOLLOW refuses one that comes back meanwhile. Returns the descriptor. */
static int create_new(int dfd, const char *name) {
        int fd;

        if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        return fd < 0 ? -errno : fd;
}

int spool_write_file(int dfd, const char *name, int (*fill)(FILE *f, void *userdata), void *userdata) {
        char tmp[SPOOL_NAME_MAX + 8];
        FILE *f;
        int fd, r;

        snprintf(tmp, sizeof tmp, SPOOL_TMP_PREFIX "%s", name);
        fd = create_new(dfd, tmp);
        if (fd < 0)
                return fd;
        f = fdopen(fd, "we");
        if (!f) {
                close(fd);
                (void) unlinkat(dfd, tmp, 0);
                return -ENOMEM;
        }
        r = fill(f, userdata);
        if (r >= 0 && (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) < 0))
                r = -errno ?: -EIO;
        if (fclose(f) != 0 && r >= 0)
                r = -errno;
        if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        return fsync(dfd) < 0 ? -errno : 0;
}

static int write_batch(FILE *f, void *userdata) {
        const struct ch_batch *b = userdata;
        struct writer w = { .f = f, .hash = FNV_OFFSET };

        put(&w, SPOOL_MAGIC, 8);
        put_u64(&w, b->run);
        put_u64(&w, b->batch);
        put_u64(&w, b->rows);
        put_u64(&w, b->hits);
        put_u32(&w, (uint32_t) strlen(b->host));
        put_u32(&w, (uint32_t) b->n_tables);
        put(&w, b->host, strlen(b->host));
        for (size_t i = 0; i < b->n_tables; i++) {
                const struct ch_batch_table *t = &b->tables[i];

                put_u32(&w, (uint32_t) strlen(t->table));
                put_u64(&w, t->len);
                put_u64(&w, t->rows);
                put(&w, t->table, strlen(t->table));
                put(&w, t->body, t->len);
        }
        fwrite(&w.hash, 1, sizeof w.hash, w.f);
        return 0;
}

int spool_write(int dfd, const struct ch_batch *b, char *ret_name) {
        char name[SPOOL_NAME_MAX];
        int r;

        if (b->n_tables > SPOOL_MAX_TABLES || strlen(b->host) > UINT32_MAX)
                return -E2BIG;
        name_of(b, name);
        r = spool_write_file(dfd, name, write_batch, (void *) b);
        if (r < 0)
                return r;
        strcpy(ret_name, name);
        return 0;
}

/* Reads a spool file in order, hashing what it reads; LEFT: bytes before the checksum. */
struct reader {
        FILE *f;
        uint64_t left;
        uint64_t hash;
};

static int get(struct reader *rd, void *ret, size_t n) {
        if (rd->left < n)
                return -EBADMSG;
        if (fread(ret, 1, n, rd->f) != n)
                return ferror(rd->f) ? -EIO : -EBADMSG;
        rd->hash = fnv1a(rd->hash, ret, n);
        rd->left -= n;
        return 0;
}

/* Reads N bytes into a new NUL-terminated string, once the file is known to hold them. */
static int get_string(struct reader *rd, uint64_t n, char **ret) {
        char *s;
        int r;

        if (rd->left < n)
                return -EBADMSG;
        s = malloc(n + 1);
        if (!s)
                return -ENOMEM;
        r = get(rd, s, n);
        if (r < 0) {
                free(s);
                return r;
        }
        s[n] = '\0';
        *ret = s;
        return 0;
}

/* Appends a table to B, which takes TABLE and BODY (malloc()ed) on success: each body is read
 * once, into the buffer the batch keeps, rather than read whole and copied. */
static int add_table(struct ch_batch *b, char *table, char *body, uint64_t len, uint64_t rows) {
        struct ch_batch_table *t = reallocarray(b->tables, b->n_tables + 1, sizeof *t);

        if (!t)
                return -ENOMEM;
        b->tables = t;
        b->tables[b->n_tables++] =
                (struct ch_batch_table) { .table = table, .body = body, .len = len, .rows = rows };
        return 0;
}

int spool_read(int dfd, const char *name, uint64_t max_bytes, struct ch_batch **ret) {
        _cleanup_(ch_batch_freep) struct ch_batch *b = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        struct reader rd = { .hash = FNV_OFFSET };
        uint32_t host_len, n_tables;
        uint64_t hash;
        char magic[8];
        struct stat st;
        int fd, r;

        fd = read_open(dfd, name, READ_NOFOLLOW, &st);
        if (fd == -ELOOP || fd == -EBADFD || fd == -EISDIR)
                return -EBADMSG; /* not a batch cppd wrote */
        if (fd < 0)
                return fd;
        f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                return -ENOMEM;
        }
        if ((uint64_t) st.st_size > max_bytes)
                return -EFBIG;
        if (st.st_size < 8 + 8)
                return -EBADMSG;
        rd.f = f;
        rd.left = st.st_size - 8;

        b = calloc(1, sizeof *b);
        if (!b)
                return -ENOMEM;
        if (get(&rd, magic, 8) < 0 || memcmp(magic, SPOOL_MAGIC, 8) != 0 || get(&rd, &b->run, 8) < 0 ||
            get(&rd, &b->batch, 8) < 0 || get(&rd, &b->rows, 8) < 0 || get(&rd, &b->hits, 8) < 0 ||
            get(&rd, &host_len, 4) < 0 || get(&rd, &n_tables, 4) < 0 || n_tables > SPOOL_MAX_TABLES)
                return -EBADMSG;
        r = get_string(&rd, host_len, &b->host);
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < n_tables; i++) {
                _cleanup_free_ char *table = NULL, *body = NULL;
                uint32_t table_len;
                uint64_t body_len, rows;

                if (get(&rd, &table_len, 4) < 0 || get(&rd, &body_len, 8) < 0 || get(&rd, &rows, 8) < 0)
                        return -EBADMSG;
                r = get_string(&rd, table_len, &table);
                if (r >= 0)
                        r = get_string(&rd, body_len, &body);
                if (r >= 0)
                        r = add_table(b, table, body, body_len, rows);
                if (r < 0)
                        return r;
                table = body = NULL; /* the batch's now */
        }
        if (rd.left != 0)
                return -EBADMSG;
        if (fread(&hash, 1, sizeof hash, f) != sizeof hash || hash != rd.hash)
                return -EBADMSG;
        *ret = take_ptr(&b);
        return 0;
}

static int compare_entries(const void *a, const void *b) {
        return strcmp(((const struct spool_entry *) a)->name, ((const struct spool_entry *) b)->name);
}

/* Whether NAME (LEN bytes) ends in SUFFIX. */
static bool has_suffix(const char *name, size_t len, const char *suffix) {
        return len > strlen(suffix) && streq(name + len - strlen(suffix), suffix);
}

int spool_set_aside(int dfd, const char *name, char *ret_name) {
        char bad[SPOOL_NAME_MAX];
        size_t len = strlen(name);

        if (!has_suffix(name, len, SPOOL_SUFFIX))
                return -EINVAL;
        if (len + strlen(".bad") >= SPOOL_NAME_MAX)
                return -ENAMETOOLONG;
        snprintf(bad, sizeof bad, "%s.bad", name);
        if (renameat(dfd, name, dfd, bad) < 0)
                return -errno;
        strcpy(ret_name, bad);
        return 0;
}

int spool_list(int dfd, struct spool_entry **ret, size_t *ret_n) {
        _cleanup_free_ struct spool_entry *e = NULL;
        DIR *d;
        size_t n = 0, cap = 0;
        int fd, r = 0;

        /* A descriptor of its own: readdir() moves its offset, and closedir() closes it. */
        fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -ENOMEM;
        }
        for (struct dirent *de; (de = readdir(d));) {
                size_t len = strlen(de->d_name);
                bool damaged = has_suffix(de->d_name, len, SPOOL_BAD_SUFFIX);
                struct stat st;

                if (startswith(de->d_name, SPOOL_TMP_PREFIX)) {
                        (void) unlinkat(dirfd(d), de->d_name, 0); /* a write cut short by a crash */
                        continue;
                }
                if (len >= SPOOL_NAME_MAX || (!damaged && !has_suffix(de->d_name, len, SPOOL_SUFFIX)))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                r = GROW(e, cap, n + 1);
                if (r < 0)
                        break;
                strcpy(e[n].name, de->d_name);
                e[n].bytes = st.st_size;
                e[n++].damaged = damaged;
        }
        closedir(d);
        if (r < 0)
                return r;
        if (n)
                qsort(e, n, sizeof *e, compare_entries);
        *ret = take_ptr(&e);
        *ret_n = n;
        return 0;
}
