/* recursive: CPU time at the bottom of a direct and of a mutual recursion, for the tests of how
 * recursive call paths are canonicalized (paper §4.1 and the appendix).
 *
 *   main -> recurse -> recurse -> ... -> recurse -> burn               two thirds of the time
 *   main -> ping_rec -> pong_rec -> ping_rec -> ... -> burn            one third
 *
 * Each round calls recurse, which stacks DEPTH frames of itself, the last of which calls burn
 * for 2 * SLICE_MS milliseconds of CPU time; then ping_rec, which stacks DEPTH frames of
 * ping_rec and pong_rec, alternating (so with an even DEPTH, pong_rec calls burn), for
 * SLICE_MS. ROUNDS rounds take about ROUNDS * 3 * SLICE_MS ms of CPU time in all.
 * Usage: recursive [DEPTH [ROUNDS [SLICE_MS]]], by default 12 frames, 34 rounds of 10 + 5 ms. */
#include <stdlib.h>

#include "workload.h"

#define DEPTH_DEFAULT 12
#define ROUNDS_DEFAULT 34
#define SLICE_MS_DEFAULT 5

WORKLOAD_FUNCTION static void burn(unsigned long ms) {
        spin_cpu_ms(ms);
}

/* depth: the frames of recurse from this one down, at least 1. */
WORKLOAD_FUNCTION static void recurse(unsigned long depth, unsigned long ms) {
        if (depth == 1)
                burn(ms);
        else
                recurse(depth - 1, ms);
        call_barrier();
}

/* depth: the frames of ping_rec and pong_rec from this one down, at least 1. */
WORKLOAD_FUNCTION static void pong_rec(unsigned long depth, unsigned long ms);

WORKLOAD_FUNCTION static void ping_rec(unsigned long depth, unsigned long ms) {
        if (depth == 1)
                burn(ms);
        else
                pong_rec(depth - 1, ms);
        call_barrier();
}

WORKLOAD_FUNCTION static void pong_rec(unsigned long depth, unsigned long ms) {
        if (depth == 1)
                burn(ms);
        else
                ping_rec(depth - 1, ms);
        call_barrier();
}

int main(int argc, char **argv) {
        unsigned long depth, rounds, slice_ms;

        workload_arg(argc, argv, 1, DEPTH_DEFAULT, &depth);
        workload_arg(argc, argv, 2, ROUNDS_DEFAULT, &rounds);
        workload_arg(argc, argv, 3, SLICE_MS_DEFAULT, &slice_ms);

        for (unsigned long i = 0; i < rounds; i++) {
                recurse(depth, 2 * slice_ms);
                ping_rec(depth, slice_ms);
        }
        return EXIT_SUCCESS;
}
