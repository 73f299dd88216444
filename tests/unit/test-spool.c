/* The fleet spool's files (daemon/ship/spool.c): a batch written comes back byte for byte, bodies with
 * NULs, tabs and newlines included; a file cut short, one with a byte flipped and one past the
 * size limit are refused as -EBADMSG or -EFBIG, never half read; a listing is oldest first,
 * names the damaged files set aside, and clears the temporary files a crash left. A link planted
 * at a temporary name never redirects a write, a link or a FIFO at a batch's name is neither
 * followed nor waited on, and a folder of another user or that others may write is refused. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spool.h"
#include "tap.h"

static struct ch_batch *batch(const char *host, uint64_t run, uint64_t bucket) {
        static const char samples[] = "1795640000\thost\t1\twith\\ttab\n\0binary\n";
        struct ch_batch *b = calloc(1, sizeof *b);

        b->host = strdup(host);
        b->run = run;
        b->batch = bucket;
        b->rows = 2;
        b->hits = 42;
        ch_batch_add_table(b, "stacks", "1\t['main']\n", 11, 1);
        ch_batch_add_table(b, "samples", samples, sizeof samples - 1, 2);
        ch_batch_add_table(b, "runs", "", 0, 0);
        return b;
}

static bool same(const struct ch_batch *a, const struct ch_batch *b) {
        if (strcmp(a->host, b->host) || a->run != b->run || a->batch != b->batch || a->rows != b->rows ||
            a->hits != b->hits || a->n_tables != b->n_tables)
                return false;
        for (size_t i = 0; i < a->n_tables; i++)
                if (strcmp(a->tables[i].table, b->tables[i].table) || a->tables[i].len != b->tables[i].len ||
                    a->tables[i].rows != b->tables[i].rows ||
                    memcmp(a->tables[i].body, b->tables[i].body, a->tables[i].len))
                        return false;
        return true;
}

/* Rewrites file NAME of DIR with its first KEEP bytes (all if more), byte FLIP (>= 0) flipped. */
static void rewrite(const char *dir, const char *name, size_t keep, long flip) {
        char path[512], *data;
        struct stat st;
        int fd;

        snprintf(path, sizeof path, "%s/%s", dir, name);
        fd = open(path, O_RDWR);
        fstat(fd, &st);
        data = malloc(st.st_size);
        if (read(fd, data, st.st_size) != st.st_size)
                abort();
        if (flip >= 0)
                data[flip] ^= 0x20;
        if (keep > (size_t) st.st_size)
                keep = st.st_size;
        if (ftruncate(fd, 0) < 0 || pwrite(fd, data, keep, 0) != (ssize_t) keep)
                abort();
        close(fd);
        free(data);
}

/* What a root daemon must not be led to: a link at the temporary name of the next batch, to a
 * file elsewhere; a link and a FIFO at a batch's name. */
static void test_planted(int dfd, const char *dir) {
        char outside[] = "/tmp/test-spool-outside-XXXXXX", path[512], name[SPOOL_NAME_MAX];
        _cleanup_(ch_batch_freep) struct ch_batch *b = batch("planted", 1, 60), *back = NULL;
        struct spool_entry *e = NULL;
        size_t n = 0;
        int fd = mkstemp(outside);

        if (fd < 0 || write(fd, "precious\n", 9) != 9)
                abort();
        close(fd);
        snprintf(path, sizeof path, "%s/.tmp-000000000060-1-planted.batch", dir);
        if (symlink(outside, path) < 0)
                abort();
        ok(spool_write(dfd, b, name) == 0 && streq(name, "000000000060-1-planted.batch"),
           "a batch is written though a link waits at its temporary name");
        fd = open(outside, O_RDONLY);
        ok(fd >= 0 && read(fd, path, sizeof path) == 9 && memcmp(path, "precious\n", 9) == 0,
           "the file the link pointed to is untouched");
        close(fd);
        ok(spool_read(dfd, name, 1 << 20, &back) == 0 && same(b, back), "and the batch reads back whole");
        back = ch_batch_free(back);
        ok(unlinkat(dfd, name, 0) == 0 && symlinkat(outside, dfd, name) == 0 &&
                   spool_read(dfd, name, 1 << 20, &back) == -EBADMSG,
           "a link at a batch's name is not followed: -EBADMSG");
        ok(unlinkat(dfd, name, 0) == 0 && mkfifoat(dfd, name, 0600) == 0 &&
                   spool_read(dfd, name, 1 << 20, &back) == -EBADMSG,
           "a FIFO at a batch's name is not waited on: -EBADMSG");
        ok(spool_list(dfd, &e, &n) == 0, "the folder lists");
        for (size_t i = 0; i < n; i++)
                if (streq(e[i].name, name))
                        n = SIZE_MAX;
        ok(n != SIZE_MAX, "and a FIFO at a batch's name is not listed");
        free(e);
        unlinkat(dfd, name, 0);
        unlink(outside);
}

