/* reduce_kernels.h - launchers for reduce_kernels.cu (callable from C). */
#ifndef REDUCE_KERNELS_H
#define REDUCE_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

#define REDUCE_VERSIONS 9 /* 0 (CUB) .. 8; reduce.c's version table has a row for each */

/* Bytes of device scratch that version v needs for n elements (partial sums, CUB's temp). */
size_t reduce_scratch_bytes(int version, size_t n);

/* *d_out = sum of d_in[0..n), by version v (0 = cub::DeviceReduce::Sum); d_scratch holds
 * scratch_bytes >= reduce_scratch_bytes(v, n) bytes. Queued on stream 0; returns the launch error. */
cudaError_t reduce_launch(int version, const float *d_in, size_t n, float *d_out, void *d_scratch,
                          size_t scratch_bytes);

/* version 0, in reduce_cub.cu (CUB's headers compiled apart from our kernels) */
size_t reduce_cub_scratch_bytes(size_t n);
cudaError_t reduce_cub(const float *d_in, size_t n, float *d_out, void *d_scratch, size_t scratch_bytes);

#ifdef __cplusplus
}
#endif
#endif
