/* The collector's aggregate: see collector-aggregate.c. */
#pragma once

#include "collector-internal.h"

/* The start (unix seconds) of the time bucket of TIME_NS (CLOCK_MONOTONIC). */
int64_t bucket_of(struct collector *c, uint64_t time_ns);

/* Adds HITS (one sample) of RESOURCE by thread T at trie NODE to the bucket in memory; past
 * COLLECTOR_MAX_HELD keys they are counted lost. 0 or -ENOMEM. */
int aggregate(struct collector *c, unsigned resource, struct thread *t, uint32_t node, uint64_t hits,
              uint64_t time_ns);

/* Forgets the store ids the collector cached: those of rows retention may have deleted, or after
 * a ROLLBACK only those of rows the failed transaction inserted. Rows found or added by key
 * (frames, stacks, modules, resources) are simply looked up again; but a run, a process or a
 * thread forgotten while its row is still there would be inserted again, splitting the run in
 * two and its processes: after a failed flush (a full disk), or after each retention pass
 * (the first a minute after cppd starts). So those are forgotten only if their row is gone;
 * after a rollback, the rowids a transaction inserted are above every committed one, so the
 * first it got divides the two. */
void forget_ids(struct collector *c, bool rollback);

/* Writes the bucket in memory, and the runs, processes, threads, stacks and resources it refers
 * to, inside the store transaction the caller opened; FINAL ends the run. 0 or a negative errno. */
int flush_rows(struct collector *c, bool final);
