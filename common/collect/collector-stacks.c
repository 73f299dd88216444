/* A sample's stack, as a node of the collector's frame trie: user PCs from the kernel's callchain
 * or from DWARF unwinding of the copied stack (unwind.c), each found in the process's address
 * space and symbolized once per distinct address (symbolize.c) into frames, or in its JIT map;
 * kernel frames from kallsyms. The trie interns stacks, so a stack seen before costs one hash
 * lookup per frame and no allocation; a thread's last stack is kept per PC so that a stack that
 * shares its outer part with the last one is walked only from where they differ. */
#include "collector-stacks.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "collector-python.h"
#include "collector-tasks.h"
#include "grow.h"
#include "perf-map.h"
#include "perf-record.h"
#include "py-code.h"
#include "syscall-names.h"
#include "time-util.h"

static int64_t trie_child(struct collector *c, uint32_t parent, uint32_t frame) {
        uint64_t *slot;
        int r;

        r = idmap_put(c->trie, idmap_pair(parent, frame), c->n_nodes, &slot);
        if (r < 0)
                return r;
        if (r == 0)
                return *slot;
        if (c->n_nodes >= UINT32_MAX - 1)
                return -E2BIG;
        r = GROW(c->nodes, c->cap_nodes, (size_t) c->n_nodes + 1);
        if (r < 0)
                return r;
        c->nodes[c->n_nodes] = (struct trie_node) { .parent = parent, .frame = frame };
        c->stats.stack_nodes++;
        return c->n_nodes++;
}

/* Looks PC up in P's JIT map, reading /tmp/perf-PID.map again if it has changed (looked at once
 * a second at most, and again at new executable memory of no file: handle_mmap2()). */
static const char *jit_lookup(struct collector *c, struct process *p, uint64_t pc) {
        const struct symtab_entry *e = p->jit ? symtab_lookup(p->jit, pc) : NULL;
        char path[128];
        struct stat st;
        uint64_t now;

        if (e)
                return name_table_get(c->sym->names, e->name);
        /* At most once a second a process: PCs outside every module come by the thousand (a
         * frame-pointer walk through code built without them), and each look is two stat()s. */
        now = now_ns(CLOCK_MONOTONIC);
        if (p->jit_checked && now - p->jit_checked < JIT_RECHECK_NS)
                return NULL;
        p->jit_checked = now;
        /* The process's own /tmp first: it may be private (PrivateTmp=, a container), or ours. */
        snprintf(path, sizeof path, "/proc/%u/root/tmp/perf-%u.map", p->pid, p->pid);
        if (p->exited || stat(path, &st) < 0) {
                snprintf(path, sizeof path, "/tmp/perf-%u.map", p->pid);
                if (stat(path, &st) < 0)
                        return NULL;
        }
        if (st.st_size == p->jit_size && st.st_ino == p->jit_ino &&
            st.st_mtim.tv_sec == p->jit_mtime.tv_sec && st.st_mtim.tv_nsec == p->jit_mtime.tv_nsec)
                return NULL;
        {
                _cleanup_fclose_ FILE *f = NULL;
                struct symtab *t;

                if (perf_map_open(path, &f) < 0 || perf_map_load(f, c->sym->names, &t) < 0)
                        return NULL;
                symtab_free(p->jit);
                p->jit = t;
                p->jit_size = st.st_size;
                p->jit_mtime = st.st_mtim;
                p->jit_ino = st.st_ino;
        }
        e = symtab_lookup(p->jit, pc);
        return e ? name_table_get(c->sym->names, e->name) : NULL;
}

int stack_add_user_pc(struct collector *c, struct process *p, uint64_t pc, size_t *n) {
        const struct mapping *m = proc_maps_find(p->maps, pc);
        uint32_t first, count;
        int64_t f;
        int r;

        if (m && m->module != SYMBOLIZER_NO_MODULE) {
                if (!symbolizer_get_module(c->sym, m->module)->loaded)
                        (void) symbolizer_load(c->sym, m->module, p->exited ? 0 : p->pid, m->start, m->end);
                r = symbolizer_resolve(c->sym, m->module, pc - m->start + m->pgoff, &first, &count);
                if (r < 0)
                        return r;
                for (uint32_t i = count; i > 0 && *n < COLLECTOR_MAX_STACK; i--)
                        c->stack[(*n)++] = first + i - 1;
                return 1;
        }
        {
                const char *jit = jit_lookup(c, p, pc);

                f = jit ? symbolizer_jit(c->sym, jit) : symbolizer_synthetic(c->sym, "[unknown]", true);
        }
        if (f < 0)
                return f;
        if (*n < COLLECTOR_MAX_STACK)
                c->stack[(*n)++] = f;
        return 0;
}

