/* monte_carlo_pi_kernels.cu - counting points inside the quarter circle, two ways.
 *
 *   monte_carlo_pi_kernel1  version 1: the points were generated into memory by the cuRAND
 *                        host API; read them (16-byte loads: two points) and count
 *   monte_carlo_pi_kernel2      version 2: each thread generates its own points with the device
 *                        API (Philox4_32_10, 4 numbers = 2 points per call) and counts them;
 *                        nothing but the count touches memory
 * Both reduce the counts within a warp with shuffles, then one atomicAdd per warp.
 */
#include "monte_carlo_pi_kernels.h"
#include <curand_kernel.h>

#define MC_PI_BLOCK 256

/* x^2 + y^2 <= 1 for u in (0, 1]: the point lies in the unit quarter circle. __fmul_rn and
 * __fadd_rn round each operation as written: nvcc would otherwise fuse a multiply and the add
 * into one FMA (one rounding, not two), and a point a hair from the circle could then count
 * differently here and in the CPU's count that checks this one exactly. */
__device__ __forceinline__ unsigned int inside(float x, float y)
{
    return __fadd_rn(__fmul_rn(x, x), __fmul_rn(y, y)) <= 1.0f;
}

/* Sum a per-thread count over the warp, then one lane adds it: 32x fewer atomics */
__device__ __forceinline__ void add_warp_count(unsigned int c, unsigned long long *d_count)
{
    for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(d_count, (unsigned long long)c);
}

__global__ void monte_carlo_pi_kernel1(const float4 *xy2, size_t n_pairs, const float *tail, int has_tail,
                                       unsigned long long *d_count)
{
    unsigned int c = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_pairs; i += (size_t)gridDim.x * blockDim.x) {
        float4 v = xy2[i]; /* two points */
        c += inside(v.x, v.y) + inside(v.z, v.w);
    }
    if (has_tail && blockIdx.x == 0 && threadIdx.x == 0) c += inside(tail[0], tail[1]);
    add_warp_count(c, d_count);
}

extern "C" cudaError_t count_inside_launch(const float *d_xy, size_t n_points, unsigned long long *d_count)
{
    size_t pairs = n_points / 2; /* cudaMalloc'd buffers are 256-byte aligned: float4 is safe */
    size_t blocks = (pairs + MC_PI_BLOCK - 1) / MC_PI_BLOCK;
    if (blocks > 132 * 16) blocks = 132 * 16; /* grid-stride: a few waves on the largest GPU */
    if (blocks == 0) blocks = 1;
    monte_carlo_pi_kernel1<<<(unsigned int)blocks, MC_PI_BLOCK>>>((const float4 *)d_xy, pairs, d_xy + 4 * pairs,
                                                                  (int)(n_points & 1), d_count);
    return cudaGetLastError();
}

__global__ void monte_carlo_pi_kernel2(unsigned long long seed, unsigned long long n, unsigned int per_thread,
                                       unsigned long long *d_count)
{
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long first = (unsigned long long)tid * per_thread;
    unsigned int c = 0;
    if (first < n) {
        unsigned int mine = n - first < per_thread ? (unsigned int)(n - first) : per_thread;
        /* One Philox state per thread: the same seed, the thread's id as the subsequence, so
         * the streams never overlap and the result depends only on the seed. (The book seeds
         * with clock(): different every run, so no run can be repeated or checked.) */
        curandStatePhilox4_32_10_t state;
        curand_init(seed, tid, 0, &state);
        unsigned int pairs = mine / 2;
        for (unsigned int i = 0; i < pairs; i++) {
            float4 u = curand_uniform4(&state); /* 4 uniforms in (0, 1]: two points */
            c += inside(u.x, u.y) + inside(u.z, u.w);
        }
        if (mine & 1) {
            float4 u = curand_uniform4(&state);
            c += inside(u.x, u.y);
        }
    }
    add_warp_count(c, d_count);
}

extern "C" cudaError_t pi_fused_launch(unsigned long long seed, unsigned long long n, unsigned int per_thread,
                                       unsigned long long *d_count)
{
    unsigned long long threads = (n + per_thread - 1) / per_thread;
    if (threads > (1ull << 31)) return cudaErrorInvalidValue;
    monte_carlo_pi_kernel2<<<(unsigned int)((threads + MC_PI_BLOCK - 1) / MC_PI_BLOCK), MC_PI_BLOCK>>>(
        seed, n, per_thread, d_count);
    return cudaGetLastError();
}
