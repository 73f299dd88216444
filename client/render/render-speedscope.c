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
 * as its samples are, so the same trees give the same bytes whatever order samples came in. Two
 * passes: the first names the frames, which come before the profiles in the file. */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "name-table.h"

struct speedscope_walk {
        FILE *f;
        struct name_table *frames;
        uint64_t gticks; /* per hit */
        bool first;      /* no sample written yet in this profile */
};

static int add_frames(const struct sample_tree *t, uint32_t node, const uint32_t *path, size_t depth,
                      void *userdata) {
        struct speedscope_walk *w = userdata;

        for (size_t i = 0; i < depth; i++) {
                const char *name = sample_tree_name(t, path[i]);
                int64_t id = name_table_intern(w->frames, name, strlen(name));

                if (id < 0)
                        return (int) id;
        }
        return 0;
}

static int write_sample(const struct sample_tree *t, uint32_t node, const uint32_t *path, size_t depth,
                        void *userdata) {
        struct speedscope_walk *w = userdata;

        fputs(w->first ? "[" : ", [", w->f);
        w->first = false;
        for (size_t i = 0; i < depth; i++)
                fprintf(w->f, "%s%" PRIu32, i ? ", " : "",
                        name_table_find(w->frames, sample_tree_name(t, path[i])));
        fputc(']', w->f);
        return 0;
}

static int write_weight(const struct sample_tree *t, uint32_t node, const uint32_t *path, size_t depth,
                        void *userdata) {
        struct speedscope_walk *w = userdata;

        fprintf(w->f, "%s%" PRIu64, w->first ? "" : ", ", t->nodes[node].self * w->gticks);
        w->first = false;
        return 0;
}

static int write_profile(FILE *f, struct sample_tree *t, struct speedscope_walk *w) {
        const char *resource = t->info.resource ?: "", *unit = t->info.unit ?: "";
        int r;

        sample_tree_weigh(t);
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
        r = sample_tree_each_stack(t, write_sample, w);
        if (r < 0)
                return r;
        fputs("],\n   \"weights\": [", f);
        w->first = true;
        r = sample_tree_each_stack(t, write_weight, w);
        if (r < 0)
                return r;
        fputs("]}", f);
        return 0;
}

int render_speedscope(FILE *f, struct sample_tree *const *trees, size_t n) {
        _cleanup_(name_table_freep) struct name_table *frames = name_table_new();
        struct speedscope_walk w = { .f = f, .frames = frames };
        int r;

        if (!frames)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                r = sample_tree_each_stack(trees[i], add_frames, &w);
                if (r < 0)
                        return r;
        }

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
                r = write_profile(f, trees[i], &w);
                if (r < 0)
                        return r;
        }
        fputs("],\n \"name\": \"cppd\", \"activeProfileIndex\": 0,"
              " \"exporter\": \"cppd@" CPPD_VERSION "\"}\n",
              f);
        return ferror(f) ? -EIO : 0;
}
