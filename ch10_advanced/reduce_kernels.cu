/* reduce_kernels.cu - the sum of n floats, from the textbook kernel to one that races CUB.
 *
 * Versions 1-6 are the classic steps (each block sums 256 or 512 elements into a partial sum;
 * the launcher reruns the kernel on the partials until one value is left):
 *   1  interleaved addressing, `if (tid % (2*s) == 0)`: threads of a warp take different paths
 *   2  interleaved addressing, strided index `i = 2*s*tid`: no divergence, but at stride s the
 *      threads of a warp hit the same shared-memory banks (conflicts)
 *   3  sequential addressing: thread tid adds tid + s, s halving: no divergence, no conflicts,
 *      but half the threads idle from the first step
 *   4  first add during load: each thread loads two elements and adds them; half the blocks
 *   5  the last warp unrolled, done correctly: below 32 the warp finishes alone, with
 *      __syncwarp() between steps (the old `volatile` trick without it is a race since Volta)
 *   6  warp shuffles: __shfl_down_sync adds within a warp through registers, shared memory only
 *      carries the 8 warp sums
 * and then the modern ones, each one kernel:
 *   7  the book's optimized sum: 16-byte float4 loads, a grid-stride loop, a warp sum with the
 *      lane id from inline PTX (%laneid), one atomicAdd per warp into the result
 *   8  one pass, deterministic: 4 float4 loads in flight per thread and 4 accumulators, a
 *      grid sized to fill the GPU once, per-block partials, and the last block to finish
 *      (found with a ticket counter) adds the partials in a fixed order
 * 0 is cub::DeviceReduce::Sum, in reduce_cub.cu (CUB compiles slowly: apart, an edit here rebuilds
 * in seconds).
 */
#include "reduce_kernels.h"
#include "labbook.h"

#define REDUCE_BLOCK 256

/* ---------------------------------------------------------------- versions 1-6 */

/* The launcher of versions 1-6: one partial per block (a block sums per_block elements: 256, or
 * 512 where it adds two during the load), then the partials again, until one value remains;
 * two scratch areas are used in turn (a pass never reads and writes the same one). Each
 * version's launchN, after its kernel, calls it with that kernel. */
typedef void (*reduce_pass)(const float *, size_t, float *);
static unsigned int blocks_for(size_t n, size_t per_block) { return (unsigned int)((n + per_block - 1) / per_block); }
static size_t multi_pass_scratch(size_t n, size_t per_block)
{
    return sizeof(float) * ((size_t)blocks_for(n, per_block) + blocks_for(blocks_for(n, per_block), per_block) + 64);
}
static cudaError_t multi_pass(reduce_pass kernel, size_t per_block, const float *d_in, size_t n, float *d_out,
                              void *d_scratch)
{
    float *bufs[2] = {(float *)d_scratch, (float *)d_scratch + blocks_for(n, per_block) + 32};
    const float *src = d_in;
    size_t len = n;
    int k = 0;
    do {
        unsigned int grid = blocks_for(len, per_block);
        float *dst = grid == 1 ? d_out : bufs[k];
        kernel<<<grid, REDUCE_BLOCK>>>(src, len, dst);
        cudaError_t e = cudaGetLastError();
        if (e) return e;
        src = dst;
        len = grid;
        k ^= 1;
    } while (len > 1);
    return cudaSuccess;
}

