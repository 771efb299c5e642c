#!/usr/bin/env bash
# tests/tunables_notice.sh - a build with other tunables than the last one says so on its first
# line: `make TILE=32` then a plain `make test` must not silently test the defaults. Builds one
# kernel object of a copy of ch03_vecadd twice (no GPU needed).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/ch03_vecadd" && cp -r "$ROOT/common" "$WORK/" &&
    cp "$ROOT"/ch03_vecadd/{Makefile,*.c,*.h,*.cu} "$WORK/ch03_vecadd/" || exit 3
cd "$WORK/ch03_vecadd" || exit 3
# a make of our own: not the flags of a make that runs us (make -C prints its folders)
unset MAKEFLAGS MAKELEVEL MFLAGS
fail() { echo "tunables_notice: $*"; exit 1; }
out=$(make -s --no-print-directory vecadd_kernels.o VEC_PER_THREAD=2 2>&1) || { echo "$out"; fail "the build with VEC_PER_THREAD=2 failed"; }
grep -q "NOTE" <<<"$out" && fail "the first build says it changed tunables: $out"
out=$(make -s --no-print-directory vecadd_kernels.o 2>&1) || { echo "$out"; fail "the default build failed"; }
first=$(head -n 1 <<<"$out")
[ "$first" = "ch03_vecadd: NOTE: rebuilding the kernels with the default tunables, not as last built (-DVEC_PER_THREAD=2)" ] ||
    fail "a plain build after VEC_PER_THREAD=2 does not say so first: '$first'"
out=$(make -s --no-print-directory vecadd_kernels.o 2>&1)
grep -q "NOTE" <<<"$out" && fail "an unchanged build says it changed tunables: $out"
echo "tunables_notice: PASS"
