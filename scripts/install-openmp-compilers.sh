#!/usr/bin/env bash
# Makes `g++ -fopenmp`, `gfortran -fopenmp` and `clang -fopenmp` (LLVM's
# libomp) work, for keel-omp's tests (gcc itself:
# crates/keel-bench/install-libgomp.sh, run first).
#
# Probes first: compiles, links and runs a tiny OpenMP program (a parallel
# region asking omp_get_num_threads) with each. Prints one line per compiler
# found or installed, and installs only what fails, with apt-get as root:
# Debian's g++, gfortran, clang and libomp-dev. A compiler still failing
# afterwards is an error naming its Debian package, exit 1. Not root, it
# installs nothing, names the packages, and exits 0: the keel-omp tests that
# need a missing compiler report themselves skipped. Safe to run again.
#
# Usage: install-openmp-compilers.sh [--check]
#   --check   probe only, never install (needs neither root nor apt): exit 0
#             when all three work, 1 after naming what is missing.
set -euo pipefail

me=install-openmp-compilers
usage() { echo "usage: $0 [--check]" >&2; exit 2; }
check=
case $# in
    0) ;;
    1) if [ "$1" = --check ]; then check=1; else usage; fi ;;
    *) usage ;;
esac

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# Valid C and C++ alike.
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

# The first error line of a log (else its first line), as a one-line reason.
first_error() {
    local line
    line=$(grep -m 1 -i 'error' "$1" 2>/dev/null || head -n 1 "$1" 2>/dev/null || true)
    echo "${line:-no output}"
}

# Whether `$1 -fopenmp` builds and runs an OpenMP program: `threads` is what
# it reported, `why` says why not.
threads=
why=
works() {
    local args
    case "$1" in
        g++) args=(-x c++ "$dir/probe.c") ;;
        gfortran) args=("$dir/probe.f90") ;;
        clang) args=("$dir/probe.c") ;;
    esac
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

# What a tool's probe checks, for the messages.
what() {
    case "$1" in
        clang) echo "clang -fopenmp (LLVM's libomp)" ;;
        *) echo "$1 -fopenmp" ;;
    esac
}

# The Debian packages that make a tool's probe pass.
packages() {
    case "$1" in
        clang)
            # An installed clang lacks only its OpenMP runtime.
            if command -v clang >/dev/null 2>&1; then echo libomp-dev; else echo clang libomp-dev; fi
            ;;
        *) echo "$1" ;;
    esac
}

# "the Debian package P (apt-get install -y P)", for one or more packages.
install_hint() {
    local noun=package
    if [ $# -gt 1 ]; then noun=packages; fi
    local list="$*"
    echo "the Debian $noun ${list// / and } (apt-get install -y $*)"
}

# Per missing tool: why its probe failed, and the packages it needs (taken
# before installing, since installing clang changes what clang needs).
missing=()
declare -A reason needs
for tool in g++ gfortran clang; do
    if works "$tool"; then
        echo "$me: found $(what "$tool"): an OpenMP program builds and runs ($threads threads)"
    else
        missing+=("$tool")
        reason[$tool]=$why
        needs[$tool]=$(packages "$tool")
    fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ -n "$check" ]; then
    for tool in "${missing[@]}"; do
        # shellcheck disable=SC2086 # one word per package
        echo "$me: $(what "$tool") is missing: install $(install_hint ${needs[$tool]}) [${reason[$tool]}]" >&2
    done
    exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
    for tool in "${missing[@]}"; do
        # shellcheck disable=SC2086 # one word per package
        echo "$me: $(what "$tool") is missing; not root, so not installing $(install_hint ${needs[$tool]}); its keel-omp tests will say SKIPPED [${reason[$tool]}]"
    done
    exit 0
fi

pkgs=()
for tool in "${missing[@]}"; do
    read -r -a more <<<"${needs[$tool]}"
    pkgs+=("${more[@]}")
done
export DEBIAN_FRONTEND=noninteractive
# A failed install is reported below, by the probes that still fail.
apt-get update -qq || true
apt-get install -y -qq "${pkgs[@]}" || true

status=0
for tool in "${missing[@]}"; do
    if works "$tool"; then
        echo "$me: installed ${needs[$tool]}: $(what "$tool") builds and runs an OpenMP program ($threads threads)"
    else
        # shellcheck disable=SC2086 # one word per package
        echo "$me: $(what "$tool") is missing and could not be installed: install $(install_hint ${needs[$tool]}) [$why]" >&2
        status=1
    fi
done
exit "$status"
