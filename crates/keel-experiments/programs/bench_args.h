/* keel omp bench: the command-line helpers the C programs share. `keel omp
 * bench` writes this header next to each program it compiles, so
 * `#include "bench_args.h"` finds it in the source's own folder.
 */
#ifndef KEEL_BENCH_ARGS_H
#define KEEL_BENCH_ARGS_H

#include <stdio.h>
#include <stdlib.h>

/* Whether s is a decimal integer in [lo, hi]; if so it is stored in *out. */
static inline int count(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

/* Prints `usage: <text>` on stderr; returns the usage error's exit status. */
static inline int usage(const char *text) {
    fprintf(stderr, "usage: %s\n", text);
    return 2;
}

#endif
