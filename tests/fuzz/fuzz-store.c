/* Fuzz target: a store file from outside (cppctl --db, cppctl merge of another host's store,
 * the daemon's own file after a crash or a bad disk). SQLite itself is robust; what is tested is
 * our code around it: store_open() refusing what is not a cppd store at a known schema, the
 * readers (resources, trees by function, line and module, the index of every sample and a
 * filtered view's laid out from it) and store_merge() coping with rows
 * that do not hold together, and a store opened for writing that is refused being left
 * byte for byte as it was. The input is the whole file. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "sample-tree.h"
#include "store.h"
#include "tree-index.h"

static char dir[256], path[300], into[300];
static uint8_t *into_bytes;
static size_t into_size;

/* Removes database file P with what SQLite keeps beside it. */
static void remove_db(const char *p) {
        static const char *const suffixes[] = { "", "-journal", "-wal", "-shm" };

        for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
                char q[320];

                snprintf(q, sizeof q, "%s%s", p, suffixes[i]);
                unlink(q);
        }
}

static void remove_dir(void) {
        remove_db(path);
        remove_db(into);
        rmdir(dir);
}

static void write_file(const char *p, const uint8_t *data, size_t size) {
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t) size))
                abort(); /* the harness cannot do its job: not a finding */
        close(fd);
}

static uint8_t *read_file(const char *p, size_t *ret_size) {
        struct stat st;
        uint8_t *b;
        int fd = open(p, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || fstat(fd, &st) < 0)
                abort();
        b = malloc(st.st_size + 1);
        if (!b || read(fd, b, st.st_size) != st.st_size)
                abort();
        close(fd);
        *ret_size = st.st_size;
        return b;
}

/* A new store's bytes, made once: each merge goes into a fresh copy. */
static void setup(void) {
        struct store *s;

        fuzz_make_dir(dir, sizeof dir, "fuzz-store");
        snprintf(path, sizeof path, "%s/in.db", dir);
        snprintf(into, sizeof into, "%s/into.db", dir);
        atexit(remove_dir);
        if (store_open(into, STORE_WRITE, &s) < 0)
                abort();
        store_close(s);
        into_bytes = read_file(into, &into_size);
}

static void put_input(const uint8_t *data, size_t size) {
        remove_db(path);
        write_file(path, data, size);
}

/* Loads every resource's tree (at most 4), each way the reports ask for it. */
static void read_store(struct store *s) {
        static const enum store_granularity by[] = { STORE_BY_FUNCTION, STORE_BY_LINE, STORE_BY_MODULE };
        char **resources = NULL;
        int n = store_list_resources(s, &resources);

        for (int i = 0; i < n && i < 4; i++)
                for (int j = 0; j < 3; j++) {
                        struct store_filter f = { .resource = resources[i],
                                                  .by = by[j],
                                                  .fold_inline = j == 1 };
                        struct sample_tree *t = NULL;

                        if (store_load_tree(s, &f, &t) == 0)
                                sample_tree_free(t);
                }
        /* the index of every sample, and a filtered view's laid out from it, down and up */
        for (int i = 0; i < n && i < 4; i++) {
                struct store_filter every = { .resource = resources[i] };
                struct store_filter since = { .resource = resources[i], .since = 60, .has_since = true };
                struct tree_index *all = NULL, *x = NULL;

                if (store_load_index(s, &every, -1, &all) < 0)
                        continue;
                if (store_select_index(s, &since, all, -1, &x) == 0)
                        x = tree_index_free(x);
                if (tree_index_invert(all, -1, &all) < 0)
                        continue;
                if (store_select_index(s, &since, all, -1, &x) == 0)
                        tree_index_free(x);
                tree_index_free(all);
        }
        if (n >= 0)
                strv_free(resources);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct store *s = NULL;
        struct store_merge_stats stats;
        uint8_t *after;
        size_t after_size;
        int64_t run;
        int r;

        if (!dir[0])
                setup();

        put_input(data, size);
        r = store_open(path, STORE_READ, &s);
        if (r == 0) {
                read_store(s);
                store_close(s);
        } else if (r == -EBADMSG && !store_error(NULL)[0])
                abort(); /* refused without saying why */

        /* Merged into a store of our own, as cppctl merge reads another host's file. */
        put_input(data, size);
        remove_db(into);
        write_file(into, into_bytes, into_size);
        if (store_open(into, STORE_WRITE, &s) < 0)
                abort();
        (void) store_merge(s, path, &stats, &run);
        read_store(s);
        store_close(s);

        /* Opened for writing: a file that is refused must not be touched. (An empty file is
         * a new store, and a store at an older schema is migrated: both are written.) */
        put_input(data, size);
        r = store_open(path, STORE_WRITE, &s);
        if (r == 0) {
                read_store(s);
                store_close(s);
        } else if (size > 0) {
                after = read_file(path, &after_size);
                if (after_size != size || memcmp(after, data, size) != 0)
                        abort(); /* a refused file was written */
                free(after);
        }
        return 0;
}
