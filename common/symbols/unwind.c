/* The unwinder. A frame's caller is found through the CFI row that covers the frame's PC: the
 * rule for the canonical frame address (CFA, the stack pointer before the call) and the rules
 * that give back the return address and the callee-saved registers, nearly always "saved at
 * CFA + N". libdw finds the row of an address (dwarf_cfi_addrframe() runs the FDE's
 * instructions up to it: microseconds); here each row met is compiled into a small struct and
 * kept per module, sorted by address, so that a frame costs a binary search and a few loads
 * from the copied stack. Rows are learnt once per module, not per process: libdwfl's session
 * per address space cost hundreds of KiB and ~8 µs a sample.
 *
 * Rows whose CFA or rules are DWARF expressions (PLT entries compute the CFA from the PC) are
 * kept as "complex" and evaluated from libdw's description each time, by a small stack
 * machine. A PC that no CFI covers (JIT code, hand-written assembly) is stepped over by the
 * frame pointer, as libdwfl does on x86_64. Memory is read from the copied stack only.
 *
 * Finding a PC's row takes the caller's lookup of the module (a search of the address space,
 * the load bias) and a search of the module's rows: most of a frame's cost. Samples come back
 * to the same few hundred return addresses again and again, so what a PC resolved to is kept in
 * a direct-mapped cache under (address space generation, PC): a frame seen before costs one
 * probe and the step itself. */
#include "unwind.h"

#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* DWARF's x86_64 registers: rax rdx rcx rbx rsi rdi rbp rsp r8-r15, then the return address. */
#define N_REGS 17
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
/* Rows kept per module; past it the module's rows start over (a bound for hostile CFI). */
#define MAX_ROWS_PER_MODULE (1u << 16)
#define EVAL_STACK 16
/* Entries of the PC cache (a power of two): 88 bytes each. */
#define PC_CACHE_SIZE 1024u

enum rule_kind {
        RULE_UNDEFINED,  /* the caller's value is lost */
        RULE_SAME,       /* this frame left it alone */
        RULE_OFFSET,     /* saved at CFA + off */
        RULE_VAL_OFFSET, /* is CFA + off */
        RULE_REGISTER,   /* is in register off */
};

/* What a caller can get back: the callee-saved registers and the return address. */
static const uint8_t saved[] = { 3, REG_RBP, 12, 13, 14, 15, REG_RA };
#define N_SAVED (sizeof saved / sizeof *saved)

struct rule {
        int16_t off;
        uint8_t kind;
};

struct row {
        uint64_t start; /* the ELF addresses [start, start + len) it covers */
        uint32_t len;
        int32_t cfa_off;
        uint8_t cfa_reg; /* CFA = cfa_reg + cfa_off */
        bool none;       /* no CFI covers the address: step by the frame pointer */
        bool complex;    /* an expression somewhere: evaluate libdw's description */
        bool signal;     /* a signal frame: the PC of its caller is exact */
        struct rule rules[N_SAVED];
};

struct module_rows {
        struct row *rows; /* sorted by start */
        uint32_t n;
        size_t cap;
};

/* What a lookup PC resolved to in one state of one address space. */
struct pc_entry {
        uint64_t space, pc; /* space 0: empty */
        Dwarf_CFI *cfi;     /* for a complex row */
        uint64_t bias;
        struct row row; /* a copy: the module's rows move as rows are learnt */
};

struct unwinder {
        struct module_rows *modules; /* by module key */
        size_t n_modules;
        struct pc_entry *cache; /* PC_CACHE_SIZE entries */
        struct unwind_stats stats;
        uint64_t *sps; /* unwinder_keep_sps(): each frame's stack pointer, of the last unwind */
        size_t max_sps;
};

struct state {
        uint64_t regs[N_REGS];
        uint32_t valid; /* bit r: regs[r] is known */
        bool outermost; /* the CFI says the return address is undefined: the chain's end */
};

struct stack_mem {
        const uint8_t *data;
        uint64_t start, size; /* data holds [start, start + size) */
        uint64_t high;        /* past the highest word read */
        bool short_read;      /* a read fell past the end of the copy */
};

