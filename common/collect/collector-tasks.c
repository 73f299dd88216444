/* The tasks the collector follows, as perf's machine.c keeps them: processes (pid -> struct
 * process: name, executable, unit, address space, JIT map) and threads (tid -> struct thread, and
 * a dense slot each for the aggregation keys), created from the side band's records (MMAP2, COMM,
 * FORK, EXIT) or from /proc, and reaped once their hits are stored. The unit of a process that
 * execs is learned by the reader thread while the process surely lives (on_exec_record(), with a
 * cache of cgroup -> unit) and taken here when its COMM record is handled.
 *
 * The idle task. A CPU with nothing to run is in pid 0, which has no /proc entry, no name and
 * no user stack: it is named IDLE_NAME as perf names it, and a stack of its with no kernel frame
 * is the frame IDLE_NAME, a known one, not an unsymbolized "[unknown]" (on an idle host nearly
 * every cpu-time sample is the idle task's, and would read as symbolization gone wrong). */
#include "collector-tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-login.h>

#include "collector-events.h"
#include "collector-python.h"
#include "grow.h"
#include "perf-record.h"
#include "time-util.h"

/* Values of exec_units: a unit name (malloc()ed), or one of these. */
#define EXEC_UNIT_TAKEN 0 /* handled: the map cannot delete */
#define EXEC_UNIT_NONE 1  /* looked at the exec, and the process had none */

void exec_unit_free(uint64_t v) {
        if (v > EXEC_UNIT_NONE)
                free((char *) (uintptr_t) v);
}

void process_free(struct process *p) {
        if (!p)
                return;
        for (unsigned i = 0; i < RECENT_MAPS; i++)
                free(p->recent[i].file);
        free(p->exe);
        free(p->unit);
        proc_maps_free(p->maps);
        symtab_free(p->jit);
        free(p->bytes_remaining);
        free(p->py);
        free(p);
}

void thread_free(struct thread *t) {
        free(t->py_raw);
        free(t->steps);
        free(t);
}

/* PID's systemd unit from its cgroup, through libsystemd: a system unit, else a user unit
 * ("app.service" under user@1000.service). strdup()ed; NULL: none, or PID is gone. */
static char *systemd_unit(uint32_t pid) {
        char *unit = NULL;

        if (sd_pid_get_unit(pid, &unit) < 0 && sd_pid_get_user_unit(pid, &unit) < 0)
                return NULL;
        return unit;
}

/* Reads /proc/PID/cgroup into BUF (SIZE bytes, NUL-terminated). Returns its length, -E2BIG if it
 * does not fit, or a negative errno (the process is gone). */
static ssize_t read_cgroup(uint32_t pid, char *buf, size_t size) {
        char path[64];
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/%u/cgroup", pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                n = -errno;
        close(fd);
        if (n < 0)
                return n;
        if ((size_t) n == size - 1)
                return -E2BIG;
        buf[n] = '\0';
        return n;
}

/* Forgets every cgroup the reader thread has seen. */
void forget_cgroups(struct collector *c) {
        for (size_t i = 0; c->cgroups && i < name_table_size(c->cgroups); i++)
                free(c->cgroup_units[i]);
        c->cgroups = name_table_free(c->cgroups);
}

/* systemd_unit() of PID, for the reader thread. A busy host runs thousands of short processes
 * from a few cgroups, so the answer is kept per cgroup text, once that text is read the same
 * before and after libsystemd's reads of it (the process did not move meanwhile): an exec then
 * costs one read of /proc/PID/cgroup rather than two of libsystemd's. */
