/* softmax_kernels.cu - Y = softmax(X) along each row, five ways.
 *
 *   1  a thread per row, three passes (max, sum of exp, write): each thread walks its own row,
 *      so a warp's 32 loads hit 32 rows: uncoalesced
 *   2  a block per row, three passes, the max and the sum reduced in shared memory (a tree)
 *   3  a warp per row, three passes, the reductions by shuffles: no shared memory, no barrier
 *   4  a warp per row, the online softmax: the max and the sum in one pass (the sum rescaled as
 *      the max grows), then one pass that writes; 16-byte loads where the rows allow them
 *   5  a block per row, the row held in registers: one read and one write of every element,
 *      16-byte loads, the max and the sum reduced by shuffles and one shared slot per warp
 *
 * Every version computes y = exp(x - max) / sum(exp(x - max)): subtracting the row's max keeps
 * exp from overflowing (exp(89) is past the largest float). A -inf entry (a mask) gives 0.
 */
#include "softmax_kernels.h"
#include "row_reduce.cuh" /* fast_exp, warp_ and block_ max and sum, the online pairs */

#define SOFTMAX_BLOCK 256 /* threads a block, versions 1-4 */

/* ---------------------------------------------------------------- 1: a thread per row */

__global__ void softmax_kernel1(const float *x, float *y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *xr = x + (size_t)r * cols;
    float *yr = y + (size_t)r * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = 0; c < cols; c++) m = fmaxf(m, xr[c]);
    for (int c = 0; c < cols; c++) s += fast_exp(xr[c] - m);
    float inv = 1.0f / s;
    for (int c = 0; c < cols; c++) yr[c] = fast_exp(xr[c] - m) * inv;
}