struct unwinder *unwinder_new(void) {
        struct unwinder *u = calloc(1, sizeof(struct unwinder));

        if (!u)
                return NULL;
        u->cache = calloc(PC_CACHE_SIZE, sizeof *u->cache);
        if (!u->cache)
                return unwinder_free(u);
        return u;
}

struct unwinder *unwinder_free(struct unwinder *u) {
        if (!u)
                return NULL;
        for (size_t i = 0; i < u->n_modules; i++)
                free(u->modules[i].rows);
        free(u->modules);
        free(u->cache);
        free(u);
        return NULL;
}

void unwinder_forget_modules(struct unwinder *u) {
        memset(u->cache, 0, PC_CACHE_SIZE * sizeof *u->cache);
}

void unwinder_stats(const struct unwinder *u, struct unwind_stats *ret) {
        *ret = u->stats;
        ret->memory = sizeof *u + u->n_modules * sizeof *u->modules + PC_CACHE_SIZE * sizeof *u->cache;
        for (size_t i = 0; i < u->n_modules; i++)
                ret->memory += u->modules[i].cap * sizeof(struct row);
}

static void set(struct state *s, unsigned reg, uint64_t v) {
        s->regs[reg] = v;
        s->valid |= 1u << reg;
}

static bool has(const struct state *s, unsigned reg) {
        return reg < N_REGS && (s->valid & 1u << reg);
}

static bool read_word(struct stack_mem *m, uint64_t addr, uint64_t *ret) {
        if (addr < m->start || addr - m->start > m->size || m->size - (addr - m->start) < 8) {
                m->short_read |= addr >= m->start; /* below the stack pointer is no copy's fault */
                return false;
        }
        memcpy(ret, m->data + (addr - m->start), 8);
        m->high = MAX(m->high, addr + 8);
        return true;
}

/* Evaluates the DWARF expression OPS[0..n) over S's registers, with CFA for
 * DW_OP_call_frame_cfa. Returns true with *ret the result: an address, or a value if the
 * expression ends in DW_OP_stack_value (*ret_value). False on anything it cannot do. */
