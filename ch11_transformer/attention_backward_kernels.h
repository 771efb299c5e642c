/* attention_backward_kernels.h - launchers for attention_backward_kernels.cu (callable from C).
 *
 * The backward pass of attention_kernels.h's O = softmax(Q K^T / sqrt(D)) V: given dO, the
 * gradients dQ, dK, dV (bf16 bits, (B, H, S, D) contiguous as Q, K, V), from Q, K, V, O, dO and
 * each query row's log-sum-exp (what the forward writes into attention_problem.lse), fp32
 * arithmetic. Causal: query i saw keys 0..i only, so only those pairs have gradients. */
#ifndef ATTENTION_BACKWARD_KERNELS_H
#define ATTENTION_BACKWARD_KERNELS_H
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "attention_kernels.h" /* attention_rows: where a head's rows are */
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (the library way: cuBLAS products around attention_bwd_rows_launch, in
 * attention_backward.c) .. 4; attention_backward.c's version table has one row for each. */
#define ATTENTION_BWD_VERSIONS 5

typedef struct {
    const uint16_t *q, *k, *v, *o, *d_o; /* bf16 bits, (B, H, S, D) */
    const float *lse;                    /* (B H S): the forward's log-sum-exps */
    uint16_t *dq, *dk, *dv;              /* bf16 bits, (B, H, S, D); versions 1-4 take dq NULL: dQ
                                          * is then left in dq_acc, fp32, for a caller that reads
                                          * it there (ch12's join of the heads: no pass to bf16) */
    float *delta;                        /* (B H S) floats of scratch: rowsum(dO o O) */
    float *dq_acc;                       /* (B H S D) floats of scratch: dQ summed over key blocks */
    int batch, heads, seq, dim;          /* dim: 64 or 128 */
    int causal;
    void *prepared; /* version 4's tensor maps (attention_bwd_prepare), NULL before */
    /* token rows, as attention_problem's (0: (B, H, S, D) contiguous): ld_qkv for Q, K, V and
     * dQ, dK, dV, ld_o for O and dO; delta, lse and dq_acc stay (B H S) contiguous. Version 4
     * only (attention_bwd_launch refuses the others). */
    int ld_qkv, ld_o;
} attention_bwd_problem;

/* Launch version v (1..ATTENTION_BWD_VERSIONS - 1) on stream 0; returns the launch error
 * (cudaErrorNotSupported: token rows, ld_qkv or ld_o set, for a version before 4). */
cudaError_t attention_bwd_launch(int v, const attention_bwd_problem *p);

/* NULL when version v can run on this GPU with this build, else the reason it cannot (versions 3
 * and 4: sm_90a's wgmma). Needs the current device (after lb_gpu_init). */
const char *attention_bwd_unavailable(int v);

/* The state bound to p's buffers that version 4 needs (the copy engine's tensor maps of Q, K, V,
 * dO and dq_acc): once, after the buffers are allocated and before the first launch, outside any
 * timing; attention_bwd_release frees it. A GPU without sm_90a gets none (p->prepared NULL). */
cudaError_t attention_bwd_prepare(attention_bwd_problem *p);
void attention_bwd_release(attention_bwd_problem *p);

/* Every version's first step: delta_i = sum_d dO_id O_id, a row's share of the softmax's
 * gradient (dS = P o (dP - delta)), into p->delta. */
cudaError_t attention_bwd_delta_launch(const attention_bwd_problem *p);

/* Version 0's row kernel, between its cuBLAS products: from the scores s (rows x seq fp32, row r
 * is query r % seq of its head, scaled by 1/sqrt(D)) and dp = dO V^T (the same shape), P =
 * exp(s - lse) and dS = P (dP - delta) / sqrt(D), both bf16 (the next products' inputs), zero
 * above the diagonal when causal. */
cudaError_t attention_bwd_rows_launch(const float *s, const float *dp, const float *lse, const float *delta,
                                      uint16_t *p, uint16_t *ds, long long rows, int seq, int dim, int causal);

/* Every tiled version (1-4) around its kernel (`kernel` launches it): delta, the fp32 sum of dQ
 * zeroed, the kernel, then dQ to bf16 (unless p->dq is NULL) */
cudaError_t attention_bwd_tiled(const attention_bwd_problem *p, cudaError_t (*kernel)(const attention_bwd_problem *p));

/* attention_backward_hopper.cu: versions 3 and 4 (sm_90a), for attention_backward_kernels.cu's table */
cudaError_t attention_bwd_launch3(const attention_bwd_problem *p);
cudaError_t attention_bwd_launch4(const attention_bwd_problem *p);
cudaError_t attention_bwd_hopper_prepare(attention_bwd_problem *p); /* version 4's tensor maps */
const char *attention_bwd_hopper_unavailable(void); /* lb_sm90a_unavailable's answer */

#ifdef __cplusplus
}
#endif
#endif
