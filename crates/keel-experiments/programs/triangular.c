/* keel omp bench: a triangular loop, as the row updates of an LU
 * factorisation shrink. Iteration i of N runs (N - i) * UNIT steps of a
 * 32-bit linear congruential recurrence (a dependency chain the compiler
 * cannot shorten) from its own previous state, so the first iterations
 * cost N times the last and `static`'s equal blocks are unequal in work.
 * An iteration run twice or skipped changes the checksum.
 *
 * usage: triangular N UNIT STEPS
 * prints: loop_seconds=<time inside the loops> checksum=<sum of the states
 *         after every step> loop.rows=<the same time>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

/* Values stay below 2^32 and products below 2^53: the Fortran version
 * computes the same in signed 64-bit integers without overflow. */
static unsigned long long chain(unsigned long long x, long steps) {
    for (long k = 0; k < steps; k++) x = (x * 1664525ULL + 1013904223ULL) & 0xffffffffULL;
    return x;
}

int main(int argc, char **argv) {
    long n, unit, steps;
    if (argc != 4 || !count(argv[1], 1, 1L << 20, &n) || !count(argv[2], 1, 1L << 20, &unit) ||
        !count(argv[3], 1, 1L << 24, &steps)) {
        return usage("triangular N UNIT STEPS");
    }
    unsigned long long *state = malloc((size_t)n * sizeof *state);
    if (!state) return 1;
    for (long i = 0; i < n; i++) state[i] = (unsigned long long)i;
    unsigned long long checksum = 0;
    double seconds = 0.0;
    for (long step = 0; step < steps; step++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
        for (long i = 0; i < n; i++) state[i] = chain((state[i] + (unsigned long long)step) & 0xffffffffULL, (n - i) * unit);
        seconds += omp_get_wtime() - t0;
        for (long i = 0; i < n; i++) checksum += state[i];
    }
    printf("loop_seconds=%.9f checksum=%llu loop.rows=%.9f\n", seconds, checksum, seconds);
    free(state);
    return 0;
}
