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
case ${BASH_SOURCE[0]} in */*) here=${BASH_SOURCE[0]%/*} ;; *) here=. ;; esac
# shellcheck source=SCRIPTDIR/lib/setup.sh
. "$here/lib/setup.sh"
setup_begin "$@"
openmp_probes

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

# Per missing tool: why its probe failed, and the packages it needs (taken
# before installing, since installing clang changes what clang needs).
missing=()
declare -A reason needs
for tool in g++ gfortran clang; do
    if openmp_works "$tool"; then
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
    if openmp_works "$tool"; then
        echo "$me: installed ${needs[$tool]}: $(what "$tool") builds and runs an OpenMP program ($threads threads)"
    else
        # shellcheck disable=SC2086 # one word per package
        echo "$me: $(what "$tool") is missing and could not be installed: install $(install_hint ${needs[$tool]}) [$why]" >&2
        status=1
    fi
done
exit "$status"
