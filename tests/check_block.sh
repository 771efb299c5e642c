#!/usr/bin/env bash
# tests/check_block.sh - runs one ```sh check block of a SOLUTIONS.md (tests/run.sh calls it in
# the chapter folder, or in an edited copy of it). Every line counts: a line that exits non-zero
# fails the block, so `make -s TILE=8 && expect 0 ./matmul 2 ...` fails when the build fails, not
# only when the program does. A line ending in \ continues on the next; blank lines and
# comments are skipped.
#   bash tests/check_block.sh BLOCK_FILE     exit 0: every line passed; 1: the first that did not
set -u
block=${1:?usage: check_block.sh BLOCK_FILE}
[ -r "$block" ] || { echo "check_block: cannot read $block"; exit 2; }

# expect and compute-sanitizer, as a student gets them with `. ../common/expect.sh`
. "$(dirname "$0")/../common/expect.sh"

set -o pipefail   # a pipe fails when its program does, not only when its last command does
mapfile -t lines <"$block"   # read first: a command that reads stdin must not eat the block
command="" first=0
for i in "${!lines[@]}"; do
    line=${lines[$i]}
    [ -n "$command" ] || first=$((i + 1))
    if [[ $line == *\\ ]]; then command+="${line%\\}"; continue; fi
    command+=$line
    if [[ $command =~ ^[[:space:]]*(#|$) ]]; then command=""; continue; fi
    echo "\$ $command"
    eval "$command" </dev/null
    rc=$?
    if [ $rc != 0 ]; then
        echo "(check line $first failed, exit $rc: $command)"
        exit 1
    fi
    command=""
done
[ -z "$command" ] || { echo "(check block ends inside a continued line: $command)"; exit 1; }
exit 0
