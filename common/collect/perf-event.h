/* perf_event_open and what surrounds it: naming events (perf software events, tracepoints,
 * libpfm4 hardware events), tracefs, and the words that turn an errno into advice. */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Calls perf_event_open(2) with O_CLOEXEC. Returns the fd or a negative errno. */
int perf_event_open_fd(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd, unsigned long flags);

/* Advice for a perf_event_open() error, naming the sysctl or capability that matters:
 * -EACCES/-EPERM (perf_event_paranoid, CAP_PERFMON), -ENOENT/-EOPNOTSUPP/-ENODEV (not
 * supported here), -ESRCH (no such process), -EMFILE (open files), -EINVAL, -E2BIG. */
const char *perf_event_hint(int r);

/* Finds the tracefs mount: /sys/kernel/tracing, else /sys/kernel/debug/tracing. Returns the
 * directory (static storage) or NULL if neither has events/. */
const char *tracefs_path(void);

/* Reads tracepoint NAME ("sys:event")'s id into *ret. Returns 0, -ENOENT if there is no such
 * tracepoint, -ENODEV if tracefs is not mounted, -EACCES, or -EINVAL for a malformed name. */
int tracepoint_id(const char *name, uint64_t *ret);

/* Finds FIELD in tracepoint NAME's format: its offset and size in the raw record. Returns 0,
 * -ENOENT (no such field or tracepoint), -ENODEV, -EACCES. */
int tracepoint_field(const char *name, const char *field, unsigned *ret_offset, unsigned *ret_size);

/* Sets ATTR's type and config for event NAME: a perf software event ("cpu-clock",
 * "page-faults", "cs", ...), a tracepoint ("sched:sched_switch"), or a libpfm4 name
 * ("cycles", "INST_RETIRED:ANY_P", "perf::PERF_COUNT_HW_CACHE_MISSES"). *ret_tracepoint is set
 * when it is a tracepoint. Returns 0, or -ENOENT when no scheme knows the name (-ENODEV:
 * tracefs missing for a "sys:event" name). */
int perf_event_name(const char *name, struct perf_event_attr *attr, bool *ret_tracepoint);

/* Encodes libpfm4 event NAME into ATTR (type, config, config1, config2). Returns 0, -ENOENT
 * if libpfm4 does not know it for this CPU, -EIO if libpfm4 cannot start. */
int pfm_event_encode(const char *name, struct perf_event_attr *attr);
