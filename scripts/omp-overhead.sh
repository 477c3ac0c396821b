#!/usr/bin/env bash
# The per-instance cost of libkeel_omp.so on a short OpenMP loop (8 empty
# iterations, schedule(runtime)): instructions per loop on one thread
# (callgrind: the difference between 2000 and 1000 loops, / 1000), and the
# time per loop on two threads in interleaved rounds (libgomp alone, Keel
# `static`, Keel `auto`), with the median of the per-round ratios.
# Usage: scripts/omp-overhead.sh [loops] [rounds]   (from the repository root)
# CC=clang measures a clang-built program under LLVM's libomp instead
# (the rows named "libgomp" are then libomp's own).
set -euo pipefail
LOOPS=${1:-20000}
ROUNDS=${2:-7}
cargo build -q --release -p keel-omp
LIB=$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/release/libkeel_omp.so
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"${CC:-gcc}" -fopenmp -O2 crates/keel-omp/tests/programs/short.c -o "$dir/short"

echo "== instructions per loop, one thread (callgrind)"
for mode in libgomp static auto; do
    pre=()
    [ "$mode" != libgomp ] && pre=(env "LD_PRELOAD=$LIB" "KEEL_SCHEDULE=$mode")
    ir() {
        OMP_NUM_THREADS=1 "${pre[@]}" valgrind --tool=callgrind --callgrind-out-file="$dir/cg" \
            "$dir/short" "$1" 2>&1 >/dev/null | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
    }
    a=$(ir 1000)
    b=$(ir 2000)
    echo "$mode: $(((b - a) / 1000)) instructions per loop"
done

echo "== time per loop, two threads, passive wait, interleaved rounds"
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2
: >"$dir/static"
: >"$dir/auto"
for r in $(seq "$ROUNDS"); do
    a=$("$dir/short" "$LOOPS" | awk '{print $3}')
    b=$(KEEL_SCHEDULE=static LD_PRELOAD=$LIB "$dir/short" "$LOOPS" | awk '{print $3}')
    c=$(KEEL_SCHEDULE=auto LD_PRELOAD=$LIB "$dir/short" "$LOOPS" | awk '{print $3}')
    echo "round $r: libgomp $a us, Keel static $b us, Keel auto $c us"
    awk -v x="$b" -v y="$a" 'BEGIN {print x / y}' >>"$dir/static"
    awk -v x="$c" -v y="$a" 'BEGIN {print x / y}' >>"$dir/auto"
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "median ratio Keel static / libgomp: $(median "$dir/static")"
echo "median ratio Keel auto / libgomp:   $(median "$dir/auto")"
