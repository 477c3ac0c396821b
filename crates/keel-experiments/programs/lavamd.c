/* keel omp bench: the `lavamd-steps` time-stepping workload of
 * keel-workloads (crates/keel-workloads/src/steps/lavamd_steps.rs and
 * src/loops/lavamd.rs) in C: LavaMD's box loop, one iteration of a
 * schedule(runtime) loop per box, repeated once per time step. Box `l`
 * holds units[l] * PPU particles and interacts with itself and its
 * neighbours inside the BOXES1D^3 grid: n^2 * (neighbours + 1) pair
 * interactions, each with one exp(), as in the Rust body. The units per
 * box (exponential draws) come on the command line, so that both programs
 * run the same boxes; positions and charges are tenths as there, from a
 * fixed sequence instead of the Rust generator's stream (they change no
 * cost).
 *
 * usage: lavamd BOXES1D PPU STEPS UNITS...   (BOXES1D^3 unit counts)
 * prints: loop_seconds=<time inside the loops> checksum=<pair interactions> forces=<sum>
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

#define ALPHA 0.5

int main(int argc, char **argv) {
    long b, ppu, steps;
    if (argc < 4 || !count(argv[1], 1, 64, &b) || !count(argv[2], 1, 100, &ppu) ||
        !count(argv[3], 1, 1 << 20, &steps) || argc != 4 + b * b * b) {
        return usage("lavamd BOXES1D PPU STEPS UNITS... (BOXES1D^3 of them)");
    }
    long nboxes = b * b * b;
    long *n = malloc(sizeof *n * (size_t)nboxes);
    long *offset = malloc(sizeof *offset * (size_t)nboxes);
    long *near = malloc(sizeof *near * (size_t)nboxes * 27);
    long *nnear = malloc(sizeof *nnear * (size_t)nboxes);
    double *force = malloc(sizeof *force * (size_t)nboxes);
    unsigned long long *pairs = malloc(sizeof *pairs * (size_t)nboxes);
    if (!n || !offset || !near || !nnear || !force || !pairs) return 1;
    long total = 0;
    for (long l = 0; l < nboxes; l++) {
        long u;
        if (!count(argv[4 + l], 0, 1L << 20, &u)) {
            fprintf(stderr, "lavamd: unit count %ld is not an integer in 0..=1048576\n", l);
            return 2;
        }
        offset[l] = total;
        n[l] = u * ppu;
        total += n[l];
    }
    /* Home box first, then the neighbours inside the grid, in the Rust
     * order (dz, dy, dx from -1 to 1). */
    for (long l = 0; l < nboxes; l++) {
        long x = l % b, y = (l / b) % b, z = l / (b * b), k = 0;
        near[l * 27 + k++] = l;
        for (long dz = -1; dz <= 1; dz++)
            for (long dy = -1; dy <= 1; dy++)
                for (long dx = -1; dx <= 1; dx++) {
                    long nx = x + dx, ny = y + dy, nz = z + dz;
                    if ((dx | dy | dz) == 0) continue;
                    if (nx < 0 || ny < 0 || nz < 0 || nx >= b || ny >= b || nz >= b) continue;
                    near[l * 27 + k++] = nx + ny * b + nz * b * b;
                }
        nnear[l] = k;
    }
    double (*pos)[4] = malloc(sizeof *pos * (size_t)(total > 0 ? total : 1));
    double *charge = malloc(sizeof *charge * (size_t)(total > 0 ? total : 1));
    if (!pos || !charge) return 1;
    for (long i = 0; i < total; i++) {
        for (int c = 0; c < 4; c++) pos[i][c] = (double)((i * 7 + c * 3) % 10 + 1) / 10.0;
        charge[i] = (double)((i * 3 + 1) % 10 + 1) / 10.0;
    }
    unsigned long long checksum = 0;
    double forces = 0.0, seconds = 0.0;
    for (long step = 0; step < steps; step++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
        for (long l = 0; l < nboxes; l++) {
            long nl = n[l];
            double sum = 0.0;
            unsigned long long p = 0;
            for (long q = 0; nl > 0 && q < nnear[l]; q++) {
                long first = offset[near[l * 27 + q]];
                for (long i = 0; i < nl; i++) {
                    const double *a = pos[offset[l] + i];
                    double f0 = 0, f1 = 0, f2 = 0, f3 = 0;
                    for (long j = 0; j < nl; j++) {
                        long k = first + j;
                        if (k >= total) k -= total;
                        const double *r = pos[k];
                        double qk = charge[k];
                        double r2 = a[0] + r[0] - (a[1] * r[1] + a[2] * r[2] + a[3] * r[3]);
                        double u2 = ALPHA * ALPHA * r2;
                        double v = exp(-u2);
                        double fs = 2.0 * v;
                        f0 += qk * v;
                        f1 += qk * fs * (a[1] - r[1]);
                        f2 += qk * fs * (a[2] - r[2]);
                        f3 += qk * fs * (a[3] - r[3]);
                    }
                    p += (unsigned long long)nl;
                    sum += f0 + f1 + f2 + f3;
                }
            }
            force[l] = sum;
            pairs[l] = p;
        }
        seconds += omp_get_wtime() - t0;
        for (long l = 0; l < nboxes; l++) {
            checksum += pairs[l];
            forces += force[l];
        }
    }
    printf("loop_seconds=%.9f checksum=%llu forces=%.6e\n", seconds, checksum, forces);
    return 0;
}
