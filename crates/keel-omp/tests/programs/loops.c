/* Every kind of work-shared loop the interposer sees, each checked for
 * exactly-once execution with per-iteration counters. Prints one line per
 * failed check and, at the end, "all ok" and the interposer's loop counts
 * (taken=-1 without the preload). Exit status 1 when a check failed.
 * Built by keel-omp's tests with gcc -fopenmp (also as C++), and with
 * clang -fopenmp -DKEEL_LIBOMP, which leaves out the parts that call
 * libgomp's entry points directly. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define N 10007L
static int count[200003];

static void reset(long n) { memset(count, 0, sizeof(int) * (size_t)n); }

static void hit(long i) {
#pragma omp atomic
    count[i]++;
}

static void check(const char *what, long n, int times) {
    for (long i = 0; i < n; i++) {
        if (count[i] != times) {
            printf("FAIL %s: iteration %ld ran %d times, want %d\n", what, i, count[i], times);
            failures++;
            return;
        }
    }
}

static void runtime_bounds(long n) {
    reset(n);
#pragma omp parallel for schedule(runtime)
    for (long i = 0; i < n; i++) hit(i);
    check("runtime, bound known at run time", n, 1);
}

static void combined_forms(void) {
    reset(N);
#pragma omp parallel for schedule(runtime)
    for (long i = 0; i < N; i++) hit(i);
#pragma omp parallel for schedule(dynamic, 3)
    for (long i = 0; i < N; i++) hit(i);
#pragma omp parallel for schedule(guided)
    for (long i = 0; i < N; i++) hit(i);
#pragma omp parallel for schedule(monotonic : dynamic, 2)
    for (long i = 0; i < N; i++) hit(i);
#pragma omp parallel for schedule(monotonic : runtime)
    for (long i = 0; i < N; i++) hit(i);
#pragma omp parallel for schedule(nonmonotonic : runtime)
    for (long i = 0; i < N; i++) hit(i);
#pragma omp parallel for schedule(monotonic : guided, 5)
    for (long i = 0; i < N; i++) hit(i);
    check("combined parallel loops (constant bounds)", N, 7);
}

static void kinds(long n) {
    reset(n);
#pragma omp parallel
    {
#pragma omp for schedule(dynamic, 3)
        for (long i = 0; i < n; i++) hit(i);
#pragma omp for schedule(guided, 2)
        for (long i = 0; i < n; i++) hit(i);
#pragma omp for schedule(monotonic : dynamic)
        for (long i = 0; i < n; i++) hit(i);
#pragma omp for schedule(nonmonotonic : guided)
        for (long i = 0; i < n; i++) hit(i);
#pragma omp for schedule(monotonic : runtime)
        for (long i = 0; i < n; i++) hit(i);
#pragma omp for schedule(nonmonotonic : runtime)
        for (long i = 0; i < n; i++) hit(i);
#pragma omp for schedule(static)
        for (long i = 0; i < n; i++) hit(i);
#pragma omp for schedule(auto)
        for (long i = 0; i < n; i++) hit(i);
    }
    check("orphan-style loops of every kind", n, 8);
}

static void reductions(long n) {
    long sum = 0;
    double prod = 1.0;
    long last = -1;
#pragma omp parallel for schedule(runtime) reduction(+ : sum) reduction(* : prod) lastprivate(last)
    for (long i = 0; i < n; i++) {
        sum += i;
        prod *= (i % 7 == 0) ? 1.0001 : 1.0;
        last = i;
    }
    if (sum != n * (n - 1) / 2) { printf("FAIL reduction: %ld\n", sum); failures++; }
    if (last != n - 1) { printf("FAIL lastprivate: %ld\n", last); failures++; }
    if (prod < 1.0) { printf("FAIL product reduction\n"); failures++; }
    /* a task reduction: GOMP_loop_start with reductions, left to libgomp */
    long tsum = 0;
#pragma omp parallel
    {
#pragma omp for reduction(task, + : tsum) schedule(runtime)
        for (long i = 0; i < n; i++) {
#pragma omp task in_reduction(+ : tsum)
            tsum += 1;
        }
    }
    if (tsum != n) { printf("FAIL task reduction: %ld\n", tsum); failures++; }
    /* ordered: libgomp's work share */
    long order = 0;
    int in_order = 1;
#pragma omp parallel for ordered schedule(runtime)
    for (long i = 0; i < 1000; i++) {
#pragma omp ordered
        {
            if (order != i) in_order = 0;
            order++;
        }
    }
    if (!in_order || order != 1000) { printf("FAIL ordered\n"); failures++; }
}

