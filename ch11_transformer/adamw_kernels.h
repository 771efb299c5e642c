/* adamw_kernels.h - launchers for adamw_kernels.cu (callable from C). */
#ifndef ADAMW_KERNELS_H
#define ADAMW_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (the copy of the same bytes, in adamw.c) .. 4; adamw.c's version table has one row
 * for each. */
#define ADAMW_VERSIONS 5

/* One tensor of the model: its parameters, gradients and the two moments (each n floats, from
 * cudaMalloc: 256-byte aligned) */
typedef struct {
    float *p;
    const float *g;
    float *m, *v;
    long long n;
    uint16_t *p16; /* if not NULL: the updated parameters also written here in bf16 (rounded to
                    * nearest even): a mixed-precision model's copy for its products, made by the
                    * step instead of a conversion before the next forward (ch12) */
} adamw_tensor;

/* What the step reads on the device, so that a schedule changes it without a new launch or
 * graph: the step count (incremented by the step itself: 1 on the first step) and the learning
 * rate; blocks_done is version 4's count of the blocks done with this step (0 between steps). */
typedef struct {
    int t;
    float lr;
    unsigned int blocks_done;
    float grad_scale; /* if not 0: every gradient multiplied by it first (a clip by the global
                       * norm, written on the device before the step: ch12); a zeroed state
                       * leaves the gradients as they are */
} adamw_state;

/* The chunks of the one-launch versions: chunk k is elements [start, start + ADAMW_CHUNK) of
 * tensor `tensor` (ADAMW_CHUNK: adamw_kernels.cu, 2048 unless built otherwise). Built once on
 * the host (adamw_chunks), copied to the device. */
typedef struct {
    int tensor;
    long long start;
} adamw_chunk;

/* How many chunks the tensors make; with list != NULL, also writes them there. */
int adamw_chunks(const adamw_tensor *tensors, int count, adamw_chunk *list);
/* the chunk the kernels were built with (ADAMW_CHUNK) */
int adamw_chunk_size(void);

/* One AdamW step over every tensor (betas 0.9 and 0.999, eps 1e-8, decoupled weight decay wd):
 * state->t += 1; then for every element (g times state->grad_scale unless that is 0)
 * m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
 * p -= lr (m / (1 - b1^t) / (sqrt(v / (1 - b2^t)) + eps) + wd p).
 *   v = 1: a launch per tensor (h_tensors on the host)
 *   v = 2, 3: one launch over every tensor (d_tensors, d_chunks on the device); 3 with float4
 *   v = 4: as 3, the count moved inside the same kernel (one kernel a step, not two)
 * Returns cudaGetLastError(). */
cudaError_t adamw_launch(int v, const adamw_tensor *h_tensors, const adamw_tensor *d_tensors,
                         const adamw_chunk *d_chunks, int count, int n_chunks, float wd, adamw_state *d_state);

#ifdef __cplusplus
}
#endif
#endif
