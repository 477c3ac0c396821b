#!/usr/bin/env bash
# Makes `gcc -fopenmp` work, for keel-bench's `libgomp` feature.
#
# Probes first: compiles, links and runs a tiny OpenMP program (a parallel
# region asking omp_get_num_threads) with `gcc -fopenmp`. Only when that
# fails does it install, with apt-get, gcc if it is missing, and the
# packages that carry libgomp on Debian: libgcc-N-dev (omp.h and libgomp.so,
# for gcc N) and libgomp1 (the runtime). Prints one line saying what it
# found or installed; still failing, it names the Debian package and exits
# 1. Safe to run again: it installs nothing when OpenMP already works. Runs
# as root, or through sudo otherwise.
#
# Usage: install-libgomp.sh [--check]
#   --check   probe only, never install (needs neither root nor apt): exit 0
#             when `gcc -fopenmp` works, 1 after naming what is missing.
set -euo pipefail

me=install-libgomp
case ${BASH_SOURCE[0]} in */*) here=${BASH_SOURCE[0]%/*} ;; *) here=. ;; esac
# shellcheck source=SCRIPTDIR/../../scripts/lib/setup.sh
. "$here/../../scripts/lib/setup.sh"
setup_begin "$@"
openmp_probes

# The Debian packages that make `gcc -fopenmp` work, given gcc's state.
packages() {
    if command -v gcc >/dev/null 2>&1; then
        local version
        version=$(gcc -dumpversion 2>/dev/null) || version=
        if [ -n "$version" ]; then
            echo "libgcc-${version%%.*}-dev libgomp1"
        else
            # A gcc that cannot say its version: reinstalling it brings
            # the libgcc-N-dev that matches.
            echo gcc libgomp1
        fi
    else
        # gcc brings its libgcc-N-dev, and that libgomp1.
        echo gcc
    fi
}

missing() {
    local what="gcc -fopenmp (libgomp)"
    if ! command -v gcc >/dev/null 2>&1; then what=gcc; fi
    # shellcheck disable=SC2046 # one word per package
    echo "$me: $what is missing$1: install $(install_hint $(packages)) [$why]" >&2
}

if openmp_works gcc; then
    echo "$me: found gcc -fopenmp (libgomp): an OpenMP program builds and runs ($threads threads)"
    exit 0
fi
if [ -n "$check" ]; then
    missing ""
    exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        missing " and could not be installed (not root, no sudo)"
        exit 1
    fi
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# A failed install is reported below, by the probe that still fails.
$SUDO apt-get update -qq || true
installed=()
if ! command -v gcc >/dev/null 2>&1; then
    $SUDO apt-get install -y -qq gcc || true
    installed+=(gcc)
fi
if command -v gcc >/dev/null 2>&1; then
    read -r -a pkgs <<<"$(packages)"
    $SUDO apt-get install -y -qq "${pkgs[@]}" || true
    installed+=("${pkgs[@]}")
fi

if openmp_works gcc; then
    echo "$me: installed ${installed[*]}: gcc -fopenmp builds and runs an OpenMP program ($threads threads)"
else
    missing " and could not be installed"
    exit 1
fi
