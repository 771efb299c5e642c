/* monte_carlo_integral_kernels.cu - Monte Carlo integration with the CUDA math API, the
 * book's three integrands, in float or double (a template parameter T):
 *   0  log(x) sin(x)^2                              on [11.733, 18.472]
 *   1  1 / (1 + sinh(2x) log(x)^2)                  on [0.9, 4]
 *   2  cosh(x) sin(x) / sqrt(x^3 + sin(x)^2)        on [1.85, 4.81]
 * sin, log, sinh, cosh, pow and sqrt are overloaded for float and double in CUDA C++, so one
 * template gives both: with T = float they are the single-precision functions (sinf, ...).
 */
#include "monte_carlo_integral_kernels.h"
#include <curand_kernel.h>

#define MC_INTEGRAL_BLOCK 256

template <typename T, int WHICH> __device__ __forceinline__ T integrand(T x)
{
    if (WHICH == 0) {
        T s = sin(x);
        return log(x) * s * s;
    }
    if (WHICH == 1) {
        T l = log(x);
        return T(1) / (T(1) + sinh(T(2) * x) * l * l);
    }
    T s = sin(x);
    return cosh(x) * s / sqrt(pow(x, T(3)) + s * s);
}

/* a uniform number in (0, 1] in the working precision */
__device__ __forceinline__ float uniform(curandStatePhilox4_32_10_t *s, float) { return curand_uniform(s); }
__device__ __forceinline__ double uniform(curandStatePhilox4_32_10_t *s, double) { return curand_uniform_double(s); }

template <typename T, int WHICH>
__global__ void mc_kernel(T a, T width, unsigned long long seed, unsigned long long n, unsigned int per_thread,
                          double *d_sums)
{
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long first = (unsigned long long)tid * per_thread;
    T s = 0, s2 = 0; /* a thread's few thousand terms, summed in the working precision */
    if (first < n) {
        unsigned int mine = n - first < per_thread ? (unsigned int)(n - first) : per_thread;
        curandStatePhilox4_32_10_t state;
        curand_init(seed, tid, 0, &state); /* subsequence tid: reproducible, never overlapping */
        for (unsigned int i = 0; i < mine; i++) {
            T x = a + width * (T(1) - uniform(&state, T(0))); /* (0,1] -> [a, b) */
            T y = integrand<T, WHICH>(x);
            s += y;
            s2 += y * y;
        }
    }
    /* the warp's partial sums in double, then one atomic per warp */
    double ds = s, ds2 = s2;
    for (int off = 16; off > 0; off >>= 1) {
        ds += __shfl_down_sync(0xffffffffu, ds, off);
        ds2 += __shfl_down_sync(0xffffffffu, ds2, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&d_sums[0], ds);
        atomicAdd(&d_sums[1], ds2);
    }
}

template <typename T>
static cudaError_t launch_t(int which, T a, T width, unsigned long long seed, unsigned long long n,
                            unsigned int per_thread, double *d_sums)
{
    unsigned long long threads = (n + per_thread - 1) / per_thread;
    if (threads > (1ull << 31)) return cudaErrorInvalidValue;
    unsigned int blocks = (unsigned int)((threads + MC_INTEGRAL_BLOCK - 1) / MC_INTEGRAL_BLOCK);
    switch (which) {
    case 0: mc_kernel<T, 0><<<blocks, MC_INTEGRAL_BLOCK>>>(a, width, seed, n, per_thread, d_sums); break;
    case 1: mc_kernel<T, 1><<<blocks, MC_INTEGRAL_BLOCK>>>(a, width, seed, n, per_thread, d_sums); break;
    case 2: mc_kernel<T, 2><<<blocks, MC_INTEGRAL_BLOCK>>>(a, width, seed, n, per_thread, d_sums); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t mc_integral_launch(int precision, int which, double a, double b, unsigned long long seed,
                                          unsigned long long n, unsigned int per_thread, double *d_sums)
{
    if (precision == 32) return launch_t<float>(which, (float)a, (float)(b - a), seed, n, per_thread, d_sums);
    return launch_t<double>(which, a, b - a, seed, n, per_thread, d_sums);
}
