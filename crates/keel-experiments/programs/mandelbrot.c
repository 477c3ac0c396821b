/* keel omp bench: the `mandelbrot-zoom` time-stepping workload of
 * keel-workloads (crates/keel-workloads/src/steps/mandelbrot_zoom.rs) in C.
 * Each step computes one image, one iteration of a schedule(runtime) loop
 * per pixel column, of a window shrinking by `zoom` per step around a point
 * of seahorse valley; the heavy columns move from step to step.
 *
 * usage: mandelbrot WIDTH HEIGHT MAX_ITER STEPS START ZOOM
 * prints: loop_seconds=<time inside the loops> checksum=<sum of escape times>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

static const double CENTRE_X = -0.743643887037151;
static const double CENTRE_Y = 0.13182590420533;

/* The window side is start * zoom^step computed as Rust's `powi` does
 * (LLVM's __powidf2: square-and-multiply), so that both programs visit the
 * same pixels bit for bit. */
static double powi(double a, int b) {
    int recip = b < 0;
    double r = 1.0;
    for (;;) {
        if (b & 1) r *= a;
        b /= 2;
        if (b == 0) break;
        a *= a;
    }
    return recip ? 1.0 / r : r;
}

static unsigned escape_time(double cx, double cy, unsigned max_iter) {
    double zx = 0.0, zy = 0.0;
    unsigned n = 0;
    while (n < max_iter) {
        double x2 = zx * zx, y2 = zy * zy;
        if (x2 + y2 > 4.0) break;
        zy = 2.0 * zx * zy + cy;
        zx = x2 - y2 + cx;
        n++;
    }
    return n;
}

int main(int argc, char **argv) {
    long width, height, max_iter, steps;
    double start, zoom;
    char *e1, *e2;
    if (argc != 7 || !count(argv[1], 1, 1 << 14, &width) || !count(argv[2], 1, 1 << 14, &height) ||
        !count(argv[3], 1, 1 << 20, &max_iter) || !count(argv[4], 1, 1 << 20, &steps)) {
        return usage("mandelbrot WIDTH HEIGHT MAX_ITER STEPS START ZOOM");
    }
    start = strtod(argv[5], &e1);
    zoom = strtod(argv[6], &e2);
    if (*e1 != '\0' || *e2 != '\0' || !(start > 0.0 && start <= 100.0) || !(zoom > 0.0 && zoom <= 1.0)) {
        fprintf(stderr, "mandelbrot: START must be in (0, 100], ZOOM in (0, 1]\n");
        return 2;
    }
    unsigned long long *column = calloc((size_t)width, sizeof *column);
    if (!column) return 1;
    unsigned long long checksum = 0;
    double seconds = 0.0;
    for (long step = 0; step < steps; step++) {
        double side = start * powi(zoom, (int)step);
        double dx = side / (double)width, dy = side / (double)height;
        double y0 = CENTRE_Y - side / 2.0;
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
        for (long c = 0; c < width; c++) {
            double cx = CENTRE_X - side / 2.0 + ((double)c + 0.5) * dx;
            unsigned long long sum = 0;
            for (long row = 0; row < height; row++) {
                double cy = y0 + ((double)row + 0.5) * dy;
                sum += escape_time(cx, cy, (unsigned)max_iter);
            }
            column[c] = sum;
        }
        seconds += omp_get_wtime() - t0;
        for (long c = 0; c < width; c++) checksum += column[c];
    }
    printf("loop_seconds=%.9f checksum=%llu\n", seconds, checksum);
    free(column);
    return 0;
}