static bool eval(const Dwarf_Op *ops, size_t n, const struct state *s, uint64_t cfa, struct stack_mem *m,
                 uint64_t *ret, bool *ret_value) {
        uint64_t st[EVAL_STACK], a, b;
        size_t sp = 0;

#define PUSH(v) \
        do { \
                if (sp == EVAL_STACK) \
                        return false; \
                st[sp++] = (v); \
        } while (0)
#define POP(v) \
        do { \
                if (sp == 0) \
                        return false; \
                (v) = st[--sp]; \
        } while (0)
        *ret_value = false;
        for (size_t i = 0; i < n; i++) {
                uint8_t op = ops[i].atom;

                if (*ret_value)
                        return false; /* DW_OP_stack_value ends an expression */
                if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
                        PUSH(op - DW_OP_lit0);
                        continue;
                }
                if (op >= DW_OP_breg0 && op <= DW_OP_breg31) {
                        if (!has(s, op - DW_OP_breg0))
                                return false;
                        PUSH(s->regs[op - DW_OP_breg0] + ops[i].number);
                        continue;
                }
                switch (op) {
                case DW_OP_bregx:
                        if (!has(s, ops[i].number))
                                return false;
                        PUSH(s->regs[ops[i].number] + ops[i].number2);
                        break;
                case DW_OP_const1u:
                case DW_OP_const2u:
                case DW_OP_const4u:
                case DW_OP_const8u:
                case DW_OP_const1s:
                case DW_OP_const2s:
                case DW_OP_const4s:
                case DW_OP_const8s:
                case DW_OP_constu:
                case DW_OP_consts:
                        PUSH(ops[i].number); /* libdw has sign-extended the signed ones */
                        break;
                case DW_OP_call_frame_cfa:
                        PUSH(cfa);
                        break;
                case DW_OP_plus_uconst:
                        POP(a);
                        PUSH(a + ops[i].number);
                        break;
                case DW_OP_deref:
                        POP(a);
                        if (!read_word(m, a, &b))
                                return false;
                        PUSH(b);
                        break;
                case DW_OP_dup:
                        POP(a);
                        PUSH(a);
                        PUSH(a);
                        break;
                case DW_OP_drop:
                        POP(a);
                        break;
                case DW_OP_over:
                        if (sp < 2)
                                return false;
                        a = st[sp - 2];
                        PUSH(a);
                        break;
                case DW_OP_swap:
                        POP(b);
                        POP(a);
                        PUSH(b);
                        PUSH(a);
                        break;
                case DW_OP_nop:
                        break;
                case DW_OP_stack_value:
                        *ret_value = true;
                        break;
                case DW_OP_plus:
                case DW_OP_minus:
                case DW_OP_mul:
                case DW_OP_and:
                case DW_OP_or:
                case DW_OP_xor:
                case DW_OP_shl:
                case DW_OP_shr:
                case DW_OP_shra:
                case DW_OP_eq:
                case DW_OP_ne:
                case DW_OP_lt:
                case DW_OP_le:
                case DW_OP_gt:
                case DW_OP_ge:
                        POP(b);
                        POP(a);
                        switch (op) {
                        case DW_OP_plus:
                                a += b;
                                break;
                        case DW_OP_minus:
                                a -= b;
                                break;
                        case DW_OP_mul:
                                a *= b;
                                break;
                        case DW_OP_and:
                                a &= b;
                                break;
                        case DW_OP_or:
                                a |= b;
                                break;
                        case DW_OP_xor:
                                a ^= b;
                                break;
                        case DW_OP_shl:
                                a = b < 64 ? a << b : 0;
                                break;
                        case DW_OP_shr:
                                a = b < 64 ? a >> b : 0;
                                break;
                        case DW_OP_shra:
                                a = (uint64_t) ((int64_t) a >> (b < 64 ? b : 63));
                                break;
                        /* DWARF's comparisons are signed. */
                        case DW_OP_eq:
                                a = a == b;
                                break;
                        case DW_OP_ne:
                                a = a != b;
                                break;
                        case DW_OP_lt:
                                a = (int64_t) a < (int64_t) b;
                                break;
                        case DW_OP_le:
                                a = (int64_t) a <= (int64_t) b;
                                break;
                        case DW_OP_gt:
                                a = (int64_t) a > (int64_t) b;
                                break;
                        case DW_OP_ge:
                                a = (int64_t) a >= (int64_t) b;
                                break;
                        }
                        PUSH(a);
                        break;
                default:
                        return false;
                }
        }
#undef PUSH
#undef POP
        if (sp == 0)
                return false;
        *ret = st[sp - 1];
        return true;
}

/* The register a one-op location names (DW_OP_regN, DW_OP_regx), or -1. */
static int location_register(const Dwarf_Op *ops, size_t n) {
        if (n != 1)
                return -1;
        if (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31)
                return ops[0].atom - DW_OP_reg0;
        if (ops[0].atom == DW_OP_regx && ops[0].number < 32)
                return ops[0].number;
        return -1;
}

/* Compiles the rule libdw gives for REG into *RET; false if it is an expression. */
static bool compile_rule(Dwarf_Frame *frame, unsigned reg, struct rule *ret) {
        Dwarf_Op mem[3], *ops;
        size_t n;
        int64_t off = 0;
        int r;

        if (dwarf_frame_register(frame, reg, mem, &ops, &n) != 0) {
                *ret = (struct rule) { .kind = RULE_UNDEFINED };
                return true;
        }
        if (n == 0) {
                *ret = (struct rule) { .kind = ops ? RULE_UNDEFINED : RULE_SAME };
                return true;
        }
        r = location_register(ops, n);
        if (r >= 0) {
                *ret = (struct rule) { .kind = RULE_REGISTER, .off = r };
                return r < N_REGS;
        }
        /* Offsets: DW_OP_call_frame_cfa [DW_OP_plus_uconst N] [DW_OP_stack_value]. */
        if (ops[0].atom != DW_OP_call_frame_cfa)
                return false;
        ops++, n--;
        if (n > 0 && ops[0].atom == DW_OP_plus_uconst) {
                off = (int64_t) ops[0].number; /* negative offsets come wrapped */
                ops++, n--;
        }
        if (off < INT16_MIN || off > INT16_MAX)
                return false;
        if (n == 0)
                *ret = (struct rule) { .kind = RULE_OFFSET, .off = off };
        else if (n == 1 && ops[0].atom == DW_OP_stack_value)
                *ret = (struct rule) { .kind = RULE_VAL_OFFSET, .off = off };
        else
                return false;
        return true;
}

