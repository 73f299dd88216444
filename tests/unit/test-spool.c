/* The fleet spool's files (daemon/spool.c): a batch written comes back byte for byte, bodies with
 * NULs, tabs and newlines included; a file cut short, one with a byte flipped and one past the
 * size limit are refused as -EBADMSG or -EFBIG, never half read; a listing is oldest first and
 * clears the temporary files a crash left. */
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

int main(void) {
        char dir[] = "/tmp/test-spool-XXXXXX", name[SPOOL_NAME_MAX], name2[SPOOL_NAME_MAX], path[512];
        struct ch_batch *b, *back = NULL, *odd;
        struct spool_entry *e = NULL;
        size_t n = 0;
        struct stat st;

        if (!mkdtemp(dir))
                return 1;
        b = batch("web-1.example", 7, 1795640000);
        ok(spool_write(dir, b, name) == 0 && strcmp(name, "001795640000-7-web-1.example.batch") == 0,
           "written under its key: %s", name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        ok(stat(path, &st) == 0 && (uint64_t) st.st_size == spool_size(b) && (st.st_mode & 0777) == 0600,
           "spool_size() is the file's size; only its owner reads it");
        ok(spool_read(dir, name, 1 << 20, &back) == 0 && same(b, back), "read back byte for byte");
        back = ch_batch_free(back);
        ok(spool_read(dir, name, 16, &back) == -EFBIG && !back, "past the size limit: -EFBIG");

        odd = batch("a/b c", 3, 5);
        ok(spool_write(dir, odd, name2) == 0 && strcmp(name2, "000000000005-3-a_b_c.batch") == 0,
           "a host unfit for a file name is spelt safely there: %s", name2);
        ok(spool_read(dir, name2, 1 << 20, &back) == 0 && strcmp(back->host, "a/b c") == 0,
           "and the file keeps the real name");
        back = ch_batch_free(back);

        snprintf(path, sizeof path, "%s/.tmp-000000000009-1-x.batch", dir);
        close(open(path, O_WRONLY | O_CREAT, 0600));
        ok(spool_list(dir, &e, &n) == 0 && n == 2 && strcmp(e[0].name, name2) == 0 &&
                   strcmp(e[1].name, name) == 0 && e[1].bytes == spool_size(b),
           "listed oldest bucket first, with sizes");
        ok(access(path, F_OK) < 0, "a temporary file a crash left is removed");
        free(e);

        rewrite(dir, name, SIZE_MAX, 40);
        ok(spool_read(dir, name, 1 << 20, &back) == -EBADMSG && !back, "a byte flipped: -EBADMSG");
        spool_write(dir, b, name);
        rewrite(dir, name, spool_size(b) - 9, -1);
        ok(spool_read(dir, name, 1 << 20, &back) == -EBADMSG && !back, "cut short: -EBADMSG");
        rewrite(dir, name, 3, -1);
        ok(spool_read(dir, name, 1 << 20, &back) == -EBADMSG && !back, "three bytes left: -EBADMSG");
        ok(spool_read(dir, "000000000001-1-none.batch", 1 << 20, &back) == -ENOENT, "gone: -ENOENT");

        unlink(path);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        unlink(path);
        snprintf(path, sizeof path, "%s/%s", dir, name2);
        unlink(path);
        rmdir(dir);
        ch_batch_free(b);
        ch_batch_free(odd);
        return tap_done();
}
