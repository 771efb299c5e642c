# tests/ch01_setup.sh - cases for ch01_setup, sourced by tests/run.sh (helpers are defined there).
host_test test_common
host_test test_runner.sh
host_test fill_readmes.sh # make bench's README blocks (results and transcripts), on a made-up results file
host_test bench_keys.sh # make bench fails where two measurements share a key (a later BENCH_ONLY run would replace both)
# a build never changes a tracked file: in a checkout with nothing uncommitted (a clean clone, as
# CI's), where git's index is the truth; elsewhere it says why it did not run
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 && [ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]; then
    host_test tree_clean.sh
elif [ $SANITIZE = 0 ]; then
    record TEXT "  note  host: tree_clean.sh not run: not a git checkout without uncommitted changes (CI's clean clone runs it)"
fi

bad_input 2 "unknown argument '--bogus'" ./device_query --bogus
bad_input 2 "unknown argument '--size'" ./device_query --size 5
bad_input 0 'usage: device_query ' ./device_query --help
bad_input 2 'grid and block sizes must be positive' ./hello_threads --grid 0
bad_input 2 "--grid: 'abc' is not X or XxY" ./hello_threads --grid abc
bad_input 2 "--block: '2x2x2' is not X or XxY" ./hello_threads --block 2x2x2
bad_input 2 "--grid: '1x1x1x1' is not X or XxY" ./hello_threads --grid 1x1x1x1
bad_input 2 '--grid needs a value' ./hello_threads --grid
no_gpu ./device_query
no_gpu ./hello_threads

gpu_check ./device_query
gpu_check_large sh -c './device_query --json | python3 -m json.tool'
gpu_check_large ./hello_threads
gpu_check ./hello_threads --grid 3x2 --block 7x5
gpu_check_large ./hello_threads --grid 1 --block 1
gpu_check ./hello_threads --grid 1000x3 --block 333 --check-only
gpu_expect 2 "not allowed" ./hello_threads --block 2048
# make run's demo runner: a failed command is reported (and fails the tour), exit 77 is skipped
if [ $SANITIZE = 0 ]; then
    run_case "make run reports a failed demo" 1 "FAILED   sh -c 'exit 3'" "" bash ../common/demo.sh "true; sh -c 'exit 3'; true"
    run_case "make run skips a demo without a GPU" 0 "skipped  sh -c 'exit 77'" "" bash ../common/demo.sh "sh -c 'exit 77'"
    run_case "make run ends with its tally" 1 "^1 passed, 1 failed, 1 skipped$" "" bash ../common/demo.sh "true; sh -c 'exit 3'; sh -c 'exit 77'"
    # the tour is made from PROGS: every program of every chapter is in it
    # make help in a chapter lists its own targets, the solution ones among them
    run_case "make help in a chapter folder" 0 "make check-solution N=n" "" make -s --no-print-directory help
    run_case "make's help names the chapters' help" 0 "in a chapter folder" "" make -s --no-print-directory -C .. help
    run_case "make run's tour names every program" 0 "" "" bash -c 'for m in ../ch*/Makefile; do d=$(dirname $m); for p in $(make -s --no-print-directory -C $d print-progs); do make -s --no-print-directory -C $d print-demo | grep -q "\./$p " || { echo "$d: $p not in the tour"; exit 1; }; done; done'
fi
# make sanitize and make profile without their tools: one line, exit 2 (checked before building)
if [ $SANITIZE = 0 ]; then
    run_case "make sanitize without compute-sanitizer" 2 "compute-sanitizer not found" "" make -s -C .. sanitize SANITIZER=/no/such/compute-sanitizer
    run_case "make profile without ncu" 2 "ncu (Nsight Compute) not found" "" make -s -C .. profile NCU=/no/such/ncu PROG=ch04_matmul/matmul
fi

# make cpu-profile: the CPU Mandelbrot's profile, no GPU needed (gprof comes with binutils). 2048^2: a run
# of about half a second or more, so that gprof's 10 ms samples land (at 256^2, 24 ms, it could get none)
[ $SANITIZE = 1 ] || run_case "$CHAPTER: make cpu-profile names the hot function" 0 "escape_count_cpu" "" make -s --no-print-directory cpu-profile CPU_PROFILE_ARGS="--cpu-only --size 2048 --no-png"
