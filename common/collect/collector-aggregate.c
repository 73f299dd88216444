/* The collector's hits in memory, and the rows a flush writes. Hits are summed per key (resource,
 * thread slot, trie node) for the current time bucket in a dense table indexed by an idmap; a
 * flush maps new modules, frames, trie nodes, processes and threads to store ids (cached, and
 * forgotten when retention or a rollback may have deleted their rows) and writes the sums. */
#include "collector-aggregate.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "store.h"

int64_t bucket_of(struct collector *c, uint64_t time_ns) {
        int64_t ns, wall;

        /* Times come from the kernel or a perf.data file whose times were checked; the sum
         * saturates all the same, as signed overflow would be undefined (UBSan caught one). */
        if (time_ns > INT64_MAX || __builtin_add_overflow((int64_t) time_ns, c->realtime_offset, &ns))
                ns = INT64_MAX;
        wall = ns / 1000000000;

        return wall - wall % (int64_t) c->config.bucket_seconds;
}

int aggregate(struct collector *c, unsigned resource, struct thread *t, uint32_t node, uint64_t hits,
              uint64_t time_ns) {
        uint64_t key = (uint64_t) resource << (64 - KEY_RESOURCE_BITS) | (uint64_t) t->slot << 32 | node;
        int64_t bucket = bucket_of(c, time_ns);
        uint64_t *slot;
        int r;

        assert(resource < c->n_resources && t->slot < 1u << KEY_SLOT_BITS);
        if (bucket < c->bucket_floor)
                bucket = c->bucket_floor; /* closed and shipped: the bucket after it */
        /* One bucket at a time in memory: a record of a later bucket has flushed the earlier
         * one (flush_before()); a late sample of an earlier bucket joins the current one. */
        if (c->agg_bucket < 0 || bucket > c->agg_bucket)
                c->agg_bucket = bucket;

        if (c->n_agg >= COLLECTOR_MAX_HELD && !idmap_get(c->agg_index, key)) {
                c->resources[resource].lost++; /* the store has failed for too long */
                return 0;
        }
        r = idmap_put(c->agg_index, key, c->n_agg, &slot);
        if (r < 0)
                return r;
        if (r > 0) {
                if (c->n_agg == c->cap_agg) {
                        size_t cap = c->cap_agg, cap_keys = c->cap_agg; /* the two grow alike */

                        if (GROW(c->agg, cap, c->n_agg + 1) < 0 ||
                            GROW(c->agg_keys, cap_keys, c->n_agg + 1) < 0)
                                return -ENOMEM;
                        c->cap_agg = cap;
                }
                c->agg[c->n_agg] = (struct agg) {};
                c->agg_keys[c->n_agg] = key;
                c->n_agg++;
        }
        c->agg[*slot].hits += hits;
        c->agg[*slot].samples++;
        /* For the error bars of weighted samples (store_add_samples()); saturating. */
        if (hits > UINT32_MAX || c->agg[*slot].squares > UINT64_MAX - hits * hits)
                c->agg[*slot].squares = UINT64_MAX / 2;
        else
                c->agg[*slot].squares += hits * hits;
        c->resources[resource].hits += hits;
        c->resources[resource].samples++;
        return 0;
}

/* Whether the cached id of a run, process or thread row must go after retention: when its row
 * went (or the store cannot say). */
static bool row_gone(struct collector *c, const char *table, int64_t id) {
        return id && (!c->store || store_row_exists(c->store, table, id) <= 0);
}

/* Forgets the store ids the collector cached: those of rows retention may have deleted, or after
 * a ROLLBACK only those of rows the failed transaction inserted. Rows found or added by key
 * (frames, stacks, modules, resources) are simply looked up again; but a run, a process or a
 * thread forgotten while its row is still there would be inserted again, splitting the run in
 * two and its processes: after a failed flush (a full disk), or after each retention pass
 * (the first a minute after cppd starts). So those are forgotten only if their row is gone;
 * after a rollback, the rowids a transaction inserted are above every committed one, so the
 * first it got divides the two. */
