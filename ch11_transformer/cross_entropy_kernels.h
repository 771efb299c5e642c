/* cross_entropy_kernels.h - launchers for cross_entropy_kernels.cu (callable from C). */
#ifndef CROSS_ENTROPY_KERNELS_H
#define CROSS_ENTROPY_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (the copy of the same bytes, in cross_entropy.c) .. 4; cross_entropy.c's version
 * table has one row for each. */
#define CE_VERSIONS 5
/* the widest vocabulary: version 4 keeps a row in shared memory, 227 KiB a block on sm_90
 * less its reduction slots (57344 floats = 224 KiB); the other versions take the same */
#define CE_MAX_CLASSES 57344

/* The mean cross-entropy of rows x classes logits (row-major, from cudaMalloc) with labels
 * y[r] in 0..classes-1, and its gradient: *d_loss = mean over rows of -log softmax(row)[y],
 * d_grad = (softmax(row) - onehot(y)) / rows. d_row_loss (rows floats) and d_probs (rows x
 * classes floats, version 1 only; may be NULL otherwise) are scratch. Version v (1..4);
 * returns cudaGetLastError(). Version 4 needs the opt-in shared memory of sm_80 and newer (the
 * launcher sets it, once). */
cudaError_t ce_launch(int v, const float *d_logits, const int *d_y, float *d_grad, float *d_loss, float *d_row_loss,
                      float *d_probs, int rows, int classes);
/* the same on rows `stride` floats apart (stride >= classes): logits, gradient and version 1's
 * probabilities alike, the columns past `classes` neither read nor written (a GPT's classifier
 * writes its logits with the vocabulary padded to a multiple of 128, so that its products' rows
 * stay aligned) */
cudaError_t ce_launch_strided(int v, const float *d_logits, const int *d_y, float *d_grad, float *d_loss,
                              float *d_row_loss, float *d_probs, int rows, int classes, int stride);
/* bytes of shared memory version 4 needs a block, for the device check before it runs */
size_t ce_shared_bytes(int classes);
/* Version 4 on bf16 logits (a mixed-precision classifier's: rows `stride` elements apart), the
 * gradient written in bf16 (rounded to nearest even), the arithmetic fp32: half the bytes each
 * way. d_grad may be d_logits itself (each row is read whole before any of it is written); its
 * columns from `classes` to `stride` are written 0, so a product over all of them adds nothing
 * from the padding. The row is kept in shared memory as bf16: ce_shared_bytes_bf16 a block;
 * rows of up to CE_WARP_CLASSES classes take a warp each instead (none). */
#define CE_WARP_CLASSES 1024
cudaError_t ce_launch_bf16(const uint16_t *d_logits, const int *d_y, uint16_t *d_grad, float *d_loss,
                           float *d_row_loss, int rows, int classes, int stride);
size_t ce_shared_bytes_bf16(int classes);

#ifdef __cplusplus
}
#endif
#endif
