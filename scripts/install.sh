#!/usr/bin/env bash
# Builds Keel in release and installs it under a prefix, the way HPC codes
# consume libraries (CMake's find_package, pkg-config, module files):
#
#   bash scripts/install.sh --prefix /opt/keel      # build and install
#   bash scripts/install.sh --prefix /opt/keel --uninstall
#
# PREFIX/bin/keel                          the CLI (`keel omp run` finds
#                                          PREFIX/lib/libkeel_omp.so)
# PREFIX/lib/libkeel.so, libkeel.a         libkeel (C ABI)
# PREFIX/lib/libkeel_omp.so                the OpenMP interposer
# PREFIX/lib/libkeel_fortran.a             the Fortran module's code (when
#                                          gfortran is present)
# PREFIX/include/keel.h, keel.f90, keel.mod
# PREFIX/lib/cmake/Keel/KeelConfig.cmake   Keel::keel, Keel::keel_static,
#                                          Keel::keel_fortran, KEEL_OMP_PRELOAD
# PREFIX/lib/pkgconfig/keel.pc
# PREFIX/share/modulefiles/keel/VERSION    for `module use PREFIX/share/modulefiles;
#                                          module load keel` (Environment Modules, Lmod)
# PREFIX/share/man/man1/keel*.1, completions for bash, zsh and fish
# PREFIX/share/keel/install_manifest.txt   every file installed, which
#                                          --uninstall removes
#
# Files are installed with `install` (a fresh file replaces the old one;
# nothing is written through a symbolic link at a destination).
set -euo pipefail

die() { echo "install.sh: $*" >&2; exit 1; }

prefix=""
uninstall=0
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        --uninstall) uninstall=1; shift ;;
        -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
        *) die "unknown argument $1 (usage: install.sh --prefix DIR [--uninstall])" ;;
    esac
done
[ -n "$prefix" ] || die "give --prefix DIR"
case $prefix in /*) ;; *) prefix=$(pwd)/$prefix ;; esac
# The prefix is written into CMake, pkg-config and module files: a space,
# a quote or a shell or sed character there would break them or worse.
case $prefix in
    *[!A-Za-z0-9._+,=@%/-]*) die "--prefix $prefix: use only letters, digits and . _ + , = @ % / -" ;;
esac
manifest=$prefix/share/keel/install_manifest.txt

if [ "$uninstall" = 1 ]; then
    [ -f "$manifest" ] || die "no $manifest: nothing installed there by this script"
    removed=0
    while IFS= read -r f; do
        case $f in "$prefix"/*) ;; *) die "manifest entry $f is outside $prefix: refusing" ;; esac
        if [ -f "$f" ] || [ -L "$f" ]; then rm -f -- "$f"; removed=$((removed + 1)); fi
    done <"$manifest"
    rm -f -- "$manifest"
    # Directories this script created, deepest first, if now empty.
    for d in share/keel share/modulefiles/keel share/modulefiles share/fish/vendor_completions.d share/fish share/zsh/site-functions share/zsh \
        share/bash-completion/completions share/bash-completion share/man/man1 share/man share \
        lib/cmake/Keel lib/cmake lib/pkgconfig lib include bin; do
        rmdir -- "$prefix/$d" 2>/dev/null || true
    done
    echo "install.sh: removed $removed files from $prefix"
    exit 0
fi

cd "$(dirname "$0")/.."
root=$(pwd)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || die "no workspace version in Cargo.toml"

echo "install.sh: building Keel $version in release (keel, libkeel, libkeel_omp)"
cargo build --release -p keel-cli -p keel-capi -p keel-omp
target=${CARGO_TARGET_DIR:-$root/target}/release
for f in keel libkeel.so libkeel.a libkeel_omp.so; do
    [ -f "$target/$f" ] || die "cargo did not produce $target/$f"
done

stage=$(mktemp -d)
trap 'rm -rf -- "$stage"' EXIT
: >"$stage/manifest"

# put MODE SRC DEST: installs one file and records it.
put() {
    install -D -m "$1" -- "$2" "$3"
    echo "$3" >>"$stage/manifest"
}
# subst SRC DEST: a template with @PREFIX@, @VERSION@, @FORTRAN_LIB@ filled.
subst() {
    sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" -e "s|@FORTRAN_LIB@|$fortran_lib|g" "$1" >"$2"
}

put 0755 "$target/keel" "$prefix/bin/keel"
put 0755 "$target/libkeel.so" "$prefix/lib/libkeel.so"
put 0644 "$target/libkeel.a" "$prefix/lib/libkeel.a"
put 0755 "$target/libkeel_omp.so" "$prefix/lib/libkeel_omp.so"
put 0644 crates/keel-capi/include/keel.h "$prefix/include/keel.h"
put 0644 crates/keel-capi/include/keel.f90 "$prefix/include/keel.f90"

fortran_lib=""
if command -v gfortran >/dev/null 2>&1; then
    # The module's .mod is compiler-specific: built here for the gfortran
    # present; its procedures go into libkeel_fortran.a.
    gfortran -O2 -fPIC -c crates/keel-capi/include/keel.f90 -J "$stage" -o "$stage/keel_fortran.o"
    ar rcs "$stage/libkeel_fortran.a" "$stage/keel_fortran.o"
    put 0644 "$stage/keel.mod" "$prefix/include/keel.mod"
    put 0644 "$stage/libkeel_fortran.a" "$prefix/lib/libkeel_fortran.a"
    fortran_lib="-lkeel_fortran "
    echo "install.sh: Fortran module built with $(gfortran --version | head -n 1)"
else
    echo "install.sh: no gfortran: keel.f90 installed as source only (compile it with your program)"
fi

subst crates/keel-capi/cmake/KeelConfig.cmake.in "$stage/KeelConfig.cmake"
subst crates/keel-capi/cmake/KeelConfigVersion.cmake.in "$stage/KeelConfigVersion.cmake"
subst crates/keel-capi/keel.pc.in "$stage/keel.pc"
put 0644 "$stage/KeelConfig.cmake" "$prefix/lib/cmake/Keel/KeelConfig.cmake"
put 0644 "$stage/KeelConfigVersion.cmake" "$prefix/lib/cmake/Keel/KeelConfigVersion.cmake"
put 0644 "$stage/keel.pc" "$prefix/lib/pkgconfig/keel.pc"
subst crates/keel-capi/modulefile.in "$stage/modulefile"
put 0644 "$stage/modulefile" "$prefix/share/modulefiles/keel/$version"

"$target/keel" install-docs --man "$stage/man" --completions "$stage/completions" >/dev/null
for page in "$stage"/man/*.1; do
    put 0644 "$page" "$prefix/share/man/man1/$(basename "$page")"
done
put 0644 "$stage/completions/keel.bash" "$prefix/share/bash-completion/completions/keel"
put 0644 "$stage/completions/_keel" "$prefix/share/zsh/site-functions/_keel"
put 0644 "$stage/completions/keel.fish" "$prefix/share/fish/vendor_completions.d/keel.fish"

install -D -m 0644 -- "$stage/manifest" "$manifest"
echo "install.sh: installed $(wc -l <"$manifest") files under $prefix (list: $manifest)"
echo "install.sh: use it with \`module use $prefix/share/modulefiles; module load keel\`, or CMAKE_PREFIX_PATH=$prefix, PKG_CONFIG_PATH=$prefix/lib/pkgconfig, PATH=$prefix/bin:\$PATH"