/* Appends the frames of user PCs [FROM, TO) to the stack at *n, noting each one's count and
 * whether it is stable (STEP_UNSTABLE) in pc_frames. Returns 0 or a negative errno. */
static int add_user_pcs(struct collector *c, struct process *p, size_t from, size_t to, size_t *n) {
        for (size_t i = from; i < to; i++) {
                size_t before = *n;
                int r = stack_add_user_pc(c, p, c->pcs[i], n);

                if (r < 0)
                        return r;
                /* A PC cut short by the stack's bound is not its whole self: not one to keep. */
                c->pc_frames[i] =
                        (uint16_t) (*n - before) | (r == 0 || *n == COLLECTOR_MAX_STACK ? STEP_UNSTABLE : 0);
        }
        return 0;
}

/* Appends the frames of Python frames [FROM, TO) of H, innermost first. */
static int add_python_frames(struct collector *c, struct process *p, const struct sampling_bpf_py_header *h,
                             size_t from, size_t to, size_t *n) {
        const struct sampling_bpf_py_frame *f = (const void *) (h + 1);

        for (size_t j = from; j < to && *n < COLLECTOR_MAX_STACK; j++) {
                struct py_frame_name name;
                int64_t frame;
                int r;

                if (f[j].code == 0)
                        continue; /* a shim: the C stack's, not a function */
                frame = 0;
                if (p->py) {
                        /* Named and made a frame under the lock: the reader thread may replace
                         * the cache's entry (and its strings) as soon as it is let go. */
                        pthread_mutex_lock(&c->py_lock);
                        r = py_code_cache_name(c->py_names, (pid_t) p->pid, p->py, f[j].code, f[j].instr,
                                               f[j].globals, &name);
                        /* A generator's frame is never incomplete (CPython's _PyFrame_IsIncomplete()). */
                        if (r >= 0 && f[j].owner == 1)
                                name.incomplete = false;
                        if (r >= 0 && !name.incomplete)
                                frame = symbolizer_python(c->sym, name.qualname, name.filename,
                                                          name.line > 0 ? (uint32_t) name.line : 0);
                        pthread_mutex_unlock(&c->py_lock);
                } else
                        r = -ESRCH;
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && name.incomplete)
                        continue; /* not begun: CPython's tracebacks leave it out too */
                if (r < 0) {
                        c->py_stats.unreadable++;
                        frame = symbolizer_synthetic(c->sym, "[python: unreadable]", true);
                }
                if (frame < 0)
                        return (int) frame;
                c->stack[(*n)++] = (uint32_t) frame;
                c->py_stats.frames++;
        }
        return 0;
}

