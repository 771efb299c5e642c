/* occupancy_kernels.h - launchers and queries for occupancy_kernels.cu (callable from C). */
#ifndef OCCUPANCY_KERNELS_H
#define OCCUPANCY_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 1 and 2; occupancy.c's version table has one row for each. */
#define OCCUPANCY_VERSIONS 2

#define OCCUPANCY_CHAINS 16 /* independent multiply-add chains per element in kernel 2 */

/* kernel 1 (light): y[i] = 2*x[i] + 1
 * kernel 2 (register-heavy): y[i] = sum of OCCUPANCY_CHAINS chains of `work` FMAs started from x[i]
 * smem: dynamic shared memory per block, allocated only to take room on the SM. */
cudaError_t occupancy_launch(int version, const float *d_x, float *d_y, size_t n, int work, int block, size_t smem);

/* The occupancy API's answer and the kernel's own resource use. */
cudaError_t occupancy_query(int version, int block, size_t smem, int *blocks_per_sm, int *regs_per_thread,
                            size_t *static_smem);

#ifdef __cplusplus
}
#endif
#endif
