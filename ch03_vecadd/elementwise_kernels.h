/* elementwise_kernels.h - launchers for elementwise_kernels.cu (callable from C). */
#ifndef ELEMENTWISE_KERNELS_H
#define ELEMENTWISE_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* y = a * x over n floats */
cudaError_t scale_launch(float a, const float *d_x, float *d_y, size_t n, int block);
/* y = a * x + y over n floats (in place, as BLAS saxpy) */
cudaError_t saxpy_launch(float a, const float *d_x, float *d_y, size_t n, int block);

#ifdef __cplusplus
}
#endif
#endif