void forget_ids(struct collector *c, bool rollback) {
        uint64_t key, value;
        size_t i = 0;

        for (size_t f = 0; f < c->sym->n_frames; f++)
                c->sym->frames[f].store_id = 0;
        for (size_t m = 0; m < c->sym->n_modules; m++)
                c->sym->modules[m]->store_id = 0;
        for (size_t n = 0; n < c->n_nodes; n++)
                c->nodes[n].store_id = 0;
        for (size_t s = 0; s < c->n_slots; s++) {
                int64_t id = c->slots[s]->store_id;

                if (rollback ? c->txn_thread_id && id >= c->txn_thread_id : row_gone(c, "thread", id))
                        c->slots[s]->store_id = 0;
        }
        while (idmap_next(c->processes, &i, &key, &value)) {
                struct process *p = (struct process *) (uintptr_t) value;

                if (rollback ? c->txn_process_id && p->store_id >= c->txn_process_id :
                               row_gone(c, "process", p->store_id))
                        p->store_id = 0;
        }
        for (unsigned r = 0; r < c->n_resources; r++)
                c->resources[r].store_id = 0;
        if (rollback ? c->txn_run : row_gone(c, "run", c->run_id))
                c->run_id = 0;
}

static int store_module(struct collector *c, uint32_t index, int64_t *ret) {
        struct module *m;
        int r;

        switch (index) {
        case SYMBOLIZER_NO_MODULE:
                *ret = 0;
                return 0;
        case SYMBOLIZER_KERNEL:
                return store_module_id(c->store, "[kernel.kallsyms]", "", ret);
        case SYMBOLIZER_JIT:
                return store_module_id(c->store, "[jit]", "", ret);
        case SYMBOLIZER_PYTHON:
                return -EINVAL; /* store_frame(): the frame's file */
        }
        m = symbolizer_get_module(c->sym, index);
        if (m->store_id == 0) {
                r = store_module_id(c->store, m->path, m->build_id, &m->store_id);
                if (r < 0)
                        return r;
        }
        *ret = m->store_id;
        return 0;
}

static int store_frame(struct collector *c, uint32_t index, int64_t *ret) {
        struct frame *f = &c->sym->frames[index];
        bool located = !c->config.function_frames && f->module != SYMBOLIZER_NO_MODULE &&
                f->module != SYMBOLIZER_JIT;
        int64_t module, function;
        int r;

        if (f->store_id == 0) {
                if (f->module == SYMBOLIZER_PYTHON) /* a Python function's module is its file */
                        r = store_module_id(c->store, name_table_get(c->sym->names, f->file), "", &module);
                else
                        r = store_module(c, f->module, &module);
                if (r < 0)
                        return r;
                r = store_function_id(c->store, name_table_get(c->sym->names, f->function), module,
                                      f->unknown, &function);
                if (r < 0)
                        return r;
                r = store_frame_id(c->store, function, located ? (int64_t) f->address : -1,
                                   located && f->file != NAME_NONE ? name_table_get(c->sym->names, f->file) :
                                                                     NULL,
                                   located ? f->line : 0, f->inlined, &f->store_id);
                if (r < 0)
                        return r;
        }
        *ret = f->store_id;
        return 0;
}

static int store_node(struct collector *c, uint32_t node, int64_t *ret) {
        uint32_t chain[COLLECTOR_MAX_STACK + 1];
        size_t n = 0;
        int64_t parent, frame;
        int r;

        /* The unstored part of the path, innermost first; a stack is at most
         * COLLECTOR_MAX_STACK deep, so it fits. */
        for (uint32_t i = node; i != 0 && c->nodes[i].store_id == 0; i = c->nodes[i].parent)
                chain[n++] = i;
        while (n > 0) {
                uint32_t i = chain[--n];

                parent = c->nodes[i].parent ? c->nodes[c->nodes[i].parent].store_id : 0;
                r = store_frame(c, c->nodes[i].frame, &frame);
                if (r < 0)
                        return r;
                r = store_stack_id(c->store, parent, frame, &c->nodes[i].store_id);
                if (r < 0)
                        return r;
        }
        *ret = c->nodes[node].store_id;
        return 0;
}

