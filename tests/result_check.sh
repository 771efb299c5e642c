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
for field in $lines; do
    [[ $field =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] && vars+=(-v "${BASH_REMATCH[1]}=${BASH_REMATCH[2]}")
done
if awk "${vars[@]}" "BEGIN { exit !($condition) }"; then
    echo "result_check: $condition holds"
else
    echo "result_check: $condition does not hold"
    exit 1
fi
