#!/usr/bin/env bash
# tests/tree_clean.sh - a build never changes a tracked file: no file git tracks is one that git
# is told to ignore (the build's outputs, the .build-flags stamps), and in a scratch clone of the
# tree, ch01_setup built for another ARCH, then `make clean`, then `make check-solution` (which
# needs a GPU, or exits 77 without one) each leave `git status` clean.
#   bash tests/tree_clean.sh        exit 0: clean; 1: a tracked file changed (listed); 77: no git
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v git >/dev/null 2>&1 && git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 ||
    { echo "tree_clean: not a git checkout"; exit 77; }
fail=0
tracked_ignored=$(git -C "$ROOT" ls-files -ci --exclude-standard)
if [ -n "$tracked_ignored" ]; then
    echo "tree_clean: tracked files that the build writes (git rm --cached them):"; echo "$tracked_ignored"
    fail=1
fi
WORK=$(mktemp -d)
LOG=$WORK.log
trap 'rm -rf "$WORK" "$LOG"' EXIT
# the committed tree plus what is changed here, as a repository of its own
(cd "$ROOT" && git ls-files -co --exclude-standard -z | grep -zE '^(common|ch01_setup|tests)/|^Makefile$' |
    xargs -0 cp --parents -t "$WORK") || exit 3
cd "$WORK" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm tree || exit 3
step() {   # step <what> <command...> : the command, then git status must be clean
    local what=$1; shift
    "$@" >"$LOG" 2>&1 || [ "$what" != "${what#make check-solution}" ] || { echo "tree_clean: $what failed:"; tail -n 5 "$LOG"; fail=1; }
    local changed
    changed=$(git status --porcelain)
    if [ -n "$changed" ]; then
        echo "tree_clean: after $what, git status shows:"; echo "$changed"; fail=1
    else
        echo "tree_clean: $what leaves git status clean"
    fi
}
step "make ARCH=sm_75 in ch01_setup" make -s -C ch01_setup ARCH=sm_75
step "make in ch01_setup (back to the default ARCH)" make -s -C ch01_setup
step "make check-solution N=1 in ch01_setup" make -s -C ch01_setup check-solution N=1
step "make clean in ch01_setup" make -s -C ch01_setup clean
exit $fail
