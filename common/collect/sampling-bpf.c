/* Random sampling in the kernel.
 *
 * A fixed period locks onto any loop whose cycle divides it (paper §7.1). The kernel has no
 * random period, but it runs a BPF program attached to a perf event (PERF_EVENT_IOC_SET_BPF) and
 * drops what the program rejects:
 *
 *   - on a perf software event (page faults, context switches, cpu-clock) the program is of type
 *     BPF_PROG_TYPE_PERF_EVENT and runs at each overflow, before the sample (and its 16 KiB of
 *     stack) is written: returning 0 drops the sample;
 *   - on a tracepoint it must be of type BPF_PROG_TYPE_TRACEPOINT and runs at each hit, before
 *     the hit is counted: returning 0 means the event never happened for perf. That program is
 *     the tracepoint's, not the event's: it runs for every perf event on that tracepoint on the
 *     machine (perf record beside us sees the same thinning), and two collectors on one
 *     tracepoint compose their probabilities. The collector therefore keeps the kernel period at
 *     1 there and lets the program alone decide. Worse, an inherited event copies the program
 *     pointer of its parent, and when the child exits the kernel takes the program off the
 *     tracepoint (perf_event_detach_bpf_prog(), seen on 6.18: thinning stopped after the first
 *     child of `sh -c` exited). So the program is attached through a holder: a disabled
 *     tracepoint event on ourselves, never inherited, that lives as long as the resource.
 *
 * With the kernel period at 1 and each hit kept with probability 1/P, the intervals between
 * samples are independent and geometric with mean P: no lattice for a loop to lock onto. The
 * program is fourteen instructions, built here as an array and loaded with bpf(2): libbpf would
 * bring an ELF loader, BTF and a build-time compiler to load what fits on one screen.
 *
 *      r1 = &map; r2 = &key(0); r0 = map_lookup(r1, r2)    the threshold, shared by all CPUs
 *      if r0 == NULL: return 1
 *      r6 = *(u64 *) r0
 *      r0 = bpf_get_prandom_u32()
 *      return r0 < r6                                      keep with probability r6 / 2^32
 *
 * The threshold lives in a one-slot array map, so the collector changes the probability (the
 * overload thinning of collector-thinning) with one bpf(BPF_MAP_UPDATE_ELEM) and no reload. */
#include "sampling-bpf.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define KEEP_ALL (1ULL << 32)

#define MAX_HOLDERS 8

struct sampling_bpf {
        int map_fd;
        int prog_fd[2];           /* [0] PERF_EVENT, [1] TRACEPOINT; -1 until loaded */
        int holders[MAX_HOLDERS]; /* tracepoint events of our own that carry the program */
        unsigned n_holders;
};

static int sys_bpf(int cmd, union bpf_attr *attr) {
        long r = syscall(SYS_bpf, cmd, attr, sizeof *attr);

        return r < 0 ? -errno : (int) r;
}

static int map_create(void) {
        union bpf_attr a = {
                .map_type = BPF_MAP_TYPE_ARRAY,
                .key_size = sizeof(uint32_t),
                .value_size = sizeof(uint64_t),
                .max_entries = 1,
        };

        strncpy(a.map_name, "cppd_keep", sizeof a.map_name - 1);
        return sys_bpf(BPF_MAP_CREATE, &a);
}

int sampling_bpf_supported(void) {
        static int cached = 1;
        int fd;

        if (cached <= 0)
                return cached;
        fd = map_create();
        if (fd < 0)
                return cached = fd;
        close(fd);
        return cached = 0;
}

