/* keel omp bench: a balanced time-stepping loop. Every iteration of the
 * schedule(runtime) loop runs the same WORK steps of a 64-bit linear
 * congruential recurrence (a dependency chain the compiler cannot shorten),
 * so that no schedule can balance it better than `static`: what the
 * benchmark sees is each dispatcher's own cost.
 *
 * usage: balanced ITERATIONS WORK STEPS
 * prints: loop_seconds=<time inside the loops> checksum=<sum of the final states>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

int main(int argc, char **argv) {
    long iterations, work, steps;
    if (argc != 4 || !count(argv[1], 1, 1L << 24, &iterations) || !count(argv[2], 1, 1L << 30, &work) ||
        !count(argv[3], 1, 1L << 24, &steps)) {
        return usage("balanced ITERATIONS WORK STEPS");
    }
    unsigned long long *state = calloc((size_t)iterations, sizeof *state);
    if (!state) return 1;
    unsigned long long checksum = 0;
    double seconds = 0.0;
    for (long step = 0; step < steps; step++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
        for (long i = 0; i < iterations; i++) {
            unsigned long long x = (unsigned long long)(i + step);
            for (long k = 0; k < work; k++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            state[i] = x;
        }
        seconds += omp_get_wtime() - t0;
        for (long i = 0; i < iterations; i++) checksum += state[i];
    }
    printf("loop_seconds=%.9f checksum=%llu\n", seconds, checksum);
    free(state);
    return 0;
}
