#!/usr/bin/env bash
# tests/fill_readmes.sh - bench/fill_readmes.sh on a made-up results file, in a folder of its own
# (no tracked README is touched): a results block gets its rows, a transcript block its lines in
# order (blank and indented ones kept), a block of a name with no lines says it was not run, and
# the text around the blocks stays as it was. Exit 0 when all hold.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/bench" "$W/ch99_demo"
cp "$ROOT/bench/fill_readmes.sh" "$ROOT/bench/fill_readmes.awk" "$ROOT/bench/fields.awk" "$W/bench/"
cat >"$W/ch99_demo/README.md" <<'EOF'
before
<!-- results prog=demo -->
old table
<!-- /results -->
between
<!-- transcript name=demo_log -->
old log
<!-- /transcript -->
<!-- transcript name=demo_none -->
old
<!-- /transcript -->
after
EOF
cat >"$W/r.txt" <<'EOF'
# date=2026-12-06 gpu=Test GPU driver=1 cuda=13.0
RESULT chapter=ch99_demo date=2026-12-06 prog=demo ver=1 name=one size=8 ms=1.5000 gbps=2 base=memcpy ratio=0.500 check=PASS
TRANSCRIPT chapter=ch99_demo name=demo_log step 1: loss 4.0
TRANSCRIPT chapter=ch99_demo name=demo_other not this block's
TRANSCRIPT chapter=ch99_demo name=demo_log 
TRANSCRIPT chapter=ch99_demo name=demo_log   indented, 100% kept
EOF
cat >"$W/want.md" <<'EOF'
before
<!-- results prog=demo -->

| ver | name | size | ms | rate | speed vs baseline | check |
|---|---|---|---|---|---|---|
| 1 | one | 8 | 1.5000 | 2 GB/s | 0.50x memcpy | PASS |

Test GPU, 2026-12-06 (from `make bench`, bench/r.md)

<!-- /results -->
between
<!-- transcript name=demo_log -->

```text
step 1: loss 4.0

  indented, 100% kept
```

Test GPU, 2026-12-06 (from `make bench`, bench/r.md)

<!-- /transcript -->
<!-- transcript name=demo_none -->

(not run yet: `make bench` fills this block)

<!-- /transcript -->
after
EOF
(cd "$W" && bash bench/fill_readmes.sh r.txt) || { echo "fill_readmes: exit $?"; exit 1; }
if ! diff "$W/want.md" "$W/ch99_demo/README.md"; then
    echo "fill_readmes: the README above is not what the results file makes (< wanted, > got)"
    exit 1
fi
echo "fill_readmes: results and transcript blocks filled as wanted"