int sampling_bpf_new(struct sampling_bpf **ret) {
        struct sampling_bpf *s;
        int r;

        s = malloc(sizeof *s);
        if (!s)
                return -ENOMEM;
        *s = (struct sampling_bpf) { .map_fd = -1, .prog_fd = { -1, -1 } };
        s->map_fd = map_create();
        if (s->map_fd < 0) {
                r = s->map_fd;
                free(s);
                return r;
        }
        r = sampling_bpf_set_keep(s, 1);
        if (r < 0) {
                sampling_bpf_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

struct sampling_bpf *sampling_bpf_free(struct sampling_bpf *s) {
        if (!s)
                return NULL;
        for (unsigned i = 0; i < s->n_holders; i++)
                close(s->holders[i]);
        for (int i = 0; i < 2; i++)
                if (s->prog_fd[i] >= 0)
                        close(s->prog_fd[i]);
        if (s->map_fd >= 0)
                close(s->map_fd);
        free(s);
        return NULL;
}

int sampling_bpf_set_keep(struct sampling_bpf *s, uint64_t one_in) {
        uint32_t key = 0;
        uint64_t threshold = one_in <= 1 ? KEEP_ALL : (KEEP_ALL + one_in / 2) / one_in;
        union bpf_attr a = {
                .map_fd = (uint32_t) s->map_fd,
                .key = (uint64_t) (uintptr_t) &key,
                .value = (uint64_t) (uintptr_t) &threshold,
                .flags = BPF_ANY,
        };

        if (threshold == 0)
                threshold = 1; /* past 2^32 the program keeps 1 in 2^32: the finest it can */
        return sys_bpf(BPF_MAP_UPDATE_ELEM, &a);
}

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
        return (struct bpf_insn) { .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm };
}

static int prog_load(const struct sampling_bpf *s, enum bpf_prog_type type) {
        const struct bpf_insn prog[] = {
                /* *(u32 *)(r10 - 4) = 0: the key */
                insn(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, 0),
                insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0),
                insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4),
                /* r1 = the map (a 16-byte load of the map's fd, which the kernel resolves) */
                insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, s->map_fd),
                insn(0, 0, 0, 0, 0),
                insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem),
                /* no slot (cannot happen in an array): keep */
                insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 5, 0),
                insn(BPF_LDX | BPF_MEM | BPF_DW, BPF_REG_6, BPF_REG_0, 0, 0),
                insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_prandom_u32),
                insn(BPF_JMP | BPF_JLT | BPF_X, BPF_REG_0, BPF_REG_6, 2, 0),
                insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0),
                insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
                insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1),
                insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0),
        };
        union bpf_attr a = {
                .prog_type = type,
                .insn_cnt = ELEMENTSOF(prog),
                .insns = (uint64_t) (uintptr_t) prog,
                .license = (uint64_t) (uintptr_t) "GPL",
        };

        strncpy(a.prog_name, "cppd_sample", sizeof a.prog_name - 1);
        return sys_bpf(BPF_PROG_LOAD, &a);
}

static int prog_fd(struct sampling_bpf *s, bool tracepoint) {
        int *fd = &s->prog_fd[tracepoint];

        if (*fd < 0) {
                int r = prog_load(s, tracepoint ? BPF_PROG_TYPE_TRACEPOINT : BPF_PROG_TYPE_PERF_EVENT);

                if (r < 0)
                        return r;
                *fd = r;
        }
        return *fd;
}

int sampling_bpf_attach(struct sampling_bpf *s, int perf_fd) {
        int fd = prog_fd(s, false);

        if (fd < 0)
                return fd;
        return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, fd) < 0 ? -errno : 0;
}

int sampling_bpf_hold_tracepoint(struct sampling_bpf *s, uint64_t id) {
        struct perf_event_attr a = {
                .size = sizeof a,
                .type = PERF_TYPE_TRACEPOINT,
                .config = id,
                .sample_period = 1ULL << 62, /* it never samples: it only holds */
                .disabled = 1,
        };
        int fd = prog_fd(s, true), holder;

        if (fd < 0)
                return fd;
        if (s->n_holders >= MAX_HOLDERS)
                return -E2BIG;
        holder = (int) syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (holder < 0)
                return -errno;
        if (ioctl(holder, PERF_EVENT_IOC_SET_BPF, fd) < 0) {
                int r = -errno;

                close(holder);
                return r;
        }
        s->holders[s->n_holders++] = holder;
        return 0;
}
