/* keel omp bench: many short balanced loops, as in a dynamic-programming
 * path search (each row of the table from the previous one). Instance t
 * is one `parallel for schedule(runtime)` over ITERATIONS cells: cell i
 * takes the least of the previous row's cells i-1, i, i+1 and runs WORK
 * steps of a 32-bit linear congruential recurrence from it (a dependency
 * chain the compiler cannot shorten). Every cell costs the same and an
 * instance lasts some microseconds, so a schedule's per-chunk and
 * per-instance costs are most of what differs.
 *
 * usage: short_balanced ITERATIONS WORK INSTANCES
 * prints: loop_seconds=<time inside the loops> checksum=<sum of the last
 *         row> loop.row=<the same time>
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_args.h"

int main(int argc, char **argv) {
    long n, work, instances;
    if (argc != 4 || !count(argv[1], 1, 1L << 20, &n) || !count(argv[2], 1, 1L << 20, &work) ||
        !count(argv[3], 1, 1L << 30, &instances)) {
        return usage("short_balanced ITERATIONS WORK INSTANCES");
    }
    /* Two rows with a border cell at each end that stays 2^32 (above every
     * state), so the minimum at the edges reads only real cells. */
    unsigned long long *prev = malloc((size_t)(n + 2) * sizeof *prev);
    unsigned long long *cur = malloc((size_t)(n + 2) * sizeof *cur);
    if (!prev || !cur) return 1;
    for (long i = 0; i < n + 2; i++) prev[i] = cur[i] = 1ULL << 32;
    for (long i = 1; i <= n; i++) prev[i] = (unsigned long long)(i * 7919);
    double seconds = 0.0;
    for (long t = 0; t < instances; t++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(runtime)
        for (long i = 1; i <= n; i++) {
            unsigned long long x = prev[i];
            if (prev[i - 1] < x) x = prev[i - 1];
            if (prev[i + 1] < x) x = prev[i + 1];
            x = (x + (unsigned long long)(t + i)) & 0xffffffffULL;
            for (long k = 0; k < work; k++) x = (x * 1664525ULL + 1013904223ULL) & 0xffffffffULL;
            cur[i] = x;
        }
        seconds += omp_get_wtime() - t0;
        unsigned long long *swap = prev;
        prev = cur;
        cur = swap;
    }
    unsigned long long checksum = 0;
    for (long i = 1; i <= n; i++) checksum += prev[i];
    printf("loop_seconds=%.9f checksum=%llu loop.row=%.9f\n", seconds, checksum, seconds);
    free(prev);
    free(cur);
    return 0;
}
