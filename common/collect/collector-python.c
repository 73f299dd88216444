/* Python frames in the collector's stacks (doc/design/python-frames.md).
 *
 * The kernel side (sampling-bpf.c, emit_python()) walks the sampled thread's Python frames at
 * the moment a sample is kept and writes them as a companion record, into the same ring, just
 * before the sample: the interpreter's frame chain lives on the heap and changes every
 * microsecond, so it must be read then, not later. Here:
 *
 *   - a process is registered with the walker the first time one of its samples is seen
 *     (py_process_inspect(): a file it maps defines _PyRuntime and Py_Version, of a version whose
 *     layout is known), and again after an exec; a fork inherits its parent's entry;
 *   - a companion waits with its thread for the thread's next sample (python_take());
 *   - the sample's native stack, unwound with each frame's stack pointer, gets each run of Python
 *     frames where its eval loop's native frame is: each run ends at an entry frame whose anchor
 *     (3.11: the invocation's _PyCFrame, a local of _PyEval_EvalFrameDefault; 3.12+: the shim
 *     frame, also on the C stack) lies within exactly one native frame's stack, [sp[i],
 *     sp[i + 1]). No names are needed, so a stripped interpreter or its .cold parts place the
 *     same;
 *   - each Python frame is named from its code object (py-code.c, read from the process while it
 *     lives) and becomes a frame like any other: the function its qualified name, its module its
 *     file, with the line of its instruction. */
#include "collector-python.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btf-field.h"
#include "grow.h"
#include "log.h"
#include "perf-record.h"
#include "py-code.h"
#include "py-process.h"
#include "time-util.h"

/* A companion and its sample: the same overflow, microseconds apart, the companion first in the
 * ring (ring-reader.c keeps that order), stamped before or after its sample. */
#define PY_PAIR_NS 200000ULL

/* A Python whose glibc is not mapped yet is looked at again this much later, this many times. */
#define PY_RETRY_NS 20000000ULL
#define PY_TRIES 50

static int prober_start(struct collector *c);
static void prober_stop(struct collector *c);
static const struct py_process *registered(struct collector *c, uint32_t pid);

void python_start(struct collector *c) {
        long off;
        int r;

        if (c->config.no_python || c->py)
                return;
        if (sampling_bpf_supported() < 0) {
                snprintf(c->py_why, sizeof c->py_why, "BPF is not available");
                return;
        }
        off = btf_field_offset("/sys/kernel/btf/vmlinux", "task_struct", "thread.fsbase");
        if (off < 0) {
                snprintf(c->py_why, sizeof c->py_why,
                         "the kernel's BTF does not say where a task's %%fs base is (%s): native frames only",
                         strerror((int) -off));
                log_warning("Python frames: %s", c->py_why);
                return;
        }
        r = sampling_bpf_py_new(off, &c->py);
        if (r >= 0) {
                c->py_names = py_code_cache_new();
                c->py_pids = idmap_new();
                c->py_ids = idmap_new();
                if (!c->py_names || !c->py_pids || !c->py_ids)
                        r = -ENOMEM;
                pthread_mutex_init(&c->py_lock, NULL);
                c->py_lock_ready = true;
                if (r >= 0)
                        r = prober_start(c);
        }
        if (r < 0) {
                c->py_names = py_code_cache_free(c->py_names);
                c->py_pids = idmap_free(c->py_pids);
                c->py_ids = idmap_free(c->py_ids);
                c->py = sampling_bpf_py_free(c->py);
                snprintf(c->py_why, sizeof c->py_why, "%s: native frames only", strerror(-r));
                log_warning("Python frames: %s", c->py_why);
        }
}

void python_stop(struct collector *c) {
        size_t i = 0;
        uint64_t key, value;

        prober_stop(c);
        c->py_names = py_code_cache_free(c->py_names);
        while (c->py_pids && idmap_next(c->py_pids, &i, &key, &value))
                free((void *) (uintptr_t) value);
        c->py_pids = idmap_free(c->py_pids);
        c->py_ids = idmap_free(c->py_ids);
        if (c->py_lock_ready)
                pthread_mutex_destroy(&c->py_lock);
        c->py_lock_ready = false;
        c->py = sampling_bpf_py_free(c->py);
}

