/* Spool files. A file holds one batch in this machine's byte order (it never leaves it):
 *
 *   "CPPDSPL1"  run u64  batch u64  rows u64  hits u64  host_len u32  n_tables u32  host
 *   n_tables x ( table_len u32  body_len u64  rows u64  table  body )
 *   FNV-1a 64 of every byte before it
 *
 * Written whole or not at all (a temporary name, fsync, rename, fsync of the folder), so a file
 * under its own name is complete unless the disk damaged it, which the checksum catches: a
 * damaged batch must not be half sent. Reading checks every length against what is left before
 * it allocates. */
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

#define SPOOL_MAGIC "CPPDSPL1"
#define SPOOL_SUFFIX ".batch"
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

int spool_write(const char *dir, const struct ch_batch *b, char *ret_name) {
        char name[SPOOL_NAME_MAX], tmp[SPOOL_NAME_MAX + 8];
        _cleanup_close_ int dfd = -1;
        struct writer w = { .hash = FNV_OFFSET };
        int fd, r = 0;

        if (b->n_tables > SPOOL_MAX_TABLES || strlen(b->host) > UINT32_MAX)
                return -E2BIG;
        name_of(b, name);
        snprintf(tmp, sizeof tmp, SPOOL_TMP_PREFIX "%s", name);
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        w.f = fdopen(fd, "we");
        if (!w.f) {
                r = -errno;
                close(fd);
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
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
        if (fflush(w.f) != 0 || ferror(w.f) || fsync(fileno(w.f)) < 0)
                r = -errno ?: -EIO;
        if (fclose(w.f) != 0 && r == 0)
                r = -errno;
        if (r == 0 && renameat(dfd, tmp, dfd, name) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(dfd, tmp, 0);
                return r;
        }
        if (fsync(dfd) < 0)
                return -errno;
        strcpy(ret_name, name);
        return 0;
}

struct reader {
        const unsigned char *p;
        size_t left;
};

static int get(struct reader *rd, void *ret, size_t n) {
        if (rd->left < n)
                return -EBADMSG;
        memcpy(ret, rd->p, n);
        rd->p += n;
        rd->left -= n;
        return 0;
}

/* Reads the string of N bytes at the reader into a new NUL-terminated copy. */
static int get_string(struct reader *rd, uint64_t n, char **ret) {
        char *s;

        if (rd->left < n)
                return -EBADMSG;
        s = malloc(n + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, rd->p, n);
        s[n] = '\0';
        rd->p += n;
        rd->left -= n;
        *ret = s;
        return 0;
}

int spool_read(const char *dir, const char *name, uint64_t max_bytes, struct ch_batch **ret) {
        _cleanup_(ch_batch_freep) struct ch_batch *b = NULL;
        _cleanup_free_ unsigned char *data = NULL;
        _cleanup_close_ int dfd = -1, fd = -1;
        struct reader rd;
        char magic[8];
        uint32_t host_len, n_tables;
        uint64_t hash;
        struct stat st;
        size_t n = 0;
        int r;

        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if ((uint64_t) st.st_size > max_bytes)
                return -EFBIG;
        if (st.st_size < 8 + 8)
                return -EBADMSG;
        data = malloc(st.st_size);
        if (!data)
                return -ENOMEM;
        while (n < (size_t) st.st_size) {
                ssize_t k = read(fd, data + n, st.st_size - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EBADMSG;
                n += k;
        }
        memcpy(&hash, data + n - 8, 8);
        if (fnv1a(FNV_OFFSET, data, n - 8) != hash)
                return -EBADMSG;
        rd = (struct reader) { data, n - 8 };

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
                _cleanup_free_ char *table = NULL;
                uint32_t table_len;
                uint64_t body_len, rows;

                if (get(&rd, &table_len, 4) < 0 || get(&rd, &body_len, 8) < 0 || get(&rd, &rows, 8) < 0)
                        return -EBADMSG;
                r = get_string(&rd, table_len, &table);
                if (r < 0)
                        return r;
                if (rd.left < body_len)
                        return -EBADMSG;
                r = ch_batch_add_table(b, table, (const char *) rd.p, body_len, rows);
                if (r < 0)
                        return r;
                rd.p += body_len;
                rd.left -= body_len;
        }
        if (rd.left != 0)
                return -EBADMSG;
        *ret = take_ptr(&b);
        return 0;
}

static int compare_entries(const void *a, const void *b) {
        return strcmp(((const struct spool_entry *) a)->name, ((const struct spool_entry *) b)->name);
}

int spool_list(const char *dir, struct spool_entry **ret, size_t *ret_n) {
        _cleanup_free_ struct spool_entry *e = NULL;
        DIR *d;
        size_t n = 0, cap = 0;
        int r = 0;

        d = opendir(dir);
        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                size_t len = strlen(de->d_name);
                struct stat st;

                if (startswith(de->d_name, SPOOL_TMP_PREFIX)) {
                        (void) unlinkat(dirfd(d), de->d_name, 0); /* a write cut short by a crash */
                        continue;
                }
                if (len >= SPOOL_NAME_MAX || len <= strlen(SPOOL_SUFFIX) ||
                    !streq(de->d_name + len - strlen(SPOOL_SUFFIX), SPOOL_SUFFIX))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (n == cap) {
                        struct spool_entry *ne = reallocarray(e, cap ? cap * 2 : 64, sizeof *e);

                        if (!ne) {
                                r = -ENOMEM;
                                break;
                        }
                        e = ne;
                        cap = cap ? cap * 2 : 64;
                }
                strcpy(e[n].name, de->d_name);
                e[n++].bytes = st.st_size;
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
