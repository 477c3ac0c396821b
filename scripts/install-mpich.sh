#!/usr/bin/env bash
# Makes `mpicc` and `mpiexec` (MPICH) work, for keel-cosched's `mpich` feature
# (the PMPI monitoring wrapper's test) and keel-mpi's `mpi` feature, whose
# rsmpi bindings are generated with bindgen and so also need libclang.
#
# Compiles and runs a one-rank MPI program first; only when that fails does it
# install Debian's `mpich` (mpiexec, the Hydra launcher) and `libmpich-dev`
# (mpicc, mpi.h, libmpich.so) with apt-get. Non-interactive and safe to run
# again: it does nothing when MPICH already works. Runs as root, or through
# sudo otherwise.
set -euo pipefail

probe() {
    local dir
    dir=$(mktemp -d)
    cat >"$dir/probe.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int size = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Finalize();
    printf("%d\n", size);
    return size == 1 ? 0 : 1;
}
C
    if mpicc "$dir/probe.c" -o "$dir/probe" >/dev/null 2>&1 &&
        timeout 60 mpiexec -n 1 "$dir/probe" >/dev/null 2>&1; then
        rm -rf "$dir"
        return 0
    fi
    rm -rf "$dir"
    return 1
}

# bindgen (rsmpi's build) loads libclang at build time.
have_libclang() {
    compgen -G "/usr/lib/*/libclang*.so*" >/dev/null || compgen -G "/usr/lib/llvm-*/lib/libclang*.so*" >/dev/null
}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

ensure_libclang() {
    if have_libclang; then return 0; fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends libclang-dev
    have_libclang || { echo "install-mpich: libclang still missing after installing libclang-dev" >&2; exit 1; }
}

if command -v mpicc >/dev/null 2>&1 && command -v mpiexec >/dev/null 2>&1 && probe; then
    ensure_libclang
    echo "install-mpich: mpicc, mpiexec and libclang work already"
    exit 0
fi

$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends mpich libmpich-dev

# Another MPI (Open MPI) may already own the `mpi` alternatives; point them at
# MPICH so that `mpicc` and `mpiexec` agree with each other.
if command -v update-alternatives >/dev/null 2>&1; then
    for alt in mpi mpirun; do
        target=$(update-alternatives --list "$alt" 2>/dev/null | grep -i mpich | head -n 1 || true)
        if [ -n "$target" ]; then $SUDO update-alternatives --set "$alt" "$target" >/dev/null; fi
    done
fi

if probe; then
    ensure_libclang
    echo "install-mpich: installed mpich and libmpich-dev; mpicc and mpiexec work"
else
    echo "install-mpich: mpicc or mpiexec still fails after installing mpich and libmpich-dev" >&2
    exit 1
fi
