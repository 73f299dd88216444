/* `cppctl export --format pprof`: the trees encoded by common/push/pprof.c (whose opening
 * comment says what goes where), written out. No time is set: an export covers whatever the
 * filters chose, not an interval. The profile of one resource or several is written as their
 * indexes are walked (pprof_write_indexes()), their trees never loaded nor the Profile held. */
#include "render.h"

#include <errno.h>
#include <stdlib.h>

#include "pprof.h"

int render_pprof(FILE *f, struct sample_tree *const *trees, size_t n) {
        _cleanup_free_ uint8_t *data = NULL;
        size_t size = 0;
        int r;

        r = pprof_encode(trees, n, 0, 0, &data, &size);
        if (r < 0)
                return r;
        if (fwrite(data, 1, size, f) != size || ferror(f))
                return -EIO;
        return 0;
}

int render_pprof_index(FILE *f, const struct tree_index *x) {
        return pprof_write_index(f, x);
}

int render_pprof_indexes(FILE *f, const struct tree_index *const *xs, size_t n) {
        return pprof_write_indexes(f, xs, n);
}
