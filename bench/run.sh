#!/usr/bin/env bash
# bench/run.sh - run every chapter's benchmarks on the GPU and record the results
# (`make bench` calls it after building).
#
#   bash bench/run.sh                 every chapter
#   bash bench/run.sh ch03_vecadd     one chapter (results of other chapters already in the
#                                     file are kept)
#   BENCH_ONLY='thrust_basics|--tf32' bash bench/run.sh ch07_cublas
#                                     only the measure lines that match the regular expression;
#                                     only the rows they measured again (same prog, name and size) are replaced
#                                     (so two different measurements under one key fail the run: bench/keys.awk)
#
# Each chapter's measurements are listed in bench/<chapter>.sh as `measure <command>` lines.
# Every program prints one "RESULT key=value ..." line per measurement; this script collects
# them into
#   bench/results-<gpu>.txt   the RESULT lines, with date, GPU, driver and CUDA version
#   bench/results-<gpu>.md    the same as tables, one per program, and
#   bench/<gpu>-<prog>-<size>.svg   a bar chart of each kernel progression
# and then fills every chapter README's <!-- results ... --> block (bench/fill_readmes.sh).
set -u
cd "$(dirname "$0")/.." || exit 3
ROOT=$PWD
OUT_DIR=$ROOT/bench/out
mkdir -p "$OUT_DIR"

if ! ch01_setup/device_query --quiet >"$OUT_DIR/gpu.txt" 2>&1; then
    echo "make bench needs a GPU: $(tail -n 1 "$OUT_DIR/gpu.txt")"
    exit 77
fi
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
[ -n "$gpu_name" ] || gpu_name=$(sed -n 's/^device_query: 0: \([^,]*\),.*/\1/p' "$OUT_DIR/gpu.txt")
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
cuda=$(ch01_setup/device_query | sed -n 's/.*supports CUDA \([0-9.]*\), this program.s runtime is CUDA \([0-9.]*\).*/driver CUDA \1, runtime CUDA \2/p')
slug=$(echo "$gpu_name" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
TXT=bench/results-$slug.txt
MD=bench/results-$slug.md

CHAPTERS=("$@")
[ ${#CHAPTERS[@]} -gt 0 ] || CHAPTERS=($(ls -d ch[0-9][0-9]_* | sort))

new=$OUT_DIR/new.txt
: >"$new"
status=0
measure() {   # measure <command...>: run in the chapter folder, keep its RESULT lines
    [ -z "${BENCH_ONLY:-}" ] || grep -qE -- "$BENCH_ONLY" <<<"$*" || return 0
    echo "== $CHAPTER: $*"
    ( cd "$ROOT/$CHAPTER" && "$@" ) 2>&1 | tee -a "$OUT_DIR/$CHAPTER.log"
    local rc=${PIPESTATUS[0]}
    if [ "$rc" != 0 ]; then echo "   (exit $rc)"; status=1; fi
}
for ch in "${CHAPTERS[@]}"; do
    [ -f "bench/$ch.sh" ] || continue
    CHAPTER=$ch
    : >"$OUT_DIR/$ch.log"
    # shellcheck source=/dev/null
    . "bench/$ch.sh"
    # RESULT rows, and TRANSCRIPT lines (a run's output kept for a README's transcript block)
    grep -E "^(RESULT|TRANSCRIPT) " "$OUT_DIR/$ch.log" |
        sed "s/^RESULT /RESULT chapter=$ch date=$(date -u +%Y-%m-%d) /; s/^TRANSCRIPT /TRANSCRIPT chapter=$ch /" >>"$new"
done

# Keep the other chapters' earlier results, replace this run's chapters.
{
    echo "# date=$(date -u +%Y-%m-%d) gpu=$gpu_name driver=$driver $cuda"
    if [ -f "$TXT" ]; then
        if [ -z "${BENCH_ONLY:-}" ]; then
            keep=$(printf '%s\n' "${CHAPTERS[@]}" | sed 's/^/chapter=/; s/$/ /')
            grep -E '^(RESULT|TRANSCRIPT) ' "$TXT" | grep -v -F -f <(echo "$keep") || true
        else   # the rows measured again (prog, name and size; a transcript by its name) replaced, the others kept
            awk -f bench/fields.awk -f bench/again.awk "$new" "$TXT"
        fi
    fi
    cat "$new"
} >"$TXT.tmp" && mv "$TXT.tmp" "$TXT"

# two measurements under one key would be replaced as one by a later BENCH_ONLY run: say which, and fail
awk -f bench/fields.awk -f bench/keys.awk "$TXT" || status=1
bash bench/report.sh "$TXT" "$MD" "bench/$slug"
bash bench/fill_readmes.sh "$TXT"
echo "wrote $TXT, $MD and the charts; chapter READMEs updated"
exit $status
