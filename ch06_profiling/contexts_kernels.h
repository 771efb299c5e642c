/* contexts_kernels.h - the kernel of contexts.c and its runtime launcher (callable from C). */
#ifndef CONTEXTS_KERNELS_H
#define CONTEXTS_KERNELS_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

#define MULT_A 0.999f
#define MULT_B 0.001f

/* x[i] <- MULT_A * x[i] + MULT_B, reps times, for n floats, by blocks x threads threads (a
 * grid-stride loop: a small grid is the point, so that several of these kernels fit on the GPU
 * at once), queued on `stream`. */
cudaError_t mult_launch(float *d_x, int n, int reps, int blocks, int threads, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
