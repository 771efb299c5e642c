/* map_reduce_kernels.cu - the C counterparts of PyCUDA's kernel builders (the book's chapter 3):
 * each is one small generic kernel (a template over an operator), instantiated for the
 * operators map_reduce.c uses.
 *
 *   map        ElementwiseKernel:      z[i] = f(x[i], y[i]), here f = a*x + y
 *   scan       InclusiveScanKernel:    out[i] = in[0] op ... op in[i], op = +, max, min
 *   map-reduce ReductionKernel:        reduce(op, map(x[i], y[i])), here + over x[i]*y[i]
 *
 * An operator is a struct with operator() and, for scans and reductions, identity(): the value
 * x with op(identity, x) = x (0 for +, INT_MIN for max), which pads the tails of the tiles.
 */
#include "map_reduce_kernels.h"

#include <limits.h>

/* ---------------------------------------------------------------- operators */

struct saxpy_fn {
    float a;
    __device__ float operator()(float x, float y) const { return __fmaf_rn(a, x, y); } /* as fmaf on the CPU */
};
struct mul_fn {
    __device__ float operator()(float x, float y) const { return x * y; }
};
struct add_f32 {
    static __device__ float identity() { return 0.0f; }
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct sum_i32 {
    static __device__ int identity() { return 0; }
    __device__ int operator()(int a, int b) const { return a + b; }
};
struct max_i32 {
    static __device__ int identity() { return INT_MIN; }
    __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};
struct min_i32 {
    static __device__ int identity() { return INT_MAX; }
    __device__ int operator()(int a, int b) const { return a < b ? a : b; }
};

/* ---------------------------------------------------------------- map */

template <typename F> __global__ void map_kernel(const float *x, const float *y, float *z, size_t n, F f)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        z[i] = f(x[i], y[i]);
}

/* ---------------------------------------------------------------- block-wide helpers */

#define MR_THREADS 256
#define FULL_MASK 0xffffffffu

/* The op of all MR_THREADS threads' values; the result is valid in thread 0. */
template <typename T, typename Op> __device__ T block_reduce(T v, Op op)
{
    __shared__ T warp_part[MR_THREADS / 32];
    for (int d = 16; d > 0; d >>= 1) v = op(v, __shfl_down_sync(FULL_MASK, v, d)); /* lane 0 gets its warp's */
    if ((threadIdx.x & 31) == 0) warp_part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < MR_THREADS / 32 ? warp_part[threadIdx.x] : Op::identity();
        for (int d = 16; d > 0; d >>= 1) v = op(v, __shfl_down_sync(FULL_MASK, v, d));
    }
    return v;
}

