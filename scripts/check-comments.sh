#!/usr/bin/env bash
# Comments say why the code is as it is. This check fails on comments and
# crate docs that instead cite where a requirement came from (an issue, a
# work session) or files the repository does not hold:
#   - "the issue", "issue 12", "issue #12", "session 3" (any case);
#   - a path outside the repository ("../shared/...");
#   - a `*.md` file that exists neither at that path from the repository
#     root, nor next to the citing file, nor in its crate.
# Scanned: Rust comments (`//`, `///`, `//!`) under crates/, and the
# Markdown files under crates/ and docs/.
# Usage: scripts/check-comments.sh   (from anywhere; exit 1 on a finding)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

status=0
report() {
    echo "check-comments: $1" >&2
    status=1
}

# The comment text of a Rust file, each line prefixed with its number; a
# `//` inside a string literal is rare enough in this code base to be read
# as a comment too (a finding there is reworded all the same).
comments() {
    grep -n '//' "$1" | sed -n 's#^\([0-9]*\):.*//[/!]\{0,1\}\(.*\)$#\1:\2#p'
}

cites_origin='(^|[^a-z])(the|this|that|an?) issue($|[^a-z])|issue #?[0-9]+|session #?[0-9]+|\.\./shared'

while IFS= read -r file; do
    # A link (a crate's README that is the project's) is checked where its
    # target lives, if that is among the files read here.
    [ -f "$file" ] && [ ! -L "$file" ] || continue
    case "$file" in
        *.rs) text=$(comments "$file") ;;
        *) text=$(grep -n '' "$file") ;;
    esac
    [ -z "$text" ] && continue
    while IFS= read -r hit; do
        report "$file:${hit%%:*}: cites an issue, a session or a file outside the repository: ${hit#*:}"
    done < <(grep -iE "$cites_origin" <<<"$text" || true)
    dir=$(dirname "$file")
    crate=$(sed -n 's#^\(crates/[^/]*\)/.*#\1#p' <<<"$file")
    while IFS= read -r line; do
        number=${line%%:*}
        for md in $(grep -oE '[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b' <<<"${line#*:}" || true); do
            found=
            for base in "$root" "$dir" "${crate:-$root}" "${crate:-$root}/src"; do
                [ -f "$base/$md" ] && found=1 && break
            done
            [ -n "$found" ] || report "$file:$number: cites $md, which the repository does not hold"
        done
    done < <(grep -E '\.md\b' <<<"$text" || true)
done < <(git ls-files 'crates/*.rs' 'crates/*.md' 'docs/*.md')

[ "$status" = 0 ] && echo "check-comments: no comment cites an issue, a session or a missing file"
exit "$status"