static int python_add_user_pcs(struct collector *c, struct process *p, const struct sampling_bpf_py_header *h,
                               size_t n_pcs, uint64_t stack_end, size_t *n) {
        const struct sampling_bpf_py_frame *f = (const void *) (h + 1);
        struct run {
                size_t first, end; /* its frames in f */
                uint64_t anchor;   /* 0: none (the walk was cut before its entry) */
                size_t pc;         /* the native frame it replaces; n_pcs: none */
        } runs[SAMPLING_BPF_PY_MAX_FRAMES + 1];
        size_t n_runs = 0, start = 0, k = 0, last_pc = 0, n_unplaced = 0;
        int r;

        c->py_stats.samples++;
        if (h->flags & SAMPLING_BPF_PY_TRUNCATED)
                c->py_stats.cut++;
        /* The runs, innermost first: each ends at its eval invocation's entry. */
        for (size_t j = 0; j < h->n; j++)
                if (f[j].anchor) {
                        runs[n_runs++] = (struct run) { .first = start, .end = j + 1, .anchor = f[j].anchor };
                        start = j + 1;
                }
        if (start < h->n) /* the walk stopped short of its entry: 3.11 knows where it is all the same */
                runs[n_runs++] = (struct run) { .first = start, .end = h->n, .anchor = h->anchor };
        /* Each anchored run's native frame: the one whose stack holds the anchor, outer than the
         * run before's. Stack pointers grow toward the outer frames. */
        for (size_t i = 0, q = 0; q < n_runs; q++) {
                runs[q].pc = n_pcs;
                if (!runs[q].anchor)
                        continue;
                while (i < n_pcs && (i + 1 < n_pcs ? c->sps[i + 1] : stack_end) <= runs[q].anchor)
                        i++;
                if (i < n_pcs && c->sps[i] <= runs[q].anchor &&
                    (q == 0 || runs[q - 1].pc == n_pcs || i > last_pc)) {
                        runs[q].pc = i;
                        last_pc = i;
                }
        }
        for (size_t q = 0; q < n_runs; q++)
                n_unplaced += runs[q].pc == n_pcs;

        for (size_t i = 0; i < n_pcs; i++) {
                size_t before = *n;
                bool python = false;

                while (k < n_runs && runs[k].pc == n_pcs)
                        k++; /* not placed: at the end, below */
                while (k < n_runs && runs[k].pc == i) {
                        r = add_python_frames(c, p, h, runs[k].first, runs[k].end, n);
                        if (r < 0)
                                return r;
                        python = true;
                        k++;
                }
                if (python) {
                        c->pc_frames[i] = (uint16_t) (*n - before) | STEP_UNSTABLE;
                        continue;
                }
                r = stack_add_user_pc(c, p, c->pcs[i], n);
                if (r < 0)
                        return r;
                c->pc_frames[i] =
                        (uint16_t) (*n - before) | (r == 0 || *n == COLLECTOR_MAX_STACK ? STEP_UNSTABLE : 0);
        }
        /* Runs not placed (past the unwound frames: a stack deeper than its copy, or an anchor
         * out of order): at the outer end, in order, on the outermost PC's account. */
        if (n_pcs > 0 && n_unplaced > 0) {
                size_t before = *n;

                for (k = 0; k < n_runs; k++) {
                        if (runs[k].pc != n_pcs)
                                continue;
                        r = add_python_frames(c, p, h, runs[k].first, runs[k].end, n);
                        if (r < 0)
                                return r;
                        c->py_stats.unplaced++;
                }
                c->pc_frames[n_pcs - 1] =
                        (uint16_t) ((c->pc_frames[n_pcs - 1] & ~STEP_UNSTABLE) + (*n - before)) |
                        STEP_UNSTABLE;
        }
        return 0;
}

/* Keeps step K of thread T's stack (the K-th PC from the outermost). False: no memory, or
 * deeper than kept (COLLECTOR_MAX_STEPS). */
static bool keep_step(struct thread *t, uint32_t k, const struct stack_step *step) {
        if (k >= COLLECTOR_MAX_STEPS)
                return false;
        if (GROW(t->steps, t->cap_steps, (size_t) k + 1) < 0)
                return false;
        t->steps[k] = *step;
        t->n_steps = k + 1;
        return true;
}

struct unwind_target {
        struct collector *collector;
        struct process *process;
};

/* The unwinder's view of P's address space: the module at PC, loaded on first use. */
static int find_module(void *userdata, uint64_t pc, struct unwind_module *ret) {
        struct unwind_target *x = userdata;
        const struct mapping *m = proc_maps_find(x->process->maps, pc);
        struct module *mod;
        uint64_t bias;

        if (!m || m->module == SYMBOLIZER_NO_MODULE)
                return -ENOENT;
        mod = symbolizer_get_module(x->collector->sym, m->module);
        if (!mod->loaded)
                (void) symbolizer_load(x->collector->sym, m->module, x->process->exited ? 0 : x->process->pid,
                                       m->start, m->end);
        if (mod->load_error < 0 || module_bias(mod, m->start, m->pgoff, &bias) < 0)
                return -ENOENT;
        *ret = (struct unwind_module) {
                .key = symbolizer_canonical(x->collector->sym, m->module),
                .cfi = module_cfi(mod),
                .bias = bias,
        };
        return 0;
}

static bool is_context(uint64_t ip) {
        return ip >= (uint64_t) PERF_CONTEXT_MAX;
}

/* After sample S of thread T unwound to TOP (unwinder_unwind()): tells the ring
 * reader where T's stack copies may end, a little above the highest top seen, so that the
 * copies stop carrying the environment above the outermost frame. A copy that a top cut short
 * (it ends there, and its unwind did not reach the outermost frame: the thread switched stacks,
 * or its tid went to a new thread before the reader saw the exit) turns cutting off for T. */
