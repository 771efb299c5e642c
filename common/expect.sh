# common/expect.sh - the `expect` of the SOLUTIONS.md check blocks, for your shell:
#   . ../common/expect.sh            (once, from a chapter folder; then paste a check block)
#   expect 1 ./prog --check-only     the command must exit 1; says so when it does not
#   expect_output 0 "PASS" ./prog    ... and print a line that matches the pattern
# tests/check_block.sh, which runs the blocks for `make test` and `make check-solution`, uses
# this same file.

# expect <exit> <command...>: run the command; it must exit with <exit>
expect() {
    local want=$1
    shift
    "$@"
    local got=$?
    [ "$got" = "$want" ] || { echo "(exit $got, expected $want: $*)"; return 1; }
}
# compute-sanitizer: the one the test runner found (SANITIZER), else the one on PATH or in the toolkit
compute-sanitizer() {
    local tool=${SANITIZER:-}
    [ -n "$tool" ] || tool=$(type -P compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    command "$tool" "$@"
}
# expect_output <exit> <pattern> <command...>: the command must exit with <exit> and print, on
# its output or its errors, a line that matches <pattern> (grep -E). Unlike `prog | grep`, whose
# status is grep's, a program that prints the line and then fails is caught.
expect_output() {
    local want=$1 pattern=$2 out got
    shift 2
    out=$("$@" 2>&1)
    got=$?
    printf '%s\n' "$out"
    [ "$got" = "$want" ] || { echo "(exit $got, expected $want: $*)"; return 1; }
    grep -qE -- "$pattern" <<<"$out" || { echo "(no line matches '$pattern': $*)"; return 1; }
}
