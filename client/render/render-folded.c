/* Folded stacks, the format of Brendan Gregg's stackcollapse tools, read by flamegraph.pl and by
 * `cppctl import --folded` (common/tree/folded.c), one stack a line, root first, then the hits of
 * samples that ended there:
 *
 *     main;invoice;db_get_property;db_read_record 22
 *
 * The format has no escapes, so a name that would break a line apart is changed instead: ';'
 * (the frame separator) becomes ':', line breaks become spaces, and an empty name, which the
 * parser rejects, is written "[unknown]". Samples whose stack was empty (the root's self hits)
 * have no line: a folded line holds at least one frame. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void write_name(FILE *f, const char *s) {
        if (!*s) {
                fputs("[unknown]", f);
                return;
        }
        for (; *s; s++)
                fputc(*s == ';' ? ':' : *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static int write_line(const struct sample_tree *t, uint32_t node, const uint32_t *path, size_t depth,
                      void *userdata) {
        FILE *f = userdata;

        if (depth == 0)
                return 0;
        for (size_t i = 0; i < depth; i++) {
                if (i > 0)
                        fputc(';', f);
                write_name(f, sample_tree_name(t, path[i]));
        }
        fprintf(f, " %" PRIu64 "\n", t->nodes[node].self);
        return 0;
}

static int write_index_line(const struct tree_index *x, const uint32_t *path, size_t depth, uint64_t self,
                            void *userdata) {
        FILE *f = userdata;

        if (depth == 0)
                return 0;
        for (size_t i = 0; i < depth; i++) {
                if (i > 0)
                        fputc(';', f);
                write_name(f, sample_tree_name(x->header, path[i]));
        }
        fprintf(f, " %" PRIu64 "\n", self);
        return 0;
}

int render_folded_index(FILE *f, const struct tree_index *x) {
        int r;

        r = tree_index_each_stack(x, write_index_line, f);
        if (r < 0)
                return r;
        return ferror(f) ? -EIO : 0;
}

int render_folded(FILE *f, struct sample_tree *t) {
        int r;

        r = sample_tree_each_stack(t, write_line, f);
        if (r < 0)
                return r;
        return ferror(f) ? -EIO : 0;
}
