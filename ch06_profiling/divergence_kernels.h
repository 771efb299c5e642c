/* divergence_kernels.h - launchers for divergence_kernels.cu (callable from C). */
#ifndef DIVERGENCE_KERNELS_H
#define DIVERGENCE_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* The two paths every thread chooses between: path 0 runs x = x*A0 + B0, path 1
 * x = x*A1 + B1, each `work` times. */
#define PATH0_A 0.999f
#define PATH0_B 0.001f
#define PATH1_A 0.998f
#define PATH1_B 0.002f

/* Versions 1 and 2; divergence.c's version table has one row for each. */
#define DIVERGENCE_VERSIONS 2

/* version 1 = branch on thread parity (odd/even: both paths in every warp),
 * version 2 = branch on warp parity (each warp takes one path). Same work either way. */
cudaError_t divergence_launch(int version, float *d_x, size_t n, int work, int block);

/* One warp prints which lanes take which branch, for both ways of branching. */
cudaError_t divergence_print_launch(void);

#ifdef __cplusplus
}
#endif
#endif