static void learn_stack_top(struct collector *c, struct thread *t, const struct record_sample *s,
                            uint64_t top) {
        uint64_t generation = ring_reader_stack_tops_generation(c->reader);

        if (t->stack_top_off || top == 0)
                return;
        if (top == UNWIND_SHORT) {
                if (t->stack_top > 0 && t->stack_top_generation == generation &&
                    s->regs[UNWIND_REG_SP] + s->dyn_size == t->stack_top) {
                        t->stack_top_off = true;
                        c->stats.stacks_cut_short++;
                        (void) ring_reader_set_stack_top(c->reader, t->tid, 0, s->time);
                }
                return;
        }
        top += STACK_TOP_SLACK;
        if (top <= t->stack_top && t->stack_top_generation == generation)
                return;
        if (ring_reader_set_stack_top(c->reader, t->tid, MAX(top, t->stack_top), s->time) == 0) {
                t->stack_top = MAX(top, t->stack_top);
                t->stack_top_generation = generation;
        }
}

/* Builds sample S's stack for thread T, with an optional synthetic LEAF frame (a system
 * call's name), and returns its trie node, or a negative errno. */
int64_t sample_stack(struct collector *c, const struct record_sample *s, struct thread *t, int64_t leaf) {
        const struct sampling_bpf_py_header *py = python_take(c, t, s->time);
        struct process *p = t->process;
        size_t n = 0, n_pcs = 0, kept = 0, first_user, end;
        bool unwound = false;
        uint64_t context = PERF_CONTEXT_USER, t0, frames = 0, unknown = 0;
        bool timed = c->stats.samples % TIMED_EVERY == 0;
        int64_t node = 0;
        int r;

        /* The kernel's callchain: kernel frames (kept with --kernel) and, without DWARF, the
         * user frames, each section after its PERF_CONTEXT_* marker. */
        for (uint64_t i = 0; i < s->nr; i++) {
                uint64_t ip = s->ips[i];

                if (is_context(ip)) {
                        context = ip;
                        continue;
                }
                if (context == PERF_CONTEXT_KERNEL && c->config.kernel) {
                        int64_t f = symbolizer_kernel(c->sym, ip);

                        if (f < 0)
                                return f;
                        if (n < COLLECTOR_MAX_STACK)
                                c->stack[n++] = f;
                } else if (context == PERF_CONTEXT_USER && c->config.unwind == UNWIND_FP &&
                           n_pcs < COLLECTOR_MAX_STACK) {
                        c->pcs[n_pcs] = n_pcs == 0 ? ip : ip - 1; /* return addresses: the call */
                        n_pcs++;
                }
        }
        if (leaf >= 0 && n < COLLECTOR_MAX_STACK)
                c->stack[n++] = leaf;
        /* A leaf outside the mappings known: they may have been lost (process_reread()). */
        {
                bool dwarf =
                        c->config.unwind == UNWIND_DWARF && s->regs && s->abi != PERF_SAMPLE_REGS_ABI_NONE;
                uint64_t pc = dwarf ? s->regs[UNWIND_REG_IP] : n_pcs ? c->pcs[0] : 0;

                if (pc && !proc_maps_find(p->maps, pc)) {
                        r = process_reread(c, p, pc);
                        if (r < 0)
                                return r;
                }
        }

        if (c->config.unwind == UNWIND_DWARF && s->regs && s->abi != PERF_SAMPLE_REGS_ABI_NONE) {
                struct unwind_target target = { .collector = c, .process = p };
                uint64_t top;

                t0 = timed ? now_ns(CLOCK_MONOTONIC) : 0;
                n_pcs = unwinder_unwind(c->unwinder, find_module, &target, p->maps->generation, s->regs,
                                        s->stack, s->dyn_size, c->pcs, COLLECTOR_MAX_STACK, &top);
                if (timed)
                        c->stats.unwind_ns += (now_ns(CLOCK_MONOTONIC) - t0) * TIMED_EVERY;
                if (c->reader)
                        learn_stack_top(c, t, s, top);
                unwound = true;
        }
        /* Python frames stand where their eval loops' native frames were, found by stack address:
         * DWARF unwinding only (frame pointers give no stack pointers). */
        if (py && (!unwound || py->n == 0))
                py = NULL;

        /* The outermost PCs this thread's last sample had too, in the same mappings and trie,
         * end at the trie node kept for them: only the PCs below them are looked up. */
        if (t->steps_space == p->maps->generation && t->steps_epoch == c->trie_epoch && !py)
                while (kept < n_pcs && kept < t->n_steps && t->steps[kept].pc == c->pcs[n_pcs - 1 - kept])
                        kept++;
        first_user = n;
        t0 = timed ? now_ns(CLOCK_MONOTONIC) : 0;
        r = py ? python_add_user_pcs(c, p, py, n_pcs, s->regs[UNWIND_REG_SP] + s->dyn_size, &n) :
                 add_user_pcs(c, p, 0, n_pcs - kept, &n);
        if (r < 0)
                return r;
        if (kept > 0 && n + t->steps[kept - 1].frames > COLLECTOR_MAX_STACK) {
                /* Too deep for all of it: the outermost frames give way, as always. */
                r = add_user_pcs(c, p, n_pcs - kept, n_pcs, &n);
                if (r < 0)
                        return r;
                kept = 0;
        }
        if (timed)
                c->stats.symbolize_ns += (now_ns(CLOCK_MONOTONIC) - t0) * TIMED_EVERY;
        if (n == 0 && kept == 0) {
                int64_t f = p->pid == 0 ? symbolizer_synthetic(c->sym, IDLE_NAME, false) :
                                          symbolizer_synthetic(c->sym, "[unknown]", true);

                if (f < 0)
                        return f;
                c->stack[n++] = f;
        }

        /* Into the trie, outermost frame first: the user frames from the kept node, noting each
         * stable PC's node for the next sample; then the leaf and the kernel's frames. */
        t->n_steps = kept;
        if (kept > 0) {
                node = t->steps[kept - 1].node;
                frames = t->steps[kept - 1].frames;
                unknown = t->steps[kept - 1].unknown;
        }
        end = n;
        for (size_t i = n_pcs - kept; i > 0; i--) {
                uint16_t count = c->pc_frames[i - 1] & ~STEP_UNSTABLE;

                for (; count > 0 && end > first_user; count--) {
                        const struct frame *f = &c->sym->frames[c->stack[--end]];

                        frames++;
                        unknown += f->unknown;
                        node = trie_child(c, node, c->stack[end]);
                        if (node < 0)
                                return node;
                }
                if (!(c->pc_frames[i - 1] & STEP_UNSTABLE) && t->n_steps == n_pcs - i)
                        (void) keep_step(t, t->n_steps,
                                         &(struct stack_step) {
                                                 .pc = c->pcs[i - 1],
                                                 .node = node,
                                                 .frames = frames,
                                                 .unknown = unknown,
                                         });
        }
        t->steps_space = p->maps->generation;
        t->steps_epoch = c->trie_epoch;
        for (size_t i = end; i > 0; i--) {
                const struct frame *f = &c->sym->frames[c->stack[i - 1]];

                frames++;
                unknown += f->unknown;
                node = trie_child(c, node, c->stack[i - 1]);
                if (node < 0)
                        return node;
        }
        c->stats.frames += frames;
        c->stats.frames_unknown += unknown;
        return node;
}

/* Bounds the caches of a long-running collector, once a flush has emptied the aggregates that
 * refer to trie nodes: a trie past COLLECTOR_MAX_NODES starts over (and with it the frames it
 * refers to, past COLLECTOR_MAX_FRAMES), and at most COLLECTOR_MAX_MODULES stay loaded. */
void trim(struct collector *c) {
        if (c->n_nodes > COLLECTOR_MAX_NODES || c->sym->n_frames > COLLECTOR_MAX_FRAMES) {
                c->n_nodes = 1;
                idmap_clear(c->trie);
                c->trie_epoch++; /* the nodes threads kept are gone */
                for (size_t s = 0; s < c->n_slots; s++)
                        c->slots[s]->offcpu_pending = false; /* its node is gone */
                if (c->sym->n_frames > COLLECTOR_MAX_FRAMES)
                        symbolizer_forget_frames(c->sym);
        }
        if (symbolizer_trim_modules(c->sym, COLLECTOR_MAX_MODULES) > 0)
                unwinder_forget_modules(c->unwinder);
}
