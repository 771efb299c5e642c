/* cross_entropy_kernels.cu - the mean cross-entropy of a batch of logits and its gradient, from
 * three kernels to one that reads each row once.
 *
 *   loss = mean over rows r of -log softmax(x_r)[y_r] = mean of (log s_r + m_r - x_r[y_r]),
 *   grad = (softmax(x_r) - onehot(y_r)) / rows, with m_r the row's max, s_r = sum exp(x - m_r)
 *
 *   1  unfused, as a framework's separate operators run it: a softmax kernel writes the
 *      probabilities, a second reads them and writes the gradient and each row's loss
 *   2  fused, a block per row, three passes over the row (max, sum, gradient): no probabilities
 *      in memory, but the row read three times
 *   3  fused online: the max and the sum in one pass (the online softmax), the gradient in a
 *      second: two reads
 *   4  fused, the row in shared memory: one read (online max and sum on the way in), the
 *      gradient from shared memory: one read and one write of every logit, the least there is
 *   and version 4 on bf16 logits, its gradient in bf16 (ce_launch_bf16): a mixed-precision
 *   classifier's, half the bytes each way, written over the logits if the caller wants
 * Every version ends with the same kernel: the rows' losses summed by one block in a fixed
 * order, so the mean is the same from run to run (no atomics).
 */
#include "cross_entropy_kernels.h"
#include "row_reduce.cuh"

#include "lb_bf16.cuh" /* lb_bf16_rn, lb_bf16_float */

#define CE_BLOCK 1024 /* threads a block: a row of 50304 logits is 49 per thread */
#define CE_WARP_ROWS 8 /* version 4 on bf16 rows of up to CE_WARP_CLASSES: rows a block, a warp each */

/* ---------------------------------------------------------------- the mean of the rows' losses */

__global__ void __launch_bounds__(CE_BLOCK) ce_mean_kernel(const float *row_loss, int rows, float *loss)
{
    __shared__ float slots[32];
    float s = 0.0f;
    for (int r = threadIdx.x; r < rows; r += CE_BLOCK) s += row_loss[r];
    s = block_sum(s, slots);
    if (threadIdx.x == 0) *loss = s / rows;
}

