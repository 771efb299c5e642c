/* monte_carlo_pi_kernels.h - launchers for monte_carlo_pi_kernels.cu (callable from C). */
#ifndef MONTE_CARLO_PI_KERNELS_H
#define MONTE_CARLO_PI_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Version 1, second half: count the points (xy[2i], xy[2i+1]) inside the unit quarter circle
 * and add the count to *d_count. */
cudaError_t count_inside_launch(const float *d_xy, size_t n_points, unsigned long long *d_count);

/* Version 2, fused: thread t draws points t*per_thread .. min(n, (t+1)*per_thread) - 1 from
 * its own Philox subsequence (curand_init(seed, t, 0)) and the count is added to *d_count.
 * The result depends only on seed, n and per_thread: the same on any GPU. */
cudaError_t pi_fused_launch(unsigned long long seed, unsigned long long n, unsigned int per_thread,
                            unsigned long long *d_count);

#ifdef __cplusplus
}
#endif
#endif
