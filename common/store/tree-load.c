/* The steps both loaders of sample trees take, written once so that a tree loaded from a SQLite
 * store (store-read.c) and the same samples loaded from the fleet store (ch-read.c) cannot
 * differ: how a frame is labelled, how a stack is mapped onto the tree frame by frame, how a row
 * of samples is weighted and added. What differs between the stores, how rows are read and how
 * each distinct frame and stack is remembered, stays with each loader.
 *
 * A frame is labelled once per load: its name shown demangled (demangle.c) unless the filter asks
 * for the raw one, its label at the chosen granularity interned, and --focus/--ignore/--hide
 * matched against the label once. Names are demangled once per function where the loader has
 * dense function ids (SQLite's), else once per distinct frame. A stack carries what its frames
 * said (focus, ignore, frames kept, unknown frames), so that a row of samples costs a lookup and
 * a few additions. Runs sampled at different periods are merged by weighting each row's hits by
 * period / g, g the gcd of the periods: the tree counts samples of g gticks. */
#include "tree-load.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "math-util.h"
#include "store-rename.h"

int tree_load_init(struct tree_load *l, const struct store_filter *f, struct sample_tree *tree,
                   size_t n_functions) {
        *l = (struct tree_load) {
                .f = f,
                .tree = tree,
                .g = 1,
                .demangle = !f->raw_names && f->by != STORE_BY_MODULE,
        };
        if (!l->demangle || n_functions == 0)
                return 0;
        l->shown = name_table_new();
        l->shown_by_function = malloc(n_functions * sizeof *l->shown_by_function);
        if (!l->shown || !l->shown_by_function)
                return -ENOMEM;
        for (size_t i = 0; i < n_functions; i++)
                l->shown_by_function[i] = NAME_NONE;
        l->n_functions = n_functions;
        return 0;
}

void tree_load_done(struct tree_load *l) {
        l->shown = name_table_free(l->shown);
        l->shown_by_function = mfree(l->shown_by_function);
        l->n_functions = 0;
}

