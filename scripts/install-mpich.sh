#!/usr/bin/env bash
# Makes `mpicc` and `mpiexec` (MPICH) work, for keel-cosched's `mpich` feature
# (the PMPI monitoring wrapper's test) and keel-mpi's `mpi` feature, whose
# rsmpi bindings are generated with bindgen and so also need libclang.
#
# Probes first, by compiling and running: a one-rank MPI program built with
# mpicc and run with mpiexec, and a C program that loads libclang the way
# bindgen does (below). Installs only what fails, with apt-get: Debian's
# `mpich` (mpiexec, the Hydra launcher) and `libmpich-dev` (mpicc, mpi.h,
# libmpich.so), `libclang-dev`. Prints one line per thing found or installed;
# something still missing is an error naming its Debian package, exit 1.
# Non-interactive and safe to run again: it installs nothing when both work.
# Runs as root, or through sudo otherwise.
#
# Usage: install-mpich.sh [--check]
#   --check   probe only, never install (needs neither root nor apt): exit 0
#             when everything works, 1 after naming what is missing.
#
# Why libclang is loaded rather than looked for: bindgen (clang-sys) takes
# only files named libclang.so, libclang-*.so, libclang.so.* or
# libclang-*.so.*, never libclang-cpp* (the C++ library, without the C API);
# when LIBCLANG_PATH is set it looks there and nowhere else; and it fails the
# build when the file it takes does not load. A glob for libclang*.so* says
# yes wherever libclang-cpp.so.N alone is installed, where bindgen says no.
set -euo pipefail

me=install-mpich
case ${BASH_SOURCE[0]} in */*) here=${BASH_SOURCE[0]%/*} ;; *) here=. ;; esac
# shellcheck source=SCRIPTDIR/lib/setup.sh
. "$here/lib/setup.sh"
setup_begin "$@"
cat >"$dir/mpi.c" <<'C'
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
# Loads a libclang as bindgen does at build time, and creates an index: the
# first thing bindgen asks of it.
cat >"$dir/load.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *lib, *index;
    void *(*create_index)(int, int);
    void (*dispose_index)(void *);
    if (argc != 2) return 2;
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    *(void **)&create_index = dlsym(lib, "clang_createIndex");
    *(void **)&dispose_index = dlsym(lib, "clang_disposeIndex");
    if (!create_index || !dispose_index) {
        fprintf(stderr, "%s has no clang_createIndex\n", argv[1]);
        return 1;
    }
    index = create_index(0, 0);
    if (!index) { fprintf(stderr, "clang_createIndex failed\n"); return 1; }
    dispose_index(index);
    return 0;
}
C


# Whether MPICH builds and runs a one-rank program; `mpi_why` says why not.
mpi_why=
probe_mpi() {
    local tool
    for tool in mpicc mpiexec; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            mpi_why="no $tool on PATH"
            return 1
        fi
    done
    mpicc "$dir/mpi.c" -o "$dir/mpi" >"$dir/log" 2>&1 || {
        mpi_why="mpicc cannot build an MPI program (exit $?): $(first_error "$dir/log")"
        return 1
    }
    timeout 60 mpiexec -n 1 "$dir/mpi" >"$dir/log" 2>&1 || {
        mpi_why="mpiexec -n 1 cannot run an MPI program (exit $?): $(first_error "$dir/log")"
        return 1
    }
}

is_libclang_name() {
    case "$1" in
        *-cpp.*) return 1 ;;
        libclang.so | libclang-*.so | libclang.so.* | libclang-*.so.*) return 0 ;;
        *) return 1 ;;
    esac
}

# Every file bindgen could take as libclang, where clang-sys looks: only
# LIBCLANG_PATH (a directory, or the file itself) when set; otherwise
# llvm-config's prefix, LD_LIBRARY_PATH, LIBRARY_PATH and the system's
# library directories.
libclang_candidates() {
    local dirs=() more=() d f
    if [ -n "${LIBCLANG_PATH+set}" ]; then
        if [ -f "$LIBCLANG_PATH" ]; then
            if is_libclang_name "${LIBCLANG_PATH##*/}"; then echo "$LIBCLANG_PATH"; fi
            return 0
        fi
        dirs=("${LIBCLANG_PATH:-.}")
    else
        if command -v llvm-config >/dev/null 2>&1 && d=$(llvm-config --prefix 2>/dev/null); then
            dirs+=("$d/bin" "$d/lib" "$d/lib64")
        fi
        IFS=: read -r -a more <<<"${LD_LIBRARY_PATH-}"
        dirs+=("${more[@]}")
        IFS=: read -r -a more <<<"${LIBRARY_PATH-}"
        dirs+=("${more[@]}")
    fi
    for d in "${dirs[@]}"; do
        for f in "$d"/libclang*; do
            if [ -f "$f" ] && is_libclang_name "${f##*/}"; then echo "$f"; fi
        done
    done
    [ -z "${LIBCLANG_PATH+set}" ] || return 0
    for f in /usr/local/llvm*/lib*/libclang* /usr/local/lib*/*/*/libclang* \
        /usr/local/lib*/*/libclang* /usr/local/lib*/libclang* \
        /usr/lib*/*/*/libclang* /usr/lib*/*/libclang* /usr/lib*/libclang*; do
        if [ -f "$f" ] && is_libclang_name "${f##*/}"; then echo "$f"; fi
    done
}

