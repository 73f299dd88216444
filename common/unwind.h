/* DWARF unwinding of a copied user stack (PERF_SAMPLE_STACK_USER + PERF_SAMPLE_REGS_USER) with
 * libdwfl: the only way to see the callers of code built without frame pointers, such as
 * everything inside Debian's glibc. One unwinder per process address space. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"

/* The user registers to ask the kernel for (sample_regs_user), and how many that is. x86_64
 * only; elsewhere UNWIND_SUPPORTED is false and the collector uses frame pointers. */
#if defined(__x86_64__)
#define UNWIND_SUPPORTED 1
#define UNWIND_REGS_MASK 0x0000000000ff01ffULL  /* AX..IP (bits 0-8), R8..R15 (bits 16-23) */
#define UNWIND_N_REGS 17
#define UNWIND_REG_SP 7                         /* indexes into the sample's register array */
#define UNWIND_REG_IP 8
#else
#define UNWIND_SUPPORTED 0
#define UNWIND_REGS_MASK 0ULL
#define UNWIND_N_REGS 0
#define UNWIND_REG_SP 0
#define UNWIND_REG_IP 0
#endif

struct unwinder;

/* NULL: no memory. */
struct unwinder *unwinder_new(pid_t pid);
struct unwinder *unwinder_free(struct unwinder *u);
DEFINE_CLEANUP(struct unwinder *, unwinder_free);

/* Reports the ELF file FD (duplicated) named NAME, mapped at [START, END) from file offset
 * PGOFF with load bias BIAS. All modules must be added before the first unwind. Returns 0,
 * -EBADMSG if libdwfl refuses it, -ENOMEM. */
int unwinder_add_module(struct unwinder *u, const char *name, int fd, uint64_t bias, uint64_t start,
                        uint64_t end, uint64_t pgoff);

/* Unwinds thread TID from REGS (UNWIND_N_REGS values in sample order) and the STACK_SIZE bytes
 * copied from its stack pointer. Fills RET_PCS[0..n) innermost first with the IP, then return
 * addresses minus one (so each points into the call instruction), at most MAX. Returns n >= 1
 * (the IP alone if nothing else could be unwound). */
size_t unwinder_unwind(struct unwinder *u, pid_t tid, const uint64_t *regs, const uint8_t *stack,
                       size_t stack_size, uint64_t *ret_pcs, size_t max);
