/* layernorm_kernels.h - launchers for layernorm_kernels.cu (callable from C). */
#ifndef LAYERNORM_KERNELS_H
#define LAYERNORM_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (the copy of the same bytes, in layernorm.c) .. 3 of the forward pass;
 * layernorm.c's version table has one row for each. */
#define LN_VERSIONS 4
/* the longest row: version 3 holds it in registers, 1024 threads x 8 float4 */
#define LN_MAX_COLS 32768
#define LN_EPS 1e-5f
/* rows a block of the column sums (dgamma, dbeta) takes: its partial sums, one row of them a block */
#define LN_ROWS_PER_GROUP 64

/* Forward, rows x cols (row-major, from cudaMalloc): Y = (X - mean) * rstd * gamma + beta along
 * each row, rstd = 1 / sqrt(var + LN_EPS) with the biased variance; mean[r] and rstd[r] kept for
 * the backward pass. Version v (1..3). */
cudaError_t layernorm_forward_launch(int v, const float *d_x, const float *d_gamma, const float *d_beta, float *d_y,
                                     float *d_mean, float *d_rstd, int rows, int cols);
/* Version 3 with its output in bf16 (rounded to nearest even; the statistics and the arithmetic
 * fp32): the LayerNorm of a mixed-precision model whose next product reads bf16 operands (ch12),
 * 2 bytes an element written instead of 4, and no conversion kernel after it. */
cudaError_t layernorm_forward_bf16_launch(const float *d_x, const float *d_gamma, const float *d_beta, uint16_t *d_y,
                                          float *d_mean, float *d_rstd, int rows, int cols);
/* RMSNorm forward: Y = X * rrms * gamma, rrms = 1 / sqrt(mean(X^2) + LN_EPS); rrms[r] kept. */
cudaError_t rmsnorm_forward_launch(const float *d_x, const float *d_gamma, float *d_y, float *d_rrms, int rows,
                                   int cols);
/* Backward, from dY and the forward's X, mean, rstd: dX = rstd (dxh - mean(dxh) - xh mean(dxh xh))
 * with xh = (X - mean) rstd and dxh = dY gamma; dgamma = column sums of dY xh, dbeta = column sums
 * of dY, in a fixed order (partial sums of LN_ROWS_PER_GROUP rows, then their sum; no atomics).
 * d_partial holds 2 x ceil(rows / LN_ROWS_PER_GROUP) x cols floats. */
cudaError_t layernorm_backward_launch(const float *d_dy, const float *d_x, const float *d_mean, const float *d_rstd,
                                      const float *d_gamma, float *d_dx, float *d_dgamma, float *d_dbeta,
                                      float *d_partial, int rows, int cols);
/* The backward in one read of dY and X, dX added to what d_dx holds, for a pre-LN transformer's
 * backward, where the block's input gets the LayerNorm's gradient and the residual's: d_dx +=
 * the dX above, and, when d_dx16 is not NULL, the sum also written there in bf16 (rounded to
 * nearest even) for the next product. dgamma and dbeta as above, from partial sums of
 * LN_BWD_ROWS rows. When d_dsum is not NULL, the column sums of the new d_dx too (cols floats):
 * the residual's gradient is the gradient of the product that wrote the residual, so its column
 * sums are that product's bias gradient, from the rows this pass holds anyway. d_partial holds
 * 2 x ceil(rows / LN_BWD_ROWS) x cols floats, 3 x with d_dsum. */
#define LN_BWD_ROWS 16
cudaError_t layernorm_backward_add_launch(const float *d_dy, const float *d_x, const float *d_mean,
                                          const float *d_rstd, const float *d_gamma, float *d_dx, uint16_t *d_dx16,
                                          float *d_dgamma, float *d_dbeta, float *d_dsum, float *d_partial, int rows,
                                          int cols);

#ifdef __cplusplus
}
#endif
#endif
