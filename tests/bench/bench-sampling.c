/* The cost of random sampling in the kernel (common/collect/sampling-bpf.c), per event, on this machine:
 *
 *   - a counting event alone (kernel period 2^40: no overflow ever samples);
 *   - an overflow at every event that the program drops (keeps 1 in 2^32): the cost of looking
 *     at each event, which Bernoulli sampling at kernel period 1 pays;
 *   - an overflow at every event that the program keeps, with a 16 KiB stack copy, against the
 *     same without a program: the cost of a kept sample;
 *   - cpu-clock: a spin loop's slowdown with the timer at 1 ms (fixed periods) and at 100 µs with
 *     the program keeping 1 in 10 (random intervals), against no event.
 *
 * The ring is emptied by the measuring thread itself every few events, so that kept samples are
 * written, not lost. Prints figures; never fails (exit 0 also when it cannot run: it says why).
 * Usage: bench-sampling [EVENTS] */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

static double now(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec + t.tv_nsec / 1e9;
}

static volatile char *pages;

/* One event of KIND: a system call, or a first touch of a page (the mapping is made fresh). */
static void one(int kind, long i) {
        if (kind == 0)
                syscall(SYS_getppid);
        else
                pages[i * 4096] = 1;
}

/* The program's output events, one per CPU, each with a ring the measuring thread empties. */
struct outputs {
        int n;
        int fd[256];
        struct perf_event_mmap_page *m[256];
};

static void outputs_close(struct outputs *o) {
        for (int c = 0; c < o->n; c++) {
                munmap(o->m[c], 4096 + RING);
                close(o->fd[c]);
        }
        o->n = 0;
}

/* A sampling program keeping 1 in KEEP, writing samples with STACK bytes of stack to outputs O:
 * on event FD (software) or, for tracepoint ID (FD -1), on this thread's hits of it. */
