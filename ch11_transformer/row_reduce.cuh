/* row_reduce.cuh - the reductions of a row that ch11's kernels share: a warp's max and sum by
 * shuffles, a block's by shuffles and one shared slot per warp, and the online softmax's
 * (max, sum) pairs (softmax_kernels.cu, cross_entropy_kernels.cu include it). */
#ifndef ROW_REDUCE_CUH
#define ROW_REDUCE_CUH
#include <math.h>

#define FULL_MASK 0xffffffffu

/* exp on the special function unit: ex2.approx of x log2(e); its relative error grows with |x|
 * (about |x| ulps), which the programs' tolerances allow; exp(-inf) = 0 */
__device__ __forceinline__ float fast_exp(float x) { return __expf(x); }

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v; /* every lane holds the warp's max */
}
__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

/* The block's max (or sum) in every thread: shuffles within each warp, one shared slot per
 * warp (slots: 32 floats), then every warp reduces the slots itself (no second broadcast) */
__device__ __forceinline__ float block_max(float v, float *slots)
{
    int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    v = warp_max(v);
    if (lane == 0) slots[threadIdx.x / 32] = v;
    __syncthreads();
    v = warp_max(lane < warps ? slots[lane] : -INFINITY);
    __syncthreads(); /* every warp has read the slots before they are reused */
    return v;
}
__device__ __forceinline__ float block_sum(float v, float *slots)
{
    int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    v = warp_sum(v);
    if (lane == 0) slots[threadIdx.x / 32] = v;
    __syncthreads();
    v = warp_sum(lane < warps ? slots[lane] : 0.0f);
    __syncthreads();
    return v;
}

/* The online softmax (Milakov and Gimelshein, 2018): a running max m and the sum d of exp(x - m)
 * over the elements seen so far. A larger x rescales the sum to the new max. A masked element
 * (-inf) adds nothing; it is skipped, since -inf - (-inf) would be NaN. */
__device__ __forceinline__ void online_add(float &m, float &d, float v)
{
    if (v == -INFINITY) return;
    if (v > m) {
        d = d * fast_exp(m - v) + 1.0f; /* m = -inf at the start: exp(-inf) = 0 */
        m = v;
    } else {
        d += fast_exp(v - m);
    }
}
/* two (max, sum) pairs of disjoint parts of a row into one */
__device__ __forceinline__ void online_merge(float &m, float &d, float m2, float d2)
{
    float mm = fmaxf(m, m2);
    if (mm == -INFINITY) return; /* both parts empty (all masked): d stays 0 */
    d = d * fast_exp(m - mm) + d2 * fast_exp(m2 - mm);
    m = mm;
}
/* a warp's pairs into one, in every lane */
__device__ __forceinline__ void warp_online_merge(float &m, float &d)
{
    for (int o = 16; o > 0; o >>= 1) online_merge(m, d, __shfl_xor_sync(FULL_MASK, m, o), __shfl_xor_sync(FULL_MASK, d, o));
}
/* a block's pairs into one, in every thread (slots: 64 floats) */
__device__ __forceinline__ void block_online_merge(float &m, float &d, float *slots)
{
    int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    warp_online_merge(m, d);
    if (lane == 0) slots[threadIdx.x / 32] = m, slots[32 + threadIdx.x / 32] = d;
    __syncthreads();
    m = lane < warps ? slots[lane] : -INFINITY;
    d = lane < warps ? slots[32 + lane] : 0.0f;
    warp_online_merge(m, d);
    __syncthreads();
}

#endif