/* Version 1: interleaved addressing with a divergent branch */
__global__ void reduce_kernel1(const float *in, size_t n, float *out)
{
    __shared__ float s[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * REDUCE_BLOCK + tid;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int st = 1; st < REDUCE_BLOCK; st *= 2) {
        if (tid % (2 * st) == 0) s[tid] += s[tid + st]; /* only every (2 st)-th thread works */
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

static cudaError_t launch1(const float *d_in, size_t n, float *d_out, void *d_scratch, size_t)
{
    return multi_pass(reduce_kernel1, REDUCE_BLOCK, d_in, n, d_out, d_scratch);
}

/* Version 2: interleaved addressing, strided index: the working threads are contiguous */
__global__ void reduce_kernel2(const float *in, size_t n, float *out)
{
    __shared__ float s[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * REDUCE_BLOCK + tid;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int st = 1; st < REDUCE_BLOCK; st *= 2) {
        unsigned int idx = 2 * st * tid; /* at st = 16, lanes 0 and 1 use banks 0 and 0 + 32 */
        if (idx < REDUCE_BLOCK) s[idx] += s[idx + st];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

static cudaError_t launch2(const float *d_in, size_t n, float *d_out, void *d_scratch, size_t)
{
    return multi_pass(reduce_kernel2, REDUCE_BLOCK, d_in, n, d_out, d_scratch);
}

/* Version 3: sequential addressing */
__global__ void reduce_kernel3(const float *in, size_t n, float *out)
{
    __shared__ float s[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * REDUCE_BLOCK + tid;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int st = REDUCE_BLOCK / 2; st > 0; st >>= 1) {
        if (tid < st) s[tid] += s[tid + st];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

static cudaError_t launch3(const float *d_in, size_t n, float *d_out, void *d_scratch, size_t)
{
    return multi_pass(reduce_kernel3, REDUCE_BLOCK, d_in, n, d_out, d_scratch);
}

/* Version 4: first add during load: a block covers 2 * REDUCE_BLOCK elements */
__global__ void reduce_kernel4(const float *in, size_t n, float *out)
{
    __shared__ float s[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (2 * REDUCE_BLOCK) + tid;
    float v = i < n ? in[i] : 0.0f;
    if (i + REDUCE_BLOCK < n) v += in[i + REDUCE_BLOCK];
    s[tid] = v;
    __syncthreads();
    for (unsigned int st = REDUCE_BLOCK / 2; st > 0; st >>= 1) {
        if (tid < st) s[tid] += s[tid + st];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}

static cudaError_t launch4(const float *d_in, size_t n, float *d_out, void *d_scratch, size_t)
{
    return multi_pass(reduce_kernel4, 2 * REDUCE_BLOCK, d_in, n, d_out, d_scratch);
}

/* Version 5: as 4 until 64 values are left, then the first warp alone. Its lanes read what
 * other lanes wrote, so they must synchronize: __syncwarp() orders the warp's shared-memory
 * accesses (since Volta, lanes of a warp need not run in lockstep). */
__global__ void reduce_kernel5(const float *in, size_t n, float *out)
{
    __shared__ float s[REDUCE_BLOCK];
    unsigned int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (2 * REDUCE_BLOCK) + tid;
    float v = i < n ? in[i] : 0.0f;
    if (i + REDUCE_BLOCK < n) v += in[i + REDUCE_BLOCK];
    s[tid] = v;
    __syncthreads();
    for (unsigned int st = REDUCE_BLOCK / 2; st > 32; st >>= 1) {
        if (tid < st) s[tid] += s[tid + st];
        __syncthreads();
    }
    if (tid < 32) {
        v = s[tid] + s[tid + 32];
        for (int st = 16; st > 0; st >>= 1) {
            __syncwarp(); /* everyone has read before anyone writes */
            s[tid] = v;
            __syncwarp(); /* everyone has written before anyone reads */
            v += s[tid + st];
        }
        if (tid == 0) out[blockIdx.x] = v;
    }
}

static cudaError_t launch5(const float *d_in, size_t n, float *d_out, void *d_scratch, size_t)
{
    return multi_pass(reduce_kernel5, 2 * REDUCE_BLOCK, d_in, n, d_out, d_scratch);
}

/* the sum of v over the 32 lanes, in every lane's register after the xor butterfly */
__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* the sum over the block, in thread 0: warp sums through registers, then the 8 warp sums */
__device__ __forceinline__ float block_sum(float v)
{
    __shared__ float warp_sums[REDUCE_BLOCK / 32];
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    v = threadIdx.x < REDUCE_BLOCK / 32 ? warp_sums[threadIdx.x] : 0.0f;
    if (threadIdx.x < 32) v = warp_sum(v);
    return v;
}

/* Version 6: first add during load, then shuffles */
__global__ void reduce_kernel6(const float *in, size_t n, float *out)
{
    size_t i = (size_t)blockIdx.x * (2 * REDUCE_BLOCK) + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    if (i + REDUCE_BLOCK < n) v += in[i + REDUCE_BLOCK];
    v = block_sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}

static cudaError_t launch6(const float *d_in, size_t n, float *d_out, void *d_scratch, size_t)
{
    return multi_pass(reduce_kernel6, 2 * REDUCE_BLOCK, d_in, n, d_out, d_scratch);
}

/* ---------------------------------------------------------------- versions 7 and 8 */

/* The elements past the last whole float4 (at most 3), added by the first threads of block 0 */
__device__ __forceinline__ float tail(const float *in, size_t n)
{
    size_t i = (n & ~(size_t)3) + threadIdx.x;
    return (blockIdx.x == 0 && threadIdx.x < 4 && i < n) ? in[i] : 0.0f;
}

/* Version 7: the book's optimized sum */
__global__ void reduce_kernel7(const float *in, size_t n, float *out)
{
    const float4 *in4 = (const float4 *)in;
    size_t n4 = n / 4;
    float v = tail(in, n);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        float4 q = in4[i];
        v += (q.x + q.y) + (q.z + q.w);
    }
    v = warp_sum(v);
    unsigned int lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane)); /* the lane id, read from the special register */
    if (lane == 0) atomicAdd(out, v);
}

static cudaError_t launch7(const float *d_in, size_t n, float *d_out, void *, size_t)
{
    static unsigned int grid; /* fills the GPU once; asked once and kept (setup, not the sum's time) */
    if (!grid) grid = lb_resident_blocks((const void *)reduce_kernel7, REDUCE_BLOCK, 0);
    cudaError_t e = cudaMemsetAsync(d_out, 0, sizeof(float), 0);
    if (e) return e;
    reduce_kernel7<<<grid, REDUCE_BLOCK>>>(d_in, n, d_out);
    return cudaGetLastError();
}

/* Version 8: 4 loads in flight per thread, partials, the last block adds them in order */
__global__ void __launch_bounds__(REDUCE_BLOCK)
    reduce_kernel8(const float *in, size_t n, float *partial, unsigned int *ticket, float *out)
{
    const float4 *in4 = (const float4 *)in;
    size_t n4 = n / 4, stride = (size_t)gridDim.x * REDUCE_BLOCK;
    size_t i = (size_t)blockIdx.x * REDUCE_BLOCK + threadIdx.x;
    float a = tail(in, n), b = 0.0f, c = 0.0f, d = 0.0f;
    /* four independent loads per iteration: 64 bytes a thread in flight, four separate sums */
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 p = in4[i], q = in4[i + stride], r = in4[i + 2 * stride], s = in4[i + 3 * stride];
        a += (p.x + p.y) + (p.z + p.w);
        b += (q.x + q.y) + (q.z + q.w);
        c += (r.x + r.y) + (r.z + r.w);
        d += (s.x + s.y) + (s.z + s.w);
    }
    for (; i < n4; i += stride) {
        float4 p = in4[i];
        a += (p.x + p.y) + (p.z + p.w);
    }
    float v = block_sum((a + b) + (c + d));
    __shared__ bool last;
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = v;
        __threadfence(); /* the partial is visible to every block before the ticket says so */
        last = atomicAdd(ticket, 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    /* the last block: every partial is in memory; add them in a fixed order */
    float s = 0.0f;
    for (unsigned int k = threadIdx.x; k < gridDim.x; k += REDUCE_BLOCK) s += ((volatile float *)partial)[k];
    s = block_sum(s);
    if (threadIdx.x == 0) *out = s;
}

/* version 8's scratch: the partials (a grid of at most 65536 blocks) and the ticket */
#define REDUCE8_PARTIALS 65536
static cudaError_t launch8(const float *d_in, size_t n, float *d_out, void *d_scratch, size_t)
{
    float *partial = (float *)d_scratch;
    unsigned int *ticket = (unsigned int *)(partial + REDUCE8_PARTIALS);
    static unsigned int grid; /* fills the GPU once; asked once and kept (setup, not the sum's time) */
    if (!grid) grid = lb_resident_blocks((const void *)reduce_kernel8, REDUCE_BLOCK, 0);
    /* the ticket starts at 0 on every run: the scratch area is shared with the other
     * versions, whose partial sums may have left anything there */
    cudaError_t e = cudaMemsetAsync(ticket, 0, sizeof(unsigned int), 0);
    if (e) return e;
    reduce_kernel8<<<grid < REDUCE8_PARTIALS ? grid : REDUCE8_PARTIALS, REDUCE_BLOCK>>>(d_in, n, partial, ticket, d_out);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- every version */

/* launchers[v] runs version v (0: CUB, in reduce_cub.cu); scratch[v] gives the bytes of device
 * scratch it needs for n elements. To add a version: its kernel and launcher above, an entry in
 * each table, REDUCE_VERSIONS, and a row in reduce.c's table. */
typedef cudaError_t (*launcher)(const float *, size_t, float *, void *, size_t);
static const launcher launchers[] = {reduce_cub, launch1, launch2, launch3, launch4, launch5, launch6, launch7, launch8};
static_assert(sizeof launchers / sizeof launchers[0] == REDUCE_VERSIONS,
              "one launcher per version: REDUCE_VERSIONS in reduce_kernels.h");
static size_t scratch_256(size_t n) { return multi_pass_scratch(n, REDUCE_BLOCK); }
static size_t scratch_512(size_t n) { return multi_pass_scratch(n, 2 * REDUCE_BLOCK); }
static size_t scratch_partials(size_t) { return REDUCE8_PARTIALS * sizeof(float) + 256; }
static size_t (*const scratch[])(size_t) = {reduce_cub_scratch_bytes, scratch_256, scratch_256,
                                             scratch_256,              scratch_512, scratch_512,
                                             scratch_512,              scratch_partials, scratch_partials};
static_assert(sizeof scratch / sizeof scratch[0] == REDUCE_VERSIONS, "one scratch size per version");

extern "C" size_t reduce_scratch_bytes(int version, size_t n)
{
    return version < 0 || version >= REDUCE_VERSIONS ? 0 : scratch[version](n);
}

extern "C" cudaError_t reduce_launch(int version, const float *d_in, size_t n, float *d_out, void *d_scratch,
                                     size_t scratch_bytes)
{
    if (version < 0 || version >= REDUCE_VERSIONS) return cudaErrorInvalidValue;
    return launchers[version](d_in, n, d_out, d_scratch, scratch_bytes);
}
