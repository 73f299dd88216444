/* The cost of random sampling in the kernel (common/collect/sampling-bpf.c), per event, on this
 * machine, for each design that was measured before one was chosen (doc/sampling.md, "Sampling you
 * can trust"). Three events, each on CPU 0 for every task, as the daemon opens them:
 *
 *   - a system call (getppid): raw_syscalls:sys_enter;
 *   - a page fault (a first touch of a fresh page): the page-faults software event, or the
 *     exceptions:page_fault_user tracepoint (and the event for kernel-mode faults);
 *   - a context switch (two threads on CPU 0 passing a byte through pipes): the
 *     context-switches software event, or sched:sched_switch.
 *
 * Designs, each at the daemon's default period P of the event (syscalls: cppctl's, 10):
 *
 *   counted          a perf event that counts and never samples (period 2^40)
 *   fixed P          perf's own samples every P events, 16 KiB of stack each: fixed periods,
 *                    and what a redrawn kernel period (PERF_EVENT_IOC_PERIOD) costs
 *   every event      kernel period 1 (a tracepoint: every hit) and a program that keeps each
 *                    event with probability 1/P (--every-event; the design before)
 *   every, dropped   the same keeping none: the cost of looking at each event
 *   countdown        a program at the raw tracepoint that counts down a geometric interval
 *                    per CPU and samples at zero (the design chosen)
 *   countdown, none  the same with a period of 2^26: the cost of counting one event down
 *   point alone      page faults: the same without the event that sees faults taken in kernel
 *                    mode (user mode excluded): what that event costs a fault taken in user mode
 *
 * and the check behind rejecting a kernel period redrawn from user space: right after
 * PERF_EVENT_IOC_PERIOD the next event overflows at once, whatever the period.
 *
 * Times are the process's CPU time (both threads of the ping-pong). The rings are emptied by the
 * measuring thread itself every few events, so that kept samples are written, not lost. Each
 * design runs ROUNDS times, interleaved with the others (a shared machine's noise only adds):
 * the best and the median are printed. Never fails (exit 0 also when
 * it cannot run: it says why).
 * Usage: bench-sampling [EVENTS] [ROUNDS] [STACK_BYTES] (0: no user stack, as --unwind fp) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "perf-event.h"
#include "sampling-bpf.h"

#define RING (1u << 20)
#define MAX_CPUS 256
#define MAX_ROUNDS 15

enum kind {
        SYSCALL,
        FAULT,
        SWITCH,
        _KIND_MAX
};
enum design {
        NONE,
        COUNTED,
        FIXED,
        EVERY,
        EVERY_DROP,
        COUNTDOWN,
        COUNTDOWN_NONE,
        COUNTDOWN_POINT,
        _DESIGN_MAX
};

static const char *const kind_names[] = { "syscall (getppid)", "page fault (first touch)",
                                          "context switch (pipe ping-pong)" };
static const uint64_t default_period[] = { 10, 256, 64 };
static const char *const design_names[] = {
        "unprofiled",
        "counted",
        "fixed P, perf's samples",
        "every event, 1 in P kept",
        "every event, none kept",
        "countdown, 1 in P kept",
        "countdown, none kept",
        "the point alone, none kept",
};

/* CPU time of this process, both threads of a ping-pong included: on a shared machine, time
 * others take from us is not counted against a design. */
static double now(void) {
        struct timespec t;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return t.tv_sec + t.tv_nsec / 1e9;
}

static void pin(int cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        (void) sched_setaffinity(0, sizeof set, &set);
}

/* Rings the measuring thread empties: perf's own, or the program's output events. */
static struct perf_event_mmap_page *rings[MAX_CPUS + 1];
static int n_rings;

