/* cycles: loops whose every cycle spends a resource in a fixed pattern between two known call
 * paths, so that a fixed sampling period that is a multiple of the cycle aliases (paper §7.1) and
 * a random one does not.
 *
 *   cycles syscalls N   N cycles of 5 pread(2) calls: 4 through path_a, 1 through path_b
 *     main -> syscall_cycle -> path_a -> pread      0.8 of the calls
 *     main -> syscall_cycle -> path_b -> pread      0.2
 *   cycles faults N     N cycles of 4 page faults (first touches of fresh pages): 3 in
 *                       fault_a, 1 in fault_b; every 4096 pages the region is given back
 *                       (madvise, which faults nothing)
 *     main -> fault_cycle -> fault_a                0.75 of the faults
 *     main -> fault_cycle -> fault_b                0.25
 *   cycles switches N   N cycles of 4 context switches (each a 10 us sleep, timer slack 1 ns): 3 in
 *                       switch_a, 1 in switch_b
 *     main -> switch_cycle -> switch_a              0.75 of the switches
 *     main -> switch_cycle -> switch_b              0.25
 *   cycles slices N     N cycles of a 1 ms periodic timer (timerfd): each wakes to spin 0.3 ms
 *                       of CPU in slice_a, then 0.2 ms in slice_b, then sleeps
 *     main -> slice_cycle -> slice_a                0.6 of the CPU time in the slices
 *     main -> slice_cycle -> slice_b                0.4
 *   cycles slices10 N   the same ten times as long: a 10 ms timer, 3 ms in slice_a, 2 ms in
 *                       slice_b (against the daemon's default cpu-time/10)
 *   cycles spin MS      MS ms of CPU time, all of it in one function (the CPU-bound neighbour
 *                       of the storm tests)
 *     main -> spin_a                                1.0
 *
 * Nothing else in a cycle makes a system call or a fault, so a cycle is exactly k = 5 syscalls,
 * k = 4 faults, k = 4 switches out of the thread (and a preemption now and then), or 0.5 ms (5 ms)
 * of CPU time. */
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

#define PAGE 4096
#define REGION_PAGES 4096

static char buffer[64];

WORKLOAD_FUNCTION static void path_a(int fd) {
        if (pread(fd, buffer, 1, 0) < 0)
                exit(1);
        call_barrier();
}

WORKLOAD_FUNCTION static void path_b(int fd) {
        if (pread(fd, buffer, 1, 0) < 0)
                exit(1);
        call_barrier();
}

WORKLOAD_FUNCTION static void syscall_cycle(int fd) {
        for (int i = 0; i < 4; i++)
                path_a(fd);
        path_b(fd);
        call_barrier();
}

WORKLOAD_FUNCTION static void fault_a(volatile char *p) {
        for (int i = 0; i < 3; i++)
                p[i * PAGE] = 1;
        call_barrier();
}

WORKLOAD_FUNCTION static void fault_b(volatile char *p) {
        p[0] = 1;
        call_barrier();
}

WORKLOAD_FUNCTION static void fault_cycle(char *p) {
        fault_a(p);
        fault_b(p + 3 * PAGE);
        call_barrier();
}

static int ping[2], pong[2];

/* One switch out of the thread: a byte to the echoing child, sharing our CPU, and a read that
 * waits for its answer. */
static inline __attribute__((always_inline)) void sleep_once(void) {
        char b = 1;

        if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1)
                exit(1);
}

WORKLOAD_FUNCTION static void switch_a(void) {
        for (int i = 0; i < 3; i++)
                sleep_once();
        call_barrier();
}

WORKLOAD_FUNCTION static void switch_b(void) {
        sleep_once();
        call_barrier();
}

WORKLOAD_FUNCTION static void switch_cycle(void) {
        switch_a();
        switch_b();
        call_barrier();
}

static inline __attribute__((always_inline)) uint64_t mono_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO: no system call */
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* Spins until NS of time passed; on an otherwise idle CPU that is CPU time. */
static inline __attribute__((always_inline)) void spin_ns(uint64_t ns) {
        uint64_t end = mono_ns() + ns;

        while (mono_ns() < end)
                call_barrier();
}

static uint64_t slice_scale = 1;

WORKLOAD_FUNCTION static void slice_a(void) {
        spin_ns(300000 * slice_scale);
        call_barrier();
}

WORKLOAD_FUNCTION static void slice_b(void) {
        spin_ns(200000 * slice_scale);
        call_barrier();
}

WORKLOAD_FUNCTION static void spin_a(unsigned long ms) {
        spin_cpu_ms(ms);
        call_barrier();
}

WORKLOAD_FUNCTION static void slice_cycle(int tfd) {
        uint64_t expirations;

        if (read(tfd, &expirations, sizeof expirations) < 0)
                exit(1);
        slice_a();
        slice_b();
        call_barrier();
}

int main(int argc, char **argv) {
        unsigned long n;

        if (argc < 2) {
                fprintf(stderr, "usage: cycles syscalls|faults|switches|slices|slices10|spin [N]\n");
                return 2;
        }
        workload_arg(argc, argv, 2, 10000, &n);
        if (strcmp(argv[1], "syscalls") == 0) {
                int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

                if (fd < 0)
                        return 1;
                for (unsigned long i = 0; i < n; i++)
                        syscall_cycle(fd);
        } else if (strcmp(argv[1], "faults") == 0) {
                char *p = mmap(NULL, REGION_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                               -1, 0);

                if (p == MAP_FAILED)
                        return 1;
                for (unsigned long i = 0; i < n; i++) {
                        unsigned long at = i % (REGION_PAGES / 4);

                        if (at == 0 && i > 0 && madvise(p, REGION_PAGES * PAGE, MADV_DONTNEED) < 0)
                                return 1;
                        fault_cycle(p + at * 4 * PAGE);
                }
        } else if (strcmp(argv[1], "switches") == 0) {
                cpu_set_t one;
                char b;

                CPU_ZERO(&one);
                CPU_SET(sched_getcpu(), &one);
                if (sched_setaffinity(0, sizeof one, &one) < 0 || pipe(ping) < 0 || pipe(pong) < 0)
                        return 1;
                if (fork() == 0) {
                        close(ping[1]); /* so that the parent's close ends it */
                        while (read(ping[0], &b, 1) == 1)
                                if (write(pong[1], &b, 1) != 1)
                                        _exit(1);
                        _exit(0);
                }
                for (unsigned long i = 0; i < n; i++)
                        switch_cycle();
                close(ping[1]);
                wait(NULL);
        } else if (strcmp(argv[1], "slices") == 0 || strcmp(argv[1], "slices10") == 0) {
                struct itimerspec its;
                int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);

                slice_scale = strcmp(argv[1], "slices10") == 0 ? 10 : 1;
                its.it_interval = its.it_value = (struct timespec) { 0, 1000000 * (long) slice_scale };
                if (tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0)
                        return 1;
                for (unsigned long i = 0; i < n; i++)
                        slice_cycle(tfd);
        } else if (strcmp(argv[1], "spin") == 0) {
                spin_a(n);
        } else {
                fprintf(stderr, "cycles: unknown mode %s\n", argv[1]);
                return 2;
        }
        return 0;
}
