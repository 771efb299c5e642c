#!/usr/bin/env bash
# tests/run.sh - the lab book's test runner (`make test` calls it after building everything).
#
#   bash tests/run.sh                  every chapter
#   bash tests/run.sh ch03_vecadd      one chapter (what `make test` inside a chapter runs; ch03 works too)
#   bash tests/run.sh --sanitize       only the GPU checks, each under compute-sanitizer's
#                                      memcheck, racecheck, synccheck and initcheck
#   REQUIRE_GPU=1 bash tests/run.sh    on a GPU machine: a check skipped for want of a GPU fails,
#                                      and so does a version a program skips ("needs sm_80")
#   TEST_JOBS=4 bash tests/run.sh      cases at a time (default: the CPU cores; with a GPU, 1.5 times
#                                      them, the builds and long checks at most one a core)
#   SOLUTION_BUILDS=1 bash tests/run.sh   without a GPU, build each code solution's copy too
#                                      (warning-free; CI does; on a GPU they are always built)
#
# It runs, in order:
#   1. host-only unit tests (tests/*.c, built by tests/Makefile): run everywhere
#   2. every program's bad-input cases (exit 2) and, with the GPU hidden by
#      CUDA_VISIBLE_DEVICES="", its no-GPU path (exit 77 and the message): run everywhere
#   3. GPU checks: every program in --check-only mode on small and awkward sizes, every
#      version, expecting exit 0; skipped (and counted as skipped) when there is no GPU;
#      mutants (a program broken on purpose, whose own checks must catch it: exit 1) and the
#      code solutions of SOLUTIONS.md (each check must fail before its diff and pass after)
# The cases live in tests/<chapter>.sh. They run TEST_JOBS at a time, each in the background,
# the ones that rebuild a chapter (solutions, mutants) first; the results print in the order
# the case files give them, one line each, a failure with its log. A case that times or
# measures the whole GPU runs alone (`alone gpu_check ...`).
# The last line is "N passed, N failed, N skipped".
# "No GPU" means device_query exited 77 and nothing else: if it crashes, or a CUDA call fails
# on a GPU machine, the GPU checks run (and fail) instead of being skipped. A case file that
# stops on an error (a syntax error, a misspelt helper) fails the run.
set -u
cd "$(dirname "$0")/.." || exit 3
ROOT=$PWD
LOG_DIR=${TEST_LOG_DIR:-$ROOT/tests/bin/logs}
mkdir -p "$LOG_DIR"
TIMEOUT=${TEST_TIMEOUT:-300}
CORES=$(nproc 2>/dev/null || echo 4)
# positive_number <variable's name> <value> : exit 2 with the reason unless the value is a count
positive_number() {
    case $2 in '' | *[!0-9]* | 0) echo "tests/run.sh: $1 must be a positive number (got '$2')"; exit 2 ;; esac
}
JOBS=${TEST_JOBS:-$CORES}
positive_number TEST_JOBS "$JOBS"
HEAVY_JOBS=${TEST_HEAVY_JOBS:-$CORES}   # the early entries (builds, long checks) at most this many at once
positive_number TEST_HEAVY_JOBS "$HEAVY_JOBS"

SANITIZE=0
CHAPTERS=()
for arg in "$@"; do
    case $arg in
        --sanitize) SANITIZE=1 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
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
export SANITIZER ROOT

CHAPTER=.        # the folder the current case runs in
START=$SECONDS

# ---- results, printed in order ----
# Every case is an entry, numbered as the case files give them. A case runs in the background
# and writes its verdict lines (STATUS<tab>name<tab>log) to $RESULTS/<entry> when it is done;
# `flush` prints the finished entries at the head of the line, so the output keeps the case
# files' order however the cases finish.
RESULTS=$LOG_DIR/results$([ $SANITIZE = 0 ] || echo -sanitize)
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
n_entry=0 next_entry=0

# SKIP: not run for want of something (a GPU, a tool), a failure under REQUIRE_GPU=1; OMIT: left
# out by choice where something better runs instead (the emulation on a GPU machine), a skip always
print_result() {   # print_result <PASS|FAIL|SKIP|OMIT|TEXT> <name> [log]
    case $1 in
        PASS) passed=$((passed + 1)); echo "  ok    $2" ;;
        SKIP) if [ "$REQUIRE_GPU" = 1 ]; then print_result FAIL "$2: skipped, and REQUIRE_GPU=1"; return 0; fi
              skipped=$((skipped + 1)); echo "  skip  $2" ;;
        OMIT) skipped=$((skipped + 1)); echo "  skip  $2" ;;
        FAIL) failed=$((failed + 1)); failures+=("$2"); echo "  FAIL  $2"
              if [ -n "${3:-}" ] && [ -f "$3" ]; then sed -n '1,25p' "$3" | sed 's/^/        | /'; fi ;;
        TEXT) echo "$2" ;;
    esac
    return 0
}

