/* speedscope's file format (https://www.speedscope.app/file-format-schema.json, defined by
 * src/lib/file-format-spec.ts in jlfwong/speedscope): frames shared by all profiles, then one
 * sampled profile per tree (per resource), each sample a stack of frame indexes, root first, with
 * a weight:
 *
 *     {"$schema": "https://www.speedscope.app/file-format-schema.json",
 *      "shared": {"frames": [{"name": "main"}, {"name": "f"}]},
 *      "profiles": [
 *       {"type": "sampled", "name": "cpu-time (1 ms of CPU time)", "unit": "none",
 *        "startValue": 0, "endValue": 30,
 *        "samples": [[0, 1]],
 *        "weights": [30]}],
 *      "name": "cppd", "activeProfileIndex": 0, "exporter": "cppd@0.1.0"}
 *
 * A sample is a distinct stack with self hits, weighed in gticks (hits times the period; a period
 * of 0, unknown, counts a hit as one gtick) so that the numbers are the resource's own, whose
 * unit the profile's name states: speedscope's units are only times and bytes. Frames are
 * numbered in order of first sight over the trees, each walked in sample_tree_each_stack() order,
 * as its samples are, so the same trees give the same bytes whatever order samples came in. The
 * trees are read as their indexes are walked (tree_index_each_stack(), the same order), never
 * loaded: a cached or laid-out index of a store's tree, or one built from a loaded tree. Passes
 * over each: the first names the frames, which come before the profiles in the file; then, per
 * profile, its names' frames found again, its samples and its weights. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "name-table.h"

struct speedscope_walk {
        FILE *f;
        struct name_table *frames;
        uint32_t *frame_of; /* by name id of the tree walked: frame index + 1; 0: not seen yet */
        uint64_t gticks;    /* per hit */
        bool first;         /* no sample written yet in this profile */
};

static int add_frames(const struct tree_index *x, const uint32_t *path, size_t depth, uint64_t self,
                      void *userdata) {
        struct speedscope_walk *w = userdata;

        for (size_t i = 0; i < depth; i++) {
                const char *name = sample_tree_name(x->header, path[i]);
                int64_t id;

                if (w->frame_of[path[i]] != 0)
                        continue;
                id = name_table_intern(w->frames, name, strlen(name));
                if (id < 0)
                        return (int) id;
                w->frame_of[path[i]] = id + 1;
        }
        return 0;
}

static int write_sample(const struct tree_index *x, const uint32_t *path, size_t depth, uint64_t self,
                        void *userdata) {
        struct speedscope_walk *w = userdata;

        fputs(w->first ? "[" : ", [", w->f);
        w->first = false;
        for (size_t i = 0; i < depth; i++)
                fprintf(w->f, "%s%" PRIu32, i ? ", " : "", w->frame_of[path[i]] - 1);
        fputc(']', w->f);
        return 0;
}

static int write_weight(const struct tree_index *x, const uint32_t *path, size_t depth, uint64_t self,
                        void *userdata) {
        struct speedscope_walk *w = userdata;

        fprintf(w->f, "%s%" PRIu64, w->first ? "" : ", ", self * w->gticks);
        w->first = false;
        return 0;
}

/* Points W's frame_of at X's names: every name of X is a frame by then (add_frames()). */
static int frames_of(struct speedscope_walk *w, const struct tree_index *x) {
        free(w->frame_of);
        w->frame_of = calloc((size_t) x->n_names + 1, sizeof *w->frame_of);
        return w->frame_of ? 0 : -ENOMEM;
}

static int write_profile(FILE *f, const struct tree_index *x, struct speedscope_walk *w) {
        const struct sample_tree *t = x->header;
        const char *resource = t->info.resource ?: "", *unit = t->info.unit ?: "";
        int r;

        r = frames_of(w, x);
        if (r >= 0) /* finds them again: the names seen, each once */
                r = tree_index_each_stack(x, add_frames, w);
        if (r < 0)
                return r;
        w->gticks = t->info.period ?: 1;
        fputs("  {\"type\": \"sampled\", \"name\": ", f);
        if (*unit) {
                _cleanup_free_ char *name = NULL;

                if (asprintf(&name, "%s (%s)", resource, unit) < 0)
                        return -ENOMEM;
                json_write_string(f, name);
        } else
                json_write_string(f, resource);
        fprintf(f,
                ", \"unit\": \"none\",\n   \"startValue\": 0, \"endValue\": %" PRIu64 ",\n"
                "   \"samples\": [",
                t->total * w->gticks);
        w->first = true;
        r = tree_index_each_stack(x, write_sample, w);
        if (r < 0)
                return r;
        fputs("],\n   \"weights\": [", f);
        w->first = true;
        r = tree_index_each_stack(x, write_weight, w);
        if (r < 0)
                return r;
        fputs("]}", f);
        return 0;
}

int render_speedscope_index(FILE *f, const struct tree_index *const *xs, size_t n) {
        _cleanup_(name_table_freep) struct name_table *frames = name_table_new();
        struct speedscope_walk w = { .f = f, .frames = frames };
        int r = 0;

        if (!frames)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = frames_of(&w, xs[i]);
                if (r >= 0)
                        r = tree_index_each_stack(xs[i], add_frames, &w);
        }
        if (r < 0)
                goto finish;

        fputs("{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
              " \"shared\": {\"frames\": [",
              f);
        for (size_t i = 0; i < name_table_size(frames); i++) {
                fputs(i ? ",\n   {\"name\": " : "\n   {\"name\": ", f);
                json_write_string(f, name_table_get(frames, i));
                fputc('}', f);
        }
        fputs("]},\n \"profiles\": [", f);
        for (size_t i = 0; i < n; i++) {
                fputs(i ? ",\n" : "\n", f);
                r = write_profile(f, xs[i], &w);
                if (r < 0)
                        goto finish;
        }
        fputs("],\n \"name\": \"cppd\", \"activeProfileIndex\": 0,"
              " \"exporter\": \"cppd@" CPPD_VERSION "\"}\n",
              f);
        r = ferror(f) ? -EIO : 0;
finish:
        free(w.frame_of);
        return r;
}

int render_speedscope(FILE *f, struct sample_tree *const *trees, size_t n) {
        _cleanup_free_ struct tree_index **xs = calloc(n + 1, sizeof *xs);
        int r = 0;

        if (!xs)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = tree_index_build(trees[i], &xs[i]);
        if (r >= 0)
                r = render_speedscope_index(f, (const struct tree_index *const *) xs, n);
        for (size_t i = 0; i < n; i++)
                tree_index_free(xs[i]);
        return r;
}
