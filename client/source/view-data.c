/* What a view reads (struct view_data): a tree index built from a source's tree, for a kind
 * of source without a cache of them (and for a SQLite store's filtered trees), and its freeing.
 * An upward view's index is made from the downward one (tree_index_invert()). */
#include "source-internal.h"

void view_data_done(struct view_data *v) {
        v->index = tree_index_free(v->index);
        v->tree = sample_tree_free(v->tree);
}

int view_data_build(struct source *s, const struct store_filter *f, bool inverted, struct view_data *ret) {
        _cleanup_(view_data_done) struct view_data v = {};
        int r;

        r = s->ops->load_tree(s, f, NULL, &v.tree);
        if (r >= 0)
                r = tree_index_build(v.tree, &v.index);
        if (r >= 0 && inverted) {
                /* from the downward index, without an inverted sample tree (tree-index-invert.c);
                 * the inverted index holds its own header: the tree goes */
                r = tree_index_invert(take_ptr(&v.index), -1, &v.index);
                v.tree = sample_tree_free(v.tree);
        }
        if (r < 0)
                return r;
        *ret = v;
        v = (struct view_data) {};
        return 0;
}