/* The folder itself: made 0700; refused when another user owns it or others may write it. */
static void test_folder(const char *dir) {
        char sub[512], error[256] = "";
        struct stat st;
        int fd = -1;

        snprintf(sub, sizeof sub, "%s/made", dir);
        ok(spool_open(sub, &fd, error, sizeof error) == 0 && stat(sub, &st) == 0 &&
                   (st.st_mode & 0777) == 0700,
           "a missing folder is made, 0700");
        fd = safe_close_fd(fd);
        chmod(sub, 0730);
        ok(spool_open(sub, &fd, error, sizeof error) == -EPERM && strstr(error, "group or others may write"),
           "a folder the group may write is refused: %s", error);
        chmod(sub, 0700);
        if (geteuid() != 0)
                ok(true, "# SKIP chown to another user needs root");
        else
                ok(chown(sub, 65534, 65534) == 0 && spool_open(sub, &fd, error, sizeof error) == -EPERM &&
                           strstr(error, "belongs to uid 65534"),
                   "a folder of another user is refused: %s", error);
        rmdir(sub);
}

int main(void) {
        char dir[] = "/tmp/test-spool-XXXXXX", name[SPOOL_NAME_MAX], name2[SPOOL_NAME_MAX], path[512];
        char error[256], bad[SPOOL_NAME_MAX];
        struct ch_batch *b, *back = NULL, *odd;
        struct spool_entry *e = NULL;
        size_t n = 0;
        struct stat st;
        int dfd = -1;

        if (!mkdtemp(dir) || spool_open(dir, &dfd, error, sizeof error) < 0)
                return 1;
        b = batch("web-1.example", 7, 1795640000);
        ok(spool_write(dfd, b, name) == 0 && strcmp(name, "001795640000-7-web-1.example.batch") == 0,
           "written under its key: %s", name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        ok(stat(path, &st) == 0 && (uint64_t) st.st_size == spool_size(b) && (st.st_mode & 0777) == 0600,
           "spool_size() is the file's size; only its owner reads it");
        ok(spool_read(dfd, name, 1 << 20, &back) == 0 && same(b, back), "read back byte for byte");
        back = ch_batch_free(back);
        ok(spool_read(dfd, name, 16, &back) == -EFBIG && !back, "past the size limit: -EFBIG");

        odd = batch("a/b c", 3, 5);
        ok(spool_write(dfd, odd, name2) == 0 && strcmp(name2, "000000000005-3-a_b_c.batch") == 0,
           "a host unfit for a file name is spelt safely there: %s", name2);
        ok(spool_read(dfd, name2, 1 << 20, &back) == 0 && strcmp(back->host, "a/b c") == 0,
           "and the file keeps the real name");
        back = ch_batch_free(back);

        snprintf(path, sizeof path, "%s/.tmp-000000000009-1-x.batch", dir);
        close(open(path, O_WRONLY | O_CREAT, 0600));
        ok(spool_list(dfd, &e, &n) == 0 && n == 2 && strcmp(e[0].name, name2) == 0 &&
                   strcmp(e[1].name, name) == 0 && e[1].bytes == spool_size(b),
           "listed oldest bucket first, with sizes");
        ok(access(path, F_OK) < 0, "a temporary file a crash left is removed");
        free(e);

        rewrite(dir, name, SIZE_MAX, 40);
        ok(spool_read(dfd, name, 1 << 20, &back) == -EBADMSG && !back, "a byte flipped: -EBADMSG");
        spool_write(dfd, b, name);
        rewrite(dir, name, spool_size(b) - 9, -1);
        ok(spool_read(dfd, name, 1 << 20, &back) == -EBADMSG && !back, "cut short: -EBADMSG");
        rewrite(dir, name, 3, -1);
        ok(spool_read(dfd, name, 1 << 20, &back) == -EBADMSG && !back, "three bytes left: -EBADMSG");
        ok(spool_read(dfd, "000000000001-1-none.batch", 1 << 20, &back) == -ENOENT, "gone: -ENOENT");

        ok(spool_set_aside(dfd, name, bad) == 0 && streq(bad, "001795640000-7-web-1.example.batch.bad") &&
                   spool_list(dfd, &e, &n) == 0 && n == 2 && !e[0].damaged && e[1].damaged &&
                   streq(e[1].name, bad) && e[1].bytes == 3,
           "a damaged batch set aside as .bad is listed as damaged, with its size");
        free(e);
        snprintf(path, sizeof path, "%s/%s", dir, bad);
        unlink(path);

        test_planted(dfd, dir);
        test_folder(dir);
        snprintf(path, sizeof path, "%s/%s", dir, name2);
        unlink(path);
        close(dfd);
        rmdir(dir);
        ch_batch_free(b);
        ch_batch_free(odd);
        return tap_done();
}
