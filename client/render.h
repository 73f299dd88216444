/* Renderers: one file each. They write to F and return 0 or -errno (-EIO on a write error). */
#pragma once

#include <stdio.h>

#include "profile.h"
#include "sample-tree.h"

enum render_format {
        RENDER_TEXT,            /* the paper's format */
        RENDER_JSON,
};

/* THRESHOLD is a fraction of the total: entries below it are left out (and counted). */
int render_text_profile(FILE *f, const struct profile *p, double threshold);
int render_text_tree(FILE *f, struct sample_tree *t, double threshold);

int render_json_profile(FILE *f, const struct profile *p, double threshold);
int render_json_tree(FILE *f, struct sample_tree *t, double threshold);

/* Writes S as a JSON string literal, escaping what JSON requires and replacing bytes that are
 * not UTF-8 with U+FFFD. */
void json_write_string(FILE *f, const char *s);

/* Children of NODE sorted by weight (most first), ties by name; *ret is malloc()ed (possibly
 * NULL when there are none). Returns how many, or -ENOMEM. Shared by the tree renderers. */
int render_sorted_children(const struct sample_tree *t, uint32_t node, uint32_t **ret);