/* Compiles FRAME's rules into ROW, marking it complex where they are expressions. */
static void compile_row(Dwarf_Frame *frame, struct row *row) {
        Dwarf_Op *ops;
        size_t n;
        int64_t off = 0;
        int reg = -1;

        if (dwarf_frame_cfa(frame, &ops, &n) == 0 && n == 1) {
                if (ops[0].atom == DW_OP_bregx) {
                        reg = ops[0].number < N_REGS ? (int) ops[0].number : -1;
                        off = (int64_t) ops[0].number2;
                } else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
                        reg = ops[0].atom - DW_OP_breg0;
                        off = (int64_t) ops[0].number;
                }
        }
        if (reg < 0 || reg >= N_REGS || off < INT32_MIN || off > INT32_MAX) {
                row->complex = true;
                return;
        }
        row->cfa_reg = reg;
        row->cfa_off = off;
        for (size_t k = 0; k < N_SAVED; k++)
                if (!compile_rule(frame, saved[k], &row->rules[k]))
                        row->complex = true;
}

/* The row of ELF address VADDR in module KEY, learnt from CFI if new. NULL: no memory. */
static const struct row *row_get(struct unwinder *u, uint32_t key, Dwarf_CFI *cfi, uint64_t vaddr) {
        struct module_rows *mr;
        struct row row = {};
        Dwarf_Frame *frame = NULL;
        uint32_t lo = 0, hi;

        if (key >= u->n_modules) {
                size_t old = u->n_modules;

                if (GROW(u->modules, u->n_modules, (size_t) key + 1) < 0)
                        return NULL;
                memset(u->modules + old, 0, (u->n_modules - old) * sizeof *u->modules);
        }
        mr = &u->modules[key];
        /* The first row starting after VADDR; the one before it may hold VADDR. */
        hi = mr->n;
        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (mr->rows[mid].start <= vaddr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo > 0 && vaddr - mr->rows[lo - 1].start < mr->rows[lo - 1].len)
                return &mr->rows[lo - 1];

        if (dwarf_cfi_addrframe(cfi, vaddr, &frame) == 0) {
                Dwarf_Addr start, end;
                bool signal = false;

                /* The row holds from VADDR to END. libdw (0.188) may report as START the
                 * location of the row before (in nearly half of libc's addresses): a range
                 * from it would carry this row's rules over addresses where they do not hold,
                 * e.g. a `ret` after its `pop` seen with the CFA of the body before it. */
                dwarf_frame_info(frame, &start, &end, &signal);
                if (start <= vaddr && vaddr < end) {
                        row.start = vaddr;
                        row.len = end - vaddr > UINT32_MAX ? UINT32_MAX : end - vaddr;
                } else
                        row.start = vaddr, row.len = 1;
                row.signal = signal;
                compile_row(frame, &row);
                free(frame);
        } else
                row = (struct row) { .start = vaddr, .len = 1, .none = true };

        if (mr->n >= MAX_ROWS_PER_MODULE)
                mr->n = lo = 0;
        if (GROW(mr->rows, mr->cap, (size_t) mr->n + 1) < 0)
                return NULL;
        memmove(mr->rows + lo + 1, mr->rows + lo, (mr->n - lo) * sizeof *mr->rows);
        mr->rows[lo] = row;
        mr->n++;
        u->stats.rows++;
        return &mr->rows[lo];
}

