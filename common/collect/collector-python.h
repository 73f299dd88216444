/* Python frames in the collector's stacks: see collector-python.c. */
#pragma once

#include "collector-internal.h"

/* Makes ready the maps the programs share, if the configuration asks for Python frames and the
 * kernel can (BTF names task_struct's thread.fsbase); if not, says why once and goes on with
 * native frames. */
void python_start(struct collector *c);
void python_stop(struct collector *c);

/* Makes resource RES's programs walk Python frames (its Python output event, opened per CPU in
 * its ring by open_bpf(), is the caller's to add). 0, or a negative errno (then the resource has
 * native frames only): -ENOENT without Python frames at all. */
int python_plan(struct collector *c, unsigned res);

/* A process seen in a sample at TIME, not yet with the collector's copy of its registration: the copy,
 * or (a process the prober never heard of: running at the start, mapping libpython later) a
 * look of its own, registering it with the walker if it is a CPython of a known layout. */
void python_process_seen(struct collector *c, struct process *p, uint64_t time);
/* A process that exited: no longer the walker's. */
void python_process_gone(struct collector *c, struct process *p);
/* A process that exec'd (the registry was changed when the record arrived: python_side_record()):
 * the collector's copy and its names go. */
void python_process_exec(struct collector *c, struct process *p);

/* The reader thread, at each side-band record as it arrives: an exec drops the old program's
 * registration and has the prober look at the new one (within milliseconds, as soon as its
 * glibc is mapped); a fork registers the child as its registered parent's copy. */
void python_side_record(struct collector *c, const struct perf_event_header *h);

/* Python output event ID was opened: its records are companions (python_prefetch()). */
void python_event_opened(struct collector *c, uint64_t id);

/* The reader thread, at each sample as it arrives: if H is a companion record, names its code
 * objects now, while they surely live (a module's code runs once and is freed at the end of its
 * import, milliseconds before the collector would read it). Returns whether it was one. */
bool python_prefetch(struct collector *c, const struct perf_event_header *h);

/* A companion record (S, of a Python output event): kept with its thread T until its sample. */
int python_companion(struct collector *c, struct thread *t, const struct record_sample *s);

/* Thread T's Python frames for its sample at TIME, or NULL: the companion written just before it. */
const struct sampling_bpf_py_header *python_take(struct collector *c, struct thread *t, uint64_t time);

/* Charges to resource RES what the Python counters gained since BEFORE (one sample's). */
void python_count(struct collector *c, unsigned res, const struct python_stats *before);
