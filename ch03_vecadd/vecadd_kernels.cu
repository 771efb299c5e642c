/* vecadd_kernels.cu - the vector-add kernels of vecadd.c: c[i] = a[i] + b[i].
 *
 *   1  one thread per element: the book's kernel, index = blockIdx.x * blockDim.x + threadIdx.x
 *   2  one float4 (16 bytes) per thread: a quarter of the threads and of the load instructions
 *   3  four float4 per thread, all loads issued before any add: more bytes in flight per thread
 *
 * Each is bounded by memory: 12 bytes move per element (two 4-byte reads, one write) against
 * 1 add, so the best any of them can do is the copy bandwidth that cudaMemcpy reaches.
 */
#include "vecadd_kernels.h"

/* ---------------------------------------------------------------- kernels */

__global__ void vecadd_kernel1(const float *a, const float *b, float *c, size_t n)
{
    /* size_t: with more than 2^31 elements an int index would wrap around */
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) /* the last block sticks out past n when n % blockDim.x != 0 */
        c[i] = a[i] + b[i];
}

/* The float4 kernels read a, b, c as arrays of 16-byte vectors: one instruction moves four
 * floats. cudaMalloc returns 256-byte aligned memory, so the vectors are aligned. The 0..3
 * floats past the last whole vector are added by the threads of the tail check. */
__device__ __forceinline__ float4 add4(float4 x, float4 y)
{
    return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

__device__ __forceinline__ void add_tail(const float *a, const float *b, float *c, size_t n, size_t t)
{
    size_t i = (n & ~(size_t)3) + t; /* first float after the whole vectors, plus t */
    if (t < 3 && i < n) c[i] = a[i] + b[i];
}

__global__ void vecadd_kernel2(const float *a, const float *b, float *c, size_t n)
{
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t n4 = n / 4;
    if (t < n4) {
        float4 x = reinterpret_cast<const float4 *>(a)[t];
        float4 y = reinterpret_cast<const float4 *>(b)[t];
        reinterpret_cast<float4 *>(c)[t] = add4(x, y);
    }
    add_tail(a, b, c, n, t);
}

#ifndef VEC_PER_THREAD
#define VEC_PER_THREAD 4 /* tunable: make VEC_PER_THREAD=8 */
#endif
__global__ void vecadd_kernel3(const float *a, const float *b, float *c, size_t n)
{
    /* A block handles VEC_PER_THREAD * blockDim.x consecutive vectors; thread t takes
     * vectors t, t + blockDim.x, ... so that each load instruction of the warp is still
     * 32 consecutive vectors (coalesced). */
    size_t n4 = n / 4;
    size_t base = (size_t)blockIdx.x * blockDim.x * VEC_PER_THREAD + threadIdx.x;
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    float4 *c4 = reinterpret_cast<float4 *>(c);
    float4 x[VEC_PER_THREAD], y[VEC_PER_THREAD];
#pragma unroll
    for (int k = 0; k < VEC_PER_THREAD; k++) { /* issue every load first ... */
        size_t i = base + (size_t)k * blockDim.x;
        if (i < n4) {
            x[k] = a4[i];
            y[k] = b4[i];
        }
    }
#pragma unroll
    for (int k = 0; k < VEC_PER_THREAD; k++) { /* ... then use them: 8 loads in flight */
        size_t i = base + (size_t)k * blockDim.x;
        if (i < n4) c4[i] = add4(x[k], y[k]);
    }
    if (blockIdx.x == 0) add_tail(a, b, c, n, threadIdx.x);
}

/* ---------------------------------------------------------------- launchers */

static unsigned int blocks_for(size_t items, int per_block)
{
    return (unsigned int)((items + (size_t)per_block - 1) / (size_t)per_block);
}

extern "C" cudaError_t vecadd_launch(int version, const float *d_a, const float *d_b, float *d_c, size_t n, int block)
{
    size_t n4 = n / 4;
    switch (version) {
    case 1: vecadd_kernel1<<<blocks_for(n, block), block>>>(d_a, d_b, d_c, n); break;
    case 2: /* at least one block so that a tail of 1..3 floats is added */
        vecadd_kernel2<<<blocks_for(n4 ? n4 : 1, block), block>>>(d_a, d_b, d_c, n);
        break;
    case 3: vecadd_kernel3<<<blocks_for(n4 ? n4 : 1, block * VEC_PER_THREAD), block>>>(d_a, d_b, d_c, n); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