void python_event_opened(struct collector *c, uint64_t id) {
        uint64_t *slot;

        if (!c->py)
                return;
        pthread_mutex_lock(&c->py_lock);
        (void) idmap_put(c->py_ids, id, 1, &slot);
        pthread_mutex_unlock(&c->py_lock);
}

bool python_prefetch(struct collector *c, const struct perf_event_header *h) {
        const uint64_t type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                PERF_SAMPLE_RAW;
        const struct sampling_bpf_py_frame *f;
        struct sampling_bpf_py_header hd;
        const struct py_process *p;
        struct record_sample s;
        uint64_t id;

        if (!c->py || h->size < sizeof *h + 8)
                return false;
        memcpy(&id, h + 1, 8);
        pthread_mutex_lock(&c->py_lock);
        if (!idmap_get(c->py_ids, id)) {
                pthread_mutex_unlock(&c->py_lock);
                return false;
        }
        if (record_parse_sample(h, type, 0, &s) == 0 && s.raw && s.raw_size >= sizeof hd) {
                memcpy(&hd, s.raw, sizeof hd);
                p = registered(c, s.pid);
                if (hd.magic == SAMPLING_BPF_PY_MAGIC && hd.n <= SAMPLING_BPF_PY_MAX_FRAMES &&
                    s.raw_size >= sizeof hd + (size_t) hd.n * sizeof *f && p) {
                        f = (const void *) (s.raw + sizeof hd);
                        for (unsigned j = 0; j < hd.n; j++) {
                                struct sampling_bpf_py_frame x;
                                struct py_frame_name name;

                                memcpy(&x, f + j, sizeof x);
                                if (x.code)
                                        (void) py_code_cache_name(c->py_names, (pid_t) s.pid, p, x.code,
                                                                  x.instr, x.globals, &name);
                        }
                }
        }
        pthread_mutex_unlock(&c->py_lock);
        return true;
}

int python_plan(struct collector *c, unsigned res) {
        struct cresource *r = &c->resources[res];
        int k;

        if (!c->py)
                return -ENOENT;
        if (!r->bpf) {
                k = sampling_bpf_new(c->n_cpus, &r->bpf);
                if (k < 0)
                        return k;
        }
        return sampling_bpf_use_python(r->bpf, c->py);
}

/* The lowest of the thread state's fields the walker reads (it reads PY_TS_READ bytes from it). */
static uint16_t ts_low(const struct py_layout *l) {
        uint16_t frame = l->ts_cframe != PY_NO_FIELD ? l->ts_cframe : l->ts_current_frame;
        uint16_t lo = frame < l->ts_thread_id ? frame : l->ts_thread_id;

        return l->ts_datastack_chunk < lo ? l->ts_datastack_chunk : lo;
}

/* The walker's view of P (sampling-bpf.h) from what py-process.c found. */
static void proc_entry(const struct py_process *p, struct sampling_bpf_py_proc *ret) {
        const struct py_layout *l = p->layout;
        bool cframe = l->ts_cframe != PY_NO_FIELD;
        uint16_t frame = cframe ? l->ts_cframe : l->ts_current_frame, lo = ts_low(l);

        *ret = (struct sampling_bpf_py_proc) {
                .key_addr = p->key_addr,
                .tsd_first = p->tsd_first,
                .ts_lo = lo,
                .ts_frame = (uint16_t) (frame - lo),
                .ts_thread_id = (uint16_t) (l->ts_thread_id - lo),
                .ts_chunk = l->ts_datastack_chunk == PY_NO_FIELD ? SAMPLING_BPF_PY_NONE :
                                                                   (uint16_t) (l->ts_datastack_chunk - lo),
                .cf_current = cframe ? l->cf_current_frame : SAMPLING_BPF_PY_NONE,
                .cf_previous =
                        cframe && l->fr_is_entry != PY_NO_FIELD ? l->cf_previous : SAMPLING_BPF_PY_NONE,
                .fr_code = l->fr_code,
                .fr_previous = l->fr_previous,
                .fr_instr = l->fr_instr,
                .fr_globals = l->fr_globals,
                .fr_owner = l->fr_owner,
                .fr_entry = l->fr_is_entry == PY_NO_FIELD ? SAMPLING_BPF_PY_NONE : l->fr_is_entry,
        };
}