/* The op of the values of the threads before this one (identity for thread 0). */
template <typename Op> __device__ int block_exclusive_prefix(int v, Op op)
{
    __shared__ int warp_total[MR_THREADS / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int inc = v; /* inclusive scan within the warp: lane l gets op(v_0, ..., v_l) */
    for (int d = 1; d < 32; d <<= 1) {
        int other = __shfl_up_sync(FULL_MASK, inc, d);
        if (lane >= d) inc = op(other, inc);
    }
    if (lane == 31) warp_total[warp] = inc;
    __syncthreads();
    if (warp == 0) { /* the first warp scans the warps' totals the same way */
        int t = lane < MR_THREADS / 32 ? warp_total[lane] : Op::identity();
        for (int d = 1; d < 32; d <<= 1) {
            int other = __shfl_up_sync(FULL_MASK, t, d);
            if (lane >= d) t = op(other, t);
        }
        if (lane < MR_THREADS / 32) warp_total[lane] = t;
    }
    __syncthreads();
    int before_in_warp = __shfl_up_sync(FULL_MASK, inc, 1);
    if (lane == 0) before_in_warp = Op::identity();
    return op(warp ? warp_total[warp - 1] : Op::identity(), before_in_warp);
}

/* ---------------------------------------------------------------- scan */

#define SCAN_ITEMS 8                        /* consecutive elements per thread */
#define SCAN_TILE (MR_THREADS * SCAN_ITEMS) /* elements per block */

/* Pass 1: each block scans its tile and writes the tile's total. Loads and stores go through
 * shared memory so that they are coalesced (thread t touches t, t+256, ...), while the scan
 * itself gives each thread 8 consecutive elements. */
template <typename Op> __global__ void scan_tiles_kernel(const int *in, int *out, size_t n, int *tile_total)
{
    __shared__ int tile[SCAN_TILE];
    Op op;
    size_t base = (size_t)blockIdx.x * SCAN_TILE;
    for (int k = 0; k < SCAN_ITEMS; k++) {
        size_t i = base + (size_t)k * MR_THREADS + threadIdx.x;
        tile[k * MR_THREADS + threadIdx.x] = i < n ? in[i] : Op::identity();
    }
    __syncthreads();
    int *mine = tile + threadIdx.x * SCAN_ITEMS;
    int run = mine[0];
    for (int k = 1; k < SCAN_ITEMS; k++) mine[k] = run = op(run, mine[k]);
    int before = block_exclusive_prefix(run, op);
    for (int k = 0; k < SCAN_ITEMS; k++) mine[k] = op(before, mine[k]);
    if (threadIdx.x == MR_THREADS - 1) tile_total[blockIdx.x] = mine[SCAN_ITEMS - 1];
    __syncthreads();
    for (int k = 0; k < SCAN_ITEMS; k++) {
        size_t i = base + (size_t)k * MR_THREADS + threadIdx.x;
        if (i < n) out[i] = tile[k * MR_THREADS + threadIdx.x];
    }
}

/* Pass 3: every tile after the first gets the scanned total of the tiles before it. */
template <typename Op> __global__ void scan_add_kernel(int *out, size_t n, const int *scanned_totals)
{
    if (blockIdx.x == 0) return;
    Op op;
    int before = scanned_totals[blockIdx.x - 1];
    size_t base = (size_t)blockIdx.x * SCAN_TILE;
    for (int k = 0; k < SCAN_ITEMS; k++) {
        size_t i = base + (size_t)k * MR_THREADS + threadIdx.x;
        if (i < n) out[i] = op(before, out[i]);
    }
}

/* Pass 2 is this function again, on the tiles' totals (in place: each block reads its whole
 * tile into shared memory before it writes any of it), one level per factor of 2048. */
template <typename Op> static cudaError_t scan_levels(const int *in, int *out, size_t n, int *tmp)
{
    size_t tiles = (n + SCAN_TILE - 1) / SCAN_TILE;
    scan_tiles_kernel<Op><<<(unsigned int)tiles, MR_THREADS>>>(in, out, n, tmp);
    cudaError_t e = cudaGetLastError();
    if (e || tiles == 1) return e;
    e = scan_levels<Op>(tmp, tmp, tiles, tmp + tiles);
    if (e) return e;
    scan_add_kernel<Op><<<(unsigned int)tiles, MR_THREADS>>>(out, n, tmp);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- map-reduce */

/* Each thread folds map(x[i], y[i]) over its grid-stride elements, each block reduces its
 * threads' values into one partial; a second launch of one block reduces the partials. */
template <typename Map, typename Reduce>
__global__ void map_reduce_kernel(const float *x, const float *y, size_t n, Map map, Reduce red, float *partial)
{
    float acc = Reduce::identity();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc = red(acc, map(x[i], y[i]));
    acc = block_reduce(acc, red);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

template <typename Reduce>
__global__ void reduce_partials_kernel(const float *partial, int count, Reduce red, float *result)
{
    float acc = Reduce::identity();
    for (int i = threadIdx.x; i < count; i += blockDim.x) acc = red(acc, partial[i]);
    acc = block_reduce(acc, red);
    if (threadIdx.x == 0) *result = acc;
}

/* ---------------------------------------------------------------- launchers */

static unsigned int grid_for(size_t n)
{
    size_t blocks = (n + MR_THREADS - 1) / MR_THREADS;
    return (unsigned int)(blocks < 65535 * 16 ? blocks : 65535 * 16); /* more threads than that just loop */
}

extern "C" cudaError_t map_saxpy_launch(const float *d_x, const float *d_y, float *d_z, float a, size_t n)
{
    map_kernel<<<grid_for(n), MR_THREADS>>>(d_x, d_y, d_z, n, saxpy_fn{a});
    return cudaGetLastError();
}

extern "C" size_t map_scan_tmp_ints(size_t n)
{
    size_t tiles = (n + SCAN_TILE - 1) / SCAN_TILE;
    return tiles + (tiles > 1 ? map_scan_tmp_ints(tiles) : 0);
}

extern "C" cudaError_t map_scan_launch(scan_op op, const int *d_in, int *d_out, size_t n, int *d_tmp)
{
    switch (op) {
    case SCAN_SUM: return scan_levels<sum_i32>(d_in, d_out, n, d_tmp);
    case SCAN_MAX: return scan_levels<max_i32>(d_in, d_out, n, d_tmp);
    case SCAN_MIN: return scan_levels<min_i32>(d_in, d_out, n, d_tmp);
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t map_dot_launch(const float *d_x, const float *d_y, size_t n, float *d_partials, float *d_result)
{
    map_reduce_kernel<<<MAP_REDUCE_BLOCKS, MR_THREADS>>>(d_x, d_y, n, mul_fn{}, add_f32{}, d_partials);
    cudaError_t e = cudaGetLastError();
    if (e) return e;
    reduce_partials_kernel<<<1, MR_THREADS>>>(d_partials, MAP_REDUCE_BLOCKS, add_f32{}, d_result);
    return cudaGetLastError();
}
