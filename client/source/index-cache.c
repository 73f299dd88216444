/* Tree indexes of big stores, kept between views. Loading a tree from SQLite costs about a
 * microsecond per stored stack node (seconds for a store of millions), while a view at its
 * threshold visits a few thousand nodes of the index; so the index of a resource's whole tree
 * (no filters: filtered trees are many, and a view filtered by its samples is laid out from
 * this one, store_select_index()) is written to a cache directory once and
 * mapped by the views after, as long as the store is that store, unchanged (its store_state
 * uuid, generation and token, and its file's device and inode, are the index's key: the token,
 * drawn at random by every change, tells apart two copies that took changes of the same shape,
 * one copied over the other in place; the file's checksum catches damage). Small trees are
 * not cached: they load in milliseconds. The cache is only a cache: a missing, stale or damaged
 * index is built again, and one that cannot be written (a read-only home, a full disk) is used
 * from memory this once.
 *
 * Where: $CPPD_INDEX_DIR, else $XDG_CACHE_HOME/cppd, else ~/.cache/cppd; files
 * "<uuid>-<dev>-<ino>-<resource id>.down" and ".up" (the inverted tree, for upward views),
 * mode 0600: profiles show what runs on a host. Neither is built from a sample tree: the ".down"
 * index is laid out from the store's stacks (store_load_index()), the ".up" one from the ".down"
 * one, mapped (tree_index_invert()). For a store of a million distinct stacks, loading the tree
 * and inverting it took 4.5 s and 1.1 GiB, then 16 s and 2.8 GiB. */
#include "index-cache.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* Trees at least this big are worth an index file (about 3 MiB at 16 bytes a node). */
#define INDEX_MIN_NODES 200000

/* The cache directory, made if missing, into BUF. Returns 0, or a negative errno if there is
 * none to use. */
static int index_dir(char *buf, size_t size) {
        const char *dir = getenv("CPPD_INDEX_DIR"), *base = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        int n;

        if (dir && *dir)
                n = snprintf(buf, size, "%s", dir);
        else if (base && *base == '/')
                n = snprintf(buf, size, "%s/cppd", base);
        else if (home && *home == '/') {
                n = snprintf(buf, size, "%s/.cache", home);
                if (n > 0 && (size_t) n < size && mkdir(buf, 0700) < 0 && errno != EEXIST)
                        return -errno;
                n = snprintf(buf, size, "%s/.cache/cppd", home);
        } else
                return -ENOENT;
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int index_path(const struct tree_index_key *key, char *buf, size_t size) {
        char dir[4096];
        int n, r;

        r = index_dir(dir, sizeof dir);
        if (r < 0)
                return r;
        n = snprintf(buf, size, "%s/%s-%" PRIu64 "-%" PRIu64 "-%" PRId64 ".%s", dir, key->store_id, key->dev,
                     key->ino, key->resource_id, key->inverted ? "up" : "down");
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int index_cache_scratch(void) {
        char dir[4096], tmp[4200];
        int fd;

        if (index_dir(dir, sizeof dir) < 0)
                return -1;
        fd = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
                return fd < 0 ? -1 : fd;
        /* a file system without O_TMPFILE: a named file, unlinked at once */
        if ((size_t) snprintf(tmp, sizeof tmp, "%s/scratch.XXXXXX", dir) >= sizeof tmp)
                return -1;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd >= 0)
                (void) unlink(tmp);
        return fd < 0 ? -1 : fd;
}

/* Writes X to PATH through a new file renamed over it, so that a reader never maps a half. */
static int index_save(const struct tree_index *x, const struct tree_index_key *key, const char *path) {
        char tmp[4200];
        int fd, r;

        if ((size_t) snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= sizeof tmp)
                return -ENAMETOOLONG;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = tree_index_write(x, key, fd);
        if (close(fd) < 0 && r >= 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

/* The key and the file of the index of F's tree (INVERTED: of its inverted tree) into *key and
 * PATH. Returns 0, or a negative errno where there is no cache to use (a store edited by hand has
 * no identity; no cache directory). */
static int index_key(struct store *s, const struct store_filter *f, bool inverted, struct tree_index_key *key,
                     char *path, size_t size) {
        struct store_identity id;
        int r;

        *key = (struct tree_index_key) { .inverted = inverted };
        r = store_identity(s, &id);
        if (r >= 0)
                r = store_resource_id(s, f->resource, &key->resource_id);
        if (r < 0)
                return r;
        snprintf(key->store_id, sizeof key->store_id, "%s", id.uuid);
        key->dev = id.dev;
        key->ino = id.ino;
        key->generation = id.generation;
        snprintf(key->token, sizeof key->token, "%s", id.token);
        return index_path(key, path, size);
}

bool index_cache_usable(struct store *s, const struct store_filter *f) {
        struct tree_index_key key;
        char path[4200];

        return index_key(s, f, false, &key, path, sizeof path) >= 0;
}

/* Maps the index file PATH if it was written under KEY. Returns 0 and sets *ret; -ENOMEM; or
 * another negative errno when it is missing, stale or damaged (to be built again). */
static int index_map(const char *path, const struct tree_index_key *key, struct view_data *ret) {
        struct tree_index *x;
        int fd, r;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = tree_index_open(fd, key, &x);
        close(fd); /* the mapping stays */
        if (r < 0) {
                if (r != -ENOMEM)
                        log_debug("%s: %s; building it again", path,
                                  r == -ESTALE ? "the store changed" : "damaged");
                return r;
        }
        *ret = (struct view_data) { .index = x };
        return 0;
}

/* The inverted tree's index, from the downward tree's (tree-index-invert.c): mapped, or built
 * and kept, then mapped back so that its memory is let go of first. */
static int invert(struct store *s, const struct store_filter *f, int fd, struct view_data *ret) {
        _cleanup_(view_data_done) struct view_data down = {};
        struct tree_index_key key;
        char path[4200];
        int r;

        r = index_cache_load(s, f, false, &down);
        if (r < 0)
                return r;
        if (!down.index->map && index_key(s, f, false, &key, path, sizeof path) >= 0) {
                struct view_data mapped;

                if (index_map(path, &key, &mapped) >= 0) {
                        view_data_done(&down);
                        down = mapped;
                }
        }
        return tree_index_invert(take_ptr(&down.index), fd, &ret->index);
}

int index_cache_load(struct store *s, const struct store_filter *f, bool inverted, struct view_data *ret) {
        _cleanup_(view_data_done) struct view_data v = {};
        struct tree_index_key key;
        char path[4200];
        _cleanup_close_ int fd = -1;
        bool cached;
        int r;

        /* Without an identity (a store edited by hand) or a cache directory, no cache. */
        cached = index_key(s, f, inverted, &key, path, sizeof path) >= 0;
        if (cached) {
                r = index_map(path, &key, ret);
                if (r >= 0 || r == -ENOMEM)
                        return r;
        }

        /* laid out in a file, so that a window of it is in memory at a time, then copied into the
         * cache a window at a time */
        fd = index_cache_scratch();
        if (inverted)
                r = invert(s, f, fd, &v);
        else
                r = store_load_index(s, f, fd, &v.index);
        if (r < 0)
                return r;
        if (cached && v.index->n >= INDEX_MIN_NODES) {
                r = index_save(v.index, &key, path);
                if (r < 0)
                        log_debug("Cannot keep the tree index in %s: %s", path, strerror(-r));
        }
        *ret = v;
        v = (struct view_data) {};
        return 0;
}