/* Whether the walker can follow layout L: every field it reads within its reads (sampling-bpf.c:
 * 256 bytes of a thread state, 128 of a frame). */
static bool walkable(const struct py_layout *l) {
        uint16_t frame = l->ts_cframe != PY_NO_FIELD ? l->ts_cframe : l->ts_current_frame, lo = ts_low(l);

        return frame != PY_NO_FIELD && frame - lo <= 248 && l->ts_thread_id - lo <= 248 &&
                (l->ts_datastack_chunk == PY_NO_FIELD || l->ts_datastack_chunk - lo <= 248) &&
                l->fr_code <= 120 && l->fr_previous <= 120 && l->fr_instr <= 120 && l->fr_globals <= 120 &&
                l->fr_owner <= 127 && (l->fr_is_entry == PY_NO_FIELD || l->fr_is_entry <= 127);
}

/* Whether any file P maps executable is named like an interpreter: the cheap test before the
 * real one (py_process_inspect() reads symbols), so that a host's every process is not opened. */
static bool maybe_python(struct collector *c, const struct process *p) {
        for (size_t i = 0; i < p->maps->n; i++) {
                const struct mapping *m = &p->maps->mappings[i];
                const char *path, *base;

                if (m->module == SYMBOLIZER_NO_MODULE || m->module >= c->sym->n_modules)
                        continue;
                path = symbolizer_get_module(c->sym, m->module)->path;
                base = path ? strrchr(path, '/') : NULL;
                base = base ? base + 1 : path;
                if (base && strstr(base, "python"))
                        return true;
        }
        return false;
}

/* ---- the registry: which processes the walker walks ---- */

/* PID's registration (under py_lock), or NULL. */
/* A pid's registrations: the current one and, across an exec, the one before, for the samples
 * of the old program the collector has not handled yet. */
struct py_entry {
        struct py_process cur, old;
        bool has_cur, has_old, given_up;
        uint64_t since; /* cur stands from this time (CLOCK_MONOTONIC ns, the records' clock) */
        uint64_t until; /* old stood until this time */
};

static struct py_entry *entry_of(struct collector *c, uint32_t pid) {
        uint64_t *slot = idmap_get(c->py_pids, pid);

        return slot ? (struct py_entry *) (uintptr_t) *slot : NULL;
}

/* PID's current registration (under py_lock), or NULL. */
static const struct py_process *registered(struct collector *c, uint32_t pid) {
        const struct py_entry *e = entry_of(c, pid);

        return e && e->has_cur ? &e->cur : NULL;
}

/* Registers INFO for PID from TIME on (in a space of its own), or ends its registration (INFO
 * NULL), marked given up if GIVEN_UP: in the walker's map and in the registry. Under py_lock.
 * Returns 0 or a negative errno. */
static int registry_set(struct collector *c, uint32_t pid, const struct py_process *info, bool given_up,
                        uint64_t time) {
        struct sampling_bpf_py_proc bpf;
        struct py_entry *e = entry_of(c, pid);
        uint64_t *slot;
        int r;

        if (!e) {
                if (!info && !given_up)
                        return 0;
                e = calloc(1, sizeof *e);
                if (!e || idmap_put(c->py_pids, pid, (uint64_t) (uintptr_t) e, &slot) < 0) {
                        free(e);
                        return -ENOMEM;
                }
        }
        if (e->has_cur) {
                e->old = e->cur;
                e->has_old = true;
                e->until = time;
        }
        e->has_cur = false;
        e->given_up = given_up;
        if (!info) {
                sampling_bpf_py_remove_process(c->py, (pid_t) pid);
                return 0;
        }
        e->cur = *info;
        e->cur.space = ++c->py_spaces;
        proc_entry(&e->cur, &bpf);
        r = sampling_bpf_py_set_process(c->py, (pid_t) pid, &bpf);
        if (r < 0)
                return r;
        e->has_cur = true;
        e->since = time;
        return 0;
}

