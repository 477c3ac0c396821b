/* keel omp bench: an irregular sparse loop. A sparse matrix-vector
 * product over ROWS rows whose lengths follow a power law (a discrete
 * Pareto of index 1.5: a row lies in octave k, [4 * 2^k, 8 * 2^k)
 * entries, with probability proportional to 2^(-1.5 k), k up to 12),
 * generated with fixed seed by a 32-bit linear congruential generator, as
 * are the column indices and values; one schedule(runtime) loop over the
 * rows per step, each step multiplying the vector the previous one made.
 * The arithmetic is integer, so every row's sum and the checksum are exact
 * under every schedule.
 *
 * usage: sparse ROWS STEPS
 * prints: loop_seconds=<time inside the loops> checksum=<sum of the rows'
 *         low 32 bits after every step> loop.spmv=<the same time>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

#define MASK 0xffffffffULL

static unsigned long long seed = 2024;

/* The generator's next state, below 2^32 (its high bits are the random
 * ones; the Fortran version computes the same in signed 64-bit integers). */
static unsigned long long next(void) {
    seed = (seed * 1664525ULL + 1013904223ULL) & MASK;
    return seed;
}

/* 2^32 * 2^-1.5: the chance of going up one more octave. */
#define UP 1518500250ULL
#define OCTAVES 12
#define SHORTEST 4

int main(int argc, char **argv) {
    long rows, steps;
    if (argc != 3 || !count(argv[1], 1, 1L << 22, &rows) || !count(argv[2], 1, 1L << 24, &steps)) {
        return usage("sparse ROWS STEPS");
    }
    long *start = malloc((size_t)(rows + 1) * sizeof *start);
    if (!start) return 1;
    start[0] = 0;
    for (long r = 0; r < rows; r++) {
        long k = 0;
        while (k < OCTAVES && next() < UP) k++;
        long base = (long)SHORTEST << k;
        start[r + 1] = start[r] + base + (long)((next() >> 16) % (unsigned long long)base);
    }
    long nonzeros = start[rows];
    unsigned *col = malloc((size_t)nonzeros * sizeof *col), *val = malloc((size_t)nonzeros * sizeof *val);
    unsigned long long *x = malloc((size_t)rows * sizeof *x), *y = malloc((size_t)rows * sizeof *y);
    if (!col || !val || !x || !y) return 1;
    for (long e = 0; e < nonzeros; e++) {
        col[e] = (unsigned)((next() * (unsigned long long)rows) >> 32);
        val[e] = (unsigned)(next() >> 16);
    }
    for (long r = 0; r < rows; r++) x[r] = (unsigned long long)r & 0xffffULL;
    unsigned long long checksum = 0;
    double seconds = 0.0;
    for (long step = 0; step < steps; step++) {
        double t0 = omp_get_wtime();
        /* Entries below 2^16 times values below 2^16, at most 2^16 per
         * row: a row's sum stays below 2^48. */
#pragma omp parallel for schedule(runtime)
        for (long r = 0; r < rows; r++) {
            unsigned long long sum = 0;
            for (long e = start[r]; e < start[r + 1]; e++) sum += (unsigned long long)val[e] * x[col[e]];
            y[r] = sum;
        }
        seconds += omp_get_wtime() - t0;
        for (long r = 0; r < rows; r++) {
            checksum += y[r] & MASK;
            x[r] = (y[r] + (unsigned long long)r) & 0xffffULL;
        }
    }
    printf("loop_seconds=%.9f checksum=%llu loop.spmv=%.9f\n", seconds, checksum, seconds);
    free(start);
    free(col);
    free(val);
    free(x);
    free(y);
    return 0;
}