static bool step_row(const struct row *row, const struct state *cur, struct stack_mem *m,
                     struct state *next) {
        uint64_t cfa, v;

        if (!has(cur, row->cfa_reg))
                return false;
        cfa = cur->regs[row->cfa_reg] + (int64_t) row->cfa_off;
        next->valid = 0;
        next->outermost = row->rules[N_SAVED - 1].kind == RULE_UNDEFINED;
        for (size_t k = 0; k < N_SAVED; k++) {
                const struct rule *rule = &row->rules[k];
                unsigned reg = saved[k];

                switch (rule->kind) {
                case RULE_SAME:
                        if (has(cur, reg))
                                set(next, reg, cur->regs[reg]);
                        break;
                case RULE_OFFSET:
                        if (read_word(m, cfa + rule->off, &v))
                                set(next, reg, v);
                        break;
                case RULE_VAL_OFFSET:
                        set(next, reg, cfa + rule->off);
                        break;
                case RULE_REGISTER:
                        if (has(cur, rule->off))
                                set(next, reg, cur->regs[rule->off]);
                        break;
                }
        }
        set(next, REG_RSP, cfa);
        return true;
}

/* A complex row: libdw's description of VADDR's rules, evaluated. */
static bool step_dwarf(Dwarf_CFI *cfi, uint64_t vaddr, const struct state *cur, struct stack_mem *m,
                       struct state *next) {
        Dwarf_Frame *frame = NULL;
        Dwarf_Op mem[3], *ops;
        uint64_t cfa, v;
        bool value, ok = false;
        size_t n;

        if (dwarf_cfi_addrframe(cfi, vaddr, &frame) != 0)
                return false;
        if (dwarf_frame_cfa(frame, &ops, &n) != 0 || n == 0 || !eval(ops, n, cur, 0, m, &cfa, &value))
                goto finish;
        next->valid = 0;
        next->outermost = false;
        for (size_t k = 0; k < N_SAVED; k++) {
                unsigned reg = saved[k];
                int from;

                if (dwarf_frame_register(frame, reg, mem, &ops, &n) != 0)
                        continue;
                if (n == 0) {
                        if (!ops && has(cur, reg))
                                set(next, reg, cur->regs[reg]);
                        next->outermost |= ops && reg == REG_RA;
                        continue;
                }
                from = location_register(ops, n);
                if (from >= 0) {
                        if (has(cur, from))
                                set(next, reg, cur->regs[from]);
                        continue;
                }
                if (!eval(ops, n, cur, cfa, m, &v, &value))
                        continue;
                if (value)
                        set(next, reg, v);
                else if (read_word(m, v, &v))
                        set(next, reg, v);
        }
        set(next, REG_RSP, cfa);
        ok = true;
finish:
        free(frame);
        return ok;
}

/* Code without CFI: the frame pointer's chain, [rbp] the caller's rbp and [rbp + 8] the return
 * address. */
static bool step_fp(const struct state *cur, struct stack_mem *m, struct state *next) {
        uint64_t bp, saved_bp, ra;

        if (!has(cur, REG_RBP))
                return false;
        bp = cur->regs[REG_RBP];
        if (!read_word(m, bp, &saved_bp) || !read_word(m, bp + 8, &ra))
                return false;
        next->valid = 0;
        next->outermost = false;
        set(next, REG_RBP, saved_bp);
        set(next, REG_RA, ra);
        set(next, REG_RSP, bp + 16);
        return true;
}

/* What lookup address PC of address space SPACE resolves to: from the cache, or found and kept
 * there (in *SCRATCH when SPACE is 0, or when there is no memory for a new row). */
static const struct pc_entry *resolve(struct unwinder *u, unwind_find_t find, void *userdata, uint64_t space,
                                      uint64_t pc, struct pc_entry *scratch) {
        struct pc_entry *e = scratch;
        struct unwind_module mod;
        const struct row *row = NULL;

        if (space != 0) {
                e = &u->cache[((pc ^ space * 0x9e3779b97f4a7c15ULL) * 0xff51afd7ed558ccdULL >> 54) &
                              (PC_CACHE_SIZE - 1)];
                if (e->space == space && e->pc == pc) {
                        u->stats.cached++;
                        return e;
                }
        }
        if (find(userdata, pc, &mod) == 0 && mod.cfi) {
                row = row_get(u, mod.key, mod.cfi, pc - mod.bias);
                if (!row)
                        e = scratch; /* no memory for the row: step by the frame pointer, keep nothing */
        }
        *e = (struct pc_entry) {
                .space = e == scratch ? 0 : space,
                .pc = pc,
                .cfi = row ? mod.cfi : NULL,
                .bias = row ? mod.bias : 0,
                .row = row ? *row : (struct row) { .none = true },
        };
        return e;
}

