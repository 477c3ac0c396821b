#!/usr/bin/env bash
# Makes `g++ -fopenmp`, `gfortran -fopenmp` and `clang -fopenmp` (LLVM's
# libomp) work, for keel-omp's tests (gcc itself:
# crates/keel-bench/install-libgomp.sh, run first).
#
# Compiles a tiny OpenMP program with each; installs only what fails, with
# apt as root. Not root, it installs nothing and says which tests will
# report themselves skipped. Safe to run again.
set -euo pipefail

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/probe.c" <<'C'
#include <omp.h>
int main(void) { int n = 0;
#pragma omp parallel reduction(+ : n)
  n += 1;
  return n > 0 ? 0 : 1; }
C
cat >"$dir/probe.f90" <<'F'
program probe
  use omp_lib
  integer :: n
  n = 0
  !$omp parallel reduction(+:n)
  n = n + 1
  !$omp end parallel
  if (n < 1) stop 1
end program probe
F

works() {
    case "$1" in
        g++) g++ -fopenmp -x c++ "$dir/probe.c" -o "$dir/p" >/dev/null 2>&1 && "$dir/p" ;;
        gfortran) gfortran -fopenmp "$dir/probe.f90" -o "$dir/p" >/dev/null 2>&1 && "$dir/p" ;;
        clang) clang -fopenmp "$dir/probe.c" -o "$dir/p" >/dev/null 2>&1 && "$dir/p" ;;
    esac
}

# The apt packages that make a tool work.
packages() {
    case "$1" in
        clang) echo clang libomp-dev ;;
        *) echo "$1" ;;
    esac
}

missing=()
for tool in g++ gfortran clang; do
    if works "$tool"; then
        echo "install-openmp-compilers: $tool -fopenmp works already"
    else
        missing+=("$tool")
    fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-openmp-compilers: not root, not installing ${missing[*]}; their keel-omp tests will say SKIPPED"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2046 # one word per package
apt-get install -y -qq $(for tool in "${missing[@]}"; do packages "$tool"; done)
for tool in "${missing[@]}"; do
    if works "$tool"; then
        echo "install-openmp-compilers: installed $tool; $tool -fopenmp works"
    else
        echo "install-openmp-compilers: $tool -fopenmp still fails after installing it" >&2
        exit 1
    fi
done
