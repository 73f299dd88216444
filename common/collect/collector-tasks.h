/* The collector's tasks: see collector-tasks.c. */
#pragma once

#include "collector-internal.h"

/* Frees a value of the exec_units map (a unit name, or an EXEC_UNIT_* mark). */
void exec_unit_free(uint64_t v);

/* Frees P and what it owns; NULL is fine. */
void process_free(struct process *p);

/* Frees T and its kept stack. */
void thread_free(struct thread *t);

/* Forgets every cgroup the reader thread has seen. */
void forget_cgroups(struct collector *c);

/* The reader thread's hook: at an exec, learn the process's unit while it surely lives (systemd
 * moves a service's process into its cgroup before the exec), or that it has none. A loss
 * (PERF_RECORD_LOST) raises its resource's thinning (thin_pressure()). */
void on_exec_record(void *userdata, const struct perf_event_header *h);

/* The process PID, created if new; FROM_PROC reads its maps and name from /proc (attach, or a
 * process whose FORK we never saw). NULL: no memory. */
struct process *process_get(struct collector *c, uint32_t pid, bool from_proc);

/* Reads P's name, program, unit and executable mappings again from /proc, where a sample's
 * leaf PC falls outside the mappings known: at most every 10 ms a process, or once a second
 * after a read that left PC unmapped (a JIT's code) or found P gone. The side band's
 * records of an exec (COMM) and its MMAP2s may have been lost with a full ring, which would
 * leave the new program's code unnamed and out of its unit for its whole life (the LOST record
 * that says so comes later, with the ring's next record). A changed name or program is an exec:
 * a new process row. Returns 1 if read, 0 if not (too soon, P gone, offline), or -ENOMEM. */
int process_reread(struct collector *c, struct process *p, uint64_t pc);

/* The thread TID of process PID, created if new. NULL: no memory (or too many threads). */
struct thread *thread_get(struct collector *c, uint32_t pid, uint32_t tid);

/* Side-band records: a mapping, a name (and an exec), a fork or an exit. Each updates the
 * processes and threads it names; 0, -EBADMSG for a record that does not parse, or -ENOMEM. */
int handle_mmap2(struct collector *c, const struct perf_event_header *h);

int handle_comm(struct collector *c, const struct perf_event_header *h);

int handle_task(struct collector *c, const struct perf_event_header *h);

/* Forgets processes and threads that exited, once their hits are stored, and the units of
 * execs already handled. */
void reap(struct collector *c);
