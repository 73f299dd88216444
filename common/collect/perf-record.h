/* Decoding perf records. Every length is checked against the record's size before use, and a
 * record that does not add up is -EBADMSG: ring buffers are written by the kernel, but a bug or
 * a corrupt perf.data must cost a sample, never a crash. */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>

/* The sample_type cppd asks for; PERF_SAMPLE_PERIOD is deliberately absent: with a fixed period
 * on software events and tracepoints it makes the kernel sample every event (env-probe.md). */
#define RECORD_SAMPLE_TYPE \
        (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN)

struct record_sample {
        uint64_t id; /* the event's id (PERF_EVENT_IOC_ID) */
        uint64_t ip;
        uint32_t pid, tid;
        uint64_t time; /* ns, perf clock */
        uint64_t nr;   /* callchain entries, with PERF_CONTEXT_* markers */
        const uint64_t *ips;
        uint32_t raw_size; /* PERF_SAMPLE_RAW: tracepoint data */
        const uint8_t *raw;
        uint64_t abi;         /* PERF_SAMPLE_REGS_USER: PERF_SAMPLE_REGS_ABI_*, 0: none */
        const uint64_t *regs; /* in the order of the bits of sample_regs_user */
        uint64_t stack_size;  /* PERF_SAMPLE_STACK_USER: bytes copied from the user sp */
        const uint8_t *stack;
        uint64_t dyn_size; /* of which valid */
};

/* Decodes a PERF_RECORD_SAMPLE of SAMPLE_TYPE with N_REGS user registers. Returns 0 or
 * -EBADMSG. The pointers point into the record. */
int record_parse_sample(const struct perf_event_header *h, uint64_t sample_type, unsigned n_regs,
                        struct record_sample *ret);

/* The id and time at the end of a non-sample record (sample_id_all with RECORD_SAMPLE_TYPE:
 * {pid, tid}, time, identifier). Returns 0 or -EBADMSG. */
int record_sample_id(const struct perf_event_header *h, uint64_t *ret_id, uint64_t *ret_time);

/* The time of any record: a sample's, or the sample_id of another. Returns 0 or -EBADMSG. */
int record_time(const struct perf_event_header *h, uint64_t *ret);

struct record_mmap2 {
        uint32_t pid, tid;
        uint64_t addr, len, pgoff;
        uint32_t prot, flags;
        bool has_build_id;
        uint8_t build_id_size;
        uint8_t build_id[20];
        uint32_t maj, min;
        uint64_t ino;
        const char *filename; /* NUL-terminated inside the record */
};
/* Decodes a PERF_RECORD_MMAP2 written for events that asked for build ids (attr.build_id) if
 * BUILD_IDS, else for events that did not. The kernel marks a record that carries a build id
 * with PERF_RECORD_MISC_MMAP_BUILD_ID, but it sets that bit in the header it shares among every
 * event it writes the mapping to, and never clears it: once an event that asked (perf record
 * --buildid-mmap, another profiler) has been written to, events that did not ask get the bit over
 * the device and inode. So the bit is believed only from events that asked. Returns 0 or
 * -EBADMSG. */
int record_parse_mmap2(const struct perf_event_header *h, bool build_ids, struct record_mmap2 *ret);

struct record_comm {
        uint32_t pid, tid;
        bool exec;
        const char *comm;
};
int record_parse_comm(const struct perf_event_header *h, struct record_comm *ret);

struct record_task { /* PERF_RECORD_FORK and PERF_RECORD_EXIT */
        uint32_t pid, ppid, tid, ptid;
        uint64_t time;
};
int record_parse_task(const struct perf_event_header *h, struct record_task *ret);

/* PERF_RECORD_LOST: the event id and how many records were lost. */
int record_parse_lost(const struct perf_event_header *h, uint64_t *ret_id, uint64_t *ret_lost);

/* A context switch record's thread (PERF_RECORD_SWITCH, sample_id_all) and whether it is a
 * switch out. */
int record_parse_switch(const struct perf_event_header *h, uint32_t *ret_pid, uint32_t *ret_tid,
                        bool *ret_out);