/* Inspects PID and registers it if it is a readable Python. Returns what py_process_inspect()
 * did, 0 after registering, or -EOPNOTSUPP (said) for a layout the walker cannot follow. */
static int inspect_and_register(struct collector *c, uint32_t pid, bool last_try, uint64_t time) {
        _cleanup_free_ char *why = NULL;
        struct py_process info;
        int r = py_process_inspect((pid_t) pid, &info, &why);

        if (r == 0 && !walkable(info.layout)) {
                free(why);
                why = NULL;
                if (asprintf(&why, "python %s (%s): a layout the walker cannot follow", info.layout->name,
                             info.path) < 0)
                        why = NULL;
                r = -EOPNOTSUPP;
        }
        if (r == -EAGAIN && last_try) {
                if (asprintf(&why, "pid %u: a Python without glibc (musl, static?): native frames only",
                             pid) < 0)
                        why = NULL;
                r = -EOPNOTSUPP;
        }
        pthread_mutex_lock(&c->py_lock);
        if (r == 0) {
                r = registry_set(c, pid, &info, false, time);
                if (r >= 0)
                        __atomic_add_fetch(&c->py_registered, 1, __ATOMIC_RELAXED);
        } else if (r == -EOPNOTSUPP) {
                /* Said once per program, whoever looked first. */
                const struct py_entry *e = entry_of(c, pid);

                if (e && e->given_up)
                        r = -EALREADY;
                else {
                        (void) registry_set(c, pid, NULL, true, time);
                        __atomic_add_fetch(&c->py_unsupported, 1, __ATOMIC_RELAXED);
                }
        }
        pthread_mutex_unlock(&c->py_lock);
        if (r == -EOPNOTSUPP)
                log_warning("Python frames: %s", why ? why : "an interpreter that cannot be read");
        return r == -EALREADY ? -EOPNOTSUPP : r;
}

/* ---- the prober: each program looked at as it execs, on a thread of its own ---- */

#define PROBER_QUEUE 1024
#define PROBER_RETRY_NS 5000000ULL /* a Python whose glibc is not mapped yet: again this much later */
#define PROBER_TRIES 200

struct py_prober {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stop;
        struct probe {
                uint32_t pid;
                unsigned tries;
                uint64_t due; /* CLOCK_MONOTONIC ns */
        } queue[PROBER_QUEUE];
        size_t n;
};

static void prober_add(struct py_prober *pr, uint32_t pid, unsigned tries, uint64_t due) {
        pthread_mutex_lock(&pr->lock);
        if (pr->n < PROBER_QUEUE) /* past it: the collector's own look at a sample */
                pr->queue[pr->n++] = (struct probe) { .pid = pid, .tries = tries, .due = due };
        pthread_cond_signal(&pr->wake);
        pthread_mutex_unlock(&pr->lock);
}

static void *prober_run(void *userdata) {
        struct collector *c = userdata;
        struct py_prober *pr = c->py_prober;

        pthread_mutex_lock(&pr->lock);
        while (!pr->stop) {
                size_t first = 0;
                uint64_t now = now_ns(CLOCK_MONOTONIC);
                struct probe x;
                int r;

                if (pr->n == 0) {
                        pthread_cond_wait(&pr->wake, &pr->lock);
                        continue;
                }
                for (size_t i = 1; i < pr->n; i++)
                        if (pr->queue[i].due < pr->queue[first].due)
                                first = i;
                if (pr->queue[first].due > now) {
                        struct timespec until = { .tv_sec = (time_t) (pr->queue[first].due / 1000000000ULL),
                                                  .tv_nsec = (long) (pr->queue[first].due % 1000000000ULL) };

                        pthread_cond_timedwait(&pr->wake, &pr->lock, &until);
                        continue;
                }
                x = pr->queue[first];
                pr->queue[first] = pr->queue[--pr->n];
                pthread_mutex_unlock(&pr->lock);
                r = inspect_and_register(c, x.pid, x.tries + 1 >= PROBER_TRIES, now_ns(CLOCK_MONOTONIC));
                if (r == -EAGAIN)
                        prober_add(pr, x.pid, x.tries + 1, now_ns(CLOCK_MONOTONIC) + PROBER_RETRY_NS);
                pthread_mutex_lock(&pr->lock);
        }
        pthread_mutex_unlock(&pr->lock);
        return NULL;
}

