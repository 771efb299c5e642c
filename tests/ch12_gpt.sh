# tests/ch12_gpt.sh - cases for ch12_gpt, sourced by tests/run.sh (helpers are defined there).
# The model on the CPU and the data code (tests/test_gpt.c: the gradient against central
# differences, known answers, bad text files and checkpoints), then the planted bugs, each
# in a copy of gpt_cpu.c that test_gpt must then fail (tests/gpt_mutant.sh)
host_test test_gpt
gpt_mutant() {   # gpt_mutant <name> <sed expression on gpt_cpu.c>
    [ $SANITIZE = 1 ] && return
    run_case "$CHAPTER: mutant caught (CPU model): $1" 0 "gpt_mutant: caught" "" bash "$ROOT/tests/gpt_mutant.sh" "$2"
}
gpt_mutant "the GELU derivative of the erf form" \
    's/dx\[i\] += dout\[i\] \* (0.5 \* (1.0 + t) + 0.5 \* x\[i\] \* (1.0 - t \* t) \* du);/dx[i] += dout[i] * (0.5 * (1.0 + erf(x[i] \/ sqrt(2.0))) + x[i] * exp(-0.5 * x[i] * x[i]) * 0.3989422804014327);/'
gpt_mutant "the residual's gradient dropped" \
    's/memcpy(dmid, d, sizeof(double) \* NC);/memset(dmid, 0, sizeof(double) * NC);/'
gpt_mutant "the position embedding's gradient summed over the batch index" \
    's/dwpe\[(size_t)(n % T) \* C + c\] += dx/dwpe[(size_t)(n \/ T) * C + c] += dx/'
gpt_mutant "the tied token embedding's gradient counted once (the classifier's share alone)" \
    's/dwte\[(size_t)tokens\[n\] \* C + c\] += dx\[(size_t)n \* C + c\];/(void)dwte;/'
gpt_mutant "the causal mask one key too far (forward and backward alike)" \
    's/j <= i;/j <= i + 1 \&\& j < T;/g; s/if (j > i) continue;/if (j > i + 1) continue;/'
