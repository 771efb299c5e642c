#!/usr/bin/env bash
# tests/result_check.sh - a number in a program's RESULT line must cross a line. For solutions
# whose edit shows only in a measurement (a kernel several times slower, an overlap that goes):
#   bash ../tests/result_check.sh "name=direct" "ratio > 0.3" ./fft_conv --output ""
#   bash tests/result_check.sh ROW CONDITION COMMAND...
# ROW: words the RESULT line must hold (e.g. "ver=1", or "name=overlap_streams"), exactly one
# line; CONDITION: an awk condition over the line's fields by name (ms, ratio, the rate's unit).
# Exit 0: the condition holds; 1: it does not, or the command failed, or no such line.
set -u
row=${1:?usage: result_check.sh ROW CONDITION COMMAND...} condition=${2:?usage: result_check.sh ROW CONDITION COMMAND...}
shift 2
out=$("$@" 2>&1) || { echo "result_check: '$*' exited $?"; exit 1; }
lines=$(grep '^RESULT ' <<<"$out" | sed 's/$/ /')   # a space after the last field too
for word in $row; do lines=$(grep -F -- " $word " <<<"$lines"); done
[ -n "$lines" ] || { echo "result_check: no RESULT line with '$row' from '$*'"; exit 1; }
[ "$(wc -l <<<"$lines")" = 1 ] || { echo "result_check: several RESULT lines with '$row':"; echo "$lines"; exit 1; }
echo "$lines"
# each field=value of the line becomes an awk variable (names that awk accepts)
vars=()
declare -A numeric=()
number='^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$'
for field in $lines; do
    if [[ $field =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]]; then
        key=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
        vars+=(-v "$key=$value")
        [[ $value =~ $number ]] && numeric[$key]=1
    fi
done
# every name in the condition must be a field of the line with a number: awk reads a name it
# does not know as 0, so "ratoi < 0.07" would hold against ratio=0.5
names=$(sed -E 's/"[^"]*"//g; s/[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?//g' <<<"$condition" | grep -oE '[A-Za-z_][A-Za-z0-9_]*' | sort -u)
for name in $names; do
    [ -n "${numeric[$name]:-}" ] || { echo "result_check: '$name' in '$condition' is not a field of the line with a number"; exit 1; }
done
if awk "${vars[@]}" "BEGIN { exit !($condition) }"; then
    echo "result_check: $condition holds"
else
    echo "result_check: $condition does not hold"
    exit 1
fi
