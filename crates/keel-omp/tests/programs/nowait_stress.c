/* Many nowait loops in a row, each of a few iterations, with one thread
 * slowed per loop in turn: the fast threads keep running up to the
 * team's ring of loops ahead of the slow one, and every slot of the ring
 * is reused thousands of times. Every iteration of every loop must run
 * exactly once. Usage: nowait_stress [loops]. Prints "taken=N" (-1
 * without the preload) and "all ok"; exit status 1 when a check failed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long loops = argc > 1 ? atol(argv[1]) : 20000;
    if (loops < 1) loops = 1;
    /* Loop r has 1 + r % 13 iterations: iteration i of loop r is
     * hits[r * 13 + i]. */
    int *hits = calloc((size_t)loops * 13, sizeof *hits);
    if (!hits) return 1;
#pragma omp parallel
    {
        int me = omp_get_thread_num(), threads = omp_get_num_threads();
        for (long r = 0; r < loops; r++) {
            if (r % threads == me) {
                /* The slow thread of this loop: a little work first. */
                volatile long spin = 0;
                for (int k = 0; k < 200; k++) spin += k;
            }
#pragma omp for schedule(runtime) nowait
            for (long i = 0; i < 1 + r % 13; i++) {
#pragma omp atomic
                hits[r * 13 + i]++;
            }
        }
    }
    long bad = 0;
    for (long r = 0; r < loops; r++)
        for (long i = 0; i < 13; i++)
            if (hits[r * 13 + i] != (i < 1 + r % 13)) bad++;
    free(hits);
    unsigned long long taken = (unsigned long long)-1, forwarded = 0;
    void (*counts)(unsigned long long *, unsigned long long *) =
        (void (*)(unsigned long long *, unsigned long long *))dlsym(RTLD_DEFAULT, "keel_omp_loop_counts");
    if (counts) counts(&taken, &forwarded);
    printf("taken=%lld forwarded=%lld\n", (long long)taken, (long long)forwarded);
    if (bad) {
        printf("%ld iterations ran other than once\n", bad);
        return 1;
    }
    printf("all ok\n");
    return 0;
}
