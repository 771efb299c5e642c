/* streams_kernels.h - launcher for streams_kernels.cu (callable from C). */
#ifndef STREAMS_KERNELS_H
#define STREAMS_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

#define WORK_A 0.999f
#define WORK_B 0.001f

/* x[i] <- WORK_A * x[i] + WORK_B, reps times, for n floats, queued on `stream`. */
cudaError_t work_launch(float *d_x, size_t n, int reps, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
