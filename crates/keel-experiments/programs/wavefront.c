/* keel omp bench: a wavefront, as in sequence alignment (Needleman-Wunsch).
 * Cell (i, j) of an M x M grid depends on (i-1, j), (i, j-1) and
 * (i-1, j-1), so each sweep runs the grid's anti-diagonals in order, one
 * schedule(runtime) loop per anti-diagonal: 2M - 1 loop instances from one
 * call site whose lengths grow from 1 to M cells and shrink back. A cell
 * holds an alignment score (a longest-common-subsequence recurrence over
 * two random 4-letter sequences) and, below it, WORK steps of a 32-bit
 * linear congruential recurrence seeded by its three neighbours: the
 * per-cell work a real scoring function has, which the compiler cannot
 * remove. Cells are integers, so the checksum is exact under every
 * schedule.
 *
 * usage: wavefront M WORK SWEEPS
 * prints: loop_seconds=<time inside the loops> checksum=<sum of the cells
 *         after every sweep> loop.diagonal=<the same time>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

#define MASK 0xffffffffULL
#define LOW 0xfffffULL /* the cell's low 20 bits: its work's result */

/* The letter at position p of a sweep's sequence (0..3): below 2^32
 * everywhere, as in the Fortran version's signed 64-bit integers. */
static unsigned long long letter(unsigned long long p, unsigned long long salt) {
    return (((p * 2654435761ULL) & MASK) + salt * 40503ULL) % 4ULL;
}

int main(int argc, char **argv) {
    long m, work, sweeps;
    if (argc != 4 || !count(argv[1], 1, 1L << 13, &m) || !count(argv[2], 1, 1L << 20, &work) ||
        !count(argv[3], 1, 1L << 20, &sweeps)) {
        return usage("wavefront M WORK SWEEPS");
    }
    long w = m + 1;
    unsigned long long *h = calloc((size_t)(w * w), sizeof *h);
    unsigned long long *a = malloc((size_t)w * sizeof *a), *b = malloc((size_t)w * sizeof *b);
    if (!h || !a || !b) return 1;
    unsigned long long checksum = 0;
    double seconds = 0.0;
    for (long sweep = 0; sweep < sweeps; sweep++) {
        for (long p = 1; p <= m; p++) {
            a[p] = letter((unsigned long long)p, (unsigned long long)(2 * sweep));
            b[p] = letter((unsigned long long)p, (unsigned long long)(2 * sweep + 1));
        }
        /* The borders: score 0, low bits from the sweep and position. */
        for (long p = 0; p <= m; p++) {
            h[p] = (unsigned long long)(p + sweep) & LOW;
            h[p * w] = (unsigned long long)(3 * p + sweep) & LOW;
        }
        for (long d = 2; d <= 2 * m; d++) {
            long lo = d - m > 1 ? d - m : 1, hi = d - 1 < m ? d - 1 : m;
            double t0 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
            for (long i = lo; i <= hi; i++) {
                long j = d - i;
                unsigned long long up = h[(i - 1) * w + j], left = h[i * w + j - 1], diag = h[(i - 1) * w + j - 1];
                unsigned long long score = (diag >> 20) + (a[i] == b[j]);
                if ((up >> 20) > score) score = up >> 20;
                if ((left >> 20) > score) score = left >> 20;
                unsigned long long x = ((up & LOW) + (left & LOW) * 3ULL + (diag & LOW) * 5ULL) & MASK;
                for (long k = 0; k < work; k++) x = (x * 1664525ULL + 1013904223ULL) & MASK;
                h[i * w + j] = (score << 20) | (x & LOW);
            }
            seconds += omp_get_wtime() - t0;
        }
        for (long c = 0; c < w * w; c++) checksum += h[c];
    }
    printf("loop_seconds=%.9f checksum=%llu loop.diagonal=%.9f\n", seconds, checksum, seconds);
    free(h);
    free(a);
    free(b);
    return 0;
}
