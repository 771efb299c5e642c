#!/usr/bin/env bash
# common/solution.sh - one solution of a chapter's SOLUTIONS.md, by its number, from the chapter
# folder (the chapter Makefile's targets call it):
#   make solution N=4         apply solution 4's diff and build (the edit stays: look at it, time it)
#   make check-solution N=4   run its check block (a solution without a diff checks the chapter as it is)
#   make unsolve N=4          take the diff back out and build again
# N is the number in the solution's title ("### 4. ...", "#### 8b. ..."). The diffs are written
# against the chapter folder, so this is where `git apply` must run; by hand: copy the diff into
# a file and `git apply FILE` here, `git apply -R FILE` to undo.
set -u
action=${1:-} n=${2:-}
case $action in apply | check | undo) ;; *) echo "usage: solution.sh apply|check|undo N"; exit 2 ;; esac
[ -n "$n" ] || { echo "say which solution: make $([ "$action" = apply ] && echo solution || ([ "$action" = check ] && echo check-solution || echo unsolve)) N=4"; exit 2; }
[ -f SOLUTIONS.md ] || { echo "no SOLUTIONS.md here: run it from a chapter folder"; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# the diff and the check block that follow the title "N. ..."
awk -v n="$n" -v dir="$work" '
    /^#+ / { t = $2; sub(/\.$/, "", t); inside = (t == n); next }
    inside && /^```diff/ { block = dir "/diff"; next }
    inside && /^```sh check/ { block = dir "/check"; next }
    /^```/ && block != "" { close(block); block = ""; next }
    block != "" { print > block }
' SOLUTIONS.md
if [ ! -s "$work/diff" ] && [ ! -s "$work/check" ]; then
    echo "SOLUTIONS.md has no solution $n with a diff or a check block (the titles: $(grep -oE '^#+ [0-9]+[a-z]?\.' SOLUTIONS.md | awk '{print $2}' | tr -d . | tr '\n' ' '))"
    exit 2
fi
case $action in
    apply | undo)
        [ -s "$work/diff" ] || { echo "solution $n has no diff: it is an answer to read, and its check runs on the chapter as it is (make check-solution N=$n)"; exit 2; }
        reverse=$([ "$action" = undo ] && echo -R)
        # shellcheck disable=SC2086  # reverse: empty or one word
        if ! git apply $reverse --check "$work/diff" 2>"$work/why"; then
            if [ "$action" = apply ] && git apply -R --check "$work/diff" 2>/dev/null; then
                echo "solution $n is applied already (make unsolve N=$n takes it out)"
            elif [ "$action" = undo ] && git apply --check "$work/diff" 2>/dev/null; then
                echo "solution $n is not applied (make solution N=$n applies it)"
            else
                echo "solution $n's diff does not fit the files as they are (edited by hand?):"; cat "$work/why"
            fi
            exit 1
        fi
        # shellcheck disable=SC2086
        git apply $reverse "$work/diff" && echo "solution $n $([ "$action" = undo ] && echo taken out || echo applied): $(grep '^+++ b/' "$work/diff" | sed 's|^+++ b/||' | tr '\n' ' ')"
        make -s
        ;;
    check)
        [ -s "$work/check" ] || { echo "solution $n has no check block"; exit 2; }
        # a check runs programs on the GPU: without one (or without the tool it names) it cannot
        # pass or fail, and says so with the exit code of a skip, as make test counts it
        query=$here/../ch01_setup/device_query
        [ -x "$query" ] || make -s -C "$here/../ch01_setup" device_query >/dev/null 2>&1
        why=$("$query" --quiet 2>&1)
        if [ $? = 77 ]; then echo "solution $n's check needs a GPU: $(tail -n 1 <<<"$why")"; exit 77; fi
        if grep -v '^[[:space:]]*#' "$work/check" | grep -q compute-sanitizer &&
            ! command -v compute-sanitizer >/dev/null 2>&1 && [ ! -x "${CUDA_PATH:-/usr/local/cuda}/bin/compute-sanitizer" ]; then
            echo "solution $n's check needs compute-sanitizer (it comes with the CUDA toolkit)"; exit 77
        fi
        bash "$here/../tests/check_block.sh" "$work/check"
        status=$?
        # a check that rebuilds with other variables (TILE=8) leaves the chapter as make builds it
        if grep -v '^[[:space:]]*#' "$work/check" | grep -q 'make '; then
            echo "(the check rebuilt with other variables: building the chapter as it was)"
            make -s
        fi
        [ $status = 0 ] && echo "solution $n: its check passes"
        exit $status
        ;;
esac
