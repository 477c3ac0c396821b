/* Many short work-shared loops in one region: the per-instance cost of the
 * loop protocol (scripts/omp-overhead.sh runs it with and without the
 * preload). Prints "<loops> loops <microseconds> us/loop". */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int loops = argc > 1 ? atoi(argv[1]) : 10000;
    long total = 0;
    double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : total)
    {
        for (int r = 0; r < loops; r++) {
#pragma omp for schedule(runtime)
            for (long i = 0; i < 8; i++) total += 1;
        }
    }
    printf("%ld loops %.2f us/loop\n", total / 8, (omp_get_wtime() - t0) / loops * 1e6);
    return total != 8L * loops;
}