/* One frame up from the frame at PC (a lookup address: already inside its call instruction).
 * Sets *ret_signal if the frame is a signal frame. */
static bool step(struct unwinder *u, unwind_find_t find, void *userdata, uint64_t space, uint64_t pc,
                 const struct state *cur, struct stack_mem *m, struct state *next, bool *ret_signal) {
        struct pc_entry scratch;
        const struct pc_entry *e = resolve(u, find, userdata, space, pc, &scratch);

        *ret_signal = false;
        if (e->row.none) {
                u->stats.by_fp++;
                return step_fp(cur, m, next);
        }
        *ret_signal = e->row.signal;
        if (e->row.complex) {
                u->stats.complex++;
                return step_dwarf(e->cfi, pc - e->bias, cur, m, next);
        }
        return step_row(&e->row, cur, m, next);
}

void unwinder_keep_sps(struct unwinder *u, uint64_t *sps, size_t max) {
        u->sps = sps;
        u->max_sps = sps ? max : 0;
}

size_t unwinder_unwind(struct unwinder *u, unwind_find_t find, void *userdata, uint64_t space,
                       const uint64_t *regs, const uint8_t *stack, size_t stack_size, uint64_t *ret_pcs,
                       size_t max, uint64_t *ret_top) {
        struct stack_mem m = { .data = stack, .size = stack ? stack_size : 0 };
        struct state states[2] = {}, *cur = &states[0], *next = &states[1];
        bool exact = true; /* the PC is not a return address: the IP, or a signal's */
        size_t n = 0;

        *ret_top = 0;
        if (max == 0)
                return 0;
        if (!UNWIND_SUPPORTED || !regs) {
                ret_pcs[0] = regs ? regs[UNWIND_REG_IP] : 0;
                return 1;
        }
#if UNWIND_SUPPORTED
        /* Perf's sample order, from the bit numbers of UNWIND_REGS_MASK: ax bx cx dx si di bp sp
         * ip r8-r15; DWARF's: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 and the return address. */
        {
                static const uint8_t from_perf[N_REGS] = { 0,  3,  2,  1,  4,  5,  6,  7, 9,
                                                           10, 11, 12, 13, 14, 15, 16, 8 };

                for (unsigned r = 0; r < N_REGS; r++)
                        set(cur, r, regs[from_perf[r]]);
        }
#endif
        m.start = cur->regs[REG_RSP];
        if (u->sps && n < u->max_sps)
                u->sps[n] = cur->regs[REG_RSP];
        ret_pcs[n++] = cur->regs[REG_RA];
        while (n < max) {
                uint64_t pc = cur->regs[REG_RA];
                struct state *t;
                bool signal;

                if (!step(u, find, userdata, space, exact ? pc : pc - 1, cur, &m, next, &signal))
                        break;
                /* The outermost frame has no return address; a loop or garbage does not go up. */
                if (!has(next, REG_RA) || next->regs[REG_RA] == 0) {
                        /* The end the CFI marks, with every word it needed in the copy. */
                        if (next->outermost && !m.short_read)
                                *ret_top = m.high;
                        break;
                }
                if (next->regs[REG_RSP] <= cur->regs[REG_RSP])
                        break;
                u->stats.frames++;
                t = cur, cur = next, next = t;
                exact = signal;
                if (u->sps && n < u->max_sps)
                        u->sps[n] = cur->regs[REG_RSP];
                ret_pcs[n++] = exact ? cur->regs[REG_RA] : cur->regs[REG_RA] - 1;
        }
        if (*ret_top == 0 && m.short_read)
                *ret_top = UNWIND_SHORT;
        return n;
}