static int program(struct sampling_bpf **ret, struct outputs *o, int fd, uint64_t id, unsigned stack,
                   uint64_t keep) {
        struct perf_event_attr a = { .size = sizeof a,
                                     .type = PERF_TYPE_SOFTWARE,
                                     .config = PERF_COUNT_SW_BPF_OUTPUT,
                                     .sample_period = 1,
                                     .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_RAW };
        int n = (int) MIN(sysconf(_SC_NPROCESSORS_ONLN), 256), r;
        struct sampling_bpf *s;

        if (stack) {
                a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
                a.sample_regs_user = 0xff;
                a.sample_stack_user = stack;
        }
        r = sampling_bpf_new((unsigned) n, &s);
        if (r < 0)
                return r;
        for (o->n = 0; o->n < n; o->n++) {
                int c = o->n;

                o->fd[c] = perf_event_open_fd(&a, -1, c, -1, 0);
                if (o->fd[c] < 0) {
                        r = o->fd[c];
                        break;
                }
                o->m[c] = mmap(NULL, 4096 + RING, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd[c], 0);
                if (o->m[c] == MAP_FAILED) {
                        r = -errno;
                        close(o->fd[c]);
                        break;
                }
                r = sampling_bpf_set_output(s, (unsigned) c, o->fd[c]);
                if (r < 0) {
                        o->n++;
                        break;
                }
        }
        if (r >= 0)
                r = sampling_bpf_set_keep(s, keep);
        if (r >= 0 && fd < 0) {
                r = sampling_bpf_filter_threads(s);
                if (r >= 0)
                        r = sampling_bpf_add_tid(s, (pid_t) syscall(SYS_gettid));
                if (r >= 0)
                        r = sampling_bpf_hold_tracepoint(s, id, 0, 0);
        } else if (r >= 0)
                r = sampling_bpf_attach(s, fd);
        if (r < 0) {
                outputs_close(o);
                sampling_bpf_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

static void drain(struct perf_event_mmap_page *m) {
        __atomic_store_n(&m->data_tail, __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
}

/* ns per event of KIND, N events, under an event opened with PERIOD and STACK bytes of stack per
 * sample (period 0: none), or with a sampling program keeping 1 in KEEP (0: no program). On a
 * syscall the program needs no event of its own (a holder carries it). */
static double measure(int kind, long n, uint64_t period, unsigned stack, uint64_t keep, int *ret_err) {
        struct perf_event_attr a = { .size = sizeof a,
                                     .sample_period = period,
                                     .disabled = 1,
                                     .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID };
        struct sampling_bpf *s = NULL;
        struct perf_event_mmap_page *m = NULL;
        struct outputs o = {};
        uint64_t id = 0;
        int fd = -1, r;
        double t0, t;

        *ret_err = 0;
        if (stack) {
                a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
                a.sample_regs_user = 0xff;
                a.sample_stack_user = stack;
        }
        if (kind == 0) {
                if (tracepoint_id("raw_syscalls:sys_enter", &id) < 0) {
                        *ret_err = -ENOENT;
                        return 0;
                }
                a.type = PERF_TYPE_TRACEPOINT;
                a.config = id;
        } else {
                a.type = PERF_TYPE_SOFTWARE;
                a.config = PERF_COUNT_SW_PAGE_FAULTS;
        }
        if (kind == 1) {
                pages = mmap(NULL, (size_t) n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                             0);
                if (pages == MAP_FAILED) {
                        *ret_err = -ENOMEM;
                        return 0;
                }
        }
        if (period && !(keep && kind == 0)) {
                fd = perf_event_open_fd(&a, 0, -1, -1, 0);
                if (fd < 0) {
                        *ret_err = fd;
                        return 0;
                }
                m = mmap(NULL, 4096 + RING, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                if (m == MAP_FAILED) {
                        *ret_err = -errno;
                        close(fd);
                        return 0;
                }
        }
        if (keep) {
                r = program(&s, &o, fd, id, stack, keep);
                if (r < 0) {
                        *ret_err = r;
                        if (m)
                                munmap(m, 4096 + RING);
                        if (fd >= 0)
                                close(fd);
                        return 0;
                }
        }
        if (fd >= 0)
                ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
        t0 = now();
        for (long i = 0; i < n; i++) {
                one(kind, i);
                if ((i & 15) == 0) {
                        if (m)
                                drain(m);
                        for (int c = 0; c < o.n; c++)
                                drain(o.m[c]);
                }
        }
        t = now() - t0;
        if (fd >= 0) {
                ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
                munmap(m, 4096 + RING);
                close(fd);
        }
        outputs_close(&o);
        sampling_bpf_free(s);
        if (kind == 1)
                munmap((void *) pages, (size_t) n * 4096);
        return t * 1e9 / n;
}

static double best(int kind, long n, uint64_t period, unsigned stack, uint64_t keep, int *err) {
        double b = 0;

        for (int i = 0; i < 3; i++) {
                double v = measure(kind, n, period, stack, keep, err);

                if (*err)
                        return 0;
                if (i == 0 || v < b)
                        b = v;
        }
        return b;
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
        struct perf_event_attr a = { .size = sizeof a,
                                     .type = PERF_TYPE_SOFTWARE,
                                     .config = PERF_COUNT_SW_CPU_CLOCK,
                                     .sample_period = period,
                                     .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER |
                                             PERF_SAMPLE_STACK_USER,
                                     .sample_regs_user = 0xff,
                                     .sample_stack_user = 16384 };
        struct sampling_bpf *s = NULL;
        struct outputs o = {};
        void *m;
        double t;
        int fd;

        *err = 0;
        if (!period)
                return spin(n);
        fd = perf_event_open_fd(&a, 0, -1, -1, 0);
        if (fd < 0) {
                *err = fd;
                return 0;
        }
        m = mmap(NULL, 4096 + RING, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (keep && program(&s, &o, fd, 0, 16384, keep) < 0)
                *err = -EPERM;
        t = spin(n);
        if (m != MAP_FAILED)
                munmap(m, 4096 + RING);
        outputs_close(&o);
        sampling_bpf_free(s);
        close(fd);
        return t;
}

int main(int argc, char **argv) {
        static const char *const names[] = { "syscall (raw_syscalls:sys_enter)", "page fault (page-faults)" };
        long n = argc > 1 ? atol(argv[1]) : 100000;
        int err;

        if (n <= 0)
                n = 100000;
        printf("Cost per event, best of 3 runs of %ld events, on this machine:\n", n);
        for (int kind = 0; kind < 2; kind++) {
                double none = best(kind, n, 0, 0, 0, &err);
                double count = best(kind, n, 1ULL << 40, 0, 0, &err);
                double drop = err ? 0 : best(kind, n, 1, 0, 1ULL << 32, &err);
                double kept = err ? 0 : best(kind, n, 1, 16384, 1, &err);
                double plain = err ? 0 : best(kind, n, 1, 16384, 0, &err);

                if (err) {
                        printf("  %s: cannot measure here: %s\n", names[kind], strerror(-err));
                        continue;
                }
                printf("  %s: %.0f ns unprofiled, %.0f counted\n", names[kind], none, count);
                printf("    overflow dropped by the program: +%.0f ns an event\n", drop - count);
                printf("    overflow kept, 16 KiB stack: +%.0f ns with the program, +%.0f without\n",
                       kept - count, plain - count);
        }
        {
                long iters = 200000000;
                double base = 1e9, fixed = 1e9, fine = 1e9;

                /* The best of 3 of each, interleaved: a shared machine's noise only adds. */
                for (int i = 0; i < 3 && !err; i++) {
                        base = MIN(base, clock_cost(0, 0, iters, &err));
                        fixed = MIN(fixed, clock_cost(1000000, 0, iters, &err));
                        fine = err ? 0 : MIN(fine, clock_cost(100000, 10, iters, &err));
                }

                if (err)
                        printf("  cpu-clock: cannot measure here: %s\n", strerror(-err));
                else
                        printf("  cpu-clock, a spin of %.2f s: +%.2f%% at 1 ms fixed, +%.2f%% at 100 us keeping 1 in 10\n",
                               base, 100 * (fixed - base) / base, 100 * (fine - base) / base);
        }
        return 0;
}
