/* The paper's text format (§4, §4.4, §7.2): a header naming the view and the resource, the
 * sample count and period in gticks, the format line, then one line per entry between dashed
 * rules:
 *
 *     Downward Call Path Profile for resource: page-faults
 *     9950 samples, sampled every 10 gticks (1 gtick = 1 page fault) on average, at random; 0 samples lost
 *     format: usage_fraction (call_path) [#raw_samples ±95%]
 *     -----------------------------------------------------
 *     0.9989 (main) [9939 ±7]
 *     0.7132 (main uniquify_db) [7096 ±89]
 *
 * Fractions are of all hits of the resource, as in the paper; entries below the threshold are
 * counted in a closing line instead of shown. The ± is the half-width of a 95% interval on the
 * hits (sampling error: profile_hits_error()), so that a reader sees which differences mean
 * something. The counts are the paper's raw samples while each sample is a hit; once hits are
 * weighted (thinning, merged periods: "10063 hits in 880 samples") the format line says #hits,
 * which is what is printed (render_count_label()). */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RULE "-----------------------------------------------------"

const char *render_view_title(enum profile_kind kind) {
        switch (kind) {
        case PROFILE_DOWN:
                return "Downward Call Path Profile";
        case PROFILE_UP:
                return "Upward Call Path Profile";
        case PROFILE_FUNCTION:
                return "Body+Descendants Function Profile";
        case PROFILE_BODY:
                return "Body Profile";
        }
        return "Profile";
}

const char *render_count_label(const struct sample_tree *t) {
        return t->info.samples == t->total ? "#raw_samples" : "#hits";
}

void render_text_facts(FILE *f, const struct sample_tree *t) {
        const struct sample_tree_info *i = &t->info;

        if (i->samples == t->total)
                fprintf(f, "%" PRIu64 " samples", t->total);
        else
                fprintf(f, "%" PRIu64 " hits in %" PRIu64 " samples", t->total, i->samples);
        if (i->period)
                fprintf(f, ", sampled every %" PRIu64 " gticks (1 gtick = %s)%s", i->period, i->unit,
                        i->periods_fixed          ? "; periods fixed: may alias" :
                                i->periods_random ? " on average, at random" :
                                                    "");
        if (i->thinned > 1)
                fprintf(f, "; thinned to 1 in %" PRIu64 " under load", i->thinned);
        fprintf(f, "; %" PRIu64 " samples lost", i->lost);
        if (i->frames)
                fprintf(f, "; %.1f%% of frames unsymbolized",
                        100.0 * (double) i->frames_unsymbolized / (double) i->frames);
        if (i->frames_named_later)
                fprintf(f, "; named later: %" PRIu64 " frame%s from %" PRIu64 " module%s",
                        i->frames_named_later, i->frames_named_later == 1 ? "" : "s", i->modules_named_later,
                        i->modules_named_later == 1 ? "" : "s");
        fputc('\n', f);
        if (i->names_note)
                fprintf(f, "%s\n", i->names_note);
        if (i->collect_note)
                fprintf(f, "%s\n", i->collect_note);
        if (i->python_note)
                fprintf(f, "%s\n", i->python_note);
}

void render_text_header(FILE *f, const char *title, const struct sample_tree *t, const char *format) {
        fprintf(f, "%s for resource: %s\n", title, t->info.resource);
        render_text_facts(f, t);
        fprintf(f, "format: %s\n%s\n", format, RULE);
}

/* WHAT names one entry; a plural "s" is added when needed. */
int render_text_finish(FILE *f, size_t omitted, bool at_least, double threshold, const char *what) {
        fprintf(f, "%s\n", RULE);
        if (omitted)
                fprintf(f, "(%s%zu %s%s below the threshold %g not shown)\n", at_least ? "at least " : "",
                        omitted, what, omitted == 1 && !at_least ? "" : "s", threshold);
        return ferror(f) ? -EIO : 0;
}

int render_text_profile(FILE *f, const struct profile *p, double threshold) {
        bool paths = p->kind == PROFILE_DOWN || p->kind == PROFILE_UP;
        size_t omitted = p->n_omitted;
        char format[128];

        snprintf(format, sizeof format, "usage_fraction %s [%s ±95%%]",
                 paths ? "(call_path)" : "function_name", render_count_label(p->tree));
        render_text_header(f, render_view_title(p->kind), p->tree, format);
        for (size_t i = 0; i < p->n_entries; i++) {
                const struct profile_entry *e = &p->entries[i];
                const uint32_t *names = profile_path(p, e);
                double fraction = profile_fraction(p, e->hits);

                if (fraction < threshold) {
                        omitted++;
                        continue;
                }
                fprintf(f, "%.4f %s", fraction, paths ? "(" : "");
                for (uint32_t j = 0; j < e->len; j++)
                        fprintf(f, "%s%s", j ? " " : "", sample_tree_name(p->tree, names[j]));
                fprintf(f, "%s [%" PRIu64 " ±%.0f]\n", paths ? ")" : "", e->hits,
                        ceil(profile_tree_error(p->tree, e->hits, p->total)));
        }
        return render_text_finish(f, omitted, p->omitted_partial, threshold,
                                  paths ? "call path" : "function");
}

struct text_tree {
        FILE *f;
        double threshold;
        size_t omitted;
};

static int text_tree_line(const struct tree_index *x, const struct tree_index_drawn *d, void *userdata) {
        struct text_tree *w = userdata;
        uint64_t weight = x->nodes[d->node].weight, total = x->header->total;
        double fraction = total ? (double) weight / (double) total : 0.0;

        if (d->depth == 0)
                return 0;
        if (fraction < w->threshold) {
                w->omitted++;
                return 1; /* and its subtree: weights only shrink below */
        }
        fprintf(w->f, "%*s%s (%.4f) [%" PRIu64 "]\n", (int) (2 * (d->depth - 1)), "",
                sample_tree_name(x->header, x->nodes[d->node].name), fraction, weight);
        return 0;
}

int render_text_tree_index(FILE *f, const struct tree_index *x, double threshold) {
        struct text_tree w = { .f = f, .threshold = threshold };
        char format[64];
        int r;

        snprintf(format, sizeof format, "frame_designator (usage_fraction) [%s]",
                 render_count_label(x->header));
        render_text_header(f, "Sample Tree Profile", x->header, format);
        r = tree_index_each_drawn(x, text_tree_line, NULL, &w);
        if (r < 0)
                return r;
        return render_text_finish(f, w.omitted, false, threshold, "subtree");
}

int render_text_tree(FILE *f, struct sample_tree *t, double threshold) {
        _cleanup_(tree_index_freep) struct tree_index *x = NULL;
        int r;

        r = tree_index_build(t, &x);
        return r < 0 ? r : render_text_tree_index(f, x, threshold);
}
