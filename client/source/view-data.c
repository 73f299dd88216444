/* What a view reads (struct view_data): a tree index built from a source's tree, for a kind
 * of source without a cache of them (and for a SQLite store's filtered trees), and its freeing. */
#include "source-internal.h"

void view_data_done(struct view_data *v) {
        v->index = tree_index_free(v->index);
        v->inverted = sample_tree_free(v->inverted);
        v->tree = sample_tree_free(v->tree);
}

int view_data_build(struct source *s, const struct store_filter *f, bool inverted, struct view_data *ret) {
        _cleanup_(view_data_done) struct view_data v = {};
        int r;

        r = s->ops->load_tree(s, f, NULL, &v.tree);
        if (r >= 0 && inverted)
                r = sample_tree_invert(v.tree, &v.inverted);
        if (r >= 0)
                r = tree_index_build(inverted ? v.inverted : v.tree, &v.index);
        if (r < 0)
                return r;
        *ret = v;
        v = (struct view_data) {};
        return 0;
}