static int prober_start(struct collector *c) {
        struct py_prober *pr = calloc(1, sizeof *pr);
        pthread_condattr_t attr;
        int r;

        if (!pr)
                return -ENOMEM;
        pthread_mutex_init(&pr->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&pr->wake, &attr);
        pthread_condattr_destroy(&attr);
        c->py_prober = pr;
        r = pthread_create(&pr->thread, NULL, prober_run, c);
        if (r != 0) {
                pthread_cond_destroy(&pr->wake);
                pthread_mutex_destroy(&pr->lock);
                c->py_prober = mfree(pr);
                return -r;
        }
        return 0;
}

static void prober_stop(struct collector *c) {
        struct py_prober *pr = c->py_prober;

        if (!pr)
                return;
        pthread_mutex_lock(&pr->lock);
        pr->stop = true;
        pthread_cond_signal(&pr->wake);
        pthread_mutex_unlock(&pr->lock);
        pthread_join(pr->thread, NULL);
        pthread_cond_destroy(&pr->wake);
        pthread_mutex_destroy(&pr->lock);
        c->py_prober = mfree(pr);
}

void python_side_record(struct collector *c, const struct perf_event_header *h) {
        if (!c->py)
                return;
        if (h->type == PERF_RECORD_COMM && (h->misc & PERF_RECORD_MISC_COMM_EXEC)) {
                struct record_comm m;
                uint64_t id, time;

                if (record_parse_comm(h, &m) < 0 || m.pid != m.tid || record_sample_id(h, &id, &time) < 0)
                        return;
                /* A new program: the old one's registration goes at once (its addresses mean
                 * nothing now), and the new one is looked at as soon as it maps its glibc. */
                pthread_mutex_lock(&c->py_lock);
                (void) registry_set(c, m.pid, NULL, false, time);
                pthread_mutex_unlock(&c->py_lock);
                if (c->py_prober)
                        prober_add(c->py_prober, m.pid, 0, 0);
        } else if (h->type == PERF_RECORD_FORK) {
                struct record_task m;
                const struct py_process *parent;

                if (record_parse_task(h, &m) < 0 || m.pid == m.ppid || m.pid != m.tid)
                        return;
                /* A new process starts as its parent's copy: the same interpreter, walked from
                 * its first samples (a forked worker's key is read at each sample). */
                pthread_mutex_lock(&c->py_lock);
                parent = registered(c, m.ppid);
                if (parent) {
                        struct py_process copy = *parent;

                        (void) registry_set(c, m.pid, &copy, false, m.time);
                }
                pthread_mutex_unlock(&c->py_lock);
        }
}