static void nowait_loops(long n) {
    /* 40 nowait loops in a row: more than the team's ring holds, so a fast
     * thread waits for the slowest. */
    reset(n);
#pragma omp parallel
    {
        for (int k = 0; k < 40; k++) {
#pragma omp for schedule(runtime) nowait
            for (long i = 0; i < n; i++) hit(i);
        }
    }
    check("40 nowait loops", n, 40);
}

static void nested(long n) {
    reset(n);
    omp_set_max_active_levels(2);
#pragma omp parallel for schedule(runtime) num_threads(2)
    for (long o = 0; o < 4; o++) {
#pragma omp parallel for schedule(runtime) num_threads(2)
        for (long i = o; i < n; i += 4) hit(i);
    }
    omp_set_max_active_levels(1);
#pragma omp parallel for schedule(runtime) num_threads(2)
    for (long o = 0; o < 2; o++) {
#pragma omp parallel for schedule(runtime) num_threads(2)
        for (long i = o; i < n; i += 2) hit(i);
    }
    check("nested parallel loops", n, 2);
}

/* Regions of changing team sizes one after the other, each with a loop
 * its threads leave without waiting and a second one: a team kept from
 * one region for the encountering thread's next starts its loops from the
 * first again, whatever the size of its last. */
static void team_sizes(long n) {
    int sizes[] = {2, 1, 3, 2, 4, 1, 2};
    reset(n);
    for (int r = 0; r < 7; r++) {
#pragma omp parallel num_threads(sizes[r])
        {
#pragma omp for schedule(runtime) nowait
            for (long i = 0; i < n; i++) hit(i);
#pragma omp for schedule(runtime)
            for (long i = 0; i < n; i += 2) hit(i);
        }
    }
    for (long i = 0; i < n; i++) {
        int want = i % 2 == 0 ? 14 : 7;
        if (count[i] != want) {
            printf("FAIL regions of changing team sizes: iteration %ld ran %d times, want %d\n", i, count[i], want);
            failures++;
            return;
        }
    }
}

static void set_schedule(long n) {
    omp_sched_t kinds[] = {omp_sched_static, omp_sched_dynamic, omp_sched_guided, omp_sched_auto,
                           (omp_sched_t)(omp_sched_dynamic | omp_sched_monotonic)};
    int chunks[] = {0, 7, 3, 0, 2};
    reset(n);
    for (int k = 0; k < 5; k++) {
        omp_set_schedule(kinds[k], chunks[k]);
#pragma omp parallel for schedule(runtime)
        for (long i = 0; i < n; i++) hit(i);
    }
    check("omp_set_schedule", n, 5);
}

static void shapes(void) {
    long ran = 0;
    long lo = 0, hi = 0, one = 1;
#pragma omp parallel for schedule(runtime) reduction(+ : ran)
    for (long i = lo; i < hi; i++) ran++;
    if (ran != 0) { printf("FAIL zero iterations ran %ld\n", ran); failures++; }
#pragma omp parallel for schedule(runtime) reduction(+ : ran)
    for (long i = lo; i < one; i++) ran++;
    if (ran != 1) { printf("FAIL one iteration ran %ld\n", ran); failures++; }
    /* negative and non-unit strides */
    long n = 20011;
    reset(n);
#pragma omp parallel for schedule(runtime)
    for (long i = n - 1; i >= 0; i--) hit(i);
#pragma omp parallel for schedule(runtime)
    for (long i = n - 1; i >= 0; i -= 3) hit(i);
#pragma omp parallel for schedule(runtime)
    for (long i = n - 2; i >= 0; i -= 3) hit(i);
#pragma omp parallel for schedule(runtime)
    for (long i = n - 3; i >= 0; i -= 3) hit(i);
#pragma omp parallel for schedule(runtime)
    for (long i = 0; i < n; i += 7) hit(i);
    for (long s = 1; s < 7; s++) {
#pragma omp parallel for schedule(runtime)
        for (long i = s; i < n; i += 7) hit(i);
    }
    check("negative and non-unit strides", n, 3);
    /* unsigned long long bounds, up and down, near 2^64 */
    unsigned long long base = 18446744073709000000ULL;
    unsigned long long m = 5003;
    reset((long)m);
#pragma omp parallel for schedule(runtime)
    for (unsigned long long i = base; i < base + m; i++) hit((long)(i - base));
#pragma omp parallel for schedule(runtime)
    for (unsigned long long i = base + m - 1; i >= base; i -= 2) hit((long)(i - base));
#pragma omp parallel for schedule(runtime)
    for (unsigned long long i = base + m - 2; i >= base; i -= 2) hit((long)(i - base));
    check("unsigned long long bounds", (long)m, 2);
}

