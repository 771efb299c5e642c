#!/usr/bin/env bash
# tests/run.sh - the lab book's test runner (`make test` calls it after building everything).
#
#   bash tests/run.sh                  every chapter
#   bash tests/run.sh ch03_vecadd      one chapter (what `make test` inside a chapter runs; ch03 works too)
#   bash tests/run.sh --sanitize       only the GPU checks, each under compute-sanitizer's
#                                      memcheck, racecheck, synccheck and initcheck, in parallel
#                                      (SANITIZE_JOBS at a time, default: the CPU cores)
#   REQUIRE_GPU=1 bash tests/run.sh    on a GPU machine: a check skipped for want of a GPU fails
#
# It runs, in order:
#   1. host-only unit tests (tests/*.c, built by tests/Makefile): run everywhere
#   2. every program's bad-input cases (exit 2) and, with the GPU hidden by
#      CUDA_VISIBLE_DEVICES="", its no-GPU path (exit 77 and the message): run everywhere
#   3. GPU checks: every program in --check-only mode on small and awkward sizes, every
#      version, expecting exit 0; skipped (and counted as skipped) when there is no GPU;
#      and mutants: a program broken on purpose, whose own checks must catch it (exit 1)
# The cases live in tests/<chapter>.sh. The last line is "N passed, N failed, N skipped".
# "No GPU" means device_query exited 77 and nothing else: if it crashes, or a CUDA call fails
# on a GPU machine, the GPU checks run (and fail) instead of being skipped. A case file that
# stops on an error (a syntax error, a misspelt helper) fails the run.
set -u
cd "$(dirname "$0")/.." || exit 3
ROOT=$PWD
LOG_DIR=${TEST_LOG_DIR:-$ROOT/tests/bin/logs}
mkdir -p "$LOG_DIR"
TIMEOUT=${TEST_TIMEOUT:-300}

SANITIZE=0
CHAPTERS=()
for arg in "$@"; do
    case $arg in
        --sanitize) SANITIZE=1 ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        *) chapter=${arg%/}
           [ -d "$chapter" ] || chapter=$(ls -d "${chapter}"_* 2>/dev/null | head -n 1)   # ch10 -> ch10_advanced
           [ -n "$chapter" ] && [ -d "$chapter" ] || { echo "tests/run.sh: no chapter $arg (try ch04 or ch04_matmul)"; exit 2; }
           CHAPTERS+=("$chapter") ;;
    esac
done
[ ${#CHAPTERS[@]} -gt 0 ] || CHAPTERS=($(cd "$ROOT" && ls -d ch[0-9][0-9]_* | sort))

passed=0 failed=0 skipped=0
failures=()

REQUIRE_GPU=${REQUIRE_GPU:-0}

SANITIZER=${COMPUTE_SANITIZER:-compute-sanitizer}
if ! command -v "$SANITIZER" >/dev/null 2>&1; then
    [ -x /usr/local/cuda/bin/compute-sanitizer ] && SANITIZER=/usr/local/cuda/bin/compute-sanitizer
fi

CHAPTER=.        # the folder the current case runs in
n_case=0

record() {   # record <PASS|FAIL|SKIP> <name> [log]
    case $1 in
        PASS) passed=$((passed + 1)); echo "  ok    $2" ;;
        SKIP) if [ "$REQUIRE_GPU" = 1 ]; then record FAIL "$2: skipped, and REQUIRE_GPU=1"; return 0; fi
              skipped=$((skipped + 1)); echo "  skip  $2" ;;
        FAIL) failed=$((failed + 1)); failures+=("$2"); echo "  FAIL  $2"
              if [ -n "${3:-}" ]; then sed -n '1,25p' "$3" | sed 's/^/        | /'; fi ;;
    esac
    return 0
}

