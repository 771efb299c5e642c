# common/expect.sh - the `expect` of the SOLUTIONS.md check blocks, for your shell:
#   . ../common/expect.sh            (once, from a chapter folder; then paste a check block)
#   expect 1 ./prog --check-only     the command must exit 1; says so when it does not
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
