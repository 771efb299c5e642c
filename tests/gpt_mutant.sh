#!/usr/bin/env bash
# tests/gpt_mutant.sh - a bug planted in a copy of ch12_gpt/gpt_cpu.c must make test_gpt fail:
#   bash tests/gpt_mutant.sh '<sed expression>'
# builds test_gpt against the copy in a folder of its own and runs it. Exit 0 (and "caught") when
# the test fails, 1 when it still passes, 3 when the edit changes nothing or the build fails.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
expr=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
sed "$expr" "$ROOT/ch12_gpt/gpt_cpu.c" >"$WORK/gpt_cpu.c"
if cmp -s "$WORK/gpt_cpu.c" "$ROOT/ch12_gpt/gpt_cpu.c"; then
    echo "gpt_mutant: the edit '$expr' no longer changes gpt_cpu.c"; exit 3
fi
diff "$ROOT/ch12_gpt/gpt_cpu.c" "$WORK/gpt_cpu.c"
make -s -C "$ROOT/tests" BIN="$WORK" GPT_CPU="$WORK/gpt_cpu.c" "$WORK/test_gpt" || { echo "gpt_mutant: the build failed"; exit 3; }
if "$WORK/test_gpt"; then
    echo "gpt_mutant: test_gpt passes with the bug planted: not caught"; exit 1
fi
echo "gpt_mutant: caught"