static const char *base_name(const char *path) {
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

/* Writes the label of a frame at granularity BY into BUF (SIZE bytes): "name", "name
 * (file.c:42)" (FILE may be NULL, LINE 0 and ADDRESS -1 when unknown), or the file name of MODULE
 * (NULL: "[unknown]"). Returns its length, cut to what BUF holds. */
static size_t frame_label(enum store_granularity by, const char *name, const char *file, int64_t line,
                          int64_t address, const char *module, char *buf, size_t size) {
        int n;

        switch (by) {
        case STORE_BY_LINE:
                if (file && line > 0)
                        n = snprintf(buf, size, "%s (%s:%lld)", name, base_name(file), (long long) line);
                else if (address >= 0)
                        n = snprintf(buf, size, "%s (+0x%llx)", name, (unsigned long long) address);
                else
                        n = snprintf(buf, size, "%s", name);
                break;
        case STORE_BY_MODULE:
                n = snprintf(buf, size, "%s", module ? base_name(module) : "[unknown]");
                break;
        case STORE_BY_FUNCTION:
        default:
                n = snprintf(buf, size, "%s", name);
                break;
        }
        return n < 0 ? 0 : (size_t) n < size ? (size_t) n : size - 1;
}

static bool matches(const regex_t *re, const char *s) {
        return re && regexec(re, s, 0, NULL, 0) == 0;
}

/* Sets *ret to the name FRAME is shown under: NAME itself when not mangled (C, most names: two
 * compares each time, no copy), else its demangled form, in BUF (SIZE bytes) or in l->shown.
 * Returns 0 or a negative errno. */
static int shown_name(struct tree_load *l, const struct tree_load_frame *frame, char *buf, size_t size,
                      const char **ret) {
        bool cached = frame->function < l->n_functions;
        size_t len;
        int64_t id;

        *ret = frame->name;
        if (!l->demangle || frame->unknown)
                return 0;
        if (cached && l->shown_by_function[frame->function] != NAME_NONE) {
                *ret = name_table_get(l->shown, l->shown_by_function[frame->function]);
                return 0;
        }
        len = demangle(frame->name, buf, size);
        if (len == 0)
                return 0;
        *ret = buf;
        if (!cached)
                return 0;
        id = name_table_intern(l->shown, buf, len);
        if (id < 0)
                return -ENOMEM;
        l->shown_by_function[frame->function] = id;
        return 0;
}

int tree_load_label(struct tree_load *l, const struct tree_load_frame *frame, struct tree_load_label *ret) {
        const struct store_filter *f = l->f;
        char label[8192], buf[DEMANGLE_NAME_MAX * 2];
        const char *name;
        size_t len;
        int64_t n;
        int r;

        r = shown_name(l, frame, buf, sizeof buf, &name);
        if (r < 0)
                return r;
        len = frame_label(f->by, name, frame->file, frame->line, frame->address, frame->module, label,
                          sizeof label);
        n = name_table_intern(l->tree->names, label, len);
        if (n < 0)
                return n == -EINVAL ? -EBADMSG : (int) n;
        /* pprof keeps both names of a function: its Function.system_name */
        if (name != frame->name && f->by == STORE_BY_FUNCTION) {
                r = sample_tree_set_label_raw(l->tree, n, frame->name);
                if (r < 0)
                        return r;
        }
        *ret = (struct tree_load_label) {
                .label = n,
                .module = frame->module_index,
                .unknown = frame->unknown,
                .skip = (f->fold_inline && frame->inlined) || matches(f->hide, label),
                .focus = matches(f->focus, label),
                .ignore = matches(f->ignore, label),
        };
        return 0;
}

int tree_load_label_chain(struct tree_load *l, const struct tree_load_frame *frame, bool located,
                          int64_t address, const struct store_name *chain, size_t n,
                          struct tree_load_label *ret) {
        for (size_t j = 0; j < n; j++) {
                struct tree_load_frame named = {
                        .name = chain[j].function,
                        .function = UINT32_MAX, /* no function id: demangled, not cached */
                        .file = located ? chain[j].file : NULL,
                        .line = located ? chain[j].line : 0,
                        .address = located ? address : -1,
                        .module = frame->module,
                        .module_index = frame->module_index,
                        .inlined = chain[j].inlined,
                };
                int r = tree_load_label(l, &named, &ret[j]);

                if (r < 0)
                        return r;
        }
        return 0;
}

int tree_load_push(struct tree_load *l, const struct tree_load_stack *parent,
                   const struct tree_load_label *label, struct tree_load_stack *ret) {
        struct tree_load_stack s = *parent;

        if (label->module != SAMPLE_TREE_NONE) {
                int r = sample_tree_set_label_module(l->tree, label->label, label->module);

                if (r < 0)
                        return r;
        }
        s.focus |= label->focus;
        s.ignore |= label->ignore;
        if (!label->skip) {
                /* A stored stack is a node of a trie: a child with a label no other frame has,
                 * below a node no other stored stack maps to, can be no node already made. */
                int64_t node = !s.shared && label->unique ?
                        sample_tree_add_child(l->tree, s.node, label->label) :
                        sample_tree_child(l->tree, s.node, label->label);

                if (node < 0)
                        return (int) node;
                s.node = node;
                s.shared |= !label->unique;
                s.frames++;
                s.unknown += label->unknown;
        }
        *ret = s;
        return 0;
}

int tree_load_add(struct tree_load *l, const struct tree_load_stack *s, uint64_t period, uint64_t hits,
                  uint64_t samples, double squares) {
        struct sample_tree_info *info = &l->tree->info;
        uint64_t w;

        /* pprof's filters: --focus keeps the stacks through a match, --ignore drops them. */
        if ((l->f->focus && !s->focus) || s->ignore)
                return 0;
        /* Writers keep a resource's gticks within STORE_MAX_GTICKS; a store written past that (by
         * hand, or by an older cppd) is refused here rather than summed with a wrap. Frame counts
         * only weigh the header's share: they saturate. */
        if (__builtin_mul_overflow(hits, period / l->g, &w) ||
            __builtin_add_overflow(l->total, w, &l->total) || l->total > INT64_MAX)
                return -EOVERFLOW;
        sample_tree_add_hits(l->tree, s->node, w);
        info->samples = saturating_add(info->samples, samples);
        /* In the tree's hits, which are the run's times period / g. */
        info->hits_squared += squares * (double) (period / l->g) * (double) (period / l->g);
        info->frames = saturating_add(info->frames, saturating_mul(s->frames, w));
        info->frames_unsymbolized = saturating_add(info->frames_unsymbolized, saturating_mul(s->unknown, w));
        return 1;
}
