/* keel omp bench: a loop whose best schedule changes midway. One
 * schedule(runtime) loop of N iterations runs STEPS times; in the first
 * half of the steps every iteration runs WORK steps of a 32-bit linear
 * congruential recurrence (fine and uniform: `static` is best), in the
 * second half the first HEAD iterations run HEAVY times as many (a heavy
 * head that `static` hands to one thread: a dynamic schedule is best).
 * Each iteration starts from its own previous state, so an iteration run
 * twice or skipped changes the checksum.
 *
 * usage: phase_shift N WORK STEPS HEAD HEAVY
 * prints: loop_seconds=<time inside the loops> checksum=<sum of the states
 *         after every step> loop.shift=<the same time>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

int main(int argc, char **argv) {
    long n, work, steps, head, heavy;
    if (argc != 6 || !count(argv[1], 1, 1L << 24, &n) || !count(argv[2], 1, 1L << 20, &work) ||
        !count(argv[3], 1, 1L << 24, &steps) || !count(argv[4], 0, 1L << 24, &head) ||
        !count(argv[5], 1, 1L << 20, &heavy) || head > n) {
        return usage("phase_shift N WORK STEPS HEAD HEAVY (HEAD <= N)");
    }
    unsigned long long *state = malloc((size_t)n * sizeof *state);
    if (!state) return 1;
    for (long i = 0; i < n; i++) state[i] = (unsigned long long)i;
    unsigned long long checksum = 0;
    double seconds = 0.0;
    for (long step = 0; step < steps; step++) {
        long heavy_until = 2 * step >= steps ? head : 0;
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
        for (long i = 0; i < n; i++) {
            long cost = i < heavy_until ? work * heavy : work;
            unsigned long long x = (state[i] + (unsigned long long)step) & 0xffffffffULL;
            for (long k = 0; k < cost; k++) x = (x * 1664525ULL + 1013904223ULL) & 0xffffffffULL;
            state[i] = x;
        }
        seconds += omp_get_wtime() - t0;
        for (long i = 0; i < n; i++) checksum += state[i];
    }
    printf("loop_seconds=%.9f checksum=%llu loop.shift=%.9f\n", seconds, checksum, seconds);
    free(state);
    return 0;
}