# Whether a libclang that bindgen would take loads: `libclang` names it,
# `clang_why` says why none does, `clang_needs_gcc` that the probe could
# not even be built.
libclang=
clang_why=
clang_needs_gcc=
probe_libclang() {
    local cc f tried=0 last=
    clang_needs_gcc=
    if ! cc=$(command -v gcc || command -v cc); then
        clang_why="no C compiler (gcc) to build the program that loads it"
        clang_needs_gcc=1
        return 1
    fi
    "$cc" "$dir/load.c" -o "$dir/load" -ldl >"$dir/log" 2>&1 || {
        clang_why="$cc cannot build the program that loads it (exit $?): $(first_error "$dir/log")"
        clang_needs_gcc=1
        return 1
    }
    while IFS= read -r f; do
        tried=$((tried + 1))
        if "$dir/load" "$f" >"$dir/log" 2>&1; then
            libclang=$f
            return 0
        fi
        last="$f: $(first_error "$dir/log")"
    done < <(libclang_candidates)
    local where="in llvm-config's prefix, LD_LIBRARY_PATH, LIBRARY_PATH, /usr/lib* or /usr/local/lib*"
    if [ -n "${LIBCLANG_PATH+set}" ]; then
        where="in LIBCLANG_PATH=$LIBCLANG_PATH, the only place bindgen looks when it is set"
    fi
    if [ "$tried" -eq 0 ]; then
        clang_why="no libclang.so, libclang-N.so or libclang.so.N $where; libclang-cpp is another library, which bindgen does not take"
    else
        clang_why="$tried candidate file(s) $where, none loads with clang_createIndex: $last"
    fi
    return 1
}

mpi_missing() {
    echo "$me: MPICH's mpicc and mpiexec are missing$1: install the Debian packages mpich and libmpich-dev (apt-get install -y mpich libmpich-dev) [$mpi_why]" >&2
}
clang_missing() {
    local pkgs="package libclang-dev" names=libclang-dev fix=
    if [ -n "$clang_needs_gcc" ]; then pkgs="packages gcc and libclang-dev" names="gcc libclang-dev"; fi
    if [ -n "${LIBCLANG_PATH+set}" ]; then
        fix="point LIBCLANG_PATH at the directory of libclang.so.N, or unset it, and "
    fi
    echo "$me: libclang is missing$1: ${fix}install the Debian $pkgs (apt-get install -y $names) [$clang_why]" >&2
}
mpi_works="mpicc builds and mpiexec runs a one-rank MPI program"
clang_works="loads and creates an index (clang_createIndex), as bindgen needs"

mpi_ok=
clang_ok=
if probe_mpi; then
    mpi_ok=1
    echo "$me: found MPICH: $mpi_works ($(command -v mpicc), $(command -v mpiexec))"
fi
if probe_libclang; then
    clang_ok=1
    echo "$me: found libclang: $libclang $clang_works"
fi
if [ -n "$mpi_ok" ] && [ -n "$clang_ok" ]; then exit 0; fi

if [ -n "$check" ]; then
    if [ -z "$mpi_ok" ]; then mpi_missing ""; fi
    if [ -z "$clang_ok" ]; then clang_missing ""; fi
    exit 1
fi

pkgs=()
if [ -z "$mpi_ok" ]; then pkgs+=(mpich libmpich-dev); fi
if [ -z "$clang_ok" ]; then
    if [ -n "$clang_needs_gcc" ]; then pkgs+=(gcc); fi
    pkgs+=(libclang-dev)
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        if [ -z "$mpi_ok" ]; then mpi_missing " and could not be installed (not root, no sudo)"; fi
        if [ -z "$clang_ok" ]; then clang_missing " and could not be installed (not root, no sudo)"; fi
        exit 1
    fi
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# A failed install is reported below, by the probes that still fail.
$SUDO apt-get update -qq || true
$SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" || true

if [ -z "$mpi_ok" ]; then
    # Another MPI (Open MPI) may already own the `mpi` alternatives; point
    # them at MPICH so that `mpicc` and `mpiexec` agree with each other.
    if command -v update-alternatives >/dev/null 2>&1; then
        for alt in mpi mpirun; do
            target=$(update-alternatives --list "$alt" 2>/dev/null | grep -i mpich | head -n 1 || true)
            if [ -n "$target" ]; then $SUDO update-alternatives --set "$alt" "$target" >/dev/null || true; fi
        done
    fi
fi

status=0
if [ -z "$mpi_ok" ]; then
    if probe_mpi; then
        echo "$me: installed mpich and libmpich-dev: $mpi_works"
    else
        mpi_missing " and could not be installed"
        status=1
    fi
fi
if [ -z "$clang_ok" ]; then
    if probe_libclang; then
        echo "$me: installed libclang-dev: $libclang $clang_works"
    else
        clang_missing " and could not be installed"
        status=1
    fi
fi
exit "$status"
