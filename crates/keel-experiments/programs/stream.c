/* keel omp bench: a STREAM triad, balanced and memory-bound. Each step is
 * one schedule(runtime) loop x[i] = y[i] + 0.5 * z[i] over N doubles, the
 * three arrays taking the roles x, y, z in turn (step t writes array t mod
 * 3), so that every step reads what the previous one wrote and a skipped
 * iteration changes the result. Every element's value is the same whatever
 * thread computes it, so the checksum is exact under every schedule.
 *
 * usage: stream N STEPS
 * prints: loop_seconds=<time inside the loops> checksum=<sum of the 32-bit
 *         halves of the final arrays' bits> loop.triad=<the same time>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"

/* The halves of a double's bits, summed: below 2^33 per element, so a sum
 * over fewer than 2^30 elements needs no wrap-around (the Fortran version
 * computes the same in signed 64-bit integers). */
static unsigned long long halves(const double *v, long n) {
    unsigned long long sum = 0;
    for (long i = 0; i < n; i++) {
        unsigned long long bits;
        memcpy(&bits, &v[i], sizeof bits);
        sum += (bits & 0xffffffffULL) + (bits >> 32);
    }
    return sum;
}

int main(int argc, char **argv) {
    long n, steps;
    if (argc != 3 || !count(argv[1], 1, 1L << 28, &n) || !count(argv[2], 1, 1L << 24, &steps)) {
        return usage("stream N STEPS");
    }
    double *arrays[3];
    for (int k = 0; k < 3; k++) {
        arrays[k] = malloc((size_t)n * sizeof(double));
        if (!arrays[k]) return 1;
    }
    for (long i = 0; i < n; i++) {
        arrays[0][i] = 0.0;
        arrays[1][i] = 1.0 + (double)(i % 1000) * 0.5;
        arrays[2][i] = 2.0 + (double)(i % 777) * 0.25;
    }
    double seconds = 0.0;
    for (long step = 0; step < steps; step++) {
        double *x = arrays[step % 3], *y = arrays[(step + 1) % 3], *z = arrays[(step + 2) % 3];
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
        for (long i = 0; i < n; i++) x[i] = y[i] + 0.5 * z[i];
        seconds += omp_get_wtime() - t0;
    }
    unsigned long long checksum = 0;
    for (int k = 0; k < 3; k++) checksum += halves(arrays[k], n);
    printf("loop_seconds=%.9f checksum=%llu loop.triad=%.9f\n", seconds, checksum, seconds);
    for (int k = 0; k < 3; k++) free(arrays[k]);
    return 0;
}