# run_case <name> <expected exit> <grep pattern or ""> <env-prefix or ""> <command...>
# (the pattern is a grep regular expression; GREP_MODE=-F, set by a caller, makes it a fixed string)
run_case() {
    local name=$1 want=$2 pattern=$3 envp=$4
    shift 4
    n_case=$((n_case + 1))
    local log="$LOG_DIR/case$n_case.log"
    ( cd "${RUN_DIR:-$ROOT/$CHAPTER}" && env $envp timeout "$TIMEOUT" "$@" ) >"$log" 2>&1
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "(exit $got, expected $want: $*)" >>"$log"
        record FAIL "$name" "$log"
    elif [ -n "$pattern" ] && ! grep -q ${GREP_MODE:-} -- "$pattern" "$log"; then
        echo "(output lacks '$pattern': $*)" >>"$log"
        record FAIL "$name" "$log"
    else
        record PASS "$name"
    fi
}

# ---- the helpers the case files use ----

# host_test <binary in tests/bin, or a script in tests/> : a host-only test, runs everywhere
host_test() {
    [ $SANITIZE = 1 ] && return
    case $1 in
        *.sh) run_case "host: $1" 0 "" "" bash "$ROOT/tests/$1" ;;
        *) run_case "host: $1" 0 "" "" "$ROOT/tests/bin/$1" ;;
    esac
}

# bad_input <expected exit> <message> <command...> : argument errors need no GPU; the exit code
# and the message (a fixed string) that says what was wrong: exit 2 alone could be another error
bad_input() {
    [ $SANITIZE = 1 ] && return
    local want=$1 message=$2 GREP_MODE=-F; shift 2
    run_case "$CHAPTER: bad input: $*" "$want" "$message" "" "$@"
}

# no_gpu <command...> : with every GPU hidden, exit 77 with the clear message
no_gpu() {
    [ $SANITIZE = 1 ] && return
    run_case "$CHAPTER: no GPU: $*" 77 "no NVIDIA GPU/driver found" "CUDA_VISIBLE_DEVICES=" "$@"
}

# gpu_check <command...> : must exit 0 on the GPU; skipped without one. Under --sanitize, the
# command is queued once per tool and the queue runs in parallel at the end (sanitize_all)
gpu_check() {
    if [ $HAVE_GPU = 0 ]; then record SKIP "$CHAPTER: $* (no GPU)"; return; fi
    if [ $SANITIZE = 1 ]; then
        local tool
        # the words quoted (printf %q), so that an empty argument (--output "") survives the queue
        local words
        words=$(printf '%q ' "$@")
        for tool in memcheck racecheck synccheck initcheck; do
            SANITIZE_QUEUE+=("$CHAPTER|$tool|${words% }")
        done
    else
        run_case "$CHAPTER: $*" 0 "" "" "$@"
    fi
}

