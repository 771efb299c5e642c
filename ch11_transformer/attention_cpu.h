/* attention_cpu.h - attention's CPU reference and the bound of its check, host-only C (no GPU,
 * no CUDA headers): attention.c checks every version with them, tests/test_attention.c tests
 * them, and tests/emu's emu_attention holds the kernels on CPU threads to the same bound. */
#ifndef ATTENTION_CPU_H
#define ATTENTION_CPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const float *q, *k, *v; /* the bf16 inputs as floats */
    int batch, heads, seq, dim, causal;
} attention_cpu_inputs;

/* One row of O in double: query `row` (0 .. B H S - 1) against the keys its head lets it see.
 * o[d] = sum_j p_j v[j][d] with p = softmax(s), s_j = q . k_j / sqrt(D). Also, for the bound:
 * mag[d] = sum_j p_j |v[j][d]| (the size of the terms, which the roundings of p scale), and
 * *logit_err, the float rounding of the worst logit: ulps of what its D products add up to; and,
 * where lse is not NULL, *lse = log sum_j exp(s_j), the row's log-sum-exp.
 * s: S doubles of scratch. */
void attention_row_cpu(const attention_cpu_inputs *in, size_t row, double *o, double *mag, double *logit_err,
                       double *s, double *lse);

/* Up to ATT_GROUP rows of one head (ascending) at once, to the bit what attention_row_cpu gives
 * each, faster: o, mag n x D, logit_err and lse n (lse may be NULL), s ATT_GROUP x S of scratch.
 * D at most 128. */
#define ATT_GROUP 16
void attention_rows_cpu(const attention_cpu_inputs *in, const size_t *rows, int n, double *o, double *mag,
                        double *logit_err, double *s, double *lse);

/* The bound on one element of O (o: the CPU's value, mag and logit_err: its row's, above) within
 * which every version must land: the roundings a kernel's bf16 and fp32 arithmetic may make. */
double attention_bound(double o, double mag, double logit_err, int dim, int seq);
/* The bound on a row's log-sum-exp (the CPU's lse, the row's logit_err): the logits' and l's
 * roundings as in attention_bound (log l moves by l's relative error), and lse's own float ulps */
double attention_lse_bound(double lse, double logit_err, int dim, int seq);

/* ---- the backward pass: given dO (the loss's gradient with respect to O), the gradients dQ, dK,
 * dV of one head in double, from P recomputed: P = softmax(S), S = Q K^T / sqrt(D) (masked when
 * causal), dV = P^T dO, dP = dO V^T, delta_i = sum_d dO_id O_id, dS = P o (dP - delta),
 * dQ = dS K / sqrt(D), dK = dS^T Q / sqrt(D). do_: the head's S x D rows of dO (floats, as the
 * bf16 inputs); lse: the head's S log-sum-exps of the scaled logits (what the forward saves: log
 * sum_j exp(s_ij)), written; dq, dk, dv: S x D each; scratch: 2 S doubles.
 * mag (NULL, or 3 S x D: dQ's, dK's, dV's): each element's sum of its terms' sizes, dS's from
 * P (sum_d |dO_id V_jd| + sum_d |dO_id O_id|), the sizes a kernel's roundings of P, dP and delta
 * (O in bf16) scale however much the sums cancel, for the bound. */
void attention_backward_head_cpu(const attention_cpu_inputs *in, const float *do_, size_t head, double *dq,
                                 double *dk, double *dv, double *lse, double *scratch, double *mag);
/* dQ's rows `rows` (n_rows query rows of the head) alone, each with its terms' sizes (dq, mag:
 * n_rows x D): a row of dQ needs its own row of P only, O(S D), where dK and dV need every row's
 * (the check at sizes where whole heads cost too much). scratch: 2 S doubles. */
void attention_backward_dq_rows_cpu(const attention_cpu_inputs *in, const float *do_, size_t head, const int *rows,
                                    int n_rows, double *dq, double *mag, double *scratch);
/* The bound on an element of dQ, dK or dV (want: the CPU's, mag: its terms' sizes; logit_err as
 * the forward's, the head's worst) within which every backward version must land */
double attention_backward_bound(double want, double mag, double logit_err, int dim, int seq);

#ifdef __cplusplus
}
#endif
#endif /* ATTENTION_CPU_H */