static char *exec_unit(struct collector *c, uint32_t pid) {
        char text[2048], again[sizeof text], *unit, *copy;
        ssize_t n = read_cgroup(pid, text, sizeof text);
        uint32_t id = NAME_NONE;
        int64_t added;

        if (n >= 0 && c->cgroups)
                id = name_table_find(c->cgroups, text);
        if (id != NAME_NONE)
                return c->cgroup_units[id] ? strdup(c->cgroup_units[id]) : NULL;
        unit = systemd_unit(pid);
        if (n < 0 || read_cgroup(pid, again, sizeof again) != n || memcmp(text, again, n) != 0)
                return unit;

        if (c->cgroups && name_table_size(c->cgroups) >= COLLECTOR_MAX_CGROUPS)
                forget_cgroups(c); /* a host making cgroups without end: start over */
        if (!c->cgroups)
                c->cgroups = name_table_new();
        if (!c->cgroups)
                return unit;
        if (GROW(c->cgroup_units, c->cap_cgroup_units, name_table_size(c->cgroups) + 1) < 0)
                return unit;
        copy = unit ? strdup(unit) : NULL;
        if (unit && !copy)
                return unit;
        added = name_table_intern(c->cgroups, text, n);
        if (added >= 0)
                c->cgroup_units[added] = copy;
        else
                free(copy);
        return unit;
}

/* The reader thread's hook: at an exec, learn the process's unit while it surely lives (systemd
 * moves a service's process into its cgroup before the exec), or that it has none. */
void on_exec_record(void *userdata, const struct perf_event_header *h) {
        struct collector *c = userdata;
        struct record_comm m;
        uint64_t *slot = NULL, v, id, lost;
        char *unit;
        int r;

        python_side_record(c, h);
        if (h->type == PERF_RECORD_LOST && record_parse_lost(h, &id, &lost) == 0) {
                /* event_ids is not written once the reader runs. */
                slot = idmap_get(c->event_ids, id);
                if (slot)
                        thin_pressure(c, c->events[*slot].resource);
                return;
        }
        if (h->type != PERF_RECORD_COMM || !(h->misc & PERF_RECORD_MISC_COMM_EXEC) ||
            record_parse_comm(h, &m) < 0 || m.pid != m.tid)
                return;
        unit = exec_unit(c, m.pid);
        v = unit ? (uintptr_t) unit : EXEC_UNIT_NONE;
        pthread_mutex_lock(&c->exec_units_lock);
        r = idmap_put(c->exec_units, m.pid, v, &slot);
        if (r == 0) {
                exec_unit_free(*slot); /* an older exec's, not handled yet */
                *slot = v;
        }
        pthread_mutex_unlock(&c->exec_units_lock);
        if (r < 0)
                free(unit);
}

/* What the reader thread learned of PID's unit at its exec: 1 and *ret (a string to free, or
 * NULL: it had none), or 0 if it did not look. */
static int take_exec_unit(struct collector *c, uint32_t pid, char **ret) {
        uint64_t *slot, v = EXEC_UNIT_TAKEN;

        pthread_mutex_lock(&c->exec_units_lock);
        slot = idmap_get(c->exec_units, pid);
        if (slot) {
                v = *slot;
                *slot = EXEC_UNIT_TAKEN;
        }
        pthread_mutex_unlock(&c->exec_units_lock);
        *ret = v > EXEC_UNIT_NONE ? (char *) (uintptr_t) v : NULL;
        return v != EXEC_UNIT_TAKEN;
}

/* P's /proc/PID/maps, open. NULL and errno: gone, forbidden. */
static FILE *open_proc_maps(const struct process *p) {
        char path[64];

        snprintf(path, sizeof path, "/proc/%u/maps", p->pid);
        return fopen(path, "re");
}

