#!/usr/bin/env bash
# tests/test_runner.sh - the test runner's own test: tests/run.sh, copied into a scratch tree
# with a fake device_query and a fake chapter, must not turn a broken machine or a broken case
# file into a green run. Each scenario states the exit code and the output it must give.
#   bash tests/test_runner.sh        exit 0: every scenario as expected
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/tests" "$WORK/common" "$WORK/ch01_setup" "$WORK/ch98_fake"
cp "$ROOT/tests/run.sh" "$ROOT/tests/check_block.sh" "$ROOT/tests/result_check.sh" "$WORK/tests/"
cp "$ROOT/common/expect.sh" "$WORK/common/"
printf 'all:\n\t@true\n' >"$WORK/tests/Makefile"
# the fake device_query exits with $FAKE_GPU_EXIT (0: a GPU, 77: none, else: broken)
printf '#!/bin/sh\necho "fake GPU"\nexit ${FAKE_GPU_EXIT:-0}\n' >"$WORK/ch01_setup/device_query"
# the fake program: `prog bad` is a usage error (exit 2, one line), `prog ok` passes,
# `prog leaks` passes but the fake sanitizer finds an error in it
# `prog value` prints the number in the file value (41; a solution's diff makes it 42), `prog old`
# prints a skipped version's line, `prog sleep S` sleeps S seconds, `prog check41` fails unless
# the value is 41, `prog printfail` prints the value and exits 1
printf '#!/bin/sh\n[ "$1" = bad ] && { echo "prog: --size must be positive" >&2; exit 2; }\n[ "${FAKE_WANT_EMPTY:-0}" = 1 ] && { [ $# = 2 ] && [ -z "$2" ] || exit 3; }\n[ "$1" = value ] && echo "value $(cat value)"\n[ "$1" = old ] && echo "   3  wgmma   skipped: needs sm_90 or newer; this GPU is sm_80"\n[ "$1" = sleep ] && sleep "$2"\n[ "$1" = check41 ] && { [ "$(cat value)" = 41 ] || { echo "value FAIL"; exit 1; }; }\n[ "$1" = printfail ] && { echo "value $(cat value)"; exit 1; }\nexit 0\n' >"$WORK/ch98_fake/prog"
echo 41 >"$WORK/ch98_fake/value"
# the fake chapter's Makefile: prog is always built (a solution copy runs make)
printf 'prog:\n\t@true\n' >"$WORK/ch98_fake/Makefile"
# the fake compute-sanitizer: --tool T --error-exitcode N command...; exit N for `leaks`
printf '#!/bin/sh\ncode=$4; shift 4\ncase "$*" in *leaks*) echo "fake: 1 error"; exit $code ;; esac\nexec "$@"\n' >"$WORK/fakesan"
chmod +x "$WORK/ch01_setup/device_query" "$WORK/ch98_fake/prog" "$WORK/fakesan"
printf '' >"$WORK/tests/ch01_setup.sh"

failed=0
# scenario <name> <expected exit> <pattern that must appear> <case file text> [VAR=value...]
scenario() {
    local name=$1 want=$2 pattern=$3 cases=$4
    shift 4
    printf '%s\n' "$cases" >"$WORK/tests/ch98_fake.sh"
    rm -f "$WORK/ch98_fake/SOLUTIONS.md"
    [ -z "${SOLUTIONS:-}" ] || printf '%s\n' "$SOLUTIONS" >"$WORK/ch98_fake/SOLUTIONS.md"
    local out got
    # shellcheck disable=SC2086  # ARGS: the runner's arguments, as words
    out=$(cd "$WORK" && env -u REQUIRE_GPU -u SOLUTION_BUILDS "$@" TEST_LOG_DIR="$WORK/logs" bash tests/run.sh ${ARGS:-} 2>&1)
    got=$?
    [[ " $* " == *" FLATTEN=1 "* ]] && out=$(tr '\n' ' ' <<<"$out")   # a pattern across lines
    if [ "$got" != "$want" ] || ! grep -q -- "$pattern" <<<"$out"; then
        echo "FAIL  $name: exit $got (want $want), output must contain '$pattern':"
        sed 's/^/      | /' <<<"$out"
        failed=$((failed + 1))
    else
        echo "ok    $name"
    fi
}

