#!/usr/bin/env bash
# tests/run.sh - the lab book's test runner (`make test` calls it after building everything).
#
#   bash tests/run.sh                  every chapter
#   bash tests/run.sh ch03_vecadd      one chapter (what `make test` inside a chapter runs)
#   bash tests/run.sh --sanitize       only the GPU checks, each under compute-sanitizer's
#                                      memcheck, racecheck, synccheck and initcheck
#
# It runs, in order:
#   1. host-only unit tests (tests/*.c, built by tests/Makefile): run everywhere
#   2. every program's bad-input cases (exit 2) and, with the GPU hidden by
#      CUDA_VISIBLE_DEVICES="", its no-GPU path (exit 77 and the message): run everywhere
#   3. GPU checks: every program in --check-only mode on small and awkward sizes, every
#      version, expecting exit 0; skipped (and counted as skipped) when there is no GPU
# The cases live in tests/<chapter>.sh. The last line is "N passed, N failed, N skipped".
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
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) CHAPTERS+=("${arg%/}") ;;
    esac
done
[ ${#CHAPTERS[@]} -gt 0 ] || CHAPTERS=($(cd "$ROOT" && ls -d ch[0-9][0-9]_* | sort))

passed=0 failed=0 skipped=0
failures=()

# Is there a usable GPU? device_query exits 0 when there is one and 77 when not.
HAVE_GPU=0
if [ -x ch01_setup/device_query ]; then
    ch01_setup/device_query --quiet >"$LOG_DIR/gpu.txt" 2>&1 && HAVE_GPU=1
fi
if [ $HAVE_GPU = 1 ]; then
    echo "GPU: $(head -n 1 "$LOG_DIR/gpu.txt")"
else
    echo "no usable GPU here: GPU checks are skipped ($(tail -n 1 "$LOG_DIR/gpu.txt" 2>/dev/null))"
fi
SANITIZER=${COMPUTE_SANITIZER:-compute-sanitizer}
if ! command -v "$SANITIZER" >/dev/null 2>&1; then
    [ -x /usr/local/cuda/bin/compute-sanitizer ] && SANITIZER=/usr/local/cuda/bin/compute-sanitizer
fi

CHAPTER=.        # the folder the current case runs in
n_case=0

record() {   # record <PASS|FAIL|SKIP> <name> [log]
    case $1 in
        PASS) passed=$((passed + 1)); echo "  ok    $2" ;;
        SKIP) skipped=$((skipped + 1)); echo "  skip  $2" ;;
        FAIL) failed=$((failed + 1)); failures+=("$2"); echo "  FAIL  $2"
              [ -n "${3:-}" ] && sed -n '1,25p' "$3" | sed 's/^/        | /' ;;
    esac
}

# run_case <name> <expected exit> <grep pattern or ""> <env-prefix or ""> <command...>
run_case() {
    local name=$1 want=$2 pattern=$3 envp=$4
    shift 4
    n_case=$((n_case + 1))
    local log="$LOG_DIR/case$n_case.log"
    ( cd "$ROOT/$CHAPTER" && env $envp timeout "$TIMEOUT" "$@" ) >"$log" 2>&1
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "(exit $got, expected $want: $*)" >>"$log"
        record FAIL "$name" "$log"
    elif [ -n "$pattern" ] && ! grep -q -- "$pattern" "$log"; then
        echo "(output lacks '$pattern': $*)" >>"$log"
        record FAIL "$name" "$log"
    else
        record PASS "$name"
    fi
}

# ---- the helpers the case files use ----

# host_test <binary in tests/bin> : a host-only unit test, runs everywhere
host_test() {
    [ $SANITIZE = 1 ] && return
    run_case "host: $1" 0 "" "" "$ROOT/tests/bin/$1"
}

# bad_input <expected exit> <command...> : argument errors need no GPU; must be one clear line
bad_input() {
    [ $SANITIZE = 1 ] && return
    local want=$1; shift
    run_case "$CHAPTER: bad input: $*" "$want" "" "" "$@"
}

# no_gpu <command...> : with every GPU hidden, exit 77 with the clear message
no_gpu() {
    [ $SANITIZE = 1 ] && return
    run_case "$CHAPTER: no GPU: $*" 77 "no NVIDIA GPU/driver found" "CUDA_VISIBLE_DEVICES=" "$@"
}

# gpu_check <command...> : must exit 0 on the GPU; skipped without one
gpu_check() {
    if [ $HAVE_GPU = 0 ]; then record SKIP "$CHAPTER: $* (no GPU)"; return; fi
    if [ $SANITIZE = 1 ]; then
        local tool
        for tool in memcheck racecheck synccheck initcheck; do
            run_case "$CHAPTER: $tool: $*" 0 "" "" "$SANITIZER" --tool "$tool" --error-exitcode 99 "$@"
        done
    else
        run_case "$CHAPTER: $*" 0 "" "" "$@"
    fi
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
    # shellcheck source=/dev/null
    . "tests/$ch.sh"
done

if [ ${#failures[@]} -gt 0 ]; then
    echo
    echo "failed:"
    printf '  %s\n' "${failures[@]}"
    echo "(logs in $LOG_DIR)"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