static void many_short_loops(int loops) {
    long total = 0;
#pragma omp parallel reduction(+ : total)
    {
        for (int r = 0; r < loops; r++) {
#pragma omp for schedule(runtime)
            for (long i = 0; i < 8; i++) total += 1;
        }
    }
    if (total != 8L * loops) { printf("FAIL %d short loops: %ld\n", loops, total); failures++; }
}

#ifndef KEEL_LIBOMP
/* GCC before 4.9 started regions with GOMP_parallel_start and ran the body
 * on the encountering thread too; such a region inside a loop Keel runs
 * must leave that loop alone. */
#ifdef __cplusplus
extern "C" {
#endif
void GOMP_parallel_start(void (*fn)(void *), void *data, unsigned num_threads);
void GOMP_parallel_end(void);
#ifdef __cplusplus
}
#endif

static void legacy_body(void *arg) {
    long base = *(long *)arg;
#pragma omp for schedule(runtime)
    for (long i = 0; i < 16; i++) hit(base + i);
}

static void legacy_regions(void) {
    reset(64 * 16);
    omp_set_max_active_levels(2);
#pragma omp parallel for schedule(runtime) num_threads(2)
    for (long o = 0; o < 64; o++) {
        long base = o * 16;
        GOMP_parallel_start(legacy_body, &base, 2);
        legacy_body(&base);
        GOMP_parallel_end();
    }
    omp_set_max_active_levels(1);
    check("legacy regions inside a loop", 64 * 16, 1);
}

/* GOMP_loop_start / GOMP_loop_ull_start called as GCC 9+ calls them for
 * plain loops: every sched encoding Keel may take, and static, which it
 * never takes; the three ends, GOMP_loop_end_cancel among them. */
#ifdef __cplusplus
extern "C" {
#endif
bool GOMP_loop_start(long, long, long, long, long, long *, long *, void *, void *);
bool GOMP_loop_runtime_next(long *, long *);
bool GOMP_loop_ull_start(bool, unsigned long long, unsigned long long, unsigned long long, long,
                          unsigned long long, unsigned long long *, unsigned long long *, void *, void *);
bool GOMP_loop_ull_runtime_next(unsigned long long *, unsigned long long *);
void GOMP_loop_end_nowait(void);
void GOMP_loop_end(void);
bool GOMP_loop_end_cancel(void);
#ifdef __cplusplus
}
#endif

static void direct_loop_start(long n) {
    long scheds[] = {0, 1, 2, 3, 4, 0x80000000L, 0x80000002L, 0x80000003L};
    int kinds = (int)(sizeof scheds / sizeof scheds[0]);
    int cancelled = 0;
    reset(n);
#pragma omp parallel
    {
        for (int k = 0; k < kinds; k++) {
            long s, e;
            if (GOMP_loop_start(n - 1, -1, -1, scheds[k], 3, &s, &e, NULL, NULL)) {
                do {
                    for (long i = s; i > e; i--) hit(i);
                } while (GOMP_loop_runtime_next(&s, &e));
            }
            GOMP_loop_end_nowait();
            unsigned long long us, ue;
            if (GOMP_loop_ull_start(1, 0, (unsigned long long)n, 1, scheds[k], 2, &us, &ue, NULL, NULL)) {
                do {
                    for (unsigned long long i = us; i < ue; i++) hit((long)i);
                } while (GOMP_loop_ull_runtime_next(&us, &ue));
            }
            if (k % 2) {
                GOMP_loop_end();
            } else if (GOMP_loop_end_cancel()) {
                cancelled = 1;
            }
        }
    }
    if (cancelled) { printf("FAIL GOMP_loop_end_cancel reported a cancellation\n"); failures++; }
    check("GOMP_loop_start and GOMP_loop_ull_start, every sched", n, 2 * kinds);
}

#endif

static void more_kinds(long n) {
    reset(n);
    unsigned long long un = (unsigned long long)n;
#pragma omp parallel
    {
#pragma omp for schedule(dynamic, 4)
        for (unsigned long long i = 0; i < un; i++) hit((long)i);
#pragma omp for schedule(guided)
        for (unsigned long long i = un; i > 0; i--) hit((long)(i - 1));
#pragma omp for schedule(monotonic : dynamic)
        for (unsigned long long i = 0; i < un; i++) hit((long)i);
        /* a loop with a cancel construct (cancellation off: a no-op) */
#pragma omp for schedule(runtime)
        for (long i = 0; i < n; i++) {
#pragma omp cancel for if (i < 0)
            hit(i);
        }
    }
    check("ull dynamic and guided, a cancellable loop", n, 4);
}

/* 32-bit signed and unsigned iteration variables (libomp's _4 and _4u
 * entry points), unsigned 64-bit ones near 2^64 under every kind. */
