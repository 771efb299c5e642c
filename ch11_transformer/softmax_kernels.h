/* softmax_kernels.h - launchers for softmax_kernels.cu (callable from C). */
#ifndef SOFTMAX_KERNELS_H
#define SOFTMAX_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (the copy of the same bytes, in softmax.c) .. 5; softmax.c's version table has one
 * row for each. */
#define SOFTMAX_VERSIONS 6
/* the longest row: version 5 holds a row in registers, 1024 threads x 8 float4 (32 floats a
 * thread, inside the 64 registers a thread of a 1024-thread block may have) */
#define SOFTMAX_MAX_COLS 32768

/* Y = softmax(X) along each row: X and Y are rows x cols, row-major, from cudaMalloc (256-byte
 * aligned), cols 1..SOFTMAX_MAX_COLS. -inf entries (a mask) give 0; a row must hold a finite
 * entry. Version v (1..5) of the kernels; returns cudaGetLastError(). */
cudaError_t softmax_launch(int v, const float *d_x, float *d_y, int rows, int cols);

#ifdef __cplusplus
}
#endif
#endif
