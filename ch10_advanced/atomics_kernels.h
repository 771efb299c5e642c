/* atomics_kernels.h - launchers for atomics_kernels.cu (callable from C). */
#ifndef ATOMICS_KERNELS_H
#define ATOMICS_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* n threads: thread i does atomicAdd(&counters[i % spread], 1) */
cudaError_t count_launch(unsigned int *d_counters, unsigned int spread, size_t n);
/* *d_max = max of x[0..n) by atomicMax (the result starts at INT_MIN, set by the launcher) */
cudaError_t int_max_launch(const int *d_x, size_t n, int *d_max);
/* thread i: old[i] = atomicExch(slot, i + 1); *slot starts at 0 (set by the launcher) */
cudaError_t exchange_launch(unsigned int *d_slot, unsigned int *d_old, size_t n);
/* *d_max = max of x[0..n) with a float max built from atomicCAS (starts at -infinity) */
cudaError_t float_max_launch(const float *d_x, size_t n, float *d_max);

#ifdef __cplusplus
}
#endif
#endif
