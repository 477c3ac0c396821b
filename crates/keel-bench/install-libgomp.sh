#!/usr/bin/env bash
# Makes `gcc -fopenmp` work, for keel-bench's `libgomp` feature.
#
# Compiles and links a tiny OpenMP program; only when that fails does it
# install gcc and the package that carries libgomp's development files on
# Debian (libgcc-N-dev: omp.h and libgomp.so, for gcc N) plus the runtime
# (libgomp1). Safe to run again: it does nothing when OpenMP already works.
set -euo pipefail

probe() {
    local dir
    dir=$(mktemp -d)
    cat >"$dir/probe.c" <<'C'
#include <omp.h>
#include <stdio.h>
int main(void) {
    int n = 0;
#pragma omp parallel reduction(+ : n)
    n += 1;
    printf("%d\n", n > 0 && omp_get_max_threads() > 0);
    return 0;
}
C
    if gcc -fopenmp "$dir/probe.c" -o "$dir/probe" >/dev/null 2>&1 && "$dir/probe" >/dev/null; then
        rm -rf "$dir"
        return 0
    fi
    rm -rf "$dir"
    return 1
}

if command -v gcc >/dev/null 2>&1 && probe; then
    echo "install-libgomp: gcc -fopenmp works already"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if ! command -v gcc >/dev/null 2>&1; then
    $SUDO apt-get install -y -qq gcc
fi
major=$(gcc -dumpversion | cut -d. -f1)
$SUDO apt-get install -y -qq "libgcc-${major}-dev" libgomp1

if probe; then
    echo "install-libgomp: installed libgcc-${major}-dev and libgomp1; gcc -fopenmp works"
else
    echo "install-libgomp: gcc -fopenmp still fails after installing libgcc-${major}-dev" >&2
    exit 1
fi
