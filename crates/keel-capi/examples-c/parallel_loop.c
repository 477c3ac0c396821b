/* A parallel loop through libkeel with one counter per iteration: every
 * schedule must run every iteration exactly once, on participants
 * 0..threads-1. Then a body that fails stops its loop with KEEL_ERR_BODY
 * and the pool runs the next loop. Prints "all ok".
 *
 *   parallel_loop [THREADS] [N] */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "keel.h"

struct counts {
    _Atomic unsigned *hits;
    int64_t begin;
    size_t threads;
    _Atomic unsigned bad_thread;
    _Atomic unsigned long chunks_per_thread[64];
};

static int count(int64_t begin, int64_t end, size_t thread, void *ctx) {
    struct counts *c = ctx;
    if (thread >= c->threads || thread >= 64) {
        atomic_fetch_add(&c->bad_thread, 1);
        return 0;
    }
    atomic_fetch_add(&c->chunks_per_thread[thread], 1);
    for (int64_t i = begin; i < end; i++) atomic_fetch_add(&c->hits[i - c->begin], 1);
    return 0;
}

static int stop_at_half(int64_t begin, int64_t end, size_t thread, void *ctx) {
    (void)thread;
    int64_t half = *(const int64_t *)ctx;
    return begin <= half && half < end ? 7 : 0;
}

int main(int argc, char **argv) {
    size_t threads = argc > 1 ? (size_t)atoi(argv[1]) : 2;
    int64_t n = argc > 2 ? atoll(argv[2]) : 10000;
    keel_status status;
    keel_pool *pool = keel_pool_new(threads, &status);
    if (!pool) {
        fprintf(stderr, "keel_pool_new: %s\n", keel_last_error_message());
        return 1;
    }
    threads = keel_pool_threads(pool);
    const char *schedules[] = {"static", "dynamic,1", "dynamic,7", "guided", "auto", "fac2"};
    int ok = 1;
    struct counts c = {0};
    c.hits = calloc((size_t)n, sizeof *c.hits);
    c.begin = -n / 2;
    c.threads = threads;
    for (size_t s = 0; s < sizeof schedules / sizeof *schedules; s++) {
        for (int64_t i = 0; i < n; i++) atomic_store(&c.hits[i], 0);
        for (size_t t = 0; t < 64; t++) atomic_store(&c.chunks_per_thread[t], 0);
        keel_loop_stats stats;
        status = keel_parallel_for_id(pool, "example/count", c.begin, c.begin + n, schedules[s],
                                      KEEL_LOOP_RECORDED, count, &c, &stats);
        if (status != KEEL_OK) {
            fprintf(stderr, "%s: %s\n", schedules[s], keel_last_error_message());
            ok = 0;
            continue;
        }
        unsigned long chunks = 0;
        for (size_t t = 0; t < threads && t < 64; t++) chunks += c.chunks_per_thread[t];
        for (int64_t i = 0; i < n; i++) {
            if (atomic_load(&c.hits[i]) != 1) {
                fprintf(stderr, "%s: iteration %lld ran %u times\n", schedules[s],
                        (long long)(c.begin + i), atomic_load(&c.hits[i]));
                ok = 0;
                break;
            }
        }
        if (stats.iterations != (uint64_t)n || stats.chunks != chunks) {
            fprintf(stderr, "%s: stats say %llu iterations, %llu chunks; the body saw %lu chunks\n",
                    schedules[s], (unsigned long long)stats.iterations,
                    (unsigned long long)stats.chunks, chunks);
            ok = 0;
        }
        printf("%s: chunks=%llu t_par=%.3g lib=%.3g\n", schedules[s],
               (unsigned long long)stats.chunks, stats.t_par, stats.lib_percent);
    }
    /* binlpt maps the iterations by their hints: heavier ones in the
     * middle here. */
    double *hints = malloc((size_t)n * sizeof *hints);
    for (int64_t i = 0; i < n; i++) hints[i] = 1.0 + (double)(i < n / 2 ? i : n - i);
    for (int64_t i = 0; i < n; i++) atomic_store(&c.hits[i], 0);
    keel_loop_stats hinted;
    status = keel_parallel_for_hinted(pool, "example/hinted", c.begin, c.begin + n, "binlpt:chunks=64",
                                      0, hints, (size_t)n, count, &c, &hinted);
    if (status != KEEL_OK) {
        fprintf(stderr, "binlpt: %s\n", keel_last_error_message());
        ok = 0;
    }
    for (int64_t i = 0; i < n && status == KEEL_OK; i++) {
        if (atomic_load(&c.hits[i]) != 1) {
            fprintf(stderr, "binlpt: iteration %lld ran %u times\n", (long long)(c.begin + i),
                    atomic_load(&c.hits[i]));
            ok = 0;
            break;
        }
    }
    printf("binlpt: chunks=%llu\n", (unsigned long long)hinted.chunks);
    free(hints);
    if (atomic_load(&c.bad_thread)) {
        fprintf(stderr, "a chunk ran on a participant out of range\n");
        ok = 0;
    }
    int64_t half = n / 2;
    status = keel_parallel_for(pool, 0, n, "dynamic,1", stop_at_half, &half);
    if (status != KEEL_ERR_BODY) {
        fprintf(stderr, "a failing body returned %s\n", keel_status_name((int)status));
        ok = 0;
    } else {
        printf("stopped: %s\n", keel_last_error_message());
    }
    status = keel_parallel_for(pool, 0, n, NULL, count, &(struct counts){.hits = c.hits, .threads = threads});
    if (status != KEEL_OK) ok = 0;
    if (keel_parallel_for(NULL, 0, 1, NULL, count, &c) != KEEL_ERR_NULL_POINTER) ok = 0;
    keel_pool_free(pool);
    free(c.hits);
    if (ok) printf("all ok\n");
    return ok ? 0 : 1;
}
