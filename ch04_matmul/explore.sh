#!/usr/bin/env bash
# explore.sh - build kernel 6 with several tunable settings and time each against cuBLAS
# (the experiments behind NOTES.md; run on the GPU: bash explore.sh)
set -u
case ${1:-} in
    "") ;;
    -h | --help) sed -n '2,3p' "$0" | sed 's/^# //'; echo "usage: bash explore.sh   (no arguments; it rebuilds matmul 8 times, then the default)"; exit 0 ;;
    *) echo "explore.sh: no arguments (got '${1:0:60}')"; echo "usage: bash explore.sh   (--help says more)"; exit 2 ;;
esac
cd "$(dirname "$0")"
for cfg in "" "K6_STAGES=2" "K6_STAGES=4" "K6_BK=8" "K6_BK=32" "K6_GROUP=0" "K6_GROUP=16" "K6_MINB=1"; do
    make -s $cfg >/dev/null || { echo "build failed: $cfg"; continue; }
    for n in 4096 2048; do
        printf '%-14s %5d ' "${cfg:-default}" "$n"
        ./matmul 6 --size $n --iters 20 | awk '/^RESULT/ { for (i = 1; i <= NF; i++) if ($i ~ /^(ms|tflops|ratio|check)=/) printf "%s ", $i; print "" }'
    done
done
make -s >/dev/null