good='bad_input 2 "--size must be positive" ./prog bad
gpu_check ./prog ok'
scenario "a GPU, every case passes" 0 "^2 passed, 0 failed, 0 skipped$" "$good" FAKE_GPU_EXIT=0
scenario "no GPU (exit 77): GPU checks skipped" 0 "^1 passed, 0 failed, 1 skipped$" "$good" FAKE_GPU_EXIT=77
scenario "device_query crashes: a failure, and the GPU checks run" 1 "^2 passed, 1 failed, 0 skipped$" "$good" FAKE_GPU_EXIT=139
scenario "device_query fails with a CUDA error (exit 3): a failure" 1 "device_query exited 3" "$good" FAKE_GPU_EXIT=3
scenario "REQUIRE_GPU=1 without a GPU fails" 1 "REQUIRE_GPU=1" "$good" FAKE_GPU_EXIT=77 REQUIRE_GPU=1
scenario "REQUIRE_GPU=1 with a GPU passes" 0 "^2 passed, 0 failed, 0 skipped$" "$good" FAKE_GPU_EXIT=0 REQUIRE_GPU=1
scenario "bad input: the right exit code with the wrong message fails" 1 "output lacks" \
    'bad_input 2 "--iters must be positive" ./prog bad' FAKE_GPU_EXIT=0
scenario "a case file that does not parse fails" 1 "does not parse" \
    'gpu_check ./prog ok
if [ 1 = 1 ]; then' FAKE_GPU_EXIT=0
scenario "a misspelt helper fails the run" 1 "line 2 failed (exit 127)" \
    'gpu_check ./prog ok
gpu_chek ./prog ok' FAKE_GPU_EXIT=0
scenario "a case file's failing command fails the run" 1 "failed (exit 1): false" 'false' FAKE_GPU_EXIT=0
ARGS=--sanitize scenario "sanitize: every GPU check under the four tools, in parallel" 0 \
    "^8 passed, 0 failed, 0 skipped$" "$good
gpu_check ./prog ok 2" FAKE_GPU_EXIT=0 COMPUTE_SANITIZER="$WORK/fakesan" SANITIZE_JOBS=3
ARGS=--sanitize scenario "sanitize: an empty argument reaches the program" 0 \
    "^4 passed, 0 failed, 0 skipped$" 'bad_input 2 "--size must be positive" ./prog bad
gpu_check ./prog ok ""' FAKE_GPU_EXIT=0 COMPUTE_SANITIZER="$WORK/fakesan" FAKE_WANT_EMPTY=1
ARGS=--sanitize scenario "sanitize: an error the sanitizer reports fails the run" 1 \
    "^4 passed, 4 failed, 0 skipped$" "$good
gpu_check ./prog leaks" FAKE_GPU_EXIT=0 COMPUTE_SANITIZER="$WORK/fakesan"
# a case whose job dies (killed, out of memory) is a failure that names it, and the cases after
# it still give their verdicts (the runner used to stop printing at it and exit 0)
scenario "a case whose job dies fails, and the cases after it still count" 1 \
    "FAIL  ch98_fake: dies: its job died.*FAIL  must fail.*1 passed, 2 failed, 0 skipped" \
    'dies() { kill -9 $BASHPID; }
submit dies
run_case "must fail" 0 "" "" false
gpu_check ./prog ok' FAKE_GPU_EXIT=0 FLATTEN=1
scenario "a case that ends without a verdict fails" 1 "quiet: it ended without a verdict" \
    'quiet() { true; }
