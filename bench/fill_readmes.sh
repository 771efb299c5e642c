#!/usr/bin/env bash
# bench/fill_readmes.sh <results.txt> - replace what stands between
#     <!-- results prog=vecadd -->            (optionally: prog=vecadd size=268435456)
#     <!-- /results -->
# in every chapter README with a table of those RESULT lines, and what stands between
#     <!-- transcript name=gpt_train -->     <!-- /transcript -->
# with the TRANSCRIPT lines of that name (a run's output, kept by make bench; called by bench/run.sh).
set -eu
txt=$1
dir=$(cd "$(dirname "$0")" && pwd)
results_md=bench/$(basename "${txt%.txt}").md
for readme in "$dir"/../ch*/README.md "$dir"/../ch*/SOLUTIONS.md "$dir"/../README.md; do
    [ -f "$readme" ] || continue
    grep -qE '<!-- (results|transcript) ' "$readme" || continue
    awk -f "$dir/fields.awk" -f "$dir/fill_readmes.awk" -v results_md="$results_md" "$txt" "$readme" >"$readme.tmp"
    mv "$readme.tmp" "$readme"
done
