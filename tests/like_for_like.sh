#!/usr/bin/env bash
# tests/like_for_like.sh - a baseline timed like the row it is compared with.
#   bash tests/like_for_like.sh NAME BASE COMMAND...
# Runs COMMAND (a timing run that prints RESULT lines) and requires its row name=NAME to be
# measured against base=BASE with a speed ratio of at most 1.05. The rows checked this way
# contain their baseline's work and more (the FFT path holds its two FFTs; a training step
# holds its GEMMs), so they cannot be faster than it: a ratio above 1 beyond noise means the
# two were timed differently (say, a CUDA graph against launches one by one), and a missing
# row or another base means the comparison changed.
set -u
name=${1:?usage: like_for_like.sh NAME BASE COMMAND...} base=${2:?} && shift 2
out=$("$@") || { echo "like_for_like: '$*' exited $?"; exit 1; }
row=$(grep "^RESULT .* name=$name " <<<"$out")
[ -n "$row" ] || { echo "like_for_like: no RESULT row name=$name from '$*'"; exit 1; }
grep -q " base=$base " <<<"$row" || { echo "like_for_like: $name is not measured against $base: $row"; exit 1; }
ratio=$(sed -n 's/.* ratio=\([0-9.]*\).*/\1/p' <<<"$row")
if ! awk -v r="$ratio" 'BEGIN { exit !(r > 0 && r <= 1.05) }'; then
    echo "like_for_like: $name at ${ratio}x the speed of $base, which it contains: not timed alike? $row"
    exit 1
fi
echo "like_for_like: $name at ${ratio}x $base: PASS"
