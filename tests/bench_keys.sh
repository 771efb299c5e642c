#!/usr/bin/env bash
# tests/bench_keys.sh - bench/keys.awk on made-up results: repeats of one measurement (one key,
# the same fields; also two versions' rows of one comparison) pass; two measurements under one
# key (a step's time and a training run's validation loss, as ch12's rows once were) fail with a
# line naming the key. Exit 0 when both hold.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cat >"$W/ok.txt" <<'ROWS'
# date=2026-12-06 gpu=Test GPU
RESULT chapter=ch07_cublas date=2026-12-06 prog=svd_pca name=cusolver_create size=1 ms=6.2 create_ms=6.2 check=none
RESULT chapter=ch07_cublas date=2026-12-06 prog=svd_pca name=cusolver_create size=1 ms=0.4 create_ms=0.4 check=none
RESULT chapter=ch12_gpt date=2026-12-06 prog=gpt name=torch_compare ver=0 size=L2 worst_rel=4e-07 check=PASS
RESULT chapter=ch12_gpt date=2026-12-06 prog=gpt name=torch_compare ver=8 size=L2 worst_rel=0.006 check=PASS
TRANSCRIPT chapter=ch12_gpt name=gpt_train step 1
ROWS
{ cat "$W/ok.txt"; cat <<'ROWS'
RESULT chapter=ch12_gpt date=2026-12-06 prog=gpt ver=8 name=fused_adamw size=L6 ms=3.2 tokens_s=2.5e+06 base=unfused ratio=6.0 check=none
RESULT chapter=ch12_gpt date=2026-12-06 prog=gpt ver=8 name=fused_adamw size=L6 val_loss=1.41 check=none
ROWS
} >"$W/clash.txt"
fail=0
if ! out=$(awk -f "$ROOT/bench/fields.awk" -f "$ROOT/bench/keys.awk" "$W/ok.txt"); then echo "bench_keys: repeats and versions reported as clashes: $out"; fail=1; fi
out=$(awk -f "$ROOT/bench/fields.awk" -f "$ROOT/bench/keys.awk" "$W/clash.txt")
rc=$?
if [ $rc != 1 ] || ! grep -q "share the key prog=gpt name=fused_adamw size=L6" <<<"$out"; then
    echo "bench_keys: a clash not reported (exit $rc): $out"; fail=1
fi
[ $fail = 0 ] && echo "bench_keys: repeats pass, two measurements under one key fail"
exit $fail