submit quiet' FAKE_GPU_EXIT=0
ARGS=--sanitize scenario "sanitize: a run whose job dies fails" 1 "its job died.*0 passed, 4 failed" \
    'gpu_check ./prog ok
sanitize_job() { kill -9 $BASHPID; }' FAKE_GPU_EXIT=0 COMPUTE_SANITIZER="$WORK/fakesan" FLATTEN=1
ARGS=ch98 scenario "a chapter by its short name" 0 "^2 passed, 0 failed, 0 skipped$" "$good" FAKE_GPU_EXIT=0
ARGS=ch97 scenario "a chapter that does not exist: exit 2" 2 "no chapter ch97" "$good" FAKE_GPU_EXIT=0

# code solutions: the check must fail before the diff and pass after it; every line of a check
# block counts
diff_to_42='```diff
--- a/value
+++ b/value
@@ -1 +1 @@
-41
+42
```'
SOLUTIONS="## 1. make it 42
$diff_to_42
\`\`\`sh check
# rejects: the value left at 41
expect 0 sh -c './prog value | grep -q \"value 42\"'
\`\`\`" scenario "a solution: its check fails before its diff and passes after" 0 \
    '^5 passed, 0 failed, 0 skipped$' "$good" FAKE_GPU_EXIT=0
SOLUTIONS="## 1. make it 42
$diff_to_42
\`\`\`sh check
# rejects: the value left at 41
# alone: it times something
expect 0 sh -c './prog value | grep -q \"value 42\"'
\`\`\`" scenario "a solution marked alone: built in the pool, checked alone, before and after" 0 \
    'applies alone .*fails without the diff .*checked .*5 passed, 0 failed' "$good" FAKE_GPU_EXIT=0 FLATTEN=1
SOLUTIONS="## 1. make it 42
$diff_to_42
\`\`\`sh check
# rejects: the value left at 41
expect 0 ./prog value
\`\`\`" scenario "a solution whose check passes before its diff fails the run" 1 \
    'its check passes without the diff' "$good" FAKE_GPU_EXIT=0
SOLUTIONS="## 1. make it 42
$diff_to_42
\`\`\`sh check
# rejects: the value left at 41
false && expect 0 ./prog ok
expect 0 sh -c './prog value | grep -q \"value 42\"'
\`\`\`" scenario "a check block's failing command fails it, also before &&" 1 \
    'check line 2 failed' "$good" FAKE_GPU_EXIT=0
SOLUTIONS="## 1. make it 42
$diff_to_42
\`\`\`sh check
# rejects: the value left at 41
expect 0 sh -c './prog value | grep -q \"value 42\"'
\`\`\`" scenario "without a GPU a solution still must apply" 0 \
    '^2 passed, 0 failed, 2 skipped$' "$good" FAKE_GPU_EXIT=77
SOLUTIONS="## 1. make it 42
$diff_to_42
\`\`\`sh check
expect 0 sh -c './prog value | grep -q \"value 42\"'
\`\`\`" scenario "a check block without a '# rejects:' line fails" 1 \
    "without a '# rejects:' line" "$good" FAKE_GPU_EXIT=77
# a check block without a diff checks the chapter as it is: it checks the output or says what to look for
SOLUTIONS="## 1. run it
\`\`\`sh check
# rejects: the value left at 41
expect 0 ./prog ok
\`\`\`" scenario "a check block without a diff that only runs a program fails" 1 \
    "only runs programs" "$good" FAKE_GPU_EXIT=77
SOLUTIONS="## 1. run it
\`\`\`sh check
# rejects: the value left at 41
# look for: the value, 41
expect 0 ./prog value
\`\`\`" scenario "a check block without a diff that says what to look for passes" 0 \
    '^3 passed, 0 failed, 0 skipped$' "$good" FAKE_GPU_EXIT=0
SOLUTIONS="## 1. make it 42
$diff_to_42
\`\`\`sh check
# rejects: the value left at 41
expect 0 sh -c './prog value | grep -q \"value 42\"'
\`\`\`" scenario "without a GPU, SOLUTION_BUILDS=1 builds the solution's copy" 0 \
    'builds warning-free.*3 passed, 0 failed, 2 skipped' "$good" FAKE_GPU_EXIT=77 SOLUTION_BUILDS=1 FLATTEN=1
# the emulated cases: left out on a GPU machine (a skip REQUIRE_GPU=1 does not fail: the GPU runs
# the kernels themselves), run with EMU=1 and wherever there is no GPU
mkdir -p "$WORK/tests/bin" && printf '#!/bin/sh\necho emulated PASS\nexit 0\n' >"$WORK/tests/bin/fakeemu" &&
    chmod +x "$WORK/tests/bin/fakeemu"
emu='gpu_check ./prog ok
emu_check fakeemu 1 2 3'
scenario "emulated cases left out on a GPU machine, even under REQUIRE_GPU=1" 0 "^1 passed, 0 failed, 1 skipped$" \
    "$emu" FAKE_GPU_EXIT=0 REQUIRE_GPU=1
scenario "EMU=1 runs the emulated cases on a GPU machine" 0 "^2 passed, 0 failed, 0 skipped$" "$emu" FAKE_GPU_EXIT=0 \
    REQUIRE_GPU=1 EMU=1
scenario "without a GPU the emulated cases run" 0 "^1 passed, 0 failed, 1 skipped$" "$emu" FAKE_GPU_EXIT=77
# a version the program skips for the GPU: fine normally, a failure under REQUIRE_GPU=1
scenario "a version skipped for the GPU passes without REQUIRE_GPU" 0 "^1 passed, 0 failed, 0 skipped$" \
    'gpu_check ./prog old' FAKE_GPU_EXIT=0
scenario "REQUIRE_GPU=1 fails a version the program skips" 1 "a version skipped, and REQUIRE_GPU=1" \
    'gpu_check ./prog old' FAKE_GPU_EXIT=0 REQUIRE_GPU=1
# the job pool: a slow case first and a quick one after print in the case file's order, and
# together they take about the slow one's time
scenario "cases run at once and print in order" 0 "ok    ch98_fake: ./prog sleep 2.*ok    ch98_fake: ./prog sleep 0" \
    'gpu_check ./prog sleep 2
gpu_check ./prog sleep 0' FAKE_GPU_EXIT=0 TEST_JOBS=4 FLATTEN=1
# the early cases (builds, `first`) at most TEST_HEAVY_JOBS at once, the others beside them: two
# early cases of 2 s one after the other, the quick case in the free slot meanwhile
scenario "early cases at most TEST_HEAVY_JOBS at once" 0 "ok    ch98_fake: ./prog ok .*side by side [4-9] s" \
    'first gpu_check ./prog sleep 2
first gpu_check ./prog sleep 2
gpu_check ./prog ok' FAKE_GPU_EXIT=0 TEST_JOBS=2 TEST_HEAVY_JOBS=1 FLATTEN=1
scenario "a case marked alone runs after the others" 0 "ok    ch98_fake: ./prog sleep 1 .*alone .*ok    ch98_fake: ./prog ok" \
    'alone gpu_check ./prog ok
gpu_check ./prog sleep 1' FAKE_GPU_EXIT=0 FLATTEN=1
scenario "a mutant the program catches passes" 0 "ok    ch98_fake: mutant caught: value" \
    'mutant "value" value "s/41/43/" ./prog check41' FAKE_GPU_EXIT=0
scenario "a mutant the program does not catch fails the run" 1 "mutant caught: value" \
    'mutant "value" value "s/41/43/" ./prog value' FAKE_GPU_EXIT=0

# make solution / check-solution / unsolve (common/solution.sh) in the fake chapter
cp "$ROOT/common/solution.sh" "$WORK/common/"
printf '%s\n' "## 1. make it 42" "$diff_to_42" '```sh check' '# rejects: the value left at 41' "expect 0 sh -c './prog value | grep -q \"value 42\"'" '```' \
    >"$WORK/ch98_fake/SOLUTIONS.md"
