/* shortlived: burns CPU time in one function and exits at once.
 *
 *   main -> short_lived_burn                   BURN_MS of CPU time, by default 150
 *
 * The point is the exit: the process is gone before a profiler drains its ring buffers, so its
 * samples must still be attributed to its command and symbolized from the binary on disk, not
 * from /proc/PID, which no longer exists. forker runs it as its exec'd child.
 * Usage: shortlived [BURN_MS] */
#include <stdlib.h>

#include "workload.h"

#define BURN_MS_DEFAULT 150

WORKLOAD_FUNCTION static void short_lived_burn(unsigned long ms) {
        spin_cpu_ms(ms);
}

int main(int argc, char **argv) {
        unsigned long ms;

        workload_arg(argc, argv, 1, BURN_MS_DEFAULT, &ms);
        short_lived_burn(ms);
        call_barrier();
        return EXIT_SUCCESS;
}
