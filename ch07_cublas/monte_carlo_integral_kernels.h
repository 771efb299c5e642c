/* monte_carlo_integral_kernels.h - launcher for monte_carlo_integral_kernels.cu (callable from C). */
#ifndef MONTE_CARLO_INTEGRAL_KERNELS_H
#define MONTE_CARLO_INTEGRAL_KERNELS_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

#define MC_INTEGRANDS 3

/* Draw n points x uniform in [a, b) (thread t: points t*per_thread.., Philox subsequence t)
 * and add sum f(x) to d_sums[0] and sum f(x)^2 to d_sums[1]. f is integrand `which`
 * (0..MC_INTEGRANDS-1), evaluated in float (precision 32) or double (64). */
cudaError_t mc_integral_launch(int precision, int which, double a, double b, unsigned long long seed,
                               unsigned long long n, unsigned int per_thread, double *d_sums);

#ifdef __cplusplus
}
#endif
#endif
