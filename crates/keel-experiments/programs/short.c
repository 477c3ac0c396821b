/* keel omp bench: many short loops. One parallel region runs INSTANCES
 * instances of one schedule(runtime) loop of ITERATIONS iterations, each
 * WORK steps of a 64-bit linear congruential recurrence: about a
 * microsecond of work per instance, so that the time is mostly the
 * dispatcher's (claiming chunks, ending the loop) and the barrier's.
 *
 * usage: short ITERATIONS WORK INSTANCES
 * prints: loop_seconds=<time of the region> checksum=<sum of the states>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

int main(int argc, char **argv) {
    long iterations, work, instances;
    if (argc != 4 || !count(argv[1], 1, 1L << 20, &iterations) || !count(argv[2], 1, 1L << 20, &work) ||
        !count(argv[3], 1, 1L << 30, &instances)) {
        return usage("short ITERATIONS WORK INSTANCES");
    }
    unsigned long long *state = calloc((size_t)iterations, sizeof *state);
    if (!state) return 1;
    double t0 = omp_get_wtime();
#pragma omp parallel
    for (long s = 0; s < instances; s++) {
#pragma omp for schedule(runtime)
        for (long i = 0; i < iterations; i++) {
            unsigned long long x = state[i] + (unsigned long long)s;
            for (long k = 0; k < work; k++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            state[i] = x;
        }
    }
    double seconds = omp_get_wtime() - t0;
    unsigned long long checksum = 0;
    for (long i = 0; i < iterations; i++) checksum += state[i];
    printf("loop_seconds=%.9f checksum=%llu\n", seconds, checksum);
    free(state);
    return 0;
}
