/*
 * The libgomp side of keel-bench: EPCC schedbench's kernel (Bull, "Measuring
 * synchronisation and scheduling overheads in OpenMP", EWOMP 1999; the v3.1
 * `schedbench.c`) as functions the Rust harness calls, so that Keel, libgomp
 * and rayon are measured in one process, in interleaved rounds.
 *
 * Differences from EPCC, on purpose:
 *  - one `#pragma omp parallel for schedule(runtime)` per loop (EPCC puts
 *    `omp for` loops inside one long `parallel` region): Keel's and rayon's
 *    loops fork and join every time, so libgomp's does too;
 *  - the schedule comes from omp_set_schedule(), set by the caller;
 *  - the delay loop is EPCC's `delay()`, with the same length as the Rust
 *    one; each side measures its own sequential reference.
 *
 * Every timing function returns the total seconds of `reps` repetitions,
 * from omp_get_wtime().
 */
#include <omp.h>
#include <stdio.h>

/* EPCC's delay(): a dependent chain of float additions, `len` long. */
__attribute__((noinline)) void kb_delay(int len)
{
    float a = 0.0f;
    for (int i = 0; i < len; i++)
        a += (float)i;
    if (a < 0.0f)
        printf("%f\n", a);
}

/* Keeps `i` alive without doing anything: the empty loop body. */
#define KEEP(i) __asm__ volatile("" ::"r"(i) : "memory")

void kb_set_threads(int threads) { omp_set_num_threads(threads); }

int kb_max_threads(void) { return omp_get_max_threads(); }

/* kind: 1 static, 2 dynamic, 3 guided (omp_sched_t); chunk <= 0: default. */
void kb_set_schedule(int kind, int chunk)
{
    omp_set_schedule((omp_sched_t)kind, chunk);
}

/* Reads the schedule back, to check that omp_set_schedule took. */
void kb_get_schedule(int *kind, int *chunk)
{
    omp_sched_t k;
    omp_get_schedule(&k, chunk);
    *kind = (int)k;
}

/* EPCC's reference: `iters` delays in sequence, `reps` times. */
double kb_reference(int len, long iters, long reps)
{
    double start = omp_get_wtime();
    for (long r = 0; r < reps; r++)
        for (long i = 0; i < iters; i++)
            kb_delay(len);
    return omp_get_wtime() - start;
}

/* The test: `reps` parallel loops of `n` delays with the runtime schedule. */
double kb_loop(long n, int len, long reps)
{
    double start = omp_get_wtime();
    for (long r = 0; r < reps; r++) {
#pragma omp parallel for schedule(runtime)
        for (long i = 0; i < n; i++)
            kb_delay(len);
    }
    return omp_get_wtime() - start;
}

/* An empty parallel loop of `n` iterations, static: fork + join. */
double kb_empty_loop(long n, long reps)
{
    double start = omp_get_wtime();
    for (long r = 0; r < reps; r++) {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            KEEP(i);
    }
    return omp_get_wtime() - start;
}

/* An empty parallel region: fork + join without a worksharing loop. */
double kb_empty_region(long reps)
{
    double start = omp_get_wtime();
    for (long r = 0; r < reps; r++) {
#pragma omp parallel
        {
            KEEP(r);
        }
    }
    return omp_get_wtime() - start;
}

/* Ends libgomp's worker threads (OpenMP 5.0 omp_pause_resource_all), so
 * that its actively waiting workers do not compete with the runtime
 * measured next; the next parallel region starts them again. Returns 0 on
 * success. */
int kb_pause(void) { return omp_pause_resource_all(omp_pause_soft); }