# sanitize_all : runs the queued sanitizer cases, SANITIZE_JOBS at a time (an instrumented
# program keeps one CPU core busy and leaves most of the GPU idle, so several at once finish
# sooner), then records them in the order they were queued, each with its time in seconds
SANITIZE_QUEUE=()
sanitize_all() {
    [ ${#SANITIZE_QUEUE[@]} -gt 0 ] || return 0
    local jobs=${SANITIZE_JOBS:-$(nproc 2>/dev/null || echo 4)} i entry chapter tool cmd dir
    dir="$LOG_DIR/sanitize"
    rm -rf "$dir" && mkdir -p "$dir"
    echo "compute-sanitizer: ${#SANITIZE_QUEUE[@]} runs, $jobs at a time"
    for i in "${!SANITIZE_QUEUE[@]}"; do
        IFS='|' read -r chapter tool cmd <<<"${SANITIZE_QUEUE[$i]}"
        echo "${SANITIZE_QUEUE[$i]}" >"$dir/$i.cmd"   # what each log is, also for a run cut short
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        (
            start=$SECONDS
            (cd "$ROOT/$chapter" && eval "timeout \"\$TIMEOUT\" \"\$SANITIZER\" --tool $tool --error-exitcode 99 $cmd") \
                >"$dir/$i.log" 2>&1
            echo "$? $((SECONDS - start))" >"$dir/$i.rc"
        ) &
    done
    wait
    local rc secs
    for i in "${!SANITIZE_QUEUE[@]}"; do
        IFS='|' read -r chapter tool cmd <<<"${SANITIZE_QUEUE[$i]}"
        read -r rc secs <"$dir/$i.rc" || { rc=none secs=0; }
        if [ "$rc" = 0 ]; then
            record PASS "$chapter: $tool: $cmd (${secs} s)"
        else
            echo "(exit $rc, expected 0 after ${secs} s: $tool $cmd)" >>"$dir/$i.log"
            record FAIL "$chapter: $tool: $cmd" "$dir/$i.log"
        fi
    done
    echo "the slowest:"
    for i in "${!SANITIZE_QUEUE[@]}"; do
        read -r rc secs <"$dir/$i.rc" 2>/dev/null && echo "$secs ${SANITIZE_QUEUE[$i]}"
    done | sort -rn | head -n 5 | sed 's/^/  /; s/|/: /g'
    SANITIZE_QUEUE=()
}

# gpu_check_large <command...> : like gpu_check, but too slow to repeat under the sanitizer's
# four tools (large sizes); the small cases beside it cover the same code there
gpu_check_large() {
    [ $SANITIZE = 1 ] && return
    gpu_check "$@"
}

# gpu_expect <exit> <pattern> <command...> : a GPU run with a given exit code and output
gpu_expect() {
    local want=$1 pattern=$2; shift 2
    if [ $HAVE_GPU = 0 ]; then record SKIP "$CHAPTER: $* (no GPU)"; return; fi
    [ $SANITIZE = 1 ] && return
    run_case "$CHAPTER: $* -> exit $want" "$want" "$pattern" "" "$@"
}

# sanitizer_expect <tool> <report|clean> <pattern> <command...> : the command under
# compute-sanitizer's <tool>: `report` means the tool must find an error (exit 99) and print
# the pattern; `clean` that it finds none (exit 0). For the debugging lab's planted bugs.
sanitizer_expect() {
    local tool=$1 verdict=$2 pattern=$3; shift 3
    local name="$CHAPTER: $tool $verdict: $*"
    if [ $HAVE_GPU = 0 ]; then record SKIP "$name (no GPU)"; return; fi
    if ! command -v "$SANITIZER" >/dev/null 2>&1; then record SKIP "$name (compute-sanitizer not found)"; return; fi
    local want=0
    [ "$verdict" = report ] && want=99
    run_case "$name" "$want" "$pattern" "" "$SANITIZER" --tool "$tool" --error-exitcode 99 "$@"
}

# copy_chapter <dir> : the chapter's sources (not its build) and common/ copied under <dir>,
# with datasets/ and tests/ linked, so that an edited copy builds and runs like the original
copy_chapter() {
    local dir=$1
    rm -rf "$dir" && mkdir -p "$dir/$CHAPTER" && cp -r "$ROOT/common" "$dir/common" &&
        cp "$ROOT/$CHAPTER"/Makefile "$ROOT/$CHAPTER"/*.[ch] "$dir/$CHAPTER/" &&
        { cp "$ROOT/$CHAPTER"/*.cu "$ROOT/$CHAPTER"/*.cuh "$ROOT/$CHAPTER"/*.py "$dir/$CHAPTER/" 2>/dev/null; true; }
    rm -f "$dir"/common/*.o
    ln -s "$ROOT/datasets" "$dir/datasets"
    ln -s "$ROOT/tests" "$dir/tests"
}

# mutant <name> <file> <sed expression> <command...> : the chapter copied (with common/), <file>
# edited by the sed expression (it must change the file: else the test no longer fits the code)
# and the program built; the command, run in the copy, must exit 1 with FAIL in its output:
# the program's own checks catch the planted bug. The copies build in the background while the
# chapter's other cases run; finish_mutants runs them after the chapter's case file.
MUTANTS=()
mutant() {
    [ $SANITIZE = 1 ] && return
    if [ $HAVE_GPU = 0 ]; then record SKIP "$CHAPTER: mutant: $1 (no GPU)"; return; fi
    local name=$1 file=$2 expr=$3; shift 3
    local dir="$LOG_DIR/mutant-$CHAPTER-${#MUTANTS[@]}" prog=${1#./}
    copy_chapter "$dir"
    (
        cd "$dir/$CHAPTER" && cp "$file" "$file.orig" && sed -i "$expr" "$file" || exit 1
        if cmp -s "$file" "$file.orig"; then echo "the edit '$expr' no longer changes $file"; exit 1; fi
        diff "$file.orig" "$file"
        make -s "$prog"
    ) >"$dir/build.log" 2>&1 &
    MUTANTS+=("$!|$dir|$name|$*")
    return 0
}

finish_mutants() {
    local m pid dir name cmd
    for m in "${MUTANTS[@]}"; do
        IFS='|' read -r pid dir name cmd <<<"$m"
        if ! wait "$pid"; then
            record FAIL "$CHAPTER: mutant: $name (the edit or the build failed)" "$dir/build.log"
            continue
        fi
        # shellcheck disable=SC2086  # the command's words, as the case file gave them
        RUN_DIR="$dir/$CHAPTER" run_case "$CHAPTER: mutant caught: $name" 1 "FAIL" "" $cmd
    done
    MUTANTS=()
}

# solutions : the code solutions in the chapter's SOLUTIONS.md, each a ```diff block (paths
# relative to the chapter folder) followed by a ```sh check block of `expect <exit> <command>`
# lines (a check block without a diff checks the chapter as it is). Everywhere: every diff
# still applies to the chapter. On the GPU: each is applied to a copy, the copy built (in the
# background, while the chapter's other cases run) and its check block run there.
SOLUTIONS=()
solutions() {
    local md="$ROOT/$CHAPTER/SOLUTIONS.md" dir="$LOG_DIR/solutions-$CHAPTER" i name
    [ -f "$md" ] || return 0
    [ $SANITIZE = 1 ] && return
    rm -rf "$dir" && mkdir -p "$dir"
    awk -v dir="$dir" '
        /^#+ / { title = $0; sub(/^#+ /, "", title) }
        /^```diff/ { n++; pending = 1; block = dir "/" n ".diff"; print title > (dir "/" n ".name"); next }
        /^```sh check/ { if (!pending) { n++; print title > (dir "/" n ".name") }
                         pending = 0; block = dir "/" n ".check"; next }
        /^```/ && block != "" { close(block); block = ""; next }
        block != "" { print > block }
    ' "$md"
    for name in $(ls "$dir"/*.name 2>/dev/null | sort -V); do
        i=$(basename "$name" .name)
        local title; title=$(cat "$name")
        if [ ! -f "$dir/$i.check" ]; then
            record FAIL "$CHAPTER: solution \"$title\": a diff without a \`\`\`sh check block after it"
            continue
        fi
        if [ -f "$dir/$i.diff" ]; then
            copy_chapter "$dir/$i"
            if ! (cd "$dir/$i/$CHAPTER" && git apply --check "$dir/$i.diff") >"$dir/$i.log" 2>&1; then
                record FAIL "$CHAPTER: solution \"$title\" no longer applies" "$dir/$i.log"
                continue
            fi
            record PASS "$CHAPTER: solution \"$title\" applies"
        fi
        if [ $HAVE_GPU = 0 ]; then record SKIP "$CHAPTER: solution \"$title\" checked (no GPU)"; continue; fi
        if [ -f "$dir/$i.diff" ] || grep -q 'make ' "$dir/$i.check"; then
            # an edit, or a check that rebuilds: in a copy, so the chapter's own build stays as it is
            [ -f "$dir/$i.diff" ] || { copy_chapter "$dir/$i"; : >"$dir/$i.diff"; }
            # build what the check runs (./prog, a word of its own: not the ./ in ../datasets),
            # or everything when the check itself runs make
            local targets=""
            grep -q 'make ' "$dir/$i.check" ||
                targets=$(grep -oE '(^|[[:space:]])\./[A-Za-z0-9_]+' "$dir/$i.check" | sed 's|^[[:space:]]*\./||' |
                    sort -u | tr '\n' ' ')
            # shellcheck disable=SC2086  # targets: several words
            (cd "$dir/$i/$CHAPTER" && { [ ! -s "$dir/$i.diff" ] || git apply "$dir/$i.diff"; } && make -s -j4 $targets) \
                >"$dir/$i.build.log" 2>&1 &
            SOLUTIONS+=("$!|$dir/$i/$CHAPTER|$title|$dir/$i.check")
        else
            SOLUTIONS+=("0|$ROOT/$CHAPTER|$title|$dir/$i.check")
        fi
    done
}

# `expect <exit> <command...>` in a check block: the command must exit with <exit>
# (and `compute-sanitizer` is the one this runner found, on PATH or not)
SOLUTION_PRELUDE='expect() { local want=$1; shift; "$@"; local got=$?; [ "$got" = "$want" ] || { echo "(exit $got, expected $want: $*)"; exit 1; }; }
compute-sanitizer() { command "$SANITIZER" "$@"; }'
export SANITIZER

finish_solutions() {
    local s pid dir title check
    for s in "${SOLUTIONS[@]}"; do
        IFS='|' read -r pid dir title check <<<"$s"
        if [ "$pid" != 0 ] && ! wait "$pid"; then
            record FAIL "$CHAPTER: solution \"$title\" (the build failed)" "${check%.check}.build.log"
            continue
        fi
        RUN_DIR="$dir" run_case "$CHAPTER: solution \"$title\" checked" 0 "" "" \
            bash -c "$SOLUTION_PRELUDE; . '$check'"
    done
    SOLUTIONS=()
}

# a case file's own error (a misspelt helper, a failing command): the ERR trap, set while the
# file runs, turns it into a failure instead of a case silently left out
case_file_error() {
    record FAIL "tests/$CHAPTER.sh: line $1 failed (exit $2): $3"
}

# ---- is there a GPU? ----
# device_query exits 0 when there is a usable GPU and 77 when there is none. Anything else
# (a crash, a CUDA error) is a GPU machine with a problem: that fails, and the GPU checks run.
HAVE_GPU=0
[ -x ch01_setup/device_query ] || make -s -C ch01_setup device_query >"$LOG_DIR/gpu.txt" 2>&1
if [ ! -x ch01_setup/device_query ]; then
    record FAIL "GPU detection: ch01_setup/device_query does not build" "$LOG_DIR/gpu.txt"
else
    ch01_setup/device_query --quiet >"$LOG_DIR/gpu.txt" 2>&1
    gpu_rc=$?
    case $gpu_rc in
        0) HAVE_GPU=1; echo "GPU: $(head -n 1 "$LOG_DIR/gpu.txt")" ;;
        77) echo "no usable GPU here: GPU checks are skipped ($(tail -n 1 "$LOG_DIR/gpu.txt"))" ;;
        *) HAVE_GPU=1
           record FAIL "GPU detection: device_query exited $gpu_rc (only 77 means no GPU; the GPU checks run)" "$LOG_DIR/gpu.txt" ;;
    esac
fi
if [ "$REQUIRE_GPU" = 1 ] && [ $HAVE_GPU = 0 ]; then
    record FAIL "REQUIRE_GPU=1, but there is no usable GPU"
fi

# ---- host-only unit tests ----
if [ $SANITIZE = 0 ]; then
    echo "building host unit tests"
    if ! make -s -C tests >"$LOG_DIR/build.log" 2>&1; then
        record FAIL "build host unit tests" "$LOG_DIR/build.log"
    fi
fi

for ch in "${CHAPTERS[@]}"; do
    if [ ! -f "tests/$ch.sh" ]; then
        echo "no tests/$ch.sh"; failed=$((failed + 1)); failures+=("$ch: no test cases"); continue
    fi
    echo "$ch"
    CHAPTER=$ch
    if ! bash -n "tests/$ch.sh" 2>"$LOG_DIR/syntax.log"; then
        record FAIL "tests/$ch.sh does not parse" "$LOG_DIR/syntax.log"
        continue
    fi
    trap 'case_file_error $LINENO $? "$BASH_COMMAND"' ERR
    # shellcheck source=/dev/null
    . "tests/$ch.sh"
    trap - ERR
    solutions
    finish_mutants
    finish_solutions
done

sanitize_all

if [ ${#failures[@]} -gt 0 ]; then
    echo
    echo "failed:"
    printf '  %s\n' "${failures[@]}"
    echo "(logs in $LOG_DIR)"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
