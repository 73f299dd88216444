/* Random sampling in the kernel: a tiny BPF program on each sampling event keeps an overflow with
 * a probability held in a map, so that the intervals between samples are random (paper §7.1) and
 * the rate can be thinned under load without reopening anything. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cleanup.h"

struct sampling_bpf;

/* Creates the probability map of one resource (keep every overflow until told otherwise).
 * Returns 0 and sets *ret, or a negative errno: -EPERM without CAP_BPF (or CAP_SYS_ADMIN),
 * -ENOSYS without bpf(), -ENOMEM. */
int sampling_bpf_new(struct sampling_bpf **ret);
struct sampling_bpf *sampling_bpf_free(struct sampling_bpf *s);
DEFINE_CLEANUP(struct sampling_bpf *, sampling_bpf_free);

/* Attaches the resource's BPF_PROG_TYPE_PERF_EVENT program (loaded on first use) to perf software
 * or hardware event PERF_FD (PERF_EVENT_IOC_SET_BPF): it runs at each overflow, before the sample
 * is written. Returns 0, or a negative errno (-EPERM, -EINVAL from an old kernel). */
int sampling_bpf_attach(struct sampling_bpf *s, int perf_fd);

/* Attaches the resource's BPF_PROG_TYPE_TRACEPOINT program to tracepoint ID, through a holder
 * event of our own kept until sampling_bpf_free(): it runs at each hit of the tracepoint, before
 * the hit is counted, for every perf event on it (see sampling-bpf.c). Returns 0 or a negative
 * errno. */
int sampling_bpf_hold_tracepoint(struct sampling_bpf *s, uint64_t id);

/* Keeps one overflow in ONE_IN (at least 1), drawn independently per overflow
 * (bpf_get_prandom_u32). Returns 0 or a negative errno. */
int sampling_bpf_set_keep(struct sampling_bpf *s, uint64_t one_in);

/* Whether BPF sampling can work here: a probe map can be created. Returns 0, or the errno that
 * stopped it. Cached after the first call. */
int sampling_bpf_supported(void);
