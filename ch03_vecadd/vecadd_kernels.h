/* vecadd_kernels.h - launchers for vecadd_kernels.cu (callable from C). */
#ifndef VECADD_KERNELS_H
#define VECADD_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (the memcpy ceiling, in vecadd.c) .. 3; vecadd.c's version table has a row for each. */
#define VECADD_VERSIONS 4

/* Launch kernel `version` (1..VECADD_VERSIONS-1) computing c = a + b over n floats; returns the launch error. */
cudaError_t vecadd_launch(int version, const float *d_a, const float *d_b, float *d_c, size_t n, int block);

#ifdef __cplusplus
}
#endif
#endif