void python_process_seen(struct collector *c, struct process *p, uint64_t time) {
        const struct py_entry *e;
        bool later = false;
        int r;

        if (!c->py || p->py || p->exited || p->pid == 0)
                return;
        /* Registered already (by the prober, or as a registered parent's fork): the collector's
         * copy of the registration that stood at the sample's time, which names its program's
         * frames until the collector meets its exec. */
        pthread_mutex_lock(&c->py_lock);
        e = entry_of(c, p->pid);
        if (e) {
                const struct py_process *at = e->has_cur && e->since <= time ? &e->cur :
                        e->has_old && time < e->until                        ? &e->old :
                                                                               NULL;

                if (at && (p->py = malloc(sizeof *p->py)))
                        *p->py = *at;
                p->py_given_up |= e->given_up;
                /* Registered after this sample (its exec's prober): the sample has no Python
                 * frames, and a look now would register it again, in a new space, whose names
                 * the reader has not read ahead: a process gone by then would go unnamed. */
                later = !at && e->has_cur && time < e->since;
        }
        pthread_mutex_unlock(&c->py_lock);
        if (p->py || p->py_given_up || later)
                return;
        /* Else the collector looks itself (a process running at the start, one that maps
         * libpython later): when its mappings change, or when a retry is due. */
        if (p->py_retry ? now_ns(CLOCK_MONOTONIC) < p->py_retry : p->py_generation == p->maps->generation)
                return;
        p->py_generation = p->maps->generation;
        p->py_retry = 0;
        if (!maybe_python(c, p))
                return;
        r = inspect_and_register(c, p->pid, p->py_tries + 1 >= PY_TRIES, time);
        if (r == -EAGAIN) {
                p->py_tries++;
                p->py_retry = now_ns(CLOCK_MONOTONIC) + PY_RETRY_NS;
        } else if (r == -EOPNOTSUPP)
                p->py_given_up = true;
        else if (r == 0) {
                p->py_generation = 0; /* the copy, at once */
                python_process_seen(c, p, time);
        }
}

/* The collector's copy of P's registration goes, and with it the code objects named under it. */
static void drop_copy(struct collector *c, struct process *p) {
        if (p->py) {
                pthread_mutex_lock(&c->py_lock);
                py_code_cache_forget(c->py_names, p->py->space);
                pthread_mutex_unlock(&c->py_lock);
        }
        p->py = mfree(p->py);
        p->py_given_up = false;
        p->py_generation = 0;
        p->py_retry = 0;
        p->py_tries = 0;
}

void python_process_exec(struct collector *c, struct process *p) {
        /* The registry's was changed as the exec's record arrived (python_side_record()). */
        drop_copy(c, p);
}

void python_process_gone(struct collector *c, struct process *p) {
        if (c->py) {
                uint64_t *slot;

                pthread_mutex_lock(&c->py_lock);
                slot = idmap_get(c->py_pids, p->pid);
                if (slot && *slot) {
                        sampling_bpf_py_remove_process(c->py, (pid_t) p->pid);
                        free((struct py_entry *) (uintptr_t) *slot);
                        *slot = 0;
                }
                pthread_mutex_unlock(&c->py_lock);
        }
        drop_copy(c, p);
}

int python_companion(struct collector *c, struct thread *t, const struct record_sample *s) {
        struct sampling_bpf_py_header h;

        if (!s->raw || s->raw_size < sizeof h)
                return -EBADMSG;
        memcpy(&h, s->raw, sizeof h);
        if (h.magic != SAMPLING_BPF_PY_MAGIC || h.n > SAMPLING_BPF_PY_MAX_FRAMES ||
            s->raw_size < sizeof h + (size_t) h.n * sizeof(struct sampling_bpf_py_frame))
                return -EBADMSG;
        (void) c;
        if (GROW(t->py_raw, t->py_cap, s->raw_size) < 0)
                return -ENOMEM;
        memcpy(t->py_raw, s->raw, s->raw_size);
        t->py_size = s->raw_size;
        t->py_time = s->time;
        return 0;
}

const struct sampling_bpf_py_header *python_take(struct collector *c, struct thread *t, uint64_t time) {
        uint32_t size = t->py_size;

        (void) c;
        t->py_size = 0;
        if (size == 0 || (t->py_time > time ? t->py_time - time : time - t->py_time) > PY_PAIR_NS)
                return NULL;
        return (const void *) t->py_raw;
}

void python_count(struct collector *c, unsigned res, const struct python_stats *before) {
        struct cresource *r = &c->resources[res];

        r->py_samples += c->py_stats.samples - before->samples;
        r->py_cut += c->py_stats.cut - before->cut;
        r->py_unreadable += c->py_stats.unreadable - before->unreadable;
}
