/* keel omp bench: a time-stepping program whose three schedule(runtime)
 * loops want different schedules. Each step runs
 *   mandel: the Mandelbrot set's escape times, one iteration per image row
 *           of a window off the real axis (rows through the set cost up
 *           to MAX_ITER per pixel, rows outside it almost nothing, and the
 *           heavy rows lie in the first half: imbalanced);
 *   tasks:  TASKS tasks of power-law cost (a discrete Pareto of index 1.5:
 *           octave k, [8 * 2^k, 16 * 2^k) units of UNIT recurrence steps,
 *           with probability proportional to 2^(-1.5 k), k up to 10),
 *           drawn with fixed seed by a 32-bit linear congruential
 *           generator, each continuing its own 32-bit recurrence;
 *   triad:  a STREAM triad over N doubles (balanced, memory-bound), the
 *           three arrays taking the roles in turn as in stream.c.
 * Every result is the same whatever thread computes it, so the checksum is
 * exact under every schedule.
 *
 * usage: multi_loop WIDTH HEIGHT MAX_ITER TASKS UNIT N STEPS
 * prints: loop_seconds=<time inside the three loops> checksum=<escape
 *         times + task states + the triad's bit halves> loop.mandel=<s>
 *         loop.tasks=<s> loop.triad=<s>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"

#define MASK 0xffffffffULL
#define UP 1518500250ULL /* 2^32 * 2^-1.5: the chance of one more octave */
#define OCTAVES 10
#define SMALLEST 8

static unsigned long long seed = 4049;

static unsigned long long next(void) {
    seed = (seed * 1664525ULL + 1013904223ULL) & MASK;
    return seed;
}

/* The window: x in [-2.25, 0.75], y in [-1.0, 2.0]; the set lies in the
 * rows below y = 1.2. */
static unsigned long long escape_row(long row, long width, long height, long max_iter) {
    double cy = -1.0 + 3.0 * (double)row / (double)height;
    unsigned long long total = 0;
    for (long c = 0; c < width; c++) {
        double cx = -2.25 + 3.0 * (double)c / (double)width;
        double zx = 0.0, zy = 0.0;
        long n = 0;
        while (n < max_iter) {
            double x2 = zx * zx, y2 = zy * zy;
            if (x2 + y2 > 4.0) break;
            zy = 2.0 * zx * zy + cy;
            zx = x2 - y2 + cx;
            n++;
        }
        total += (unsigned long long)n;
    }
    return total;
}

static unsigned long long halves(const double *v, long n) {
    unsigned long long sum = 0;
    for (long i = 0; i < n; i++) {
        unsigned long long bits;
        memcpy(&bits, &v[i], sizeof bits);
        sum += (bits & MASK) + (bits >> 32);
    }
    return sum;
}

int main(int argc, char **argv) {
    long width, height, max_iter, tasks, unit, n, steps;
    if (argc != 8 || !count(argv[1], 1, 1L << 14, &width) || !count(argv[2], 1, 1L << 14, &height) ||
        !count(argv[3], 1, 1L << 20, &max_iter) || !count(argv[4], 1, 1L << 24, &tasks) ||
        !count(argv[5], 1, 1L << 20, &unit) || !count(argv[6], 1, 1L << 28, &n) ||
        !count(argv[7], 1, 1L << 24, &steps)) {
        return usage("multi_loop WIDTH HEIGHT MAX_ITER TASKS UNIT N STEPS");
    }
    unsigned long long *rows = malloc((size_t)height * sizeof *rows);
    long *cost = malloc((size_t)tasks * sizeof *cost);
    unsigned long long *state = malloc((size_t)tasks * sizeof *state);
    double *arrays[3];
    for (int k = 0; k < 3; k++) arrays[k] = malloc((size_t)n * sizeof(double));
    if (!rows || !cost || !state || !arrays[0] || !arrays[1] || !arrays[2]) return 1;
    for (long t = 0; t < tasks; t++) {
        long k = 0;
        while (k < OCTAVES && next() < UP) k++;
        long base = (long)SMALLEST << k;
        cost[t] = (base + (long)((next() >> 16) % (unsigned long long)base)) * unit;
        state[t] = (unsigned long long)t;
    }
    for (long i = 0; i < n; i++) {
        arrays[0][i] = 0.0;
        arrays[1][i] = 1.0 + (double)(i % 1000) * 0.5;
        arrays[2][i] = 2.0 + (double)(i % 777) * 0.25;
    }
    unsigned long long checksum = 0;
    double mandel = 0.0, work = 0.0, triad = 0.0;
    for (long step = 0; step < steps; step++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
        for (long r = 0; r < height; r++) rows[r] = escape_row(r, width, height, max_iter);
        double t1 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
        for (long t = 0; t < tasks; t++) {
            unsigned long long x = (state[t] + (unsigned long long)step) & MASK;
            for (long k = 0; k < cost[t]; k++) x = (x * 1664525ULL + 1013904223ULL) & MASK;
            state[t] = x;
        }
        double t2 = omp_get_wtime();
        double *x = arrays[step % 3], *y = arrays[(step + 1) % 3], *z = arrays[(step + 2) % 3];
#pragma omp parallel for schedule(runtime)
        for (long i = 0; i < n; i++) x[i] = y[i] + 0.5 * z[i];
        double t3 = omp_get_wtime();
        mandel += t1 - t0;
        work += t2 - t1;
        triad += t3 - t2;
        for (long r = 0; r < height; r++) checksum += rows[r];
        for (long t = 0; t < tasks; t++) checksum += state[t];
    }
    for (int k = 0; k < 3; k++) checksum += halves(arrays[k], n);
    printf("loop_seconds=%.9f checksum=%llu loop.mandel=%.9f loop.tasks=%.9f loop.triad=%.9f\n",
           mandel + work + triad, checksum, mandel, work, triad);
    free(rows);
    free(cost);
    free(state);
    for (int k = 0; k < 3; k++) free(arrays[k]);
    return 0;
}
