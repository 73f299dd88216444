/* The collector's events: see collector-events.c. */
#pragma once

#include "collector-internal.h"

/* A period drawn uniformly from [P/2, 3P/2], mean P (paper §7.1); P itself without jitter. */
uint64_t draw_period(struct collector *c, uint64_t p);

/* Adds an event of ROLE for RESOURCE (NO_RESOURCE: the side band) to the events to open, with
 * its kernel PERIOD; *ret (if not NULL) points at it until the next add. 0 or -ENOMEM. */
int add_event(struct collector *c, unsigned resource, enum event_role role, uint32_t type, uint64_t config,
              uint64_t period, struct cevent **ret);

/* Adds tracepoint NAME ("syscalls:sys_exit_read") for RESOURCE, each sample's value read from
 * FIELD of its raw data (NULL: none). 0, tracepoint_id()'s or tracepoint_field()'s errors, or
 * -EBADMSG for a field neither 4 nor 8 bytes wide. */
int add_tracepoint(struct collector *c, unsigned resource, enum event_role role, const char *name,
                   const char *field, uint64_t period);

/* Opens event EV on target ID, CPU, into that CPU's sample ring or, for the SIDE_BAND, its side
 * band ring: the first event opened into a ring maps it (the dummy events of open_rings()).
 * Returns 0 or a negative errno. */
int open_one(struct collector *c, unsigned ev, const struct targets *t, pid_t id_, int cpu, bool side_band);

/* Whether errno R from perf_event_open() means "not on this machine", not a failure. */
bool unsupported(int r);

/* Of two context-switch software events on one task only the one opened last gets samples (seen
 * on 6.18, with perf itself too), so context-switches and real-time share real-time's: each of
 * its switch samples also counts toward context-switches, through an interval counter that
 * keeps context-switches' own period. */
void share_context_switches(struct collector *c);

/* The side band's rings, opened before any resource: per target and CPU a dummy event that
 * carries the side band (MMAP2, COMM, FORK/EXIT) into the side band's ring. Each resource's
 * sample ring is mapped by its first event on the CPU (a ring outlives a resource closed again:
 * the mapping holds it). */
int open_rings(struct collector *c, const struct targets *t);

/* A resource back to fixed periods: BPF could not be used (no CAP_BPF, an old kernel). */
void drop_bpf(struct collector *c, unsigned res);

/* How each resource's intervals are drawn: page faults, context switches and system calls by a
 * counting program at raw tracepoints (a geometric countdown per CPU; unless every_event), other
 * counted events at kernel period 1, the program keeping 1 in P; a clock of REDRAW_MIN_NS or
 * more redrawn at each sample (one CPU's, gated to T's threads unless T is every task), another
 * at P / CLOCK_SPLIT, keeping 1 in CLOCK_SPLIT; a hardware event at P / 16; a resource's kept samples come through
 * an output event per CPU. A tracepoint's every-event program cannot keep to a cgroup T: fixed
 * periods there. Without BPF, periods stay fixed. Also sizes the resources' rings. */
void plan_sampling(struct collector *c, const struct targets *t);

/* A BPF resource's output events, and its programs at tracepoints, kept to T's cgroup or threads
 * (and what they start) unless T is every task. 0, or a negative errno with bpf_failed set. */
int open_bpf(struct collector *c, unsigned res, const struct targets *t);

/* alloc-* without the preloaded library (resource RES, PERIOD bytes or calls): its maps, the
 * period its program draws, and an output event per CPU; the program and the uprobes come with
 * start_alloc_probe(). Returns 0 or a negative errno (-ERANGE: a period too long, -EPERM). */
int add_alloc_probed(struct collector *c, unsigned res, uint64_t period);

/* The allocation program over the active alloc-* resources added so, and the uprobes of T's
 * processes: those of a thread or cgroup target now, in this thread (a process that cannot be
 * measured is an error, said in WHY, WHY_SIZE bytes), every task's by the prober, for the units
 * asked (config.alloc_units). The processes started later are probed as their records tell
 * (collector-tasks.c). Returns 0 or a negative errno. */
int start_alloc_probe(struct collector *c, const struct targets *t, char *why, size_t why_size);

/* Doubles resource RES's thinning: it lost samples, or the consumer is behind. */
void thin_pressure(struct collector *c, unsigned res);

/* The reader thread's sample hook: counts a redrawn clock's (plan_sampling()) overflows as its
 * samples arrive, and marks it due a redraw every REDRAW_EVERY of them; other samples pass. */
void redraw_clock(void *userdata, const struct perf_event_header *h);
/* At the end of the reader's pass: draws the next intervals of every clock due, from its latest
 * overflow. */
void redraw_clocks(struct collector *c);
/* The weight of redrawn clock event ID's sample at TIME: the thinning factor its interval was
 * drawn with, times the intervals it stands for (1, and those a late reader missed after it)
 * (the consumer's, in sample order). */
uint64_t redraw_weight(struct collector *c, uint64_t id, uint64_t time);

/* The reader thread's pressure hook (ring_reader_set_pressure()): resource CLASS holds half the
 * queue, or the queue is full and the resource with the highest rate is thinned. */
void on_pressure(void *userdata, unsigned class);

/* Counts a sample of resource RES taken at TIME_NS (or LOST samples lost) toward its overload
 * thinning, and tells the kernel when that changes. */
void thin_note(struct collector *c, unsigned res, uint64_t time_ns, uint64_t lost);
