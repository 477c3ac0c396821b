#!/usr/bin/env bash
# Two builds of libkeel_omp.so side by side on the short-loop program
# (crates/keel-omp/tests/programs/short.c: one region, many work-shared
# loops of 8 empty iterations, schedule(runtime)), against libgomp's own
# `dynamic`: instructions per loop (callgrind, all threads together, the
# difference between 2000 and 1000 loops / 1000) at 1 and 2 threads, then
# the time per loop in interleaved rounds at each thread count (libgomp,
# build A, build B, in turn) with the median of the per-round ratios.
# Usage: scripts/omp-compare.sh LIB_A LIB_B [threads...]
#   (from the repository root; threads default to "2 4 8 16";
#    SCHEDULE=<keel schedule> (default dynamic), LOOPS (20000), ROUNDS (7),
#    OMP_WAIT_POLICY is passed through as set)
set -euo pipefail
A=$(realpath "$1")
B=$(realpath "$2")
shift 2
THREADS=${*:-2 4 8 16}
SCHEDULE=${SCHEDULE:-dynamic}
LOOPS=${LOOPS:-20000}
ROUNDS=${ROUNDS:-7}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
gcc -fopenmp -O2 crates/keel-omp/tests/programs/short.c -o "$dir/short"

run() { # run <lib or libgomp> <threads> <loops> -> microseconds per loop
    if [ "$1" = libgomp ]; then
        OMP_NUM_THREADS=$2 OMP_SCHEDULE=dynamic "$dir/short" "$3" | awk '{print $3}'
    else
        OMP_NUM_THREADS=$2 KEEL_SCHEDULE=$SCHEDULE LD_PRELOAD=$1 "$dir/short" "$3" | awk '{print $3}'
    fi
}

if command -v valgrind >/dev/null; then
    echo "== instructions per loop (callgrind, every thread), passive wait"
    for t in 1 2; do
        for lib in libgomp "$A" "$B"; do
            ir() {
                local pre=()
                [ "$lib" != libgomp ] && pre=(env "LD_PRELOAD=$lib" "KEEL_SCHEDULE=$SCHEDULE")
                OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$t OMP_SCHEDULE=dynamic "${pre[@]}" \
                    valgrind --tool=callgrind --callgrind-out-file="$dir/cg" "$dir/short" "$1" 2>&1 >/dev/null |
                    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
            }
            x=$(ir 1000)
            y=$(ir 2000)
            echo "threads $t, $lib: $(((y - x) / 1000))"
        done
    done
fi

median() { sort -g "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "== time per loop, interleaved rounds (A = $A, B = $B)"
for t in $THREADS; do
    : >"$dir/ra"
    : >"$dir/rb"
    for r in $(seq "$ROUNDS"); do
        g=$(run libgomp "$t" "$LOOPS")
        a=$(run "$A" "$t" "$LOOPS")
        b=$(run "$B" "$t" "$LOOPS")
        echo "threads $t round $r: libgomp $g us, A $a us, B $b us"
        awk -v x="$a" -v y="$g" 'BEGIN {print x / y}' >>"$dir/ra"
        awk -v x="$b" -v y="$g" 'BEGIN {print x / y}' >>"$dir/rb"
    done
    echo "threads $t: median ratio A/libgomp $(median "$dir/ra"), B/libgomp $(median "$dir/rb")"
done
