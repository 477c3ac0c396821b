#!/usr/bin/env bash
# Compares the deterministic outputs of two `keel` binaries byte for byte:
# `keel policies`, `keel map` (text and JSON, generated and file inputs) and
# every seeded `keel sim` experiment (text and JSON). Prints each command
# with IDENTICAL or DIFFERENT and exits 1 on any difference.
#
#   scripts/compare-outputs.sh OLD_KEEL NEW_KEEL
#
# `keel map` times each policy's decision: that one column (text) or field
# (`decision_seconds`, JSON) is masked before comparing, everything else is
# compared as printed. Timed experiments (`keel bench`, `keel sim perf`,
# `sim validate`, `sim calibrate`) are not deterministic and are not here.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 OLD_KEEL NEW_KEEL" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Both run as `keel`: usage lines name the program as it was called.
mkdir "$work/old" "$work/new"
ln -s "$(realpath "$1")" "$work/old/keel"
ln -s "$(realpath "$2")" "$work/new/keel"
old=$work/old/keel
new=$work/new/keel

# A small per-iteration trace for `sim loops --trace`: two steps of a ramp.
{
    echo "step,cost_us"
    for s in 0 1; do
        for i in $(seq 1 200); do echo "$s,$((i % 37 + 1))"; done
    done
} >"$work/trace.csv"
printf 'load\n3\n3\n2\n2\n2\n7\n1\n' >"$work/loads.csv"

status=0
mask() {
    # The decision time closes each `keel map` table row (its width moves
    # the column's padding, the header's included), and is one field of
    # its JSON.
    sed -E 's/ +[0-9.]+ (µs|ms|s)$/ <time>/; s/ +decision$/ decision/; s/"decision_seconds":[0-9.e+-]+/"decision_seconds":<time>/g'
}

compare() {
    local a b
    a=$("$old" "$@" 2>&1 | mask; echo "exit ${PIPESTATUS[0]}")
    b=$("$new" "$@" 2>&1 | mask; echo "exit ${PIPESTATUS[0]}")
    if [ "$a" == "$b" ]; then
        echo "IDENTICAL  keel $*"
    else
        echo "DIFFERENT  keel $*"
        diff <(echo "$a") <(echo "$b") | head -20
        status=1
    fi
}

# The plots of `--svg`, file by file: each binary writes into its own
# folder, then the folders are compared.
compare_svg() {
    local a b
    rm -rf "$work/svg-old" "$work/svg-new"
    mkdir -p "$work/svg-old" "$work/svg-new"
    "$old" "${@//SVG/$work/svg-old}" >/dev/null 2>&1
    "$new" "${@//SVG/$work/svg-new}" >/dev/null 2>&1
    if [ -n "$(ls -A "$work/svg-old")" ] && diff -r "$work/svg-old" "$work/svg-new" >/dev/null; then
        echo "IDENTICAL  keel $* (plots)"
    else
        echo "DIFFERENT  keel $* (plots)"
        status=1
    fi
}

compare policies
compare map -g lb-test:tasks=500,pus=8 -p greedy -p binlpt:chunks=80 -p refine -p block
compare map -g lb-test:tasks=500,pus=8 -p greedy -p refine --json
compare map -g lb-test:tasks=200,pus=4 -p greedy --show-mapping
compare map -g ramp -p greedy -p "hier:nodes=2,outer=(greedy),inner=refine" --json --show-mapping
compare map --pus 2 -p greedy -p block --tasks "$work/loads.csv"
compare map --pus 3 -p greedy --tasks "$work/loads.csv" --json
compare map --tasks "$root/crates/keel-fuzz/corpus/trace-json/full.json" -p greedy -p refine
compare map -g ramp -p gredy

compare sim loops --quiet --seed 3 --steps 2 --threads 8
compare sim loops --quiet --seed 3 --steps 2 --threads 8,16 --json
compare sim loops --quiet --seed 5 --bathtub-only --noise-cv 0.1
compare sim loops --quiet --seed 5 --trace "$work/trace.csv" --trace-threads 4
compare sim loops --quiet --seed 5 --trace "$work/trace.csv" --trace-threads 4 -s static -s guided --json
compare sim loops --quiet --threads 0
compare sim loops --quiet --steps 99

compare sim farm --workers 4,8 --tasks 1000,2000 --seed 2
compare sim farm --workers 4 --tasks 1000 --seed 2 --noise-cv 0.1 --capacity 8 --json
compare sim farm --workers 4 --tasks 500 -p arrs -p on-demand --json
compare sim farm --workers 4 --tasks 500 -p nope

compare sim objects --nodes 2 --pus-per-node 4 --seed 2
compare sim objects --nodes 2 --pus-per-node 4 --seed 3 --period 10 --periods 5,10 --json
compare sim objects --nodes 2 --pus-per-node 4 --period 0

compare sim cosched --quick --quiet verify
compare sim cosched --quick --quiet verify --json
compare sim cosched --quick --quiet verify --scaled
compare sim cosched --quick --quiet apps
compare sim cosched --quick --quiet apps --json
compare sim cosched --quick --quiet fig5
compare sim cosched --quick --quiet fig5 --json
compare sim cosched --quick --quiet verify --scenario nope
compare demo cosched

# The timed commands' refusals are deterministic.
compare bench loops --reps 0
compare bench loops --chunk 0
compare bench loops -w nope
compare bench farm --runs 0
compare bench farm -e x
compare bench farm --workers 0
compare bench objects --threads 0
compare bench objects --reps 0
compare bench auto -w nope
compare bench auto --reps 0
compare sim validate --reps 0
compare sim validate -w nope
compare sim calibrate --repeats 0
compare sim perf --threads 0
compare cosched run --iterations 0
compare cosched run --scenario nope
compare cosched run --policy nope
compare cosched run --slice-ms=-1
compare cosched run --max-background 2

compare_svg sim loops --quiet --seed 3 --bathtub-only --svg SVG/bathtub.svg
compare_svg sim farm --workers 4,8 --tasks 500,1000 --seed 2 --svg SVG/farm.svg
compare_svg sim objects --nodes 2 --pus-per-node 4 --seed 2 --svg SVG/objects.svg
compare_svg sim cosched --quick --quiet fig5 --granularities 0.004,0.256 --variabilities 0,1 --svg SVG

exit $status
