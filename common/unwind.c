/* DWARF unwinding with libdwfl on samples instead of live processes. libdwfl asks us, through
 * callbacks, for the thread's initial registers (the sample's user registers, mapped from
 * perf's numbering to DWARF's) and for memory (the copied stack; for addresses outside it,
 * the mapped file's bytes). The Dwfl is built once per address space and kept: building one per
 * sample costs ~150 µs against 8-16 µs for a warm unwind (env-probe.md). dwfl_attach_state()
 * can be called once per Dwfl, so the sample being unwound is handed to the callbacks through
 * the unwinder, which is the Dwfl's callback argument. */
#include "unwind.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

struct unwind_mapping {
        uint64_t start, end, pgoff;
        int fd;
};

struct unwinder {
        pid_t pid;
        Dwfl *dwfl;
        bool attached, reporting;
        struct unwind_mapping *mappings;
        size_t n_mappings;
        /* The sample being unwound. */
        pid_t tid;
        const uint64_t *regs;
        const uint8_t *stack;
        uint64_t stack_start, stack_size;
        uint64_t *pcs;
        size_t n_pcs, max_pcs;
};

/* Unwinding needs only the CFI of .eh_frame, which every x86_64 binary carries. Without this,
 * libdwfl looks for .debug_frame in the separate debug file first, and loads (and decompresses)
 * all of libc's debug information again for every process. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                        char **debuginfo_file_name) {
        return -1;
}

static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = no_debuginfo,
};

struct unwinder *unwinder_new(pid_t pid) {
        struct unwinder *u = calloc(1, sizeof *u);

        if (!u)
                return NULL;
        u->pid = pid;
        u->dwfl = dwfl_begin(&callbacks);
        if (!u->dwfl) {
                free(u);
                return NULL;
        }
        dwfl_report_begin(u->dwfl);
        u->reporting = true;
        return u;
}

struct unwinder *unwinder_free(struct unwinder *u) {
        if (!u)
                return NULL;
        dwfl_end(u->dwfl);
        for (size_t i = 0; i < u->n_mappings; i++)
                close(u->mappings[i].fd);
        free(u->mappings);
        free(u);
        return NULL;
}

int unwinder_add_module(struct unwinder *u, const char *name, int fd, uint64_t bias, uint64_t start,
                        uint64_t end, uint64_t pgoff) {
        struct unwind_mapping *a;
        int dwfl_fd, map_fd;

        if (!u->reporting)
                return -EBUSY;
        a = realloc(u->mappings, (u->n_mappings + 1) * sizeof *a);
        if (!a)
                return -ENOMEM;
        u->mappings = a;
        map_fd = dup(fd);
        if (map_fd < 0)
                return -errno;
        dwfl_fd = dup(fd);
        if (dwfl_fd < 0) {
                close(map_fd);
                return -errno;
        }
        /* The same file may be reported twice (two executable mappings): libdwfl refuses
         * overlaps, which only costs us that mapping's CFI. */
        if (!dwfl_report_elf(u->dwfl, name, name, dwfl_fd, bias, false)) {
                close(map_fd);
                return -EBADMSG;
        }
        u->mappings[u->n_mappings++] = (struct unwind_mapping) {
                .start = start, .end = end, .pgoff = pgoff, .fd = map_fd,
        };
        return 0;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp) {
        struct unwinder *u = arg;

        if (*thread_argp)
                return 0;
        *thread_argp = u;
        return u->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp) {
        struct unwinder *u = arg;

        *thread_argp = u;
        return tid == u->tid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg) {
        struct unwinder *u = arg;

        if (addr >= u->stack_start && addr - u->stack_start + sizeof *result <= u->stack_size) {
                memcpy(result, u->stack + (addr - u->stack_start), sizeof *result);
                return true;
        }
        for (size_t i = 0; i < u->n_mappings; i++) {
                const struct unwind_mapping *m = &u->mappings[i];

                if (addr >= m->start && addr + sizeof *result <= m->end)
                        return pread(m->fd, result, sizeof *result, addr - m->start + m->pgoff) ==
                               (ssize_t) sizeof *result;
        }
        return false;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg) {
#if UNWIND_SUPPORTED
        struct unwinder *u = arg;
        const uint64_t *r = u->regs;
        /* DWARF x86_64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip. Perf's sample order, from
         * the bit numbers of UNWIND_REGS_MASK: ax bx cx dx si di bp sp ip r8-r15. */
        Dwarf_Word dwarf[17] = {
                r[0], r[3], r[2], r[1], r[4], r[5], r[6], r[7],
                r[9], r[10], r[11], r[12], r[13], r[14], r[15], r[16],
                r[8],
        };

        return dwfl_thread_state_registers(thread, 0, 17, dwarf);
#else
        return false;
#endif
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
        .next_thread = next_thread,
        .get_thread = get_thread,
        .memory_read = memory_read,
        .set_initial_registers = set_initial_registers,
};

static int frame_cb(Dwfl_Frame *frame, void *arg) {
        struct unwinder *u = arg;
        bool activation = false;
        Dwarf_Addr pc;

        if (!dwfl_frame_pc(frame, &pc, &activation) || pc == 0)
                return DWARF_CB_ABORT;
        if (u->n_pcs > 0 && !activation)
                pc--;           /* a return address: look up the call, not what follows it */
        u->pcs[u->n_pcs++] = pc;
        return u->n_pcs < u->max_pcs ? DWARF_CB_OK : DWARF_CB_ABORT;
}

size_t unwinder_unwind(struct unwinder *u, pid_t tid, const uint64_t *regs, const uint8_t *stack,
                       size_t stack_size, uint64_t *ret_pcs, size_t max) {
        if (max == 0)
                return 0;
        if (!UNWIND_SUPPORTED || u->n_mappings == 0)
                goto ip_only;
        if (u->reporting) {
                dwfl_report_end(u->dwfl, NULL, NULL);
                u->reporting = false;
                u->attached = dwfl_attach_state(u->dwfl, NULL, u->pid, &thread_callbacks, u);
        }
        if (!u->attached)
                goto ip_only;

        u->tid = tid;
        u->regs = regs;
        u->stack = stack;
        u->stack_start = regs[UNWIND_REG_SP];
        u->stack_size = stack_size;
        u->pcs = ret_pcs;
        u->n_pcs = 0;
        u->max_pcs = max;
        (void) dwfl_getthread_frames(u->dwfl, tid, frame_cb, u);  /* errors end the stack early */
        if (u->n_pcs > 0)
                return u->n_pcs;
ip_only:
        ret_pcs[0] = regs ? regs[UNWIND_REG_IP] : 0;
        return 1;
}
