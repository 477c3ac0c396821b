#!/usr/bin/env bash
# The per-instance cost of libkeel_omp.so on a short OpenMP loop (8 empty
# iterations, schedule(runtime)): instructions per loop on one thread
# (callgrind: the difference between 2000 and 1000 loops, / 1000), and the
# time per loop on two threads in interleaved rounds (the runtime alone
# under `OMP_SCHEDULE=dynamic`, Keel `static`, `dynamic`, `auto`), with the
# median of the per-round ratios.
# Usage: scripts/omp-overhead.sh [loops] [rounds]   (from the repository root)
# CC=clang measures a clang-built program under LLVM's libomp instead
# (the rows named "libgomp" are then libomp's own).
# SKIP_TIMING=1 stops after the instruction counts.
set -euo pipefail
LOOPS=${1:-20000}
ROUNDS=${2:-7}
cargo build -q --release -p keel-omp
LIB=$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/release/libkeel_omp.so
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"${CC:-gcc}" -fopenmp -O2 crates/keel-omp/tests/programs/short.c -o "$dir/short"
modes=(static dynamic auto)

echo "== instructions per loop, one thread (callgrind)"
for mode in libgomp "${modes[@]}"; do
    pre=(env OMP_SCHEDULE=dynamic)
    [ "$mode" != libgomp ] && pre=(env "LD_PRELOAD=$LIB" "KEEL_SCHEDULE=$mode")
    ir() {
        OMP_NUM_THREADS=1 "${pre[@]}" valgrind --tool=callgrind --callgrind-out-file="$dir/cg" \
            "$dir/short" "$1" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    }
    a=$(ir 1000)
    b=$(ir 2000)
    echo "$mode: $(((b - a) / 1000)) instructions per loop"
done
[ -n "${SKIP_TIMING:-}" ] && exit 0

echo "== time per loop, two threads, passive wait, interleaved rounds"
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2 OMP_SCHEDULE=dynamic
for mode in "${modes[@]}"; do : >"$dir/$mode"; done
for r in $(seq "$ROUNDS"); do
    a=$("$dir/short" "$LOOPS" | awk '{print $3}')
    line="round $r: libgomp $a us"
    for mode in "${modes[@]}"; do
        b=$(KEEL_SCHEDULE=$mode LD_PRELOAD=$LIB "$dir/short" "$LOOPS" | awk '{print $3}')
        line="$line, Keel $mode $b us"
        awk -v x="$b" -v y="$a" 'BEGIN {print x / y}' >>"$dir/$mode"
    done
    echo "$line"
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for mode in "${modes[@]}"; do
    echo "median ratio Keel $mode / libgomp: $(median "$dir/$mode")"
done
