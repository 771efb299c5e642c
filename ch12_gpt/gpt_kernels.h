/* gpt_kernels.h - launchers for gpt_kernels.cu (callable from C): what a GPT needs that ch11 does
 * not have. Each is the GPU twin of a function of gpt_cpu.c, in fp32; all arrays row-major, from
 * cudaMalloc, N = B T rows. Each returns cudaGetLastError(). */
#ifndef GPT_KERNELS_H
#define GPT_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* x (N, C) = wte[tokens] + wpe[position] (gpt_embed_cpu) */
cudaError_t gpt_embed_launch(float *x, const int *tokens, const float *wte, const float *wpe, int B, int T, int C);
/* dwte[tokens[n]] += dx[n] (atomics: a token may appear many times); dwpe[t] += sum over the
 * batch of dx[b, t] (a thread a column, the batch in order: no atomics) */
cudaError_t gpt_embed_backward_launch(float *dwte, float *dwpe, const float *dx, const int *tokens, int B, int T, int C);

/* out (N, O) += b, each row */
cudaError_t gpt_bias_add_launch(float *out, const float *b, int N, int O);
/* db (O) = the column sums of d (N, O): each slab of GPT_COLUMN_SLAB rows summed into part
 * (scratch of ceil(N / GPT_COLUMN_SLAB) x O floats), then the slabs in order (no atomics) */
#define GPT_COLUMN_SLAB 256
cudaError_t gpt_column_sum_launch(float *db, const float *d, int N, int O, float *part);
/* version 6 on, a bias gradient from a bf16 product's output d (N, O): with pre, first d = d
 * GELU'(pre) in place (bf16, rounded to nearest even), then db (O) = the column sums of d as
 * stored, each slab of GPT_BF16_SLAB rows into part (scratch of ceil(N / GPT_BF16_SLAB) x O floats),
 * then the slabs in order by the last block of each strip of 256 columns to finish (count:
 * GPT_BF16_STRIPS counters, zero before the first launch and left zero by each). O a multiple of 8,
 * at most 256 GPT_BF16_STRIPS. */
#define GPT_BF16_SLAB 64
#define GPT_BF16_STRIPS 1024 /* 4C of the widest model gpt_config_error allows (C 65536) */
cudaError_t gpt_bias_grad_bf16_launch(float *db, unsigned short *d, const unsigned short *pre, int N, int O,
                                      float *part, unsigned *count);
/* out (n) = a + b; out may be a or b */
cudaError_t gpt_add_launch(float *out, const float *a, const float *b, size_t n);

/* GELU, tanh form (gpt_gelu_cpu); the backward writes dx = dout GELU'(x) */
cudaError_t gpt_gelu_launch(float *out, const float *x, size_t n);
cudaError_t gpt_gelu_backward_launch(float *dx, const float *dout, const float *x, size_t n);

/* Attention's heads: qkv (N, 3C) to q, k, v (B, H, T, C/H) each, and back (the backward's dq,
 * dk, dv into dqkv); y (B, H, T, C/H) to (N, C), and back */
cudaError_t gpt_split_heads_launch(float *q, float *k, float *v, const float *qkv, int B, int T, int C, int H);
cudaError_t gpt_join_qkv_launch(float *dqkv, const float *dq, const float *dk, const float *dv, int B, int T, int C,
                                int H);
cudaError_t gpt_merge_heads_launch(float *y, const float *yh, int B, int T, int C, int H);
cudaError_t gpt_unmerge_heads_launch(float *yh, const float *y, int B, int T, int C, int H);
/* the same four with the heads' tensors in bf16 bits (rounded to nearest even), as ch11's flash
 * attention reads and writes them */
cudaError_t gpt_split_heads_bf16_launch(unsigned short *q, unsigned short *k, unsigned short *v, const float *qkv, int B,
                                        int T, int C, int H);
cudaError_t gpt_join_qkv_bf16_launch(float *dqkv, const unsigned short *dq, const unsigned short *dk,
                                     const unsigned short *dv, int B, int T, int C, int H);
cudaError_t gpt_merge_heads_bf16_launch(float *y, const unsigned short *yh, int B, int T, int C, int H);
cudaError_t gpt_unmerge_heads_bf16_launch(unsigned short *yh, const float *y, int B, int T, int C, int H);
/* and with both sides in bf16 (version 5: qkv, its gradient and the merged heads in bf16) */
cudaError_t gpt_split_heads_bf16_bf16_launch(unsigned short *q, unsigned short *k, unsigned short *v,
                                             const unsigned short *qkv, int B, int T, int C, int H);
cudaError_t gpt_join_qkv_bf16_bf16_launch(unsigned short *dqkv, const unsigned short *dq, const unsigned short *dk,
                                          const unsigned short *dv, int B, int T, int C, int H);
/* and the join with dQ read from the fp32 sum ch11's backward leaves when given no dq (version 6
 * on: its pass to bf16 saved) */
cudaError_t gpt_join_qkv_acc_bf16_launch(unsigned short *dqkv, const float *dq_acc, const unsigned short *dk,
                                         const unsigned short *dv, int B, int T, int C, int H);
cudaError_t gpt_merge_heads_bf16_bf16_launch(unsigned short *y, const unsigned short *yh, int B, int T, int C, int H);

/* the causal mask on rows of T scores (B H T rows, row r is query r % T): -inf past the diagonal */
cudaError_t gpt_causal_mask_launch(float *s, long long rows, int T);
/* the softmax's backward on the same rows: ds = p (dp - sum_j p_j dp_j) scale, zero past the
 * diagonal (p is zero there) */
cudaError_t gpt_softmax_backward_launch(float *ds, const float *p, const float *dp, long long rows, int T, float scale);

/* out (n bf16 bits) = in rounded to nearest, ties to even: the operands of the bf16 products */
cudaError_t gpt_to_bf16_launch(unsigned short *out, const float *in, size_t n);

/* the gradient's global norm: *sumsq (one float, zeroed by the caller) += sum of g^2 over n */
cudaError_t gpt_sum_squares_launch(float *sumsq, const float *g, size_t n);
/* clipping: g *= min(1, clip / sqrt(*sumsq)), the norm read on the device */
cudaError_t gpt_clip_launch(float *g, size_t n, const float *sumsq, float clip);
/* the same factor, min(1, clip / norm), written to two places (AdamW's states' grad_scale)
 * instead of applied: one thread */
cudaError_t gpt_grad_scale_launch(float *scale0, float *scale1, const float *sumsq, float clip);

#ifdef __cplusplus
}
#endif
#endif