/* Adds the executable mappings read from F (P's /proc/PID/maps) to P's. */
static int add_proc_maps(struct collector *c, struct proc_maps *m, FILE *f) {
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;

        while (getline(&line, &cap, f) > 0) {
                struct proc_maps_line l;
                uint32_t module = SYMBOLIZER_NO_MODULE;
                int r;

                if (proc_maps_parse_line(line, &l) < 0 || !l.exec)
                        continue;
                if (l.path[0] == '/' || streq(l.path, "[vdso]")) {
                        r = symbolizer_module(c->sym, l.path, NULL, 0,
                                              (uint64_t) l.dev_major << 32 | l.dev_minor, l.ino, &module);
                        if (r < 0)
                                return r;
                }
                r = proc_maps_add(m, l.start, l.end, l.pgoff, module);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_proc_maps(struct collector *c, struct process *p) {
        _cleanup_fclose_ FILE *f = open_proc_maps(p);

        return f ? add_proc_maps(c, p->maps, f) : -errno;
}

/* Reads P's systemd unit while it lives. Keeps the old one if P is gone or has none. */
static void read_unit(struct process *p) {
        char *unit = systemd_unit(p->pid);

        if (!unit)
                return;
        free(p->unit);
        p->unit = unit;
}

static void read_comm(const char *path, char comm[static 16]) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");

        if (f && fgets(comm, 16, f))
                comm[strcspn(comm, "\n")] = '\0';
}

/* P's name, program and unit from /proc. */
static void read_proc_names(struct process *p) {
        char path[64], exe[4096];
        ssize_t n;

        snprintf(path, sizeof path, "/proc/%u/comm", p->pid);
        read_comm(path, p->comm);
        snprintf(path, sizeof path, "/proc/%u/exe", p->pid);
        n = readlink(path, exe, sizeof exe - 1);
        if (n > 0) {
                exe[n] = '\0';
                free(p->exe);
                p->exe = strdup(exe);
        }
        read_unit(p);
}

/* How often a process's /proc is read again at most (process_reread()): soon after a read that
 * mapped the address that asked for it (the side band lost an exec or mappings, and may lose
 * more), rarely after one that did not (code of no file: a JIT's, a loader's). */
#define PROC_REREAD_NS 10000000ULL
#define PROC_REREAD_IDLE_NS 1000000000ULL

int process_reread(struct collector *c, struct process *p, uint64_t pc) {
        char comm[sizeof p->comm];
        _cleanup_free_ char *exe = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_(proc_maps_freep) struct proc_maps *read = NULL;
        uint64_t now = now_ns(CLOCK_MONOTONIC), *slot;
        int r;

        if ((p->proc_reread_ns &&
             now - p->proc_reread_ns < (p->proc_reread_idle ? PROC_REREAD_IDLE_NS : PROC_REREAD_NS)) ||
            p->exited || c->offline || p->pid == 0)
                return 0;
        p->proc_reread_ns = now;
        p->proc_reread_idle = true;
        c->stats.proc_rereads++;
        f = open_proc_maps(p);
        if (!f)
                return 0; /* gone: what is known stays */
        read = proc_maps_new();
        if (!read)
                return -ENOMEM;
        r = add_proc_maps(c, read, f);
        /* An exited task its parent has not reaped yet (a zombie) shows no mappings: what the
         * records said stays (a short-lived child's every later sample went [unknown]). */
        if (r < 0 || read->n == 0)
                return r == -ENOMEM ? r : 0;
        memcpy(comm, p->comm, sizeof comm);
        exe = p->exe ? strdup(p->exe) : NULL;
        read_proc_names(p);
        proc_maps_clear(p->maps);
        for (size_t i = 0; i < read->n && r >= 0; i++)
                r = proc_maps_add(p->maps, read->mappings[i].start, read->mappings[i].end,
                                  read->mappings[i].pgoff, read->mappings[i].module);
        if (r == -ENOMEM)
                return r;
        p->proc_reread_idle = !proc_maps_find(p->maps, pc);
        if (!streq(comm, p->comm) || !exe || !p->exe || !streq(exe, p->exe)) {
                /* An exec the side band lost: another program, another row (handle_comm()),
                 * and its main thread's new name. */
                struct thread *main_thread =
                        (slot = idmap_get(c->threads, p->pid)) ? (struct thread *) (uintptr_t) *slot : NULL;

                if (main_thread && main_thread->process == p)
                        memcpy(main_thread->comm, p->comm, sizeof p->comm);
                p->store_id = 0;
                p->jit = symtab_free(p->jit);
                p->jit_size = 0;
                p->jit_checked = 0;
        }
        return r == 0;
}

/* The process PID, created if new; FROM_PROC reads its maps and name from /proc (attach, or a
 * process whose FORK we never saw). NULL: no memory. */
struct process *process_get(struct collector *c, uint32_t pid, bool from_proc) {
        struct process *p;
        uint64_t *slot;

        slot = idmap_get(c->processes, pid);
        if (slot)
                return (struct process *) (uintptr_t) *slot;
        p = calloc(1, sizeof *p);
        if (!p)
                return NULL;
        p->pid = pid;
        p->maps = proc_maps_new();
        p->bytes_remaining = calloc(COLLECTOR_MAX_RESOURCES, sizeof *p->bytes_remaining);
        if (!p->maps || !p->bytes_remaining || idmap_put(c->processes, pid, (uintptr_t) p, &slot) < 0) {
                process_free(p);
                return NULL;
        }
        for (unsigned r = 0; r < c->n_resources; r++)
                p->bytes_remaining[r] = draw_period(c, c->resources[r].period);
        if (pid == 0)
                strcpy(p->comm, IDLE_NAME); /* the idle task: nothing in /proc to read */
        else if (from_proc && !c->offline) {
                p->proc_reread_ns = now_ns(CLOCK_MONOTONIC);
                read_proc_names(p);
                (void) load_proc_maps(c, p); /* gone or forbidden: its frames stay unknown */
        }
        c->stats.processes++;
        return p;
}

/* The thread TID of process PID, created if new. NULL: no memory (or too many threads). */
struct thread *thread_get(struct collector *c, uint32_t pid, uint32_t tid) {
        struct thread *t;
        struct process *p;
        uint64_t *slot;

        slot = idmap_get(c->threads, tid);
        if (slot) {
                t = (struct thread *) (uintptr_t) *slot;
                if (t->process->pid == pid)
                        return t;
                /* The tid was reused by another process: a new thread in the same slot's place. */
        }
        p = process_get(c, pid, !idmap_get(c->processes, pid));
        if (!p)
                return NULL;
        if (c->n_slots >= (1u << KEY_SLOT_BITS))
                return NULL;
        if (GROW(c->slots, c->cap_slots, (size_t) c->n_slots + 1) < 0)
                return NULL;
        t = calloc(1, sizeof *t);
        if (!t)
                return NULL;
        t->tid = tid;
        t->process = p;
        t->slot = c->n_slots;
        memcpy(t->comm, p->comm, sizeof t->comm);
        if (idmap_put(c->threads, tid, (uintptr_t) t, &slot) < 0) {
                free(t);
                return NULL;
        }
        *slot = (uintptr_t) t;
        c->slots[c->n_slots++] = t;
        c->stats.threads++;
        return t;
}

/* Whether a mapped file name names a file we can open: not "//anon" (anonymous executable
 * memory, as JITs make), "/dev/zero", "/anon_hugepage" or "/SYSV..." shared memory. */
static bool mapped_file(const char *name) {
        return name[0] == '/' && !startswith(name, "//anon") && !streq(name, "/dev/zero") &&
                !startswith(name, "/anon_hugepage") && !startswith(name, "/SYSV");
}

/* Keeps the mapping [START, END) of P, recorded at TIME, among its recent ones. */
static void remember_map(struct process *p, uint64_t time, uint64_t start, uint64_t end, uint64_t pgoff,
                         uint32_t module, const char *file) {
        struct recent_map *r = &p->recent[p->n_recent++ % RECENT_MAPS];

        free(r->file);
        *r = (struct recent_map) { time, start, end, pgoff, module, file ? strdup(file) : NULL };
}

/* An exec of P recorded at TIME, its old mappings gone: the mappings recorded after it, met
 * before it, are the new program's (the first file among them the program itself). */
static int replay_maps(struct process *p, uint64_t time) {
        uint64_t after = time;
        int r;

        for (;;) {
                struct recent_map *next = NULL;

                for (unsigned i = 0; i < RECENT_MAPS; i++)
                        if (p->recent[i].time > after && (!next || p->recent[i].time < next->time))
                                next = &p->recent[i];
                if (!next)
                        return 0;
                after = next->time;
                r = proc_maps_add(p->maps, next->start, next->end, next->pgoff, next->module);
                if (r < 0)
                        return r;
                if (p->exe_pending && next->file) {
                        free(p->exe);
                        p->exe = strdup(next->file);
                        p->exe_pending = false;
                }
        }
}

int handle_mmap2(struct collector *c, const struct perf_event_header *h) {
        struct record_mmap2 m;
        struct process *p;
        uint32_t module = SYMBOLIZER_NO_MODULE;
        uint64_t id, time = 0;
        int r;

        if (record_parse_mmap2(h, c->config.mmap_build_ids, &m) < 0)
                return -EBADMSG;
        if (!(m.prot & 4 /* PROT_EXEC */) || m.len == 0 || m.addr + m.len < m.addr)
                return 0;
        p = process_get(c, m.pid, false);
        if (!p)
                return -ENOMEM;
        if (p->exe_pending && mapped_file(m.filename)) {
                /* The kernel maps the program before its interpreter. */
                free(p->exe);
                p->exe = strdup(m.filename);
                p->exe_pending = false;
        }
        if (mapped_file(m.filename) || streq(m.filename, "[vdso]")) {
                r = symbolizer_module(c->sym, m.filename, m.has_build_id ? m.build_id : NULL,
                                      m.has_build_id ? m.build_id_size : 0, (uint64_t) m.maj << 32 | m.min,
                                      m.ino, &module);
                if (r < 0)
                        return r;
        }
        /* New executable memory of no file (a JIT's, made executable by mprotect()): the map
         * naming it may be new too, and a look at it within the last second (jit_lookup()) did
         * not see it. */
        if (!mapped_file(m.filename) && !streq(m.filename, "[vdso]"))
                p->jit_checked = 0;
        if (record_sample_id(h, &id, &time) == 0)
                remember_map(p, time, m.addr, m.addr + m.len, m.pgoff, module,
                             mapped_file(m.filename) ? m.filename : NULL);
        return proc_maps_add(p->maps, m.addr, m.addr + m.len, m.pgoff, module);
}

int handle_comm(struct collector *c, const struct perf_event_header *h) {
        struct record_comm m;
        struct thread *t;
        uint64_t id, time;
        int r;

        if (record_parse_comm(h, &m) < 0)
                return -EBADMSG;
        t = thread_get(c, m.pid, m.tid);
        if (!t)
                return -ENOMEM;
        snprintf(t->comm, sizeof t->comm, "%s", m.comm);
        if (m.exec || m.pid == m.tid)
                snprintf(t->process->comm, sizeof t->process->comm, "%s", m.comm);
        if (m.exec) {
                if (m.pid == (uint32_t) c->before_exec)
                        c->before_exec = 0;
                /* A new program: the old mappings are gone, its own MMAP2s follow; a new stack
                 * (the reader forgot its top at the same record). */
                proc_maps_clear(t->process->maps);
                t->stack_top = 0;
                t->stack_top_off = false;
                t->process->jit = symtab_free(t->process->jit);
                t->process->jit_size = 0;
                t->process->jit_mtime = (struct timespec) {};
                t->process->jit_ino = 0;
                t->process->jit_checked = 0;
                t->process->store_id = 0; /* a new process row: it runs another program */
                t->process->exe_pending = true;
                if (record_sample_id(h, &id, &time) == 0) {
                        r = replay_maps(t->process, time);
                        if (r < 0)
                                return r;
                }
                python_process_exec(c, t->process);
                /* A process probed already keeps its links across the exec (they follow the
                 * thread group); one that joined a unit asked for before its exec gets them. */
                if (c->alloc_probe)
                        alloc_probe_add(c->alloc_probe, (pid_t) m.pid, 0);
                {
                        char *unit;

                        /* Asked twice for a process in no unit, systemd's library reads the
                         * cgroup file four times: once is enough. */
                        if (take_exec_unit(c, m.pid, &unit) == 0)
                                read_unit(t->process);
                        else if (unit) {
                                free(t->process->unit);
                                t->process->unit = unit;
                        }
                }
        }
        return 0;
}

/* The process stays until its hits are stored (a flush, later still while the disk is full). */
static void process_exited(struct process *p) {
        p->exited = true;
}

int handle_task(struct collector *c, const struct perf_event_header *h) {
        struct record_task m;
        struct process *parent, *child;
        struct thread *t;
        uint64_t *slot;

        if (record_parse_task(h, &m) < 0)
                return -EBADMSG;
        if (h->type == PERF_RECORD_EXIT) {
                /* Out of the tracepoint programs' thread maps (sampling-bpf.c), before the
                 * thread id names another task. */
                for (unsigned r = 0; r < c->n_resources; r++)
                        if (c->resources[r].bpf)
                                sampling_bpf_remove_tid(c->resources[r].bpf, (pid_t) m.tid);
                slot = idmap_get(c->threads, m.tid);
                if (slot) {
                        t = (struct thread *) (uintptr_t) *slot;
                        t->exited = true;
                        t->offcpu_pending = false;
                }
                if (m.pid == m.tid && (slot = idmap_get(c->processes, m.pid))) {
                        python_process_gone(c, (struct process *) (uintptr_t) *slot);
                        process_exited((struct process *) (uintptr_t) *slot);
                }
                if (m.pid == m.tid && c->alloc_probe)
                        alloc_probe_exited(c->alloc_probe, (pid_t) m.pid);
                return 0;
        }
        /* FORK: a new thread of PID, or (pid != ppid) a new process that starts as a copy of
         * its parent's address space. */
        if (m.pid != m.ppid && !idmap_get(c->processes, m.pid)) {
                parent = process_get(c, m.ppid, false);
                child = process_get(c, m.pid, false);
                if (!parent || !child)
                        return -ENOMEM;
                proc_maps_free(child->maps);
                child->maps = proc_maps_copy(parent->maps);
                if (!child->maps)
                        return -ENOMEM;
                memcpy(child->comm, parent->comm, sizeof child->comm);
                if (parent->exe && !(child->exe = strdup(parent->exe)))
                        return -ENOMEM;
                /* A child starts in its parent's cgroup; systemd moves a service's first process
                 * before it execs, which handle_comm() catches. */
                if (parent->unit && !(child->unit = strdup(parent->unit)))
                        return -ENOMEM;
                /* Its own uprobes (alloc-*): the breakpoints it inherited trap uncounted until
                 * then. */
                if (c->alloc_probe)
                        alloc_probe_add(c->alloc_probe, (pid_t) m.pid, m.time);
        }
        t = thread_get(c, m.pid, m.tid);
        if (!t)
                return -ENOMEM;
        slot = idmap_get(c->threads, m.ptid);
        if (slot)
                memcpy(t->comm, ((struct thread *) (uintptr_t) *slot)->comm, sizeof t->comm);
        return 0;
}

/* Exit records are lost with a full ring like any other (PERF_RECORD_LOST): after a loss, and
 * at least every GONE_CHECK_NS whatever the rings said, asks the kernel which of the tasks
 * followed are gone, or they would stay for ever. A task gone now may still have records in the
 * queue or the rings (a consumer a second behind, on a loaded machine): it counts as exited only
 * once a record later than the look has been handled, or its samples would come to a new,
 * nameless process without mappings (test-daemon's workload, 0.5 s of its samples, beside
 * test-record's losses). Returns whether TASK (found gone at *GONE_NS, 0: not yet) is gone for
 * good; ALIVE asks the kernel. */
static bool gone_for_good(struct collector *c, uint64_t *gone_ns, bool (*alive)(const void *),
                          const void *task, uint64_t now) {
        if (*gone_ns == 0 && !alive(task))
                *gone_ns = now;
        if (*gone_ns == 0)
                return false;
        if (c->handled_ns >= *gone_ns || now - *gone_ns >= GONE_CHECK_NS)
                return true; /* or no record came since (a session's gated clock): not for ever */
        c->gone_waiting = true;
        return false;
}

static bool thread_alive(const void *task) {
        const struct thread *t = task;

        return syscall(SYS_tgkill, (pid_t) t->process->pid, (pid_t) t->tid, 0) == 0 || errno != ESRCH;
}

static bool process_alive(const void *task) {
        return kill((pid_t) ((const struct process *) task)->pid, 0) == 0 || errno != ESRCH;
}

static void mark_gone(struct collector *c) {
        uint64_t key, value, now = now_ns(CLOCK_MONOTONIC);
        size_t i = 0;

        if (c->offline ||
            (c->stats.lost == c->lost_checked && now - c->gone_checked_ns < GONE_CHECK_NS &&
             !c->gone_waiting))
                return;
        c->lost_checked = c->stats.lost;
        c->gone_checked_ns = now;
        c->gone_waiting = false;
        for (size_t s = 0; s < c->n_slots; s++) {
                struct thread *t = c->slots[s];

                if (!t->exited && gone_for_good(c, &t->gone_ns, thread_alive, t, now))
                        t->exited = true;
        }
        while (idmap_next(c->processes, &i, &key, &value)) {
                struct process *p = (struct process *) (uintptr_t) value;

                if (!p->exited && gone_for_good(c, &p->gone_ns, process_alive, p, now))
                        process_exited(p);
        }
}

/* Forgets processes and threads that exited, once their hits are stored, and the units of
 * execs already handled. */
void reap(struct collector *c) {
        uint64_t key, value, *slot;
        size_t i = 0, kept = 0;

        pthread_mutex_lock(&c->exec_units_lock);
        {
                _cleanup_(idmap_freep) struct idmap *pending = idmap_new();

                while (pending && idmap_next(c->exec_units, &i, &key, &value))
                        if (value != EXEC_UNIT_TAKEN && idmap_put(pending, key, value, &slot) < 0)
                                exec_unit_free(value);
                if (pending) {
                        idmap_free(c->exec_units);
                        c->exec_units = take_ptr(&pending);
                }
        }
        pthread_mutex_unlock(&c->exec_units_lock);
        i = 0;

        mark_gone(c);
        for (size_t s = 0; s < c->n_slots; s++) {
                struct thread *t = c->slots[s];

                if (!t->exited) {
                        t->slot = kept;
                        c->slots[kept++] = t;
                        continue;
                }
                thread_free(t);
        }
        c->n_slots = kept;
        /* The maps cannot delete: rebuild them from what is kept. */
        idmap_clear(c->threads);
        for (size_t s = 0; s < c->n_slots; s++)
                (void) idmap_put(c->threads, c->slots[s]->tid, (uintptr_t) c->slots[s], &slot);

        {
                _cleanup_(idmap_freep) struct idmap *alive = idmap_new();

                if (!alive)
                        return; /* keep everything; try again next flush */
                while (idmap_next(c->processes, &i, &key, &value)) {
                        struct process *p = (struct process *) (uintptr_t) value;
                        bool used = !p->exited;

                        for (size_t s = 0; !used && s < c->n_slots; s++)
                                used = c->slots[s]->process == p;
                        if (used)
                                (void) idmap_put(alive, key, value, &slot);
                        else
                                process_free(p);
                }
                idmap_clear(c->processes);
                i = 0;
                while (idmap_next(alive, &i, &key, &value))
                        (void) idmap_put(c->processes, key, value, &slot);
        }
}
