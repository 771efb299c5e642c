#!/usr/bin/env bash
# common/demo.sh - what `make run` does in a chapter: each demo command (DEMO in the chapter's
# Makefile, commands separated by ';') run on its own, with one line each: passed (and the
# program's summary line), FAILED (its exit code and last lines), or skipped (exit 77: no
# usable GPU). Exits 1 if any command failed.
#   bash ../common/demo.sh './vecadd --quiet; ./mandelbrot --quiet'
# DEMO_TALLY=FILE: the counts are also added to FILE ("passed failed skipped"), for the root
# Makefile's total.
set -u
failed=0 n_pass=0 n_fail=0 n_skip=0
IFS=';' read -ra commands <<<"${1:-}"
for c in "${commands[@]}"; do
    c=$(sed 's/^ *//; s/ *$//' <<<"$c")
    [ -n "$c" ] || continue
    t0=$(date +%s%N)
    out=$(eval "$c" 2>&1)
    rc=$?
    secs=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')
    case $rc in
        0) n_pass=$((n_pass + 1))
           printf '  passed   %-48s %5s s  %s\n' "$c" "$secs" "$(grep -v '^RESULT' <<<"$out" | tail -n 1 | cut -c1-100)" ;;
        77) n_skip=$((n_skip + 1)); printf '  skipped  %-48s (no usable GPU)\n' "$c" ;;
        *) printf '  FAILED   %-48s exit %d\n' "$c" "$rc"
           tail -n 5 <<<"$out" | sed 's/^/           | /'
           n_fail=$((n_fail + 1)) failed=1 ;;
    esac
done
[ -z "${DEMO_TALLY:-}" ] || echo "$n_pass $n_fail $n_skip" >>"$DEMO_TALLY"
[ -n "${DEMO_TALLY:-}" ] || echo "$n_pass passed, $n_fail failed, $n_skip skipped"
exit $failed