static void drain_all(void) {
        for (int i = 0; i < n_rings; i++)
                __atomic_store_n(&rings[i]->data_tail,
                                 __atomic_load_n(&rings[i]->data_head, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
}

static int map_ring(int fd) {
        void *m = mmap(NULL, 4096 + RING, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

        if (m == MAP_FAILED)
                return -errno;
        rings[n_rings++] = m;
        return 0;
}

static void unmap_rings(void) {
        for (int i = 0; i < n_rings; i++)
                munmap(rings[i], 4096 + RING);
        n_rings = 0;
}

/* ---- the workloads: N events each, ns per event ---- */

static volatile char *pages;
static int ping[2], pong[2];

static void *partner(void *arg) {
        char b;

        (void) arg;
        pin(0);
        while (read(ping[0], &b, 1) == 1 && b)
                if (write(pong[1], &b, 1) != 1)
                        break;
        return NULL;
}

static double workload(enum kind kind, long n) {
        double t0, t;

        if (kind == SYSCALL) {
                t0 = now();
                for (long i = 0; i < n; i++) {
                        syscall(SYS_getppid);
                        if ((i & 15) == 0)
                                drain_all();
                }
                return (now() - t0) * 1e9 / n;
        }
        if (kind == FAULT) {
                pages = mmap(NULL, (size_t) n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                             0);
                if (pages == MAP_FAILED)
                        return 0;
                t0 = now();
                for (long i = 0; i < n; i++) {
                        pages[i * 4096] = 1;
                        if ((i & 15) == 0)
                                drain_all();
                }
                t = now() - t0;
                munmap((void *) pages, (size_t) n * 4096);
                return t * 1e9 / n;
        } else {
                pthread_t th;
                char b = 1;

                if (pipe(ping) < 0 || pipe(pong) < 0)
                        return 0;
                pthread_create(&th, NULL, partner, NULL);
                t0 = now();
                for (long i = 0; i < n / 2; i++) {
                        if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1)
                                break;
                        if ((i & 15) == 0)
                                drain_all();
                }
                t = now() - t0;
                b = 0;
                (void) write(ping[1], &b, 1);
                pthread_join(th, NULL);
                close(ping[0]), close(ping[1]), close(pong[0]), close(pong[1]);
                return t * 1e9 / (double) (n / 2 * 2); /* two switches a round trip */
        }
}

/* ---- the designs ---- */

static int event_attr(enum kind kind, struct perf_event_attr *a) {
        uint64_t id;
        int r;

        *a = (struct perf_event_attr) { .size = sizeof *a, .disabled = 1 };
        if (kind == SYSCALL) {
                r = tracepoint_id("raw_syscalls:sys_enter", &id);
                if (r < 0)
                        return r;
                a->type = PERF_TYPE_TRACEPOINT;
                a->config = id;
        } else {
                a->type = PERF_TYPE_SOFTWARE;
                a->config = kind == FAULT ? PERF_COUNT_SW_PAGE_FAULTS : PERF_COUNT_SW_CONTEXT_SWITCHES;
        }
        return 0;
}

/* The user stack copied with each sample (the daemon's default, or the third argument). */
static unsigned stack_size = 16384;

static void with_stack(struct perf_event_attr *a) {
        a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
        if (stack_size) {
                a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
                a->sample_regs_user = 0xff;
                a->sample_stack_user = stack_size;
        }
}

/* An output event per CPU for program S, each with a ring. */
static int outputs(struct sampling_bpf *s, int *fds, int n_cpus) {
        struct perf_event_attr a = { .size = sizeof a,
                                     .type = PERF_TYPE_SOFTWARE,
                                     .config = PERF_COUNT_SW_BPF_OUTPUT,
                                     .sample_period = 1 };
        int r;

        with_stack(&a);
        a.sample_type |= PERF_SAMPLE_RAW;
        for (int c = 0; c < n_cpus; c++) {
                fds[c] = perf_event_open_fd(&a, -1, c, -1, 0);
                if (fds[c] < 0)
                        return fds[c];
                r = map_ring(fds[c]);
                if (r < 0)
                        return r;
                r = sampling_bpf_set_output(s, (unsigned) c, fds[c]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ns per event of KIND under DESIGN, N events; 0 with *ret_err set when it cannot run. */
static double measure(enum kind kind, enum design design, long n, int *ret_err) {
        _cleanup_(sampling_bpf_freep) struct sampling_bpf *s = NULL;
        int n_cpus = (int) MIN(sysconf(_SC_NPROCESSORS_ONLN), MAX_CPUS), fd = -1, outs[MAX_CPUS];
        uint64_t p = default_period[kind];
        struct perf_event_attr a;
        int r = 0, n_outs = 0;
        double v = 0;

        *ret_err = 0;
        pin(0);
        if (design == NONE)
                return workload(kind, n);
        r = event_attr(kind, &a);
        if (r < 0)
                goto out;
        if (design == COUNTED || design == FIXED) {
                a.sample_period = design == COUNTED ? 1ULL << 40 : p;
                with_stack(&a);
                fd = perf_event_open_fd(&a, -1, 0, -1, 0);
                if (fd < 0 || (r = map_ring(fd)) < 0) {
                        r = fd < 0 ? fd : r;
                        goto out;
                }
        } else {
                r = sampling_bpf_new((unsigned) n_cpus, &s);
                if (r < 0)
                        goto out;
                r = outputs(s, outs, n_cpus);
                n_outs = n_cpus;
                if (r < 0)
                        goto out;
                if (design == EVERY || design == EVERY_DROP) {
                        r = sampling_bpf_set_keep(s, design == EVERY ? p : 1ULL << 32);
                        if (r < 0)
                                goto out;
                        if (kind == SYSCALL)
                                r = sampling_bpf_hold_tracepoint(s, a.config, 0, 0);
                        else {
                                a.sample_period = 1;
                                fd = perf_event_open_fd(&a, -1, 0, -1, 0);
                                r = fd < 0 ? fd : sampling_bpf_attach(s, fd);
                        }
                } else {
                        uint64_t period = design == COUNTDOWN ? p : SAMPLING_BPF_MAX_COUNT_PERIOD;

                        r = sampling_bpf_set_period(s, period);
                        if (r >= 0)
                                r = sampling_bpf_set_keep(s, period);
                        if (r >= 0 && kind == SYSCALL)
                                r = sampling_bpf_count_tracepoint(s, "sys_enter", 1, false);
                        else if (r >= 0 && kind == FAULT) {
                                /* User-mode faults counted down; kernel-mode ones by the event,
                                 * with a coin (collector-events.c). */
                                r = sampling_bpf_count_tracepoint(s, "page_fault_user", -1, true);
                                a.sample_period = 1;
                                a.exclude_user = 1;
                                if (r >= 0 && design != COUNTDOWN_POINT)
                                        fd = perf_event_open_fd(&a, -1, 0, -1, 0);
                                if (r >= 0 && design != COUNTDOWN_POINT)
                                        r = fd < 0 ? fd : sampling_bpf_attach(s, fd);
                        } else if (r >= 0)
                                r = sampling_bpf_count_tracepoint(s, "sched_switch", -1, false);
                }
                if (r < 0)
                        goto out;
        }
        if (fd >= 0)
                ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
        v = workload(kind, n);
        if (fd >= 0)
                ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
out:
        unmap_rings();
        for (int c = 0; c < n_outs; c++)
                if (outs[c] >= 0)
                        close(outs[c]);
        if (fd >= 0)
                close(fd);
        *ret_err = r < 0 ? r : 0;
        return r < 0 ? 0 : v;
}

/* Whether DESIGN is one for events of KIND: only page faults have a second event. */
static bool applies(enum kind kind, enum design design) {
        return design != COUNTDOWN_POINT || kind == FAULT;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

/* Whether the event after PERF_EVENT_IOC_PERIOD overflows at once: a page-fault event at
 * period 1000 whose period is set again (to 1000) just before one more fault. 1: it did, 0: it
 * did not, < 0: cannot tell here. */
static int ioctl_overflows_at_once(void) {
        struct perf_event_attr a = { .size = sizeof a,
                                     .type = PERF_TYPE_SOFTWARE,
                                     .config = PERF_COUNT_SW_PAGE_FAULTS,
                                     .sample_period = 1000,
                                     .sample_type = PERF_SAMPLE_IP,
                                     .disabled = 1 };
        volatile char *mem =
                mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint64_t period = 1000, before, after;
        int fd, r;

        if (mem == MAP_FAILED)
                return -ENOMEM;
        fd = perf_event_open_fd(&a, 0, -1, -1, 0);
        if (fd < 0 || (r = map_ring(fd)) < 0) {
                munmap((void *) mem, 16 * 4096);
                return fd < 0 ? fd : r;
        }
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
        mem[0] = 1; /* a few events, far from an overflow */
        mem[4096] = 1;
        before = __atomic_load_n(&rings[0]->data_head, __ATOMIC_ACQUIRE);
        ioctl(fd, PERF_EVENT_IOC_PERIOD, &period);
        mem[2 * 4096] = 1;
        after = __atomic_load_n(&rings[0]->data_head, __ATOMIC_ACQUIRE);
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        unmap_rings();
        close(fd);
        munmap((void *) mem, 16 * 4096);
        return after != before;
}

static double spin(long n) {
        volatile uint64_t x = 0;
        double t0 = now();

        for (long i = 0; i < n; i++)
                x += i;
        return now() - t0;
}

/* Seconds of a fixed spin under cpu-clock at PERIOD ns with the program keeping 1 in KEEP. */
static double clock_cost(uint64_t period, uint64_t keep, long n, int *err) {
        _cleanup_(sampling_bpf_freep) struct sampling_bpf *s = NULL;
        struct perf_event_attr a = { .size = sizeof a,
                                     .type = PERF_TYPE_SOFTWARE,
                                     .config = PERF_COUNT_SW_CPU_CLOCK,
                                     .sample_period = period };
        int n_cpus = (int) MIN(sysconf(_SC_NPROCESSORS_ONLN), MAX_CPUS), outs[MAX_CPUS], n_outs = 0;
        double t = 0;
        int fd;

        *err = 0;
        if (!period)
                return spin(n);
        with_stack(&a);
        fd = perf_event_open_fd(&a, 0, -1, -1, 0);
        if (fd < 0) {
                *err = fd;
                return 0;
        }
        *err = map_ring(fd);
        if (*err == 0 && keep) {
                *err = sampling_bpf_new((unsigned) n_cpus, &s);
                if (*err == 0) {
                        *err = outputs(s, outs, n_cpus);
                        n_outs = n_cpus;
                }
                if (*err == 0)
                        *err = sampling_bpf_set_keep(s, keep);
                if (*err == 0)
                        *err = sampling_bpf_attach(s, fd);
        }
        if (*err == 0)
                t = spin(n);
        unmap_rings();
        for (int c = 0; c < n_outs; c++)
                if (outs[c] >= 0)
                        close(outs[c]);
        close(fd);
        return t;
}

int main(int argc, char **argv) {
        long n = argc > 1 ? atol(argv[1]) : 100000;
        int rounds = argc > 2 ? atoi(argv[2]) : 5, err, at_once;

        if (argc > 3)
                stack_size = (unsigned) atoi(argv[3]) & ~7u;

        if (n <= 0)
                n = 100000;
        rounds = MAX(MIN(rounds, MAX_ROUNDS), 1);
        printf("Cost per event, %ld events, %d interleaved rounds (best / median), events on CPU 0 for every "
               "task, %u bytes of user stack a sample:\n",
               n, rounds, stack_size);
        for (int kind = 0; kind < _KIND_MAX; kind++) {
                double v[_DESIGN_MAX][MAX_ROUNDS];
                int failed[_DESIGN_MAX] = {};

                for (int i = 0; i < rounds; i++)
                        for (int d = 0; d < _DESIGN_MAX; d++) {
                                if (!applies((enum kind) kind, (enum design) d))
                                        continue;
                                v[d][i] = failed[d] ? 0 : measure((enum kind) kind, (enum design) d, n, &err);
                                if (err && !failed[d]) {
                                        failed[d] = err;
                                        printf("  %s, %s: cannot measure here: %s\n", kind_names[kind],
                                               design_names[d], strerror(-err));
                                }
                        }
                printf("  %s, P = %" PRIu64 ":\n", kind_names[kind], default_period[kind]);
                for (int d = 0; d < _DESIGN_MAX; d++) {
                        double base;

                        if (failed[d] || !applies((enum kind) kind, (enum design) d))
                                continue;
                        qsort(v[d], (size_t) rounds, sizeof(double), cmp_double);
                        base = v[NONE][0];
                        if (d == NONE)
                                printf("    %-28s %7.0f ns %7.0f ns\n", design_names[d], v[d][0],
                                       v[d][rounds / 2]);
                        else
                                printf("    %-28s %7.0f ns %7.0f ns   %+6.0f ns, %+6.1f%% (best against best)\n",
                                       design_names[d], v[d][0], v[d][rounds / 2], v[d][0] - base,
                                       100 * (v[d][0] - base) / base);
                }
        }
        at_once = ioctl_overflows_at_once();
        if (at_once < 0)
                printf("  PERF_EVENT_IOC_PERIOD: cannot check here: %s\n", strerror(-at_once));
        else
                printf("  PERF_EVENT_IOC_PERIOD on a software event: the next event %s\n",
                       at_once ? "overflows at once (the period restarts from 0 at each redraw)" :
                                 "does not overflow at once");
        {
                long iters = 1000000000;
                double base = 1e9, fixed = 1e9, fine = 1e9;

                /* The best of ROUNDS of each, interleaved. */
                for (int i = 0; i < rounds && !err; i++) {
                        double b = clock_cost(0, 0, iters, &err);
                        double f = err ? 0 : clock_cost(1000000, 0, iters, &err);
                        double g = err ? 0 : clock_cost(100000, 10, iters, &err);

                        base = MIN(base, b);
                        fixed = MIN(fixed, f);
                        fine = MIN(fine, g);
                }
                if (err)
                        printf("  cpu-clock: cannot measure here: %s\n", strerror(-err));
                else
                        printf("  cpu-clock, a spin of %.2f s (best of %d), a sample a ms with 16 KiB of stack: "
                               "%+.2f%% at 1 ms fixed (perf's samples), %+.2f%% ticking every 100 us with the program "
                               "keeping 1 in 10\n",
                               base, rounds, 100 * (fixed - base) / base, 100 * (fine - base) / base);
        }
        return 0;
}