static int store_thread(struct collector *c, struct thread *t, int64_t *ret) {
        struct process *p = t->process;
        int r;

        if (p->store_id == 0) {
                r = store_add_process(c->store, c->run_id, p->pid, p->comm[0] ? p->comm : NULL, p->exe,
                                      p->unit, time(NULL), &p->store_id);
                if (r < 0)
                        return r;
                if (!c->txn_process_id)
                        c->txn_process_id = p->store_id;
                /* Threads of the previous program (before an exec) need new rows too. */
                for (size_t s = 0; s < c->n_slots; s++)
                        if (c->slots[s]->process == p)
                                c->slots[s]->store_id = 0;
        }
        if (t->store_id == 0) {
                r = store_add_thread(c->store, p->store_id, t->tid, t->comm[0] ? t->comm : NULL,
                                     &t->store_id);
                if (r < 0)
                        return r;
                if (!c->txn_thread_id)
                        c->txn_thread_id = t->store_id;
        }
        *ret = t->store_id;
        return 0;
}

/* The processes resource RES could not count (alloc-*), and NOTE (SIZE bytes): the first of
 * them and why, as every header says. */
static uint64_t uncounted_of(struct collector *c, const struct cresource *res, char *note, size_t size) {
        note[0] = '\0';
        if (res->probed && c->alloc_probe) {
                struct alloc_probe_stats a;

                alloc_probe_get_stats(c->alloc_probe, &a);
                if (a.not_measured)
                        snprintf(note, size, "%s (pid %d) the first: %s", a.first_comm, (int) a.first_pid,
                                 a.first_why);
                return a.not_measured;
        }
        if (res->uncounted)
                snprintf(note, size,
                         "%s (pid %" PRIu32
                         ") the first: an allocator of its own (linked into the program, or "
                         "preloaded before cppd's counter)",
                         res->uncounted_comm, res->uncounted_pid);
        return res->uncounted;
}

int flush_rows(struct collector *c, bool final) {
        int r;

        if (c->run_id == 0) {
                r = store_add_run(c->store,
                                  &(struct store_run) {
                                          .kind = c->run_kind ?: "record",
                                          .command = c->run_command,
                                          .unwind = c->config.unwind == UNWIND_DWARF ? "dwarf" : "fp",
                                          .started = c->run_started ?: time(NULL),
                                          .host = c->run_host,
                                  },
                                  &c->run_id);
                if (r < 0)
                        return r;
                c->txn_run = true;
        }
        for (unsigned i = 0; i < c->n_resources; i++) {
                struct cresource *res = &c->resources[i];
                char note[256];
                uint64_t n;

                if (!res->active)
                        continue;
                if (res->store_id == 0) {
                        r = store_add_run_resource(c->store, c->run_id, res->name, res->unit, res->event,
                                                   res->period, &res->store_id);
                        if (r < 0)
                                return r;
                }
                if (res->lost > res->lost_flushed) {
                        r = store_add_lost(c->store, c->run_id, res->store_id, res->lost - res->lost_flushed);
                        if (r < 0)
                                return r;
                }
                r = store_set_sampling(c->store, c->run_id, res->store_id, res->random, res->thin.max_factor);
                if (r < 0)
                        return r;
                n = uncounted_of(c, res, note, sizeof note);
                if (n != res->uncounted_flushed) {
                        r = store_set_uncounted(c->store, c->run_id, res->store_id, n, note);
                        if (r < 0)
                                return r;
                        res->uncounted_flushed = n;
                }
                if (res->py_samples != res->py_flushed) {
                        r = store_set_python(c->store, c->run_id, res->store_id, res->py_samples, res->py_cut,
                                             res->py_unreadable);
                        if (r < 0)
                                return r;
                        res->py_flushed = res->py_samples;
                }
        }
        for (size_t i = 0; i < c->n_agg; i++) {
                uint64_t key = c->agg_keys[i];
                unsigned res = key >> (64 - KEY_RESOURCE_BITS);
                struct thread *t = c->slots[(key >> 32) & ((1u << KEY_SLOT_BITS) - 1)];
                int64_t stack, thread;

                r = store_thread(c, t, &thread);
                if (r < 0)
                        return r;
                r = store_node(c, (uint32_t) key, &stack);
                if (r < 0)
                        return r;
                r = store_add_samples(c->store, c->resources[res].store_id, c->agg_bucket, thread, stack,
                                      c->agg[i].hits, c->agg[i].samples, c->agg[i].squares);
                if (r < 0)
                        return r;
        }
        if (final)
                return store_end_run(c->store, c->run_id, time(NULL));
        return 0;
}