static cudaError_t launch1(const float *x, float *y, int rows, int cols)
{
    softmax_kernel1<<<(rows + SOFTMAX_BLOCK - 1) / SOFTMAX_BLOCK, SOFTMAX_BLOCK>>>(x, y, rows, cols);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 2: a block per row, shared-memory trees */

__global__ void __launch_bounds__(SOFTMAX_BLOCK) softmax_kernel2(const float *x, float *y, int rows, int cols)
{
    __shared__ float red[SOFTMAX_BLOCK];
    int t = threadIdx.x;
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = t; c < cols; c += SOFTMAX_BLOCK) m = fmaxf(m, xr[c]); /* neighbours read neighbours */
    red[t] = m;
    __syncthreads();
    for (int h = SOFTMAX_BLOCK / 2; h > 0; h >>= 1) {
        if (t < h) red[t] = fmaxf(red[t], red[t + h]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads(); /* every thread has read the max before red is reused for the sum */
    float s = 0.0f;
    for (int c = t; c < cols; c += SOFTMAX_BLOCK) s += fast_exp(xr[c] - m);
    red[t] = s;
    __syncthreads();
    for (int h = SOFTMAX_BLOCK / 2; h > 0; h >>= 1) {
        if (t < h) red[t] += red[t + h];
        __syncthreads();
    }
    float inv = 1.0f / red[0];
    for (int c = t; c < cols; c += SOFTMAX_BLOCK) yr[c] = fast_exp(xr[c] - m) * inv;
}

static cudaError_t launch2(const float *x, float *y, int rows, int cols)
{
    softmax_kernel2<<<rows, SOFTMAX_BLOCK>>>(x, y, rows, cols);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 3: a warp per row, shuffles */

#define WARPS_PER_BLOCK (SOFTMAX_BLOCK / 32)

__global__ void __launch_bounds__(SOFTMAX_BLOCK) softmax_kernel3(const float *x, float *y, int rows, int cols)
{
    int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return; /* a whole warp leaves: the shuffles below see full warps only */
    const float *xr = x + (size_t)r * cols;
    float *yr = y + (size_t)r * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    m = warp_max(m);
    for (int c = lane; c < cols; c += 32) s += fast_exp(xr[c] - m);
    float inv = 1.0f / warp_sum(s);
    for (int c = lane; c < cols; c += 32) yr[c] = fast_exp(xr[c] - m) * inv;
}

static cudaError_t launch3(const float *x, float *y, int rows, int cols)
{
    softmax_kernel3<<<(rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK, SOFTMAX_BLOCK>>>(x, y, rows, cols);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 4: a warp per row, online */

/* VEC: each lane loads float4 (the row's length a multiple of 4, so every row starts 16-byte
 * aligned); else one float at a time */
template <bool VEC> __global__ void __launch_bounds__(SOFTMAX_BLOCK) softmax_kernel4(const float *x, float *y, int rows, int cols)
{
    int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float *xr = x + (size_t)r * cols;
    float *yr = y + (size_t)r * cols;
    float m = -INFINITY, d = 0.0f;
    if (VEC) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        for (int c = lane; c < cols / 4; c += 32) {
            float4 v = x4[c];
            online_add(m, d, v.x), online_add(m, d, v.y), online_add(m, d, v.z), online_add(m, d, v.w);
        }
    } else {
        for (int c = lane; c < cols; c += 32) online_add(m, d, xr[c]);
    }
    warp_online_merge(m, d); /* the lanes' pairs into one, in every lane */
    float inv = 1.0f / d;
    if (VEC) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        for (int c = lane; c < cols / 4; c += 32) {
            float4 v = x4[c];
            y4[c] = make_float4(fast_exp(v.x - m) * inv, fast_exp(v.y - m) * inv, fast_exp(v.z - m) * inv,
                                fast_exp(v.w - m) * inv);
        }
    } else {
        for (int c = lane; c < cols; c += 32) yr[c] = fast_exp(xr[c] - m) * inv;
    }
}

static cudaError_t launch4(const float *x, float *y, int rows, int cols)
{
    unsigned int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    if (cols % 4 == 0)
        softmax_kernel4<true><<<blocks, SOFTMAX_BLOCK>>>(x, y, rows, cols);
    else
        softmax_kernel4<false><<<blocks, SOFTMAX_BLOCK>>>(x, y, rows, cols);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 5: a block per row, in registers */

/* ITEMS float4 (VEC) or 4 ITEMS floats a thread, element k of thread t at t + k * blockDim.x
 * (neighbouring threads, neighbouring addresses); the ones past the row's end hold -inf */
template <int ITEMS, bool VEC> __global__ void __launch_bounds__(1024) softmax_kernel5(const float *x, float *y, int rows, int cols)
{
    __shared__ float slots[32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float v[4 * ITEMS];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        if (VEC) {
            int c4 = threadIdx.x + k * blockDim.x;
            float4 q = c4 < cols / 4 ? reinterpret_cast<const float4 *>(xr)[c4]
                                     : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
            v[4 * k] = q.x, v[4 * k + 1] = q.y, v[4 * k + 2] = q.z, v[4 * k + 3] = q.w;
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int c = threadIdx.x + (4 * k + j) * blockDim.x;
                v[4 * k + j] = c < cols ? xr[c] : -INFINITY;
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 4 * ITEMS; i++) m = fmaxf(m, v[i]);
    m = block_max(m, slots);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4 * ITEMS; i++) {
        v[i] = fast_exp(v[i] - m); /* kept: the write below needs no second exp */
        s += v[i];
    }
    float inv = 1.0f / block_sum(s, slots);
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        if (VEC) {
            int c4 = threadIdx.x + k * blockDim.x;
            if (c4 < cols / 4)
                reinterpret_cast<float4 *>(yr)[c4] =
                    make_float4(v[4 * k] * inv, v[4 * k + 1] * inv, v[4 * k + 2] * inv, v[4 * k + 3] * inv);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int c = threadIdx.x + (4 * k + j) * blockDim.x;
                if (c < cols) yr[c] = v[4 * k + j] * inv;
            }
        }
    }
}

template <int ITEMS> static void launch5_items(const float *x, float *y, int rows, int cols, int threads)
{
    if (cols % 4 == 0)
        softmax_kernel5<ITEMS, true><<<rows, threads>>>(x, y, rows, cols);
    else
        softmax_kernel5<ITEMS, false><<<rows, threads>>>(x, y, rows, cols);
}

/* 256 threads while 8 float4 each hold the row (8192 floats), then up to 1024; then the fewest
 * float4 a thread (1, 2, 4 or 8) that hold it */
static cudaError_t launch5(const float *x, float *y, int rows, int cols)
{
    int threads = 256;
    while (threads < 1024 && cols > threads * 4 * 8) threads *= 2;
    int per_thread = (cols + 4 * threads - 1) / (4 * threads); /* float4 a thread */
    if (per_thread <= 1)
        launch5_items<1>(x, y, rows, cols, threads);
    else if (per_thread <= 2)
        launch5_items<2>(x, y, rows, cols, threads);
    else if (per_thread <= 4)
        launch5_items<4>(x, y, rows, cols, threads);
    else
        launch5_items<8>(x, y, rows, cols, threads);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- launchers */

typedef cudaError_t (*launcher)(const float *, float *, int, int);
static const launcher launchers[] = {NULL, launch1, launch2, launch3, launch4, launch5};
static_assert(sizeof launchers / sizeof launchers[0] == SOFTMAX_VERSIONS,
              "one launcher per version: SOFTMAX_VERSIONS in softmax_kernels.h");

extern "C" cudaError_t softmax_launch(int v, const float *d_x, float *d_y, int rows, int cols)
{
    if (v < 1 || v >= SOFTMAX_VERSIONS || cols < 1 || cols > SOFTMAX_MAX_COLS || rows < 1)
        return cudaErrorInvalidValue;
    return launchers[v](d_x, d_y, rows, cols);
}