static void widths(long n) {
    reset(n);
    int in = (int)n;
    unsigned un = (unsigned)n;
    unsigned long long top = 18446744073709551615ULL - (unsigned long long)n;
#pragma omp parallel
    {
#pragma omp for schedule(runtime)
        for (int i = 0; i < in; i++) hit(i);
#pragma omp for schedule(runtime) nowait
        for (int i = in - 1; i >= 0; i -= 2) hit(i);
#pragma omp for schedule(runtime)
        for (int i = in - 2; i >= 0; i -= 2) hit(i);
#pragma omp for schedule(dynamic, 5)
        for (unsigned i = 0; i < un; i++) hit((long)i);
#pragma omp for schedule(guided)
        for (unsigned i = 1; i <= un; i++) hit((long)(i - 1));
#pragma omp for schedule(runtime)
        for (unsigned long long i = top; i < top + (unsigned long long)n; i++) hit((long)(i - top));
#pragma omp for schedule(nonmonotonic : dynamic, 3)
        for (unsigned long long i = top + (unsigned long long)n - 1; i >= top; i -= 1) hit((long)(i - top));
    }
    check("int, unsigned and unsigned long long loops", n, 6);
    /* lastprivate under every width, on a loop of few iterations (the
     * unsigned one monotonic: libomp 14's nonmonotonic dynamic schedule,
     * its static stealing, sometimes loses a lastprivate value itself) */
    int li = -1;
    unsigned lu = 0;
    unsigned long long lull = 0;
#pragma omp parallel
    {
#pragma omp for schedule(runtime) lastprivate(li)
        for (int i = 0; i < 37; i += 3) li = i;
#pragma omp for schedule(monotonic : dynamic, 2) lastprivate(lu)
        for (unsigned i = 3; i < 100; i += 7) lu = i;
#pragma omp for schedule(runtime) lastprivate(lull)
        for (unsigned long long i = top; i < top + 11; i++) lull = i;
    }
    if (li != 36) { printf("FAIL lastprivate int: %d\n", li); failures++; }
    if (lu != 94) { printf("FAIL lastprivate unsigned: %u\n", lu); failures++; }
    if (lull != top + 10) { printf("FAIL lastprivate unsigned long long\n"); failures++; }
}

/* A loop whose span with its step overflows the signed 64-bit type (not
 * conforming): the interposer leaves it to libgomp, which alone decides
 * what it runs, so it is forwarded, not taken. (clang counts such a loop
 * itself, as no iteration, and never calls the runtime.) */
#ifndef KEEL_LIBOMP
static void overflowing_span(void) {
    void (*counts)(unsigned long long *, unsigned long long *) =
        (void (*)(unsigned long long *, unsigned long long *))dlsym(RTLD_DEFAULT, "keel_omp_loop_counts");
    if (!counts) return;
    unsigned long long taken0 = 0, forwarded0 = 0, taken1 = 0, forwarded1 = 0;
    counts(&taken0, &forwarded0);
    long runs = 0;
#pragma omp parallel for schedule(runtime) reduction(+ : runs)
    for (int64_t i = INT64_MAX - 10; i > INT64_MIN + 10; i -= INT64_MAX / 4) runs++;
    counts(&taken1, &forwarded1);
    if (taken1 != taken0 || forwarded1 != forwarded0 + 1) {
        printf("FAIL overflowing span: taken %llu -> %llu, forwarded %llu -> %llu (runs %ld)\n",
               taken0, taken1, forwarded0, forwarded1, runs);
        failures++;
    }
}
#endif

int main(int argc, char **argv) {
    int short_loops = argc > 1 ? atoi(argv[1]) : 100000;
    runtime_bounds(N);
    runtime_bounds(argc > 2 ? atol(argv[2]) : 200003);
    combined_forms();
    kinds(N);
    reductions(N);
    nowait_loops(997);
    nested(N);
    team_sizes(N);
    set_schedule(N);
    shapes();
#ifndef KEEL_LIBOMP
    legacy_regions();
    direct_loop_start(N);
#endif
    widths(N);
    more_kinds(N);
    many_short_loops(short_loops);
#ifndef KEEL_LIBOMP
    overflowing_span();
#endif
    unsigned long long taken = (unsigned long long)-1, forwarded = 0;
    void (*counts)(unsigned long long *, unsigned long long *) =
        (void (*)(unsigned long long *, unsigned long long *))dlsym(RTLD_DEFAULT, "keel_omp_loop_counts");
    if (counts) counts(&taken, &forwarded);
    if (failures == 0) printf("all ok\n");
    printf("taken=%lld forwarded=%lld\n", (long long)taken, (long long)forwarded);
    return failures != 0;
}
