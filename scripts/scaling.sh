#!/usr/bin/env bash
# Scaling runs for a many-core machine: loops (Keel beside libgomp and
# rayon, EPCC method; Keel's schedules on Mandelbrot and LavaMD-like),
# objects (the Charm++ + OpenMP tables) and the farm (ARRS against RR), at
# 2, 4, 8 and 16 threads. Not part of CI: this 2-core machine cannot run it
# meaningfully. Uses release binaries already built:
#   cargo build --release -p keel-cli -p keel-bench --features keel-bench/libgomp
#
# Usage: scripts/scaling.sh SECTION OUTDIR [THREADS...]
#   SECTION: loops | edge | objects | farm | farm-full | omp | mpi
#   edge runs the adaptive schedules on mandelbrot-edge against ss (the
#   paired_ratios example, built with
#   cargo build --release -p keel-experiments --example paired_ratios).
#   farm-full runs experiments a, b, d and the per-item cost; farm runs a, b
#   and the per-item cost (cheaper at large counts).
#   omp runs the drop-in OpenMP goals (`keel omp bench`) on the gcc-built
#   programs (libgomp) and the clang-built ones (libomp); it needs gcc,
#   clang and libomp (scripts/install-openmp-compilers.sh).
#   mpi runs `keel mpi bench` with T ranks x 1 thread and T/4 ranks x 4
#   threads for each T given (needs MPICH and
#   cargo build --release -p keel-mpi --features mpi --bin keel-mpi-bench).
# EPCC_ROUNDS (default 31), LOOPS_REPS (3) and EDGE_ROUNDS (7) set the
# rounds of the loop sections.
# Each run's output goes to OUTDIR/<section>-<threads>.txt; a section that
# overruns its budget (SECTION_TIMEOUT seconds per thread count, default 150)
# is cut off and says so.
set -uo pipefail

section=${1:?section: loops | edge | objects | farm | farm-full | omp | mpi}
outdir=${2:?output folder}
shift 2
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(2 4 8 16)
bin=${KEEL_BIN_DIR:-target/release}
limit=${SECTION_TIMEOUT:-150}
mkdir -p "$outdir"

run() {
    local name=$1
    shift
    local start=$SECONDS
    timeout "$limit" "$@" >"$outdir/$name.txt" 2>"$outdir/$name.err"
    local rc=$?
    echo "$name: rc $rc, $((SECONDS - start)) s"
    [ $rc -eq 124 ] && echo "(cut off after ${limit} s)" >>"$outdir/$name.txt"
}

echo "host: $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); load $(cut -d' ' -f1-3 /proc/loadavg)"
for t in "${threads[@]}"; do
    case $section in
    loops)
        run "epcc-$t" "$bin/keel-bench-loops" --threads "$t" --rounds "${EPCC_ROUNDS:-31}" --quiet
        KEEL_NUM_THREADS=$t run "loops-$t" "$bin/keel" bench loops --reps "${LOOPS_REPS:-3}"
        ;;
    edge)
        run "edge-$t" "$bin/examples/paired_ratios" --threads "$t" --rounds "${EDGE_ROUNDS:-7}" \
            ss af maf fac mfac tap bold fac2 gss awf-b static-steal
        ;;
    objects)
        run "objects-$t" "$bin/keel" bench objects --threads "$t" --reps 3
        ;;
    farm)
        run "farm-$t" "$bin/keel" bench farm --workers "$t" --runs 10 -e a -e b -e overhead
        ;;
    farm-full)
        run "farm-$t" "$bin/keel" bench farm --workers "$t" --runs 10 -e a -e b -e d -e overhead
        ;;
    omp)
        for cc in gcc clang; do
            run "omp-$cc-$t" "$bin/keel" omp bench --threads "$t" --compiler "$cc" --rounds "${OMP_ROUNDS:-9}" --quiet
        done
        ;;
    mpi)
        w=persistent,drift,phase,lassen
        run "mpi-${t}x1" "$bin/keel" mpi bench --workload "$w" --ranks "$t" --threads 1 --reps 3 --quiet
        [ "$t" -ge 4 ] && run "mpi-$((t / 4))x4" "$bin/keel" mpi bench --workload "$w" --ranks "$((t / 4))" --threads 4 --reps 3 --quiet
        ;;
    *)
        echo "unknown section $section" >&2
        exit 2
        ;;
    esac
done