flush() {
    local status name log
    while [ -f "$RESULTS/$next_entry" ]; do
        while IFS=$'\t' read -r status name log; do
            print_result "$status" "$name" "$log"
        done <"$RESULTS/$next_entry"
        next_entry=$((next_entry + 1))
    done
}

# verdict <STATUS> <name> [log] : inside a case, one result line (a case may give several)
verdict() { printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >&3; }

# record <STATUS> <name> [log] : a result known at once, in its place in the order
record() {
    printf '%s\t%s\t%s\n' "$1" "$2" "${3:-}" >"$RESULTS/$n_entry"
    n_entry=$((n_entry + 1))
    flush
}

# submit <function> <args...> : queues the function as the next entry (ENTRY holds its number when
# it runs). The queue starts after the case files have been read (run_queue), TEST_JOBS at a
# time, the entries submitted with EARLY=2 first, then EARLY=1, then the rest: the cases that
# rebuild a chapter start at once instead of at their chapter's turn, so that the run ends when
# the quick cases do. Under `alone`, the case runs now, after every running case has finished
# and with nothing beside it.
QUEUED=() LEVEL=() ENTRY_NAME=()
submit() {
    local entry=$n_entry
    n_entry=$((n_entry + 1))
    case $1 in   # the case's name, for a failure that names it (settle_lost)
        case_job) ENTRY_NAME[$entry]=$2 ;;
        mutant_job | solution_job) ENTRY_NAME[$entry]="$2: ${1%_job} $3" ;;
        emu_mutant_job) ENTRY_NAME[$entry]="$2: emulated mutant $4" ;;
        host_mutant_job) ENTRY_NAME[$entry]="$2: mutant $3" ;;
        *) ENTRY_NAME[$entry]="$CHAPTER: $*" ;;
    esac
    if [ "${RUN_ALONE:-0}" = 1 ]; then
        wait
        ENTRY=$entry run_entry "$@"
        flush
        return
    fi
    local words
    words=$(printf '%q ' "$@")
    QUEUED[$entry]=$words
    LEVEL[$entry]=${EARLY:-0}
}
# The early entries (builds of copies, long checks) take at most HEAVY_JOBS of the JOBS slots at
# once; the other slots run the rest meanwhile. With a GPU there are more slots than cores (see
# JOBS below): the builds keep every core busy while the short GPU checks, which mostly wait for
# the driver to create their contexts (one at a time), run beside them instead of after them.
run_queue() {
    local level entry pid running early=() rest=() early_pids=() e=0 r=0
    for level in 2 1 0; do
        for entry in "${!QUEUED[@]}"; do
            [ "${LEVEL[$entry]}" = "$level" ] || continue
            if [ "$level" = 0 ]; then rest+=("$entry"); else early+=("$entry"); fi
        done
    done
    while [ $e -lt ${#early[@]} ] || [ $r -lt ${#rest[@]} ]; do
        while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
            wait -n
            flush
        done
        running=0
        for pid in "${early_pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=$((running + 1)); done
        if [ $e -lt ${#early[@]} ] && [ $running -lt "$HEAVY_JOBS" ]; then
            entry=${early[$e]} e=$((e + 1))
            eval "ENTRY=$entry run_entry ${QUEUED[$entry]}" &
            early_pids+=($!)
        elif [ $r -lt ${#rest[@]} ]; then
            entry=${rest[$r]} r=$((r + 1))
            eval "ENTRY=$entry run_entry ${QUEUED[$entry]}" &
        else
            wait -n   # only early entries are left, HEAVY_JOBS of them running
            flush
        fi
    done
    QUEUED=() LEVEL=()
}
run_entry() {
    local out="$RESULTS/$ENTRY" start=$SECONDS
    "$@" 3>"$out.part" >/dev/null 2>&1
    # its seconds, then (a second line, for a timeline of the run) when it started after the run did
    printf '%d\n%d\n' $((SECONDS - start)) $((start - START)) >"$out.secs"
    mv "$out.part" "$out"
}
finish_all() { run_queue; wait; settle_lost; flush; }

# settle_lost : once every job has ended, an entry without a result file (its job died: killed,
# out of memory) or with an empty one (it ended without a verdict) is a failure that names it,
# so that flush goes on past it and no later result is lost
settle_lost() {
    local e
    for ((e = next_entry; e < n_entry; e++)); do
        if [ ! -f "$RESULTS/$e" ]; then
            printf 'FAIL\t%s: its job died before it gave a verdict\t%s\n' "${ENTRY_NAME[$e]:-entry $e}" "" >"$RESULTS/$e"
        elif [ ! -s "$RESULTS/$e" ]; then
            printf 'FAIL\t%s: it ended without a verdict\t%s\n' "${ENTRY_NAME[$e]:-entry $e}" "" >"$RESULTS/$e"
        fi
    done
}

# first <helper> <args...> : a long case (tens of seconds: contexts made and destroyed, a large
# size checked on the CPU), started at the head of the queue with the rebuilding cases, so that
# it does not start last and end the run late
first() {
    local EARLY=2
    "$@"
}

# alone <helper> <args...> : the case runs with no other case beside it (it times something, or
# reads the whole GPU), e.g. `alone gpu_check_large bash ../tests/like_for_like.sh ...`. Such
# cases wait until every other case has run, then run one at a time (run_alone_cases), so that
# none of them stops the pool in the middle of the run.
ALONE_QUEUE=()
alone() {
    local words
    words=$(printf '%q ' "$@")
    ALONE_QUEUE+=("$CHAPTER|${words% }")
}
run_alone_cases() {
    [ ${#ALONE_QUEUE[@]} -gt 0 ] || return 0
    finish_all
    record TEXT "alone (cases that time the GPU, each with nothing beside it)"
    local entry
    for entry in "${ALONE_QUEUE[@]}"; do
        local CHAPTER cmd RUN_ALONE=1
        IFS='|' read -r CHAPTER cmd <<<"$entry"
        eval "$cmd"
    done
    ALONE_QUEUE=()
}

# the slowest cases, as a pointer to where the time goes (one awk over the results: a fork per
# case would take seconds)
print_slowest() {
    [ $n_entry -gt 0 ] || return 0
    echo "the slowest cases (seconds):"
    (cd "$RESULTS" && awk -F '\t' '
        FNR == 1 && FILENAME ~ /\.secs$/ { k = FILENAME; sub(/\.secs$/, "", k); secs[k] = $0 }
        FNR == 1 && FILENAME !~ /\.secs$/ { name[FILENAME] = $2 }
        END { for (k in secs) print secs[k], name[k] }' $(ls | grep -E '^[0-9]+(\.secs)?$')) |
        sort -rn | head -n "${TEST_SLOWEST:-10}" | sed 's/^/  /'
    # and each chapter's case time summed (cases run side by side: the sum is its share of the run)
    (cd "$RESULTS" && awk -F '\t' '
        FNR == 1 && FILENAME ~ /\.secs$/ { k = FILENAME; sub(/\.secs$/, "", k); secs[k] = $0 }
        FNR == 1 && FILENAME !~ /\.secs$/ { n = $2; sub(/:.*/, "", n); name[FILENAME] = n }
        END { for (k in secs) if (k in name) sum[name[k]] += secs[k]
              for (c in sum) if (c ~ /^ch[0-9]/) printf "%s %d s\n", c, sum[c] }' $(ls | grep -E '^[0-9]+(\.secs)?$')) |
        sort | tr '\n' ',' | sed 's/,$//; s/,/, /g; s/^/case time by chapter: /; s/$/\n/'
}

# run_case <name> <expected exit> <grep pattern or ""> <env-prefix or ""> <command...>
# (the pattern is a grep regular expression; GREP_MODE=-F, set by a caller, makes it a fixed string)
run_case() {
    local name=$1 want=$2 pattern=$3 envp=$4
    shift 4
    submit case_job "$name" "$want" "$pattern" "$envp" "$ROOT/$CHAPTER" "${GREP_MODE:-}" "${PROGRAM_CASE:-0}" "$@"
}
# case_job <name> <want> <pattern> <env-prefix> <folder> <grep mode> <program case: 0|1> <command...>
case_job() {
    local name=$1 want=$2 pattern=$3 envp=$4 dir=$5 grep_mode=$6 program_case=$7
    shift 7
    local log="$LOG_DIR/case$ENTRY.log"
    # shellcheck disable=SC2086  # envp: VAR=value words
    ( cd "$dir" && env $envp timeout "$TIMEOUT" "$@" ) >"$log" 2>&1 </dev/null
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "(exit $got, expected $want: $*)" >>"$log"
        verdict FAIL "$name" "$log"
    elif [ -n "$pattern" ] && ! grep -q $grep_mode -- "$pattern" "$log"; then
        echo "(output lacks '$pattern': $*)" >>"$log"
        verdict FAIL "$name" "$log"
    elif [ "$program_case" = 1 ] && [ "$REQUIRE_GPU" = 1 ] && grep -q "skipped: needs sm_" "$log"; then
        # a version the program left out for this GPU or this build: not tested, so not passed
        echo "(a version was skipped, and REQUIRE_GPU=1: $*)" >>"$log"
        verdict FAIL "$name: a version skipped, and REQUIRE_GPU=1" "$log"
    else
        verdict PASS "$name"
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
# command is queued once per tool (sanitize_all runs the queue)
gpu_check() {
    if [ $HAVE_GPU = 0 ]; then record SKIP "$CHAPTER: $* (no GPU)"; return; fi
    if [ $SANITIZE = 1 ]; then
        [ "${SANITIZE_TOO:-1}" = 1 ] || return 0
        local tool
        # the words quoted (printf %q), so that an empty argument (--output "") survives the queue
        local words
        words=$(printf '%q ' "$@")
        # SANITIZE_TOOLS: fewer tools for a case (one a tool cannot run); SANITIZE_EXCLUDE: a kernel
        # of a library (a name substring) the tools leave out, where they report inside NVIDIA's
        # code and not in ours (the case file says which report, and why it is not ours)
        for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
            SANITIZE_QUEUE+=("$CHAPTER|$tool|${SANITIZE_EXCLUDE:-}|${words% }")
        done
    else
        local PROGRAM_CASE=1
        run_case "$CHAPTER: $*" 0 "" "" "$@"
    fi
}

# gpu_check_large <command...> : like gpu_check, but not repeated under the sanitizer's four
# tools: a large size, a timing run, or one more size of a path that the small, awkward
# gpu_check cases beside it already give the sanitizer (make sanitize stays within minutes)
gpu_check_large() {
    local SANITIZE_TOO=0
    gpu_check "$@"
}

# sanitize_only <command...> : a case for `make sanitize` alone: a size chosen for the tools
# (small and awkward) where the plain tests use a larger one
sanitize_only() {
    [ $SANITIZE = 1 ] || return 0
    gpu_check "$@"
}

# gpu_expect <exit> <pattern> <command...> : a GPU run with a given exit code and output
gpu_expect() {
    local want=$1 pattern=$2; shift 2
    if [ $HAVE_GPU = 0 ]; then record SKIP "$CHAPTER: $* (no GPU)"; return; fi
    [ $SANITIZE = 1 ] && return
    local PROGRAM_CASE=1
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

# copy_chapter <dir> : the built chapter and common/ copied under <dir> with their timestamps
# (so `make` there rebuilds only what an edit touches), datasets/, tests/ and the other chapters
# linked, so that an edited copy builds and runs like the original
copy_chapter() {
    local dir=$1 other
    rm -rf "$dir" && mkdir -p "$dir" && cp -a "$ROOT/common" "$dir/common" && cp -a "$ROOT/$CHAPTER" "$dir/$CHAPTER" &&
        ln -s "$ROOT/datasets" "$dir/datasets" && ln -s "$ROOT/tests" "$dir/tests" || return 1
    # the other chapters, read only: a chapter may compile another's kernels (ch12 builds ch11's)
    for other in "$ROOT"/ch[0-9]*/; do
        other=$(basename "$other")
        [ "$other" = "$CHAPTER" ] || ln -s "$ROOT/$other" "$dir/$other" || return 1
    done
}

# mutant <name> <file> <sed expression> <command...> : the chapter copied (with common/), <file>
# edited by the sed expression (it must change the file: else the test no longer fits the code)
# and the program rebuilt; the command, run in the copy, must exit 1 with FAIL in its output:
# the program's own checks catch the planted bug.
mutant() {
    [ $SANITIZE = 1 ] && return
    if [ $HAVE_GPU = 0 ]; then   # the run needs a GPU; that the edit still applies, not
        local copy
        copy=$(mktemp) || exit 3
        if plant_edit "$ROOT/$CHAPTER/$2" "$copy" "$3" >/dev/null; then
            record SKIP "$CHAPTER: mutant: $1 (no GPU)"
        else
            record FAIL "$CHAPTER: mutant: $1 (its edit no longer changes $2)"
        fi
        rm -f "$copy"
        return
    fi
    EARLY=1 submit mutant_job "$CHAPTER" "$@"
}
mutant_job() {
    local CHAPTER=$1 name=$2 file=$3 expr=$4; shift 4
    local dir="$LOG_DIR/mutant-$CHAPTER-$ENTRY" prog=${1#./}
    if ! (
        copy_chapter "$dir" && cd "$dir/$CHAPTER" && plant_edit "$ROOT/$CHAPTER/$file" "$file" "$expr" || exit 1
        make -s "$prog"
    ) >"$dir.build.log" 2>&1; then
        verdict FAIL "$CHAPTER: mutant: $name (the edit or the build failed)" "$dir.build.log"
        return
    fi
    case_job "$CHAPTER: mutant caught: $name" 1 "FAIL" "" "$dir/$CHAPTER" "" 0 "$@"
}

# On a GPU machine the emulated cases are skipped unless EMU=1: the GPU runs the same kernels for
# real, and every machine without one (CI's too) runs the emulation; it is a tenth of the case time
emu_on_gpu_skipped() { [ $HAVE_GPU = 1 ] && [ "${EMU:-0}" != 1 ]; }

# emu_check <program> <args...> : a host test that runs a chapter's kernels on CPU threads
# (tests/emu: every version, one shape, against the CPU in double). Runs everywhere, GPU or not;
# skipped, with the reason, where g++ has no C++20 <barrier> (tests/Makefile). EMU_ENV: variables
# for the run (EMU_SMS=3: a persistent kernel's blocks walk several tiles at a small size)
emu_check() {
    [ $SANITIZE = 1 ] && return
    if emu_on_gpu_skipped; then
        record OMIT "$CHAPTER: emulated: $* (a GPU is here and runs the kernels themselves; EMU=1 runs the emulation too)"
        return
    fi
    if [ -f "$ROOT/tests/bin/emu.unsupported" ]; then
        record SKIP "$CHAPTER: emulated: $* ($(cat "$ROOT/tests/bin/emu.unsupported"))"
        return
    fi
    run_case "$CHAPTER: emulated: ${EMU_ENV:+$EMU_ENV }$*" 0 "" "${EMU_ENV:-}" "$ROOT/tests/bin/$@"
}
# emu_mutant <name> <kernels file> <sed expression> <program> <args...> : emu_check on a copy of
# the chapter's kernels file (or of a .cuh header its kernels files include) with a planted bug,
# built in its own folder: it must FAIL (so the emulated checks can fail, and the emulation sees
# what the GPU's mutants plant)
emu_mutant() {
    [ $SANITIZE = 1 ] && return
    if emu_on_gpu_skipped; then
        record OMIT "$CHAPTER: emulated mutant: $1 (a GPU is here; EMU=1 runs the emulation too)"
        return
    fi
    if [ -f "$ROOT/tests/bin/emu.unsupported" ]; then
        record SKIP "$CHAPTER: emulated mutant: $1 ($(cat "$ROOT/tests/bin/emu.unsupported"))"
        return
    fi
    EARLY=1 submit emu_mutant_job "$CHAPTER" "${EMU_ENV:-}" "$@"
}
emu_mutant_job() {
    local CHAPTER=$1 envp=$2 name=$3 file=$4 expr=$5 prog=$6; shift 6
    local dir="$LOG_DIR/emu-mutant-$ENTRY" var
    case $file in
        attention_kernels.cu) var=EMU_ATTENTION_KERNELS ;;
        attention_hopper.cu) var=EMU_ATTENTION_HOPPER ;;
        attention_backward_kernels.cu) var=EMU_ATTENTION_BACKWARD_KERNELS ;;
        attention_backward_hopper.cu) var=EMU_ATTENTION_BACKWARD_HOPPER ;;
        matmul_kernels.cu) var=EMU_MATMUL_KERNELS ;;
        tensor_gemm_kernels.cu) var=EMU_TENSOR_GEMM_KERNELS ;;
        tensor_gemm_hopper.cu) var=EMU_TENSOR_GEMM_HOPPER ;;
        dnn_fused_kernels.cu) var=EMU_DNN_FUSED_KERNELS ;;
        gpt_kernels.cu) var=EMU_GPT_KERNELS ;;
        gpt_model.c) var=EMU_GPT_MODEL ;; # ch12's host step code, emulated with its kernels
        gpt_fused.c) var=EMU_GPT_FUSED ;;
        *.cuh) var="" ;; # a chapter's device header: the kernels built in the mutant's folder include its copy there first
        *) verdict FAIL "$CHAPTER: emulated mutant: $name (no emulation for $file)"; return ;;
    esac
    if ! mutant_build "$dir" "$file" "$expr" "$prog" "$var" >"$dir.build.log" 2>&1; then
        verdict FAIL "$CHAPTER: emulated mutant: $name (the edit or the build failed)" "$dir.build.log"
        return
    fi
    case_job "$CHAPTER: emulated mutant caught: $name" 1 "FAIL" "$envp" "$ROOT/$CHAPTER" "" 0 "$dir/$prog" "$@"
}
# mutant_build <folder> <file of $CHAPTER> <sed expression> <tests/Makefile target> <make variable
# naming the file, or ""> : the file copied into the folder with the edit made (which must change
# it), the target built there against the copy
mutant_build() {
    local dir=$1 file=$2 expr=$3 target=$4 var=$5
    rm -rf "$dir" && mkdir -p "$dir" && plant_edit "$ROOT/$CHAPTER/$file" "$dir/$file" "$expr" || return 1
    make -s -C "$ROOT/tests" BIN="$dir" ${var:+"$var=$dir/$file"} "$dir/$target"
}
# plant_edit <original> <copy> <sed expression> : the copy written with the edit made, which must
# change it (a mutant whose edit no longer applies would pass for the wrong reason); the diff shown
plant_edit() {
    cp "$1" "$2" && sed -i "$3" "$2" || return 1
    if cmp -s "$1" "$2"; then echo "the edit '$3' no longer changes $(basename "$1")"; return 1; fi
    diff "$1" "$2"
    return 0
}

