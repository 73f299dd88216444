/* The collector's stacks: see collector-stacks.c. */
#pragma once

#include "collector-internal.h"

/* Builds sample S's stack for thread T, with an optional synthetic LEAF frame (a system
 * call's name), and returns its trie node, or a negative errno. */
int64_t sample_stack(struct collector *c, const struct record_sample *s, struct thread *t, int64_t leaf);

/* Bounds the caches of a long-running collector, once a flush has emptied the aggregates that
 * refer to trie nodes: a trie past COLLECTOR_MAX_NODES starts over (and with it the frames it
 * refers to, past COLLECTOR_MAX_FRAMES), and at most COLLECTOR_MAX_MODULES stay loaded. */
void trim(struct collector *c);
