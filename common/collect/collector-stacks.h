/* The collector's stacks: see collector-stacks.c. */
#pragma once

#include "collector-internal.h"

/* Builds sample S's stack for thread T, with an optional synthetic LEAF frame (a system
 * call's name), and returns its trie node, or a negative errno. */
int64_t sample_stack(struct collector *c, const struct record_sample *s, struct thread *t, int64_t leaf);

/* Appends the frames of user address PC (innermost first) to the stack at *n. Returns 1 if they
 * come from a module (the same PC in the same mappings gives the same frames), 0 if not (a JIT
 * map may be read anew, an unknown address become known), or a negative errno. */
int stack_add_user_pc(struct collector *c, struct process *p, uint64_t pc, size_t *n);

/* In pc_frames: a PC whose frames are not its own every time (a JIT's, Python's). */
#define STEP_UNSTABLE 0x8000
static_assert(COLLECTOR_MAX_STACK < STEP_UNSTABLE, "a PC's count of frames stays below the flag");

/* Bounds the caches of a long-running collector, once a flush has emptied the aggregates that
 * refer to trie nodes: a trie past COLLECTOR_MAX_NODES starts over (and with it the frames it
 * refers to, past COLLECTOR_MAX_FRAMES), and at most COLLECTOR_MAX_MODULES stay loaded. */
void trim(struct collector *c);
