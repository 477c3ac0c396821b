/* libomp's dispatch entry points called directly, as clang calls them but
 * with bounds clang's normalisation never passes (lb not 0, strides not 1,
 * counting down, 32- and 64-bit, signed and unsigned, at the types'
 * limits), each followed by __kmpc_dispatch_deinit where the process has
 * it: every value handed out exactly once, *p_last on exactly one
 * chunk, the one holding the last value. Prints "all ok" and the
 * interposer's loop counts (taken=-1 without it). Built with
 * clang -fopenmp by keel-omp's tests. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    int32_t reserved_1, flags, reserved_2, reserved_3;
    const char *psource;
} ident_t;
static ident_t loc = {0, 2, 0, 0, ";kmpc.c;direct;0;0;;"};

int32_t __kmpc_global_thread_num(ident_t *);
void __kmpc_barrier(ident_t *, int32_t);
void __kmpc_dispatch_init_4(ident_t *, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);
void __kmpc_dispatch_init_4u(ident_t *, int32_t, int32_t, uint32_t, uint32_t, int32_t, int32_t);
void __kmpc_dispatch_init_8(ident_t *, int32_t, int32_t, int64_t, int64_t, int64_t, int64_t);
void __kmpc_dispatch_init_8u(ident_t *, int32_t, int32_t, uint64_t, uint64_t, int64_t, int64_t);
int __kmpc_dispatch_next_4(ident_t *, int32_t, int32_t *, int32_t *, int32_t *, int32_t *);
int __kmpc_dispatch_next_4u(ident_t *, int32_t, int32_t *, uint32_t *, uint32_t *, int32_t *);
int __kmpc_dispatch_next_8(ident_t *, int32_t, int32_t *, int64_t *, int64_t *, int64_t *);
int __kmpc_dispatch_next_8u(ident_t *, int32_t, int32_t *, uint64_t *, uint64_t *, int64_t *);

#define RUNTIME (37 | 1 << 30)
#define DYNAMIC (35 | 1 << 30)
#define GUIDED (36 | 1 << 30)

/* LLVM 18 and later: called after each loop when the process has it (the
 * preload always does; an older libomp does not). */
static void (*deinit)(ident_t *, int32_t);

static int failures;
static int count[4096];
static int lasts;

/* One loop through width W: every thread of a 3-thread team inits, pulls
 * chunks and meets at a barrier. */
#define LOOP(W, T, S, SCHED, LB, UB, ST, N, WHAT)                                        \
    do {                                                                                  \
        memset(count, 0, sizeof count);                                                   \
        lasts = 0;                                                                        \
        int bad = 0;                                                                      \
        _Pragma("omp parallel num_threads(3) reduction(+ : bad)") {                       \
            int32_t g = __kmpc_global_thread_num(&loc), last = 0;                         \
            T lb, ub;                                                                     \
            S st;                                                                         \
            __kmpc_dispatch_init_##W(&loc, g, SCHED, LB, UB, ST, 2);                      \
            while (__kmpc_dispatch_next_##W(&loc, g, &last, &lb, &ub, &st)) {             \
                __int128 k0 = ((__int128)lb - (__int128)(LB)) / (ST);                      \
                __int128 k1 = ((__int128)ub - (__int128)(LB)) / (ST);                      \
                if (((__int128)lb - (__int128)(LB)) % (ST) != 0 || k0 < 0 || k1 >= (N) ||  \
                    k1 < k0 || st != (ST)) {                                              \
                    bad++;                                                                \
                    continue;                                                             \
                }                                                                         \
                for (__int128 k = k0; k <= k1; k++) {                                     \
                    _Pragma("omp atomic") count[(int)k]++;                                \
                }                                                                         \
                if (last) {                                                               \
                    _Pragma("omp atomic") lasts++;                                        \
                    if (k1 != (N) - 1) bad++;                                             \
                }                                                                         \
            }                                                                             \
            if (deinit) deinit(&loc, g);                                                  \
            __kmpc_barrier(&loc, g);                                                      \
        }                                                                                 \
        for (int k = 0; k < (N); k++)                                                     \
            if (count[k] != 1) {                                                          \
                printf("FAIL %s: iteration %d ran %d times\n", WHAT, k, count[k]);       \
                failures++;                                                               \
                break;                                                                    \
            }                                                                             \
        if (bad) { printf("FAIL %s: %d chunks out of bounds\n", WHAT, bad); failures++; } \
        if ((N) > 0 && lasts != 1) {                                                      \
            printf("FAIL %s: %d chunks marked last\n", WHAT, lasts);                      \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

int main(void) {
    deinit = (void (*)(ident_t *, int32_t))dlsym(RTLD_DEFAULT, "__kmpc_dispatch_deinit");
    int scheds[] = {RUNTIME, DYNAMIC, GUIDED, 37, 35 | 1 << 29};
    for (int s = 0; s < 5; s++) {
        int k = scheds[s];
        LOOP(4, int32_t, int32_t, k, 10, -20, -3, 11, "_4 down by 3");
        LOOP(4, int32_t, int32_t, k, -5, 1000, 7, 144, "_4 up by 7");
        LOOP(4, int32_t, int32_t, k, INT32_MIN, INT32_MIN + 4000, 1, 4001, "_4 at INT32_MIN");
        LOOP(4u, uint32_t, int32_t, k, 4000000000u, 4000001000u, 3, 334, "_4u up by 3");
        LOOP(4u, uint32_t, int32_t, k, UINT32_MAX, UINT32_MAX - 7000, -5, 1401, "_4u down from UINT32_MAX");
        LOOP(8, int64_t, int64_t, k, INT64_MAX - 1000, INT64_MAX, 2, 501, "_8 up to INT64_MAX");
        LOOP(8, int64_t, int64_t, k, INT64_MIN + 5, INT64_MIN, -1, 6, "_8 down to INT64_MIN");
        LOOP(8, int64_t, int64_t, k, 7, 7, 1, 1, "_8 one iteration");
        LOOP(8u, uint64_t, int64_t, k, UINT64_MAX - 999, UINT64_MAX, 1, 1000, "_8u up to UINT64_MAX");
        LOOP(8u, uint64_t, int64_t, k, UINT64_MAX, UINT64_MAX - 2000, -4, 501, "_8u down from UINT64_MAX");
        LOOP(8u, uint64_t, int64_t, k, 0, 4094, 2, 2048, "_8u up by 2");
    }
    unsigned long long taken = (unsigned long long)-1, forwarded = 0;
    void (*counts)(unsigned long long *, unsigned long long *) =
        (void (*)(unsigned long long *, unsigned long long *))dlsym(RTLD_DEFAULT, "keel_omp_loop_counts");
    if (counts) counts(&taken, &forwarded);
    if (failures == 0) printf("all ok\n");
    printf("taken=%lld forwarded=%lld\n", (long long)taken, (long long)forwarded);
    return failures != 0;
}
