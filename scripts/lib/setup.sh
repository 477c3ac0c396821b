# shellcheck shell=bash
# shellcheck disable=SC2034 # check, threads, why: read by the sourcing script
# Sourced by the setup scripts (crates/keel-bench/install-libgomp.sh,
# scripts/install-openmp-compilers.sh, scripts/install-mpich.sh): what each
# of them does the same way. Bash only; it runs nothing when sourced.

# Reads the script's arguments (`[--check]`: `check` is 1 with it, empty
# without) and makes `dir`, a private scratch folder removed on exit.
setup_begin() {
    check=
    case $# in
        0) ;;
        1) if [ "$1" = --check ]; then check=1; else setup_usage; fi ;;
        *) setup_usage ;;
    esac
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
}

setup_usage() {
    echo "usage: $0 [--check]" >&2
    exit 2
}

# The first error line of a log (else its first line), as a one-line reason.
first_error() {
    local line
    line=$(grep -m 1 -i 'error' "$1" 2>/dev/null || head -n 1 "$1" 2>/dev/null || true)
    echo "${line:-no output}"
}

# Writes the OpenMP probe programs into `dir`: probe.c (valid C and C++
# alike) and probe.f90, each a parallel region asking omp_get_num_threads.
openmp_probes() {
    cat >"$dir/probe.c" <<'C'
#include <omp.h>
#include <stdio.h>
int main(void) {
    int threads = 0;
#pragma omp parallel
    {
#pragma omp single
        threads = omp_get_num_threads();
    }
    printf("%d\n", threads);
    return threads >= 1 ? 0 : 1;
}
C
    cat >"$dir/probe.f90" <<'F'
program probe
  use omp_lib
  integer :: threads
  threads = 0
  !$omp parallel
  !$omp single
  threads = omp_get_num_threads()
  !$omp end single
  !$omp end parallel
  print '(i0)', threads
  if (threads < 1) stop 1
end program probe
F
}

# Whether `$1 -fopenmp` (gcc, g++, gfortran or clang) builds and runs the
# probe program: `threads` is what it reported, `why` says why not.
openmp_works() {
    local args
    case "$1" in
        g++) args=(-x c++ "$dir/probe.c") ;;
        gfortran) args=("$dir/probe.f90") ;;
        *) args=("$dir/probe.c") ;;
    esac
    threads=
    rm -f "$dir/p"
    if ! command -v "$1" >/dev/null 2>&1; then
        why="no $1 on PATH"
        return 1
    fi
    "$1" -fopenmp "${args[@]}" -o "$dir/p" >"$dir/log" 2>&1 || {
        why="$1 -fopenmp cannot build an OpenMP program (exit $?): $(first_error "$dir/log")"
        return 1
    }
    threads=$(timeout 60 "$dir/p" 2>"$dir/log") || {
        why="the OpenMP program $1 built does not run (exit $?): $(first_error "$dir/log")"
        return 1
    }
}

# "the Debian package P (apt-get install -y P)", for one or more packages.
install_hint() {
    local noun=package
    if [ $# -gt 1 ]; then noun=packages; fi
    local list="$*"
    echo "the Debian $noun ${list// / and } (apt-get install -y $*)"
}