static cudaError_t mean_loss(const float *row_loss, int rows, float *loss)
{
    ce_mean_kernel<<<1, CE_BLOCK>>>(row_loss, rows, loss);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 1: unfused */

/* probs = softmax(x), a block per row, three passes */
__global__ void __launch_bounds__(CE_BLOCK) ce_softmax_kernel1(const float *x, float *probs, int classes, int stride)
{
    __shared__ float slots[32];
    const float *xr = x + (size_t)blockIdx.x * stride;
    float *pr = probs + (size_t)blockIdx.x * stride;
    float m = -INFINITY, s = 0.0f;
    for (int c = threadIdx.x; c < classes; c += CE_BLOCK) m = fmaxf(m, xr[c]);
    m = block_max(m, slots);
    for (int c = threadIdx.x; c < classes; c += CE_BLOCK) s += fast_exp(xr[c] - m);
    float inv = 1.0f / block_sum(s, slots);
    for (int c = threadIdx.x; c < classes; c += CE_BLOCK) pr[c] = fast_exp(xr[c] - m) * inv;
}
/* grad = (p - onehot(y)) / rows and the row's loss -log p[y], from the probabilities */
__global__ void __launch_bounds__(CE_BLOCK) ce_grad_kernel1(const float *probs, const int *y, float *grad,
                                                            float *row_loss, int rows, int classes, int stride)
{
    const float *pr = probs + (size_t)blockIdx.x * stride;
    float *gr = grad + (size_t)blockIdx.x * stride;
    int label = y[blockIdx.x];
    float inv_rows = 1.0f / rows;
    for (int c = threadIdx.x; c < classes; c += CE_BLOCK) gr[c] = (pr[c] - (c == label ? 1.0f : 0.0f)) * inv_rows;
    if (threadIdx.x == 0) row_loss[blockIdx.x] = -logf(pr[label]);
}

static cudaError_t launch1(const float *x, const int *y, float *grad, float *row_loss, float *probs, int rows,
                           int classes, int stride)
{
    if (!probs) return cudaErrorInvalidValue; /* this version keeps the probabilities in memory */
    ce_softmax_kernel1<<<rows, CE_BLOCK>>>(x, probs, classes, stride);
    ce_grad_kernel1<<<rows, CE_BLOCK>>>(probs, y, grad, row_loss, rows, classes, stride);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 2: fused, three passes */

/* the row's loss from its max m, its sum s and its label's logit: log s + m - x[y]; thread 0 */
__device__ __forceinline__ void write_row_loss(float *row_loss, float m, float s, float x_label)
{
    if (threadIdx.x == 0) row_loss[blockIdx.x] = logf(s) + m - x_label;
}

__global__ void __launch_bounds__(CE_BLOCK) ce_kernel2(const float *x, const int *y, float *grad, float *row_loss,
                                                       int rows, int classes, int stride)
{
    __shared__ float slots[32];
    const float *xr = x + (size_t)blockIdx.x * stride;
    float *gr = grad + (size_t)blockIdx.x * stride;
    int label = y[blockIdx.x];
    float m = -INFINITY, s = 0.0f;
    for (int c = threadIdx.x; c < classes; c += CE_BLOCK) m = fmaxf(m, xr[c]);
    m = block_max(m, slots);
    for (int c = threadIdx.x; c < classes; c += CE_BLOCK) s += fast_exp(xr[c] - m);
    s = block_sum(s, slots);
    float inv = 1.0f / s, inv_rows = 1.0f / rows;
    for (int c = threadIdx.x; c < classes; c += CE_BLOCK)
        gr[c] = (fast_exp(xr[c] - m) * inv - (c == label ? 1.0f : 0.0f)) * inv_rows;
    write_row_loss(row_loss, m, s, xr[label]);
}

static cudaError_t launch2(const float *x, const int *y, float *grad, float *row_loss, float *probs, int rows,
                           int classes, int stride)
{
    (void)probs;
    ce_kernel2<<<rows, CE_BLOCK>>>(x, y, grad, row_loss, rows, classes, stride);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 3: fused online, two passes */

/* four gradient elements, logits c0..c0+3 of a row: (exp(x - m) / s - onehot) / rows */
__device__ __forceinline__ float4 grad4(float4 v, int c0, float m, float inv, float inv_rows, int label)
{
    return make_float4((fast_exp(v.x - m) * inv - (c0 == label)) * inv_rows,
                       (fast_exp(v.y - m) * inv - (c0 + 1 == label)) * inv_rows,
                       (fast_exp(v.z - m) * inv - (c0 + 2 == label)) * inv_rows,
                       (fast_exp(v.w - m) * inv - (c0 + 3 == label)) * inv_rows);
}

/* VEC: float4 loads (classes and the row stride multiples of 4, so every row starts 16-byte aligned) */
template <bool VEC> __global__ void __launch_bounds__(CE_BLOCK) ce_kernel3(const float *x, const int *y, float *grad,
                                                                          float *row_loss, int rows, int classes, int stride)
{
    __shared__ float slots[64];
    const float *xr = x + (size_t)blockIdx.x * stride;
    float *gr = grad + (size_t)blockIdx.x * stride;
    int label = y[blockIdx.x];
    float m = -INFINITY, d = 0.0f;
    if (VEC)
        for (int c = threadIdx.x; c < classes / 4; c += CE_BLOCK) {
            float4 v = reinterpret_cast<const float4 *>(xr)[c];
            online_add(m, d, v.x), online_add(m, d, v.y), online_add(m, d, v.z), online_add(m, d, v.w);
        }
    else
        for (int c = threadIdx.x; c < classes; c += CE_BLOCK) online_add(m, d, xr[c]);
    block_online_merge(m, d, slots);
    float inv = 1.0f / d, inv_rows = 1.0f / rows;
    if (VEC)
        for (int c = threadIdx.x; c < classes / 4; c += CE_BLOCK) {
            float4 v = reinterpret_cast<const float4 *>(xr)[c];
            reinterpret_cast<float4 *>(gr)[c] = grad4(v, 4 * c, m, inv, inv_rows, label);
        }
    else
        for (int c = threadIdx.x; c < classes; c += CE_BLOCK)
            gr[c] = (fast_exp(xr[c] - m) * inv - (c == label ? 1.0f : 0.0f)) * inv_rows;
    write_row_loss(row_loss, m, d, xr[label]);
}

static cudaError_t launch3(const float *x, const int *y, float *grad, float *row_loss, float *probs, int rows,
                           int classes, int stride)
{
    (void)probs;
    if (classes % 4 == 0 && stride % 4 == 0)
        ce_kernel3<true><<<rows, CE_BLOCK>>>(x, y, grad, row_loss, rows, classes, stride);
    else
        ce_kernel3<false><<<rows, CE_BLOCK>>>(x, y, grad, row_loss, rows, classes, stride);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 4: fused, the row in shared memory */

/* the row (classes floats) in dynamic shared memory, after 64 floats of reduction slots */
template <bool VEC> __global__ void __launch_bounds__(CE_BLOCK) ce_kernel4(const float *x, const int *y, float *grad,
                                                                          float *row_loss, int rows, int classes, int stride)
{
    extern __shared__ float4 smem4[]; /* float4: 16-byte aligned, for the vector copies */
    float *slots = reinterpret_cast<float *>(smem4), *row = slots + 64;
    const float *xr = x + (size_t)blockIdx.x * stride;
    float *gr = grad + (size_t)blockIdx.x * stride;
    int label = y[blockIdx.x];
    float m = -INFINITY, d = 0.0f;
    /* the one read from memory: into shared memory, and the online pair on the way */
    if (VEC)
        for (int c = threadIdx.x; c < classes / 4; c += CE_BLOCK) {
            float4 v = reinterpret_cast<const float4 *>(xr)[c];
            reinterpret_cast<float4 *>(row)[c] = v;
            online_add(m, d, v.x), online_add(m, d, v.y), online_add(m, d, v.z), online_add(m, d, v.w);
        }
    else
        for (int c = threadIdx.x; c < classes; c += CE_BLOCK) {
            float v = xr[c];
            row[c] = v;
            online_add(m, d, v);
        }
    block_online_merge(m, d, slots); /* its barriers also make the row visible to every thread */
    float inv = 1.0f / d, inv_rows = 1.0f / rows;
    if (VEC)
        for (int c = threadIdx.x; c < classes / 4; c += CE_BLOCK) {
            float4 v = reinterpret_cast<const float4 *>(row)[c];
            reinterpret_cast<float4 *>(gr)[c] = grad4(v, 4 * c, m, inv, inv_rows, label);
        }
    else
        for (int c = threadIdx.x; c < classes; c += CE_BLOCK)
            gr[c] = (fast_exp(row[c] - m) * inv - (c == label ? 1.0f : 0.0f)) * inv_rows;
    write_row_loss(row_loss, m, d, row[label]);
}

extern "C" size_t ce_shared_bytes(int classes) { return sizeof(float) * (64 + (size_t)(classes + 3) / 4 * 4); }

static cudaError_t launch4(const float *x, const int *y, float *grad, float *row_loss, float *probs, int rows,
                           int classes, int stride)
{
    (void)probs;
    /* past 48 KiB a block must opt in; set for the largest row this program takes, once */
    static int opted_in = 0;
    cudaError_t e;
    if (!opted_in) {
        int bytes = (int)ce_shared_bytes(CE_MAX_CLASSES);
        if ((e = cudaFuncSetAttribute(ce_kernel4<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)) ||
            (e = cudaFuncSetAttribute(ce_kernel4<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)))
            return e;
        opted_in = 1;
    }
    size_t bytes = ce_shared_bytes(classes);
    if (classes % 4 == 0 && stride % 4 == 0)
        ce_kernel4<true><<<rows, CE_BLOCK, bytes>>>(x, y, grad, row_loss, rows, classes, stride);
    else
        ce_kernel4<false><<<rows, CE_BLOCK, bytes>>>(x, y, grad, row_loss, rows, classes, stride);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 4 on bf16 logits */


/* one bf16 gradient element from its logit's bits */
__device__ __forceinline__ uint32_t grad_bf16(uint32_t bits, int c, float m, float inv, float inv_rows, int label)
{
    return lb_bf16_rn((fast_exp(lb_bf16_float(bits) - m) * inv - (c == label ? 1.0f : 0.0f)) * inv_rows);
}

/* Version 4's one read, the row kept as bf16 in shared memory (2 bytes a logit). VEC: the row
 * starts 16-byte aligned (stride a multiple of 8): 8 logits a load, the last classes % 8 one by
 * one. grad may be x itself: the whole row is in shared memory (the merge's barriers) before
 * any of it is written. The gradient's columns from classes to stride are written 0. */
template <bool VEC>
__global__ void __launch_bounds__(CE_BLOCK) ce_kernel4_bf16(const uint16_t *x, const int *y, uint16_t *grad,
                                                            float *row_loss, int rows, int classes, int stride)
{
    extern __shared__ float4 smem4[];
    float *slots = reinterpret_cast<float *>(smem4);
    uint16_t *row = reinterpret_cast<uint16_t *>(slots + 64);
    const uint16_t *xr = x + (size_t)blockIdx.x * stride;
    uint16_t *gr = grad + (size_t)blockIdx.x * stride;
    int label = y[blockIdx.x], vectors = VEC ? classes / 8 : 0;
    float m = -INFINITY, d = 0.0f;
    for (int c = threadIdx.x; c < vectors; c += CE_BLOCK) {
        uint4 q = reinterpret_cast<const uint4 *>(xr)[c];
        reinterpret_cast<uint4 *>(row)[c] = q;
        const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < 4; i++) online_add(m, d, lb_bf16_float(w[i] & 0xFFFFu)), online_add(m, d, lb_bf16_float(w[i] >> 16));
    }
    for (int c = 8 * vectors + threadIdx.x; c < classes; c += CE_BLOCK) {
        uint16_t b = xr[c];
        row[c] = b;
        online_add(m, d, lb_bf16_float(b));
    }
    block_online_merge(m, d, slots); /* its barriers also make the row visible to every thread */
    float inv = 1.0f / d, inv_rows = 1.0f / rows;
    for (int c = threadIdx.x; c < vectors; c += CE_BLOCK) {
        uint4 q = reinterpret_cast<const uint4 *>(row)[c];
        uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int c0 = 8 * c + 2 * i; /* the low half is the lower column (little-endian) */
            w[i] = grad_bf16(w[i] & 0xFFFFu, c0, m, inv, inv_rows, label) |
                   grad_bf16(w[i] >> 16, c0 + 1, m, inv, inv_rows, label) << 16;
        }
        reinterpret_cast<uint4 *>(gr)[c] = make_uint4(w[0], w[1], w[2], w[3]);
    }
    for (int c = 8 * vectors + threadIdx.x; c < stride; c += CE_BLOCK)
        gr[c] = c < classes ? (uint16_t)grad_bf16(row[c], c, m, inv, inv_rows, label) : (uint16_t)0;
    write_row_loss(row_loss, m, d, lb_bf16_float(row[label]));
}

/* Narrow rows (ch12's 84 characters): a warp a row, not a block of 1024 threads of which a
 * twelfth would hold a logit and all would meet at the merge's barriers (87.6 us for 8192 rows
 * of 84 on an H100). Lane l takes columns l, l + 32, ...: the max and sum merged by shuffles,
 * then the gradient from the logits read again (in L1 by then). Every lane reads the label's
 * logit before the merge and the __syncwarp after it orders those reads before any write:
 * grad may be x itself, and each other column is read and written by one lane alone. */
__global__ void __launch_bounds__(32 * CE_WARP_ROWS) ce_kernel4_bf16_warp(const uint16_t *x, const int *y,
                                                                         uint16_t *grad, float *row_loss, int rows,
                                                                         int classes, int stride)
{
    int row = blockIdx.x * CE_WARP_ROWS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return; /* the whole warp: a row is a warp's */
    const uint16_t *xr = x + (size_t)row * stride;
    uint16_t *gr = grad + (size_t)row * stride;
    int label = y[row];
    float x_label = lb_bf16_float(xr[label]), m = -INFINITY, d = 0.0f;
    for (int c = lane; c < classes; c += 32) online_add(m, d, lb_bf16_float(xr[c]));
    warp_online_merge(m, d);
    __syncwarp();
    float inv = 1.0f / d, inv_rows = 1.0f / rows;
    for (int c = lane; c < stride; c += 32)
        gr[c] = c < classes ? (uint16_t)grad_bf16(xr[c], c, m, inv, inv_rows, label) : (uint16_t)0;
    if (lane == 0) row_loss[row] = logf(d) + m - x_label;
}

extern "C" size_t ce_shared_bytes_bf16(int classes)
{
    return classes <= CE_WARP_CLASSES ? 0 : sizeof(float) * 64 + 2 * ((size_t)(classes + 7) / 8 * 8);
}

extern "C" cudaError_t ce_launch_bf16(const uint16_t *d_logits, const int *d_y, uint16_t *d_grad, float *d_loss,
                                      float *d_row_loss, int rows, int classes, int stride)
{
    if (rows < 1 || classes < 1 || classes > CE_MAX_CLASSES || stride < classes) return cudaErrorInvalidValue;
    /* past 48 KiB a block must opt in: for the widest row asked so far (an sm_80 block can hold
     * 82,000 bf16 logits, an sm_90 one 116,000: past CE_MAX_CLASSES either way) */
    static size_t opted_in = 48 << 10;
    size_t bytes = ce_shared_bytes_bf16(classes);
    cudaError_t e;
    if (classes <= CE_WARP_CLASSES) {
        ce_kernel4_bf16_warp<<<(rows + CE_WARP_ROWS - 1) / CE_WARP_ROWS, 32 * CE_WARP_ROWS>>>(d_logits, d_y, d_grad,
                                                                                              d_row_loss, rows, classes,
                                                                                              stride);
        e = cudaGetLastError();
        return e ? e : mean_loss(d_row_loss, rows, d_loss);
    }
    if (bytes > opted_in) {
        if ((e = cudaFuncSetAttribute(ce_kernel4_bf16<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes)) ||
            (e = cudaFuncSetAttribute(ce_kernel4_bf16<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes)))
            return e;
        opted_in = bytes;
    }
    if (stride % 8 == 0)
        ce_kernel4_bf16<true><<<rows, CE_BLOCK, bytes>>>(d_logits, d_y, d_grad, d_row_loss, rows, classes, stride);
    else
        ce_kernel4_bf16<false><<<rows, CE_BLOCK, bytes>>>(d_logits, d_y, d_grad, d_row_loss, rows, classes, stride);
    e = cudaGetLastError();
    return e ? e : mean_loss(d_row_loss, rows, d_loss);
}

/* ---------------------------------------------------------------- launchers */

typedef cudaError_t (*launcher)(const float *, const int *, float *, float *, float *, int, int, int);
static const launcher launchers[] = {NULL, launch1, launch2, launch3, launch4};
static_assert(sizeof launchers / sizeof launchers[0] == CE_VERSIONS,
              "one launcher per version: CE_VERSIONS in cross_entropy_kernels.h");

extern "C" cudaError_t ce_launch_strided(int v, const float *d_logits, const int *d_y, float *d_grad, float *d_loss,
                                         float *d_row_loss, float *d_probs, int rows, int classes, int stride)
{
    if (v < 1 || v >= CE_VERSIONS || rows < 1 || classes < 1 || classes > CE_MAX_CLASSES || stride < classes)
        return cudaErrorInvalidValue;
    cudaError_t e = launchers[v](d_logits, d_y, d_grad, d_row_loss, d_probs, rows, classes, stride);
    return e ? e : mean_loss(d_row_loss, rows, d_loss);
}
extern "C" cudaError_t ce_launch(int v, const float *d_logits, const int *d_y, float *d_grad, float *d_loss,
                                 float *d_row_loss, float *d_probs, int rows, int classes)
{
    return ce_launch_strided(v, d_logits, d_y, d_grad, d_loss, d_row_loss, d_probs, rows, classes, classes);
}
