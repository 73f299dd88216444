/* Folded stacks, the format of Brendan Gregg's stackcollapse tools, read by flamegraph.pl and by
 * `cppctl import --folded` (common/tree/folded.c), one stack a line, root first, then the hits of
 * samples that ended there:
 *
 *     main;invoice;db_get_property;db_read_record 22
 *
 * Also the stack walk the tree formats share (render_each_stack()): each visit sorts a node's
 * children by name in place on the walk's own stack, so the whole walk allocates twice and output
 * follows names, not the order in which samples came.
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

/* qsort() has no context argument in C11. */
static _Thread_local const struct sample_tree *sorting;

/* Descending, so that the first name is pushed last and popped first. */
static int name_cmp_desc(const void *a, const void *b) {
        const struct sample_tree_node *x = &sorting->nodes[*(const uint32_t *) a];
        const struct sample_tree_node *y = &sorting->nodes[*(const uint32_t *) b];

        return strcmp(sample_tree_name(sorting, y->name), sample_tree_name(sorting, x->name));
}

int render_each_stack(const struct sample_tree *t,
                      int (*fn)(const struct sample_tree *t, uint32_t node, const uint32_t *path,
                                size_t depth, void *userdata),
                      void *userdata) {
        _cleanup_free_ uint32_t *stack = NULL, *path = NULL;
        uint32_t max_depth = 0;
        size_t depth = 0;
        int r;

        for (size_t i = 0; i < t->n_nodes; i++)
                max_depth = MAX(max_depth, t->nodes[i].depth);
        stack = malloc(t->n_nodes * sizeof *stack); /* each node is pushed once */
        path = malloc((max_depth + 1) * sizeof *path);
        if (!stack || !path)
                return -ENOMEM;

        stack[depth++] = SAMPLE_TREE_ROOT;
        while (depth > 0) {
                uint32_t node = stack[--depth];
                const struct sample_tree_node *n = &t->nodes[node];
                size_t k = 0;

                /* Pre-order: path[0..depth-1) still holds this node's ancestors. */
                if (node != SAMPLE_TREE_ROOT)
                        path[n->depth - 1] = n->name;
                if (n->self > 0) {
                        r = fn(t, node, path, n->depth, userdata);
                        if (r < 0)
                                return r;
                }
                for (uint32_t c = n->first_child; c != SAMPLE_TREE_NONE; c = t->nodes[c].next_sibling)
                        stack[depth + k++] = c;
                sorting = t;
                qsort(stack + depth, k, sizeof *stack, name_cmp_desc);
                sorting = NULL;
                depth += k;
        }
        return 0;
}

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

int render_folded(FILE *f, struct sample_tree *t) {
        int r;

        r = render_each_stack(t, write_line, f);
        if (r < 0)
                return r;
        return ferror(f) ? -EIO : 0;
}