# host_mutant <name> <file> <make variable> <host test> <sed expression> : a bug planted in a copy
# of the chapter's plain-C file, the host test built against it: the test must then fail (exit 1
# and a failed check), on every machine
host_mutant() {
    [ $SANITIZE = 1 ] && return
    submit host_mutant_job "$CHAPTER" "$@"
}
host_mutant_job() {
    local CHAPTER=$1 name=$2 file=$3 var=$4 prog=$5 expr=$6
    local dir="$LOG_DIR/host-mutant-$ENTRY"
    if ! mutant_build "$dir" "$file" "$expr" "$prog" "$var" >"$dir.build.log" 2>&1; then
        verdict FAIL "$CHAPTER: mutant: $name (the edit or the build failed)" "$dir.build.log"
        return
    fi
    case_job "$CHAPTER: mutant caught: $name" 1 "check failed" "" "$ROOT/$CHAPTER" "" 0 "$dir/$prog"
}

# solutions : the code solutions in the chapter's SOLUTIONS.md, each a ```diff block (paths
# relative to the chapter folder) followed by a ```sh check block (a check block without a diff
# checks the chapter as it is; one with a line `# alone: <why>` runs with no other case beside
# it). Everywhere: every diff still applies to the chapter. On the GPU, in a copy of the built
# chapter: the check must FAIL before the diff (else it proves nothing), then the diff is
# applied, the copy rebuilt, and the check must pass.
solutions() {
    local md="$ROOT/$CHAPTER/SOLUTIONS.md" dir="$LOG_DIR/solutions-$CHAPTER" i name title
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
    # the header's example (`make solution N=3`) must name a solution that has a diff to apply
    local example
    example=$(grep -om1 'make solution N=[0-9]*[a-z]*' "$md" | sed 's/.*N=//')
    local with_diff=""
    [ -z "$example" ] || with_diff=$(grep -lx "$example\. .*" "$dir"/*.name 2>/dev/null | sed 's/\.name$/.diff/' |
        while read -r d; do [ -f "$d" ] && echo "$d"; done)
    if [ -n "$example" ] && [ -z "$with_diff" ]; then
        record FAIL "$CHAPTER: SOLUTIONS.md's example 'make solution N=$example' names no solution with a diff"
    elif [ -n "$example" ]; then
        record PASS "$CHAPTER: SOLUTIONS.md's example 'make solution N=$example' has a diff"
    fi
    for name in $(ls "$dir"/*.name 2>/dev/null | sort -V); do
        i=$(basename "$name" .name)
        title=$(cat "$name")
        if [ ! -f "$dir/$i.check" ]; then
            record FAIL "$CHAPTER: solution \"$title\": a diff without a \`\`\`sh check block after it"
            continue
        fi
        # a check block without a diff checks the chapter as it is: it must check something in
        # the output (a grep, a RESULT number, the machine code, an exit code other than 0) or
        # say in a `# look for:` line what the reader should see
        if [ ! -f "$dir/$i.diff" ] &&
            ! grep -qE '^# look for:|grep|expect_output|result_check|kernel_code|like_for_like|expect [1-9]' "$dir/$i.check"; then
            record FAIL "$CHAPTER: solution \"$title\": a check block without a diff that only runs programs (add a check of the output, or a '# look for:' line)"
            continue
        fi
        # every check block says which wrong answer it tells from the right one
        if ! grep -q '^# rejects: ' "$dir/$i.check"; then
            record FAIL "$CHAPTER: solution \"$title\": a check block without a '# rejects:' line (the wrong answer it tells from the right one)"
            continue
        fi
        # a check that times the GPU says so in a line of its own, `# alone: <why>`; a check that
        # rebuilds (make) starts first, then diffs (a copy and a build) and checks of the chapter
        # as it is (whole program runs, often long ones)
        if grep -q '^# alone' "$dir/$i.check"; then
            # its copies are built in the pool with the others; only the checks run alone
            if [ -f "$dir/$i.diff" ]; then
                EARLY=1 submit solution_job "$CHAPTER" "$title" "$dir/$i" build
                alone submit solution_job "$CHAPTER" "$title" "$dir/$i" check
            else
                alone submit solution_job "$CHAPTER" "$title" "$dir/$i"
            fi
        elif runs_make "$dir/$i.check"; then
            EARLY=2 submit solution_job "$CHAPTER" "$title" "$dir/$i"
        else
            EARLY=1 submit solution_job "$CHAPTER" "$title" "$dir/$i"
        fi
    done
}

# runs_make <check block> : a command of the block (not a comment) runs make
runs_make() { grep -v '^[[:space:]]*#' "$1" | grep -q 'make '; }

# check_block <file> : a solution's check block, run in the current folder by
# tests/check_block.sh: every line counts (a `make ... && expect ...` whose make fails fails)
check_block() {
    timeout "$TIMEOUT" bash "$ROOT/tests/check_block.sh" "$1" </dev/null
}

solution_job() {   # solution_job <chapter> <title> <base> [all|build|check]
    local CHAPTER=$1 title=$2 base=$3 phase=${4:-all}
    local name="$CHAPTER: solution \"$title\"" copy
    if [ -f "$base.diff" ]; then
        if [ "$phase" != check ]; then
            solution_build "$name" "$base" || return 0
            [ "$phase" = build ] && return 0
        fi
        if [ ! -f "$base.built" ]; then   # the build phase failed and said so, or no GPU
            if [ $HAVE_GPU = 0 ]; then verdict SKIP "$name checked (no GPU)"; else verdict FAIL "$name checked: not run, its build failed (above)"; fi
            return
        fi
        # the check on the chapter as it is: it must fail, or it cannot tell the edit was made
        if (cd "$base/before/$CHAPTER" && check_block "$base.check") >"$base.before.log" 2>&1; then
            echo "(the check passed on the chapter without the diff: it proves nothing)" >>"$base.before.log"
            verdict FAIL "$name: its check passes without the diff" "$base.before.log"
            return
        fi
        verdict PASS "$name: its check fails without the diff"
        copy=$base/after
    else
        if [ $HAVE_GPU = 0 ]; then verdict SKIP "$name checked (no GPU)"; return; fi
        copy=$ROOT
        if runs_make "$base.check"; then
            # a check that rebuilds: in a copy, so the chapter's own build stays as it is
            copy=$base/copy
            copy_chapter "$copy" >"$base.log" 2>&1 || { verdict FAIL "$name (the copy failed)" "$base.log"; return; }
        fi
    fi
    if (cd "$copy/$CHAPTER" && check_block "$base.check") >"$base.after.log" 2>&1; then
        verdict PASS "$name checked"
    else
        verdict FAIL "$name checked" "$base.after.log"
    fi
}

# solution_build <name> <base> : two copies of the built chapter, base/before as it is and
# base/after with the diff applied and rebuilt (what the check runs: ./prog, a word of its own,
# not the ./ in ../datasets; or everything when the check runs make). Returns 1 when there is
# nothing to check (the diff does not apply, the build failed, or no GPU).
solution_build() {
    local name=$1 base=$2
    rm -f "$base.built"
    if ! { copy_chapter "$base/before" && (cd "$base/before/$CHAPTER" && git apply --check "$base.diff"); } >"$base.log" 2>&1; then
        verdict FAIL "$name no longer applies" "$base.log"
        return 1
    fi
    verdict PASS "$name applies"
    # without a GPU the copy is built only when asked (SOLUTION_BUILDS=1, as CI does): minutes
    # on a small machine
    if [ $HAVE_GPU = 0 ] && [ "${SOLUTION_BUILDS:-0}" != 1 ]; then
        verdict SKIP "$name fails before its diff and passes after (no GPU)"
        return 1
    fi
    local targets=""
    runs_make "$base.check" ||
        targets=$(grep -v '^[[:space:]]*#' "$base.check" | grep -oE '(^|[[:space:]])\./[A-Za-z0-9_]+' |
            sed 's|^[[:space:]]*\./||' | sort -u | tr '\n' ' ')
    # shellcheck disable=SC2086  # targets: several words
    if ! (copy_chapter "$base/after" && cd "$base/after/$CHAPTER" && git apply "$base.diff" && make -s $targets) \
        >"$base.build.log" 2>&1; then
        verdict FAIL "$name (the build failed)" "$base.build.log"
        return 1
    fi
    # a solution builds warning-free, as the chapters do
    if grep -qi 'warning' "$base.build.log"; then
        verdict FAIL "$name (its build warns)" "$base.build.log"
        return 1
    fi
    if [ $HAVE_GPU = 0 ]; then
        verdict PASS "$name builds warning-free"
        verdict SKIP "$name fails before its diff and passes after (no GPU)"
        return 1
    fi
    touch "$base.built"
}

# a case file's own error (a misspelt helper, a failing command): the ERR trap, set while the
# file runs, turns it into a failure instead of a case silently left out
case_file_error() {
    record FAIL "tests/$CHAPTER.sh: line $1 failed (exit $2): $3"
}

# ---- make sanitize: the queued runs, TEST_JOBS at a time, a line as each one finishes ----
# (an instrumented program keeps one CPU core busy and leaves most of the GPU idle, so several at
# once finish sooner)
SANITIZE_QUEUE=()
sanitize_job() {
    local i=$1 chapter tool exclude cmd
    IFS='|' read -r chapter tool exclude cmd <<<"${SANITIZE_QUEUE[$i]}"
    local start=$SECONDS
    [ -z "$exclude" ] || tool="$tool --kernel-name-exclude kns=$exclude"
    (cd "$ROOT/$chapter" && eval "timeout \"\$TIMEOUT\" \"\$SANITIZER\" --tool $tool --error-exitcode 99 $cmd") \
        >"$SANITIZE_DIR/$i.log" 2>&1 </dev/null
    echo "$? $((SECONDS - start))" >"$SANITIZE_DIR/$i.rc.part"
    mv "$SANITIZE_DIR/$i.rc.part" "$SANITIZE_DIR/$i.rc"
}
sanitize_report() {   # the runs that finished since the last call, one line each
    local i rc secs chapter tool exclude cmd
    for i in "${!SANITIZE_QUEUE[@]}"; do
        [ -z "${reported[$i]:-}" ] && [ -f "$SANITIZE_DIR/$i.rc" ] || continue
        reported[$i]=1
        n_done=$((n_done + 1))
        read -r rc secs <"$SANITIZE_DIR/$i.rc"
        IFS='|' read -r chapter tool exclude cmd <<<"${SANITIZE_QUEUE[$i]}"
        [ -z "$exclude" ] || tool="$tool (without $exclude)"
        if [ "$rc" = 0 ]; then
            passed=$((passed + 1))
            printf '[%d/%d] ok    %s %s %s (%d s)\n' $n_done ${#SANITIZE_QUEUE[@]} "$tool" "${chapter%%_*}" "$cmd" "$secs"
        else
            failed=$((failed + 1))
            failures+=("$chapter: $tool: $cmd")
            printf '[%d/%d] FAIL  %s %s %s (exit %s after %d s)\n' $n_done ${#SANITIZE_QUEUE[@]} "$tool" "${chapter%%_*}" "$cmd" "$rc" "$secs"
            sed -n '1,25p' "$SANITIZE_DIR/$i.log" | sed 's/^/        | /'
        fi
    done
}
sanitize_all() {
    [ ${#SANITIZE_QUEUE[@]} -gt 0 ] || return 0
    local i chapter tool exclude cmd
    SANITIZE_DIR="$LOG_DIR/sanitize"
    rm -rf "$SANITIZE_DIR" && mkdir -p "$SANITIZE_DIR"
    echo "compute-sanitizer: ${#SANITIZE_QUEUE[@]} runs, $JOBS at a time"
    declare -A reported=()
    n_done=0
    for i in "${!SANITIZE_QUEUE[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
            wait -n
            sanitize_report
        done
        sanitize_job "$i" &
    done
    while [ "$(jobs -rp | wc -l)" -gt 0 ]; do
        wait -n
        sanitize_report
    done
    wait
    sanitize_report
    # a run whose job died wrote no exit status: a failure that names it, not a run left out
    for i in "${!SANITIZE_QUEUE[@]}"; do
        [ -z "${reported[$i]:-}" ] || continue
        IFS='|' read -r chapter tool exclude cmd <<<"${SANITIZE_QUEUE[$i]}"
        failed=$((failed + 1))
        failures+=("$chapter: $tool: $cmd (no exit status: its job died)")
        printf 'FAIL  %s %s %s (no exit status: its job died)\n' "$tool" "${chapter%%_*}" "$cmd"
    done
    echo "the slowest:"
    for i in "${!SANITIZE_QUEUE[@]}"; do
        read -r rc secs <"$SANITIZE_DIR/$i.rc" 2>/dev/null && echo "$secs ${SANITIZE_QUEUE[$i]}"
    done | sort -rn | head -n 5 | sed 's/^/  /; s/|/: /g'
    SANITIZE_QUEUE=()
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
# With a GPU, the short GPU checks spend most of their time waiting for their context (a minimal
# one took 0.3 s alone and 2.5-3.3 s each with 16 started at once on an H100: the driver creates
# them about one at a time), not on a core: half as many slots again as cores, the builds at most
# one a core
if [ -z "${TEST_JOBS:-}" ] && [ $HAVE_GPU = 1 ] && [ $SANITIZE = 0 ]; then
    JOBS=$((CORES + CORES / 2))
fi
[ $SANITIZE = 1 ] || echo "$JOBS cases at a time (TEST_JOBS; at most $HEAVY_JOBS of the builds and long checks)"

# ---- host-only unit tests ----
if [ $SANITIZE = 0 ]; then
    echo "building host unit tests"
    if ! make -s -C tests -j"$JOBS" >"$LOG_DIR/build.log" 2>&1; then
        record FAIL "build host unit tests" "$LOG_DIR/build.log"
    fi
fi

for ch in "${CHAPTERS[@]}"; do
    CHAPTER=.
    if [ ! -f "tests/$ch.sh" ]; then
        record FAIL "$ch: no test cases (no tests/$ch.sh)"; continue
    fi
    [ $SANITIZE = 1 ] || record TEXT "$ch"
    CHAPTER=$ch
    if ! bash -n "tests/$ch.sh" 2>"$LOG_DIR/syntax-$ch.log"; then
        record FAIL "tests/$ch.sh does not parse" "$LOG_DIR/syntax-$ch.log"
        continue
    fi
    trap 'case_file_error $LINENO $? "$BASH_COMMAND"' ERR
    # shellcheck source=/dev/null
    . "tests/$ch.sh"
    trap - ERR
    solutions
done
finish_all
POOL_END=$SECONDS
run_alone_cases
finish_all
ALONE_END=$SECONDS
[ $SANITIZE = 1 ] || print_slowest

sanitize_all

if [ ${#failures[@]} -gt 0 ]; then
    echo
    echo "failed:"
    printf '  %s\n' "${failures[@]}"
    echo "(logs in $LOG_DIR)"
fi
# where the wall time went: the cases side by side, then those that run alone (then the sanitizers)
phases="side by side $((POOL_END - START)) s"
[ $ALONE_END = $POOL_END ] || phases="$phases, alone $((ALONE_END - POOL_END)) s"
[ $SANITIZE = 0 ] || phases="$phases, sanitizers $((SECONDS - ALONE_END)) s"
echo "($((SECONDS - START)) s: $phases)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