tool() { (cd "$WORK/ch98_fake" && bash ../common/solution.sh "$@" 2>&1); }
# verdict_of <name> <expected exit> <pattern> <exit> <output> : one line, ok or FAIL with the output
verdict_of() {
    if [ "$4" = "$2" ] && grep -q -- "$3" <<<"$5"; then echo "ok    $1"; else
        echo "FAIL  $1: exit $4 (want $2), output must contain '$3':"; sed 's/^/      | /' <<<"$5"
        failed=$((failed + 1))
    fi
}
step() {   # step <name> <expected exit> <pattern> <solution.sh arguments...>
    local name=$1 want=$2 pattern=$3 out got
    shift 3
    out=$(tool "$@"); got=$?
    verdict_of "$name" "$want" "$pattern" "$got" "$out"
}
step "solution: its check fails before it is applied" 1 "check line 1 failed" check 1
step "solution: applied" 0 "solution 1 applied: value" apply 1
step "solution: its check passes once applied" 0 "its check passes" check 1
step "solution: applying twice is refused" 1 "applied already" apply 1
step "solution: taken out" 0 "taken out" undo 1
[ "$(cat "$WORK/ch98_fake/value")" = 41 ] || { echo "FAIL  solution: value not back to 41"; failed=$((failed + 1)); }
step "solution: a number without a solution" 2 "no solution 7" apply 7
FAKE_GPU_EXIT=77 step "solution: its check without a GPU says so, exit 77" 77 "check needs a GPU" check 1

