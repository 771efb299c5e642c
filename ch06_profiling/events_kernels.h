/* events_kernels.h - launcher for events_kernels.cu (callable from C). */
#ifndef EVENTS_KERNELS_H
#define EVENTS_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* x[i] <- a * x[i] + b, repeated `reps` times for every element (n floats): a kernel whose
 * run time is set by reps, so that launch cost and run time can be told apart. */
cudaError_t busy_launch(float *d_x, size_t n, int reps, float a, float b, int block);

#ifdef __cplusplus
}
#endif
#endif
