/* DWARF unwinding of a copied user stack (PERF_SAMPLE_STACK_USER + PERF_SAMPLE_REGS_USER): the
 * only way to see the callers of code built without frame pointers, such as everything inside
 * Debian's glibc. One unwinder serves every process: what it learns of a module (the CFI rows
 * of the addresses it has met) is kept under the module's key, so a library shared by a
 * thousand processes is learnt once. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>

#include "cleanup.h"

/* The user registers to ask the kernel for (sample_regs_user), and how many that is. x86_64
 * only; elsewhere UNWIND_SUPPORTED is false and the collector uses frame pointers. */
#if defined(__x86_64__)
#define UNWIND_SUPPORTED 1
#define UNWIND_REGS_MASK 0x0000000000ff01ffULL /* AX..IP (bits 0-8), R8..R15 (bits 16-23) */
#define UNWIND_N_REGS 17
#define UNWIND_REG_SP 7 /* indexes into the sample's register array */
#define UNWIND_REG_IP 8
#else
#define UNWIND_SUPPORTED 0
#define UNWIND_REGS_MASK 0ULL
#define UNWIND_N_REGS 0
#define UNWIND_REG_SP 0
#define UNWIND_REG_IP 0
#endif

/* Where a run-time address lies, as the caller's view of the address space knows. */
struct unwind_module {
        uint32_t key;   /* names the module's contents (the symbolizer's index) */
        Dwarf_CFI *cfi; /* its .eh_frame; NULL if it has none */
        uint64_t bias;  /* run-time address minus ELF address */
};

/* Fills *ret for the module that holds run-time address PC. Returns 0, or a negative errno when
 * no module does (anonymous memory, a file that would not load). */
typedef int (*unwind_find_t)(void *userdata, uint64_t pc, struct unwind_module *ret);

struct unwind_stats {
        uint64_t frames;  /* frames unwound */
        uint64_t cached;  /* lookups of a PC answered by the cache */
        uint64_t by_fp;   /* of which by the frame pointer, for want of CFI */
        uint64_t complex; /* of which by a DWARF expression evaluated from libdw */
        uint64_t rows;    /* CFI rows learnt from libdw */
        uint64_t memory;  /* bytes held by the rows */
};

struct unwinder;

/* NULL: no memory. */
struct unwinder *unwinder_new(void);
struct unwinder *unwinder_free(struct unwinder *u);
DEFINE_CLEANUP(struct unwinder *, unwinder_free);

/* Unwinds from REGS (UNWIND_N_REGS values in the sample's order) and the STACK_SIZE bytes
 * copied from its stack pointer, finding modules through FIND. SPACE names the state of the
 * address space FIND sees (proc_maps' generation: the same mappings, the same number): what FIND
 * says of a PC is kept under (SPACE, PC) and not asked again; 0 keeps nothing. Fills
 * RET_PCS[0..n) innermost first with the IP, then return addresses minus one (so each points
 * into the call instruction), at most MAX. Returns n >= 1 (the IP alone if nothing else could be
 * unwound). Sets *RET_TOP to the stack address past everything the unwind needed if it reached
 * the outermost frame (whose return address is undefined): a thread's stacks reach no higher
 * (ring-reader.h); to UNWIND_SHORT if it needed a word past the copy; else to 0. Once the rows
 * it meets are known, it allocates nothing and makes no system call. */
#define UNWIND_SHORT UINT64_MAX
size_t unwinder_unwind(struct unwinder *u, unwind_find_t find, void *userdata, uint64_t space,
                       const uint64_t *regs, const uint8_t *stack, size_t stack_size, uint64_t *ret_pcs,
                       size_t max, uint64_t *ret_top);

/* From now on, unwinder_unwind() also writes each frame's stack pointer to SPS[i] (i < MAX), in
 * the order of its PCs: the sample's SP for the first, the CFA of frame i - 1 for frame i, so
 * that frame i's own stack is [SPS[i], SPS[i + 1]). NULL stops it. Python frames are placed by
 * the stack addresses of their interpreter's native frames (collector-python.c). */
void unwinder_keep_sps(struct unwinder *u, uint64_t *sps, size_t max);

/* Forgets what FIND said of every PC: after modules were unloaded (their CFI is gone) or might
 * be found differently at the same addresses. */
void unwinder_forget_modules(struct unwinder *u);

void unwinder_stats(const struct unwinder *u, struct unwind_stats *ret);