# a check block's pipe fails when its program does; expect_output checks the exit and the line
block() {   # block <name> <expected exit> <pattern> <check block text>
    local name=$1 want=$2 pattern=$3 out got
    printf '%s\n' "$4" >"$WORK/block"
    out=$(cd "$WORK/ch98_fake" && bash ../tests/check_block.sh "$WORK/block" 2>&1); got=$?
    verdict_of "$name" "$want" "$pattern" "$got" "$out"
}
block "check block: a pipe whose program fails fails" 1 "check line 1 failed" './prog printfail | grep -q "value 41"'
block "check block: expect_output, the line printed but the exit wrong, fails" 1 "exit 1, expected 0" \
    'expect_output 0 "value 41" ./prog printfail'
block "check block: expect_output, the exit right but no such line, fails" 1 "no line matches" \
    'expect_output 0 "value 42" ./prog value'
block "check block: expect_output with the exit and the line passes" 0 "value 41" 'expect_output 1 "^value 4[0-9]$" ./prog printfail'

# result_check: every name in the condition is a field of the RESULT line with a number (awk
# would read a misspelt name as 0, and "ratoi < 0.07" would hold)
printf '#!/bin/sh\necho "RESULT prog=p ver=1 name=x ratio=0.5 check=PASS"\n' >"$WORK/resultprog"
chmod +x "$WORK/resultprog"
block "result_check: a name the line lacks fails" 1 "'ratoi' .* is not a field" \
    "bash ../tests/result_check.sh ver=1 'ratoi < 0.07' $WORK/resultprog"
block "result_check: a field without a number fails" 1 "'check' .* is not a field" \
    "bash ../tests/result_check.sh ver=1 'check > 0' $WORK/resultprog"
block "result_check: a condition that does not hold fails" 1 "does not hold" \
    "bash ../tests/result_check.sh ver=1 'ratio < 0.07' $WORK/resultprog"
block "result_check: a condition that holds passes" 0 "holds" \
    "bash ../tests/result_check.sh ver=1 'ratio > 0.3 && ratio < 1e1' $WORK/resultprog"

[ $failed = 0 ] && echo "test_runner: all scenarios as expected"
[ $failed = 0 ]
