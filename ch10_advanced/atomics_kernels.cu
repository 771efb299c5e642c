/* atomics_kernels.cu - the book's atomic operations, made correct across many blocks.
 *
 *   count_kernel      atomicAdd on `spread` counters: 1 address (every thread of the GPU in one
 *                     queue) up to one per thread (no contention): the cost of contention
 *   int_max_kernel    atomicMax of every element into one int
 *   exchange_kernel   atomicExch: each thread swaps its number into one slot and keeps what was
 *                     there; afterwards every number appears exactly once, in some thread's
 *                     hands or in the slot (the check)
 *   float_max_kernel  a float max that the hardware lacks, built from atomicCAS: read the
 *                     current value, compute the max, swap it in only if nobody changed the
 *                     value meanwhile, else retry with what they wrote
 */
#include "atomics_kernels.h"
#include <limits.h>
#include <math.h>

#define ATOMICS_BLOCK 256

static unsigned int blocks_for(size_t n) { return (unsigned int)((n + ATOMICS_BLOCK - 1) / ATOMICS_BLOCK); }

__global__ void count_kernel(unsigned int *counters, unsigned int spread, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&counters[i % spread], 1u);
}

extern "C" cudaError_t count_launch(unsigned int *d_counters, unsigned int spread, size_t n)
{
    cudaError_t e = cudaMemsetAsync(d_counters, 0, sizeof(unsigned int) * spread, 0);
    if (e) return e;
    count_kernel<<<blocks_for(n), ATOMICS_BLOCK>>>(d_counters, spread, n);
    return cudaGetLastError();
}

__global__ void int_max_kernel(const int *x, size_t n, int *m)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicMax(m, x[i]);
}

__global__ void set_int(int *p, int v) { *p = v; }

extern "C" cudaError_t int_max_launch(const int *d_x, size_t n, int *d_max)
{
    set_int<<<1, 1>>>(d_max, INT_MIN);
    int_max_kernel<<<blocks_for(n), ATOMICS_BLOCK>>>(d_x, n, d_max);
    return cudaGetLastError();
}

__global__ void exchange_kernel(unsigned int *slot, unsigned int *old, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) old[i] = atomicExch(slot, (unsigned int)(i + 1));
}

extern "C" cudaError_t exchange_launch(unsigned int *d_slot, unsigned int *d_old, size_t n)
{
    cudaError_t e = cudaMemsetAsync(d_slot, 0, sizeof(unsigned int), 0);
    if (e) return e;
    exchange_kernel<<<blocks_for(n), ATOMICS_BLOCK>>>(d_slot, d_old, n);
    return cudaGetLastError();
}

/* max(*addr, v) for floats, from a compare-and-swap on the bits */
__device__ float atomic_max_float(float *addr, float v)
{
    unsigned int *bits = (unsigned int *)addr, seen = *bits, assumed;
    do {
        assumed = seen;
        if (__uint_as_float(assumed) >= v) break; /* already as large: nothing to write */
        seen = atomicCAS(bits, assumed, __float_as_uint(v));
    } while (seen != assumed); /* someone else wrote in between: try again with their value */
    return __uint_as_float(seen);
}

__global__ void float_max_kernel(const float *x, size_t n, float *m)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomic_max_float(m, x[i]);
}

__global__ void set_float(float *p, float v) { *p = v; }

extern "C" cudaError_t float_max_launch(const float *d_x, size_t n, float *d_max)
{
    set_float<<<1, 1>>>(d_max, -INFINITY);
    float_max_kernel<<<blocks_for(n), ATOMICS_BLOCK>>>(d_x, n, d_max);
    return cudaGetLastError();
}
