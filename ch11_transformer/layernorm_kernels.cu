/* layernorm_kernels.cu - LayerNorm along each row, forward three ways, RMSNorm, and backward.
 *
 *   1  two passes from memory, a block per row: the mean, then the variance as the mean of
 *      (x - mean)^2, then the output: three reads of the row
 *   2  Welford in one pass: each thread's count, mean and sum of squared deviations, merged
 *      across the block (Chan et al.), then the output: two reads
 *   3  the row in registers (16-byte loads): the mean and the squared deviations from the
 *      registers, then the output: one read and one write, and the two-pass variance for free
 *   RMSNorm: as 3, without the mean: x / sqrt(mean(x^2) + eps) * gamma
 *   backward: dX a block per row (two passes), dgamma and dbeta as column sums in two steps
 *      (partial sums of 64 rows, then their sum, in a fixed order: no atomics on one address)
 * The variance is the biased one (divided by cols), as PyTorch's LayerNorm; eps = 1e-5.
 * E[x^2] - mean^2 in one pass would be shorter still, and wrong: with rows of mean 1000 and
 * spread 1, x^2 is 10^6 and its float sum has no digits left for a variance of 1/3.
 */
#include "layernorm_kernels.h"
#include "row_reduce.cuh" /* warp_ and block_ sum */

#include "lb_bf16.cuh" /* lb_bf16_pack4 */

#define LN_BLOCK 256

/* ---------------------------------------------------------------- 1: two passes from memory */

__global__ void __launch_bounds__(LN_BLOCK) ln_kernel1(const float *x, const float *gamma, const float *beta, float *y,
                                                       float *mean_out, float *rstd_out, int cols)
{
    __shared__ float slots[32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += LN_BLOCK) s += xr[c];
    float mean = block_sum(s, slots) / cols;
    float q = 0.0f;
    for (int c = threadIdx.x; c < cols; c += LN_BLOCK) q += (xr[c] - mean) * (xr[c] - mean);
    float rstd = rsqrtf(block_sum(q, slots) / cols + LN_EPS);
    for (int c = threadIdx.x; c < cols; c += LN_BLOCK) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
    if (threadIdx.x == 0) mean_out[blockIdx.x] = mean, rstd_out[blockIdx.x] = rstd;
}

static cudaError_t launch1(const float *x, const float *g, const float *b, float *y, float *mean, float *rstd, int rows,
                           int cols)
{
    ln_kernel1<<<rows, LN_BLOCK>>>(x, g, b, y, mean, rstd, cols);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 2: Welford in one pass */

/* (count, mean, M2 = sum of squared deviations) of two disjoint parts into one (Chan et al.) */
__device__ __forceinline__ void welford_merge(float &n, float &mean, float &m2, float nb, float meanb, float m2b)
{
    float total = n + nb;
    if (total == 0.0f) return;
    float delta = meanb - mean, wb = nb / total;
    mean += delta * wb;
    m2 += m2b + delta * delta * n * wb;
    n = total;
}
__device__ __forceinline__ void warp_welford(float &n, float &mean, float &m2)
{
    for (int o = 16; o > 0; o >>= 1)
        welford_merge(n, mean, m2, __shfl_xor_sync(FULL_MASK, n, o), __shfl_xor_sync(FULL_MASK, mean, o),
                      __shfl_xor_sync(FULL_MASK, m2, o));
}

__global__ void __launch_bounds__(LN_BLOCK) ln_kernel2(const float *x, const float *gamma, const float *beta, float *y,
                                                       float *mean_out, float *rstd_out, int cols)
{
    __shared__ float slots[3][32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    float *yr = y + (size_t)blockIdx.x * cols;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int c = threadIdx.x; c < cols; c += LN_BLOCK) { /* one element more: Welford's update */
        float v = xr[c], delta = v - mean;
        n += 1.0f;
        mean += delta / n;
        m2 += delta * (v - mean);
    }
    int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    warp_welford(n, mean, m2);
    if (lane == 0) slots[0][w] = n, slots[1][w] = mean, slots[2][w] = m2;
    __syncthreads();
    n = lane < LN_BLOCK / 32 ? slots[0][lane] : 0.0f;
    mean = lane < LN_BLOCK / 32 ? slots[1][lane] : 0.0f;
    m2 = lane < LN_BLOCK / 32 ? slots[2][lane] : 0.0f;
    warp_welford(n, mean, m2); /* every warp merges the slots: the result in every thread */
    float rstd = rsqrtf(m2 / cols + LN_EPS);
    for (int c = threadIdx.x; c < cols; c += LN_BLOCK) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
    if (threadIdx.x == 0) mean_out[blockIdx.x] = mean, rstd_out[blockIdx.x] = rstd;
}

static cudaError_t launch2(const float *x, const float *g, const float *b, float *y, float *mean, float *rstd, int rows,
                           int cols)
{
    ln_kernel2<<<rows, LN_BLOCK>>>(x, g, b, y, mean, rstd, cols);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 3 and RMSNorm: the row in registers */

/* the output's element type: float, or bf16 (for a mixed-precision model's next product, which
 * reads bf16: ch12) rounded to nearest even; four at a time (16 or 8 bytes) or one */
__device__ __forceinline__ void store4(float *row, int c4, float a, float b, float c, float d)
{
    reinterpret_cast<float4 *>(row)[c4] = make_float4(a, b, c, d);
}
__device__ __forceinline__ void store4(__nv_bfloat16 *row, int c4, float a, float b, float c, float d)
{
    reinterpret_cast<uint2 *>(row)[c4] = lb_bf16_pack4(a, b, c, d);
}
__device__ __forceinline__ void store1(float *row, int c, float v) { row[c] = v; }
__device__ __forceinline__ void store1(__nv_bfloat16 *row, int c, float v) { row[c] = __float2bfloat16_rn(v); }

/* ITEMS float4 (VEC) or 4 ITEMS floats a thread, element k of thread t at t + k * blockDim.x;
 * the ones past the row's end are 0 and left out of the deviations. RMS: RMSNorm (no mean,
 * no beta). Y: the output's type (float or __nv_bfloat16). */
template <int ITEMS, bool VEC, bool RMS, typename Y>
__global__ void __launch_bounds__(1024) ln_kernel3(const float *x, const float *gamma, const float *beta, Y *y,
                                                   float *mean_out, float *rstd_out, int cols)
{
    __shared__ float slots[32];
    const float *xr = x + (size_t)blockIdx.x * cols;
    Y *yr = y + (size_t)blockIdx.x * cols;
    float v[4 * ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        if (VEC) {
            int c4 = threadIdx.x + k * blockDim.x;
            float4 q = c4 < cols / 4 ? reinterpret_cast<const float4 *>(xr)[c4] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            v[4 * k] = q.x, v[4 * k + 1] = q.y, v[4 * k + 2] = q.z, v[4 * k + 3] = q.w;
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int c = threadIdx.x + (4 * k + j) * blockDim.x;
                v[4 * k + j] = c < cols ? xr[c] : 0.0f;
            }
        }
    }
    /* element i of this thread's registers is column col(i) */
#define LN_COL(i) (VEC ? 4 * (int)(threadIdx.x + ((i) / 4) * blockDim.x) + (i) % 4 : (int)(threadIdx.x + (i) * blockDim.x))
    float mean = 0.0f;
    if (!RMS) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < 4 * ITEMS; i++) s += v[i];
        mean = block_sum(s, slots) / cols;
    }
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < 4 * ITEMS; i++)
        if (LN_COL(i) < cols) q += (v[i] - mean) * (v[i] - mean);
    float rstd = rsqrtf(block_sum(q, slots) / cols + LN_EPS);
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        if (VEC) {
            int c4 = threadIdx.x + k * blockDim.x;
            if (c4 < cols / 4) {
                float4 g = reinterpret_cast<const float4 *>(gamma)[c4];
                float4 b = RMS ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : reinterpret_cast<const float4 *>(beta)[c4];
                store4(yr, c4, (v[4 * k] - mean) * rstd * g.x + b.x, (v[4 * k + 1] - mean) * rstd * g.y + b.y,
                       (v[4 * k + 2] - mean) * rstd * g.z + b.z, (v[4 * k + 3] - mean) * rstd * g.w + b.w);
            }
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int c = threadIdx.x + (4 * k + j) * blockDim.x;
                if (c < cols) store1(yr, c, (v[4 * k + j] - mean) * rstd * gamma[c] + (RMS ? 0.0f : beta[c]));
            }
        }
    }
#undef LN_COL
    if (threadIdx.x == 0) {
        if (!RMS) mean_out[blockIdx.x] = mean;
        rstd_out[blockIdx.x] = rstd;
    }
}

template <int ITEMS, bool RMS, typename Y>
static void launch3_items(const float *x, const float *g, const float *b, Y *y, float *mean, float *rstd, int rows,
                          int cols, int threads)
{
    if (cols % 4 == 0)
        ln_kernel3<ITEMS, true, RMS, Y><<<rows, threads>>>(x, g, b, y, mean, rstd, cols);
    else
        ln_kernel3<ITEMS, false, RMS, Y><<<rows, threads>>>(x, g, b, y, mean, rstd, cols);
}

/* 256 threads while 8 float4 each hold the row, then up to 1024; the fewest float4 a thread.
 * A row narrower than 256 float4 takes the warps it fills and no more: 256 threads of which
 * most hold nothing would still meet at the sums' barriers and take the SM's warp slots from
 * other rows (ch12's 384 columns: 3 warps, not 8) */
template <bool RMS, typename Y>
static cudaError_t launch_registers(const float *x, const float *g, const float *b, Y *y, float *mean, float *rstd,
                                    int rows, int cols)
{
    int threads = 256;
    while (threads < 1024 && cols > threads * 4 * 8) threads *= 2;
    if (cols < 4 * threads) threads = (cols + 127) / 128 * 32;
    int per_thread = (cols + 4 * threads - 1) / (4 * threads);
    if (per_thread <= 1)
        launch3_items<1, RMS>(x, g, b, y, mean, rstd, rows, cols, threads);
    else if (per_thread <= 2)
        launch3_items<2, RMS>(x, g, b, y, mean, rstd, rows, cols, threads);
    else if (per_thread <= 4)
        launch3_items<4, RMS>(x, g, b, y, mean, rstd, rows, cols, threads);
    else
        launch3_items<8, RMS>(x, g, b, y, mean, rstd, rows, cols, threads);
    return cudaGetLastError();
}

static cudaError_t launch3(const float *x, const float *g, const float *b, float *y, float *mean, float *rstd, int rows,
                           int cols)
{
    return launch_registers<false>(x, g, b, y, mean, rstd, rows, cols);
}

extern "C" cudaError_t layernorm_forward_bf16_launch(const float *d_x, const float *d_gamma, const float *d_beta,
                                                     uint16_t *d_y, float *d_mean, float *d_rstd, int rows, int cols)
{
    if (rows < 1 || cols < 1 || cols > LN_MAX_COLS) return cudaErrorInvalidValue;
    return launch_registers<false>(d_x, d_gamma, d_beta, reinterpret_cast<__nv_bfloat16 *>(d_y), d_mean, d_rstd, rows,
                                   cols);
}

extern "C" cudaError_t rmsnorm_forward_launch(const float *d_x, const float *d_gamma, float *d_y, float *d_rrms,
                                              int rows, int cols)
{
    if (rows < 1 || cols < 1 || cols > LN_MAX_COLS) return cudaErrorInvalidValue;
    return launch_registers<true>(d_x, d_gamma, NULL, d_y, NULL, d_rrms, rows, cols);
}

/* ---------------------------------------------------------------- backward */

/* dX, a block per row: the row's two sums of dxh and dxh xh, then dX */
__global__ void __launch_bounds__(LN_BLOCK) ln_backward_dx_kernel(const float *dy, const float *x, const float *mean,
                                                                  const float *rstd, const float *gamma, float *dx,
                                                                  int cols)
{
    __shared__ float slots[32];
    size_t off = (size_t)blockIdx.x * cols;
    float mu = mean[blockIdx.x], rs = rstd[blockIdx.x], s1 = 0.0f, s2 = 0.0f;
    for (int c = threadIdx.x; c < cols; c += LN_BLOCK) {
        float xh = (x[off + c] - mu) * rs, dxh = dy[off + c] * gamma[c];
        s1 += dxh;
        s2 += dxh * xh;
    }
    float m1 = block_sum(s1, slots) / cols, m2 = block_sum(s2, slots) / cols;
    for (int c = threadIdx.x; c < cols; c += LN_BLOCK) {
        float xh = (x[off + c] - mu) * rs, dxh = dy[off + c] * gamma[c];
        dx[off + c] = rs * (dxh - m1 - xh * m2);
    }
}

/* the column sums of LN_ROWS_PER_GROUP rows: a thread a column (neighbours read neighbours);
 * blockIdx.x the group of rows (up to 2^31 - 1 of them), blockIdx.y the 256 columns */
__global__ void ln_backward_partial_kernel(const float *dy, const float *x, const float *mean, const float *rstd,
                                           float *partial, int rows, int cols)
{
    int c = blockIdx.y * blockDim.x + threadIdx.x, group = blockIdx.x, groups = gridDim.x;
    if (c >= cols) return;
    int r0 = group * LN_ROWS_PER_GROUP, r1 = r0 + LN_ROWS_PER_GROUP < rows ? r0 + LN_ROWS_PER_GROUP : rows;
    float dg = 0.0f, db = 0.0f;
    for (int r = r0; r < r1; r++) {
        size_t i = (size_t)r * cols + c;
        dg += dy[i] * (x[i] - mean[r]) * rstd[r];
        db += dy[i];
    }
    partial[(size_t)group * cols + c] = dg;
    partial[((size_t)groups + group) * cols + c] = db;
}

/* The groups' partial sums of each column, in a fixed order (no atomics): a block takes 32
 * columns, a warp's 32 threads one column each (128-byte loads), and its 32 warps (lanes) take
 * every 32nd group; then one warp a set adds the 32 lanes' sums in order. Each column's sum is
 * a chain of groups / 32 loads, not of all groups: a thread a column, walking all 512 groups of
 * GPT-2's 8192 rows, took 30 us a call for 768 columns (latency, 3 blocks on the whole GPU).
 * Sets: dgamma and dbeta, and dsum's (the backward_add's third set) when it is not NULL. */
#define LN_SUM_LANES 32
__global__ void __launch_bounds__(32 * LN_SUM_LANES) ln_backward_sum_kernel(const float *partial, float *dgamma,
                                                                            float *dbeta, float *dsum, int groups,
                                                                            int cols)
{
    __shared__ float lanes[3][LN_SUM_LANES][33]; /* 33: a warp reads a column of it without conflicts */
    int x = threadIdx.x % 32, lane = threadIdx.x / 32, c = blockIdx.x * 32 + x, sets = dsum ? 3 : 2;
    float s[3] = {0.0f, 0.0f, 0.0f};
    if (c < cols)
        for (int g = lane; g < groups; g += LN_SUM_LANES)
#pragma unroll
            for (int k = 0; k < 3; k++)
                if (k < sets) s[k] += partial[((size_t)k * groups + g) * cols + c];
#pragma unroll
    for (int k = 0; k < 3; k++) lanes[k][lane][x] = s[k];
    __syncthreads();
    if (lane >= sets || c >= cols) return;
    float total = 0.0f;
    for (int l = 0; l < LN_SUM_LANES; l++) total += lanes[lane][l][x];
    (lane == 0 ? dgamma : lane == 1 ? dbeta : dsum)[c] = total;
}

extern "C" cudaError_t layernorm_backward_launch(const float *d_dy, const float *d_x, const float *d_mean,
                                                 const float *d_rstd, const float *d_gamma, float *d_dx,
                                                 float *d_dgamma, float *d_dbeta, float *d_partial, int rows, int cols)
{
    if (rows < 1 || cols < 1 || cols > LN_MAX_COLS) return cudaErrorInvalidValue;
    int groups = (rows + LN_ROWS_PER_GROUP - 1) / LN_ROWS_PER_GROUP;
    ln_backward_dx_kernel<<<rows, LN_BLOCK>>>(d_dy, d_x, d_mean, d_rstd, d_gamma, d_dx, cols);
    ln_backward_partial_kernel<<<dim3(groups, (cols + 255) / 256), 256>>>(d_dy, d_x, d_mean, d_rstd, d_partial, rows,
                                                                         cols);
    ln_backward_sum_kernel<<<(cols + 31) / 32, 32 * LN_SUM_LANES>>>(d_partial, d_dgamma, d_dbeta, nullptr, groups, cols);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- backward in one read, added */

/* two block sums at once (one pair of barriers): slots holds 64 floats */
__device__ __forceinline__ void block_sum2(float &a, float &b, float *slots)
{
    int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    a = warp_sum(a), b = warp_sum(b);
    if (lane == 0) slots[threadIdx.x / 32] = a, slots[32 + threadIdx.x / 32] = b;
    __syncthreads();
    a = warp_sum(lane < warps ? slots[lane] : 0.0f), b = warp_sum(lane < warps ? slots[32 + lane] : 0.0f);
    __syncthreads();
}

/* One row's dY, X and R (what dx holds) into registers as version 3's forward holds a row (ITEMS
 * float4 a thread; element k of thread t at float4 t + k * blockDim.x); past the row's end, 0.
 * VEC: 16-byte loads; else one float at a time, same layout. */
template <int ITEMS, bool VEC>
__device__ __forceinline__ void ln_load_row3(const float *dyr, const float *xr, const float *dxr, int cols, float *a,
                                             float *b, float *res)
{
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        if (VEC) {
            int c4 = threadIdx.x + k * blockDim.x;
            float4 p = make_float4(0.0f, 0.0f, 0.0f, 0.0f), q = p, w = p;
            if (c4 < cols / 4)
                p = reinterpret_cast<const float4 *>(dyr)[c4], q = reinterpret_cast<const float4 *>(xr)[c4],
                w = reinterpret_cast<const float4 *>(dxr)[c4];
            a[4 * k] = p.x, a[4 * k + 1] = p.y, a[4 * k + 2] = p.z, a[4 * k + 3] = p.w;
            b[4 * k] = q.x, b[4 * k + 1] = q.y, b[4 * k + 2] = q.z, b[4 * k + 3] = q.w;
            res[4 * k] = w.x, res[4 * k + 1] = w.y, res[4 * k + 2] = w.z, res[4 * k + 3] = w.w;
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int c = threadIdx.x + (4 * k + j) * blockDim.x;
                a[4 * k + j] = c < cols ? dyr[c] : 0.0f, b[4 * k + j] = c < cols ? xr[c] : 0.0f;
                res[4 * k + j] = c < cols ? dxr[c] : 0.0f;
            }
        }
    }
}

/* A block takes LN_BWD_ROWS rows one after another, each in registers (ln_load_row3): the row's
 * two sums, then dX added to what dx holds (and the sum written in bf16 too when dx16 is not
 * NULL). A thread keeps the same columns for every row, so it sums their dgamma and dbeta in
 * registers over the block's rows and writes them once, the group's partial sums; SUM: the
 * column sums of the new dX too (a third set of partial sums). VEC: cols % 4 == 0.
 * The rows are a chain: every block of the grid is on the GPU at once (512 of them for 8192
 * rows), so the kernel takes as long as one block's 16 rows, each a round trip to memory and
 * two barriers. At one float4 a thread (up to 4096 columns), the next row's loads are issued
 * before this row's sums (software pipelining: its round trip overlaps the barriers and the
 * stores), for 12 registers more; at two, under __launch_bounds__(1024)'s 64 registers a
 * thread, they would spill (ptxas -v: 148 bytes). */
template <int ITEMS, bool VEC, bool SUM>
__global__ void __launch_bounds__(1024) ln_backward_add_kernel(const float *dy, const float *x, const float *mean,
                                                               const float *rstd, const float *gamma, float *dx,
                                                               __nv_bfloat16 *dx16, float *partial, int rows, int cols)
{
    constexpr bool PREFETCH = ITEMS == 1;
    __shared__ float slots[64];
    int r0 = blockIdx.x * LN_BWD_ROWS, r1 = r0 + LN_BWD_ROWS < rows ? r0 + LN_BWD_ROWS : rows, groups = gridDim.x;
    float g[4 * ITEMS], dg[4 * ITEMS], db[4 * ITEMS], ds[SUM ? 4 * ITEMS : 1];
    /* element i of this thread's registers is column col(i); those past the row's end read 0 */
#define LN_COL(i) (VEC ? 4 * (int)(threadIdx.x + ((i) / 4) * blockDim.x) + (i) % 4 : (int)(threadIdx.x + (i) * blockDim.x))
#pragma unroll
    for (int i = 0; i < 4 * ITEMS; i++) {
        g[i] = LN_COL(i) < cols ? gamma[LN_COL(i)] : 0.0f, dg[i] = db[i] = 0.0f;
        if (SUM) ds[i] = 0.0f;
    }
    /* a, b, res: this row's dY, X and R; na, nb, nres: the next row's, in flight */
    float a[4 * ITEMS], b[4 * ITEMS], res[4 * ITEMS], na[PREFETCH ? 4 * ITEMS : 1], nb[PREFETCH ? 4 * ITEMS : 1],
        nres[PREFETCH ? 4 * ITEMS : 1];
    if (r0 < r1) ln_load_row3<ITEMS, VEC>(dy + (size_t)r0 * cols, x + (size_t)r0 * cols, dx + (size_t)r0 * cols, cols, a, b, res);
    for (int r = r0; r < r1; r++) {
        float *dxr = dx + (size_t)r * cols;
        if (PREFETCH && r + 1 < r1) /* another row: nothing this row writes */
            ln_load_row3<ITEMS, VEC>(dy + (size_t)(r + 1) * cols, x + (size_t)(r + 1) * cols, dxr + cols, cols, na, nb, nres);
        float mu = mean[r], rs = rstd[r], s1 = 0.0f, s2 = 0.0f;
#pragma unroll
        for (int i = 0; i < 4 * ITEMS; i++) { /* past the end dY is 0: nothing added */
            float xh = (b[i] - mu) * rs, dxh = a[i] * g[i];
            s1 += dxh, s2 += dxh * xh;
            dg[i] += a[i] * xh, db[i] += a[i];
            b[i] = xh, a[i] = dxh; /* kept for dX */
        }
        block_sum2(s1, s2, slots);
        float m1 = s1 / cols, m2 = s2 / cols;
#pragma unroll
        for (int i = 0; i < 4 * ITEMS; i++) {
            res[i] += rs * (a[i] - m1 - b[i] * m2); /* R + dX */
            if (SUM && LN_COL(i) < cols) ds[i] += res[i];
        }
#pragma unroll
        for (int k = 0; k < ITEMS; k++) { /* written as read: 16 bytes (and 8 of bf16) a store */
            if (VEC) {
                int c4 = threadIdx.x + k * blockDim.x;
                if (c4 >= cols / 4) continue;
                store4(dxr, c4, res[4 * k], res[4 * k + 1], res[4 * k + 2], res[4 * k + 3]);
                if (dx16) store4(dx16 + (size_t)r * cols, c4, res[4 * k], res[4 * k + 1], res[4 * k + 2], res[4 * k + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    int c = LN_COL(4 * k + j);
                    if (c >= cols) continue;
                    store1(dxr, c, res[4 * k + j]);
                    if (dx16) store1(dx16 + (size_t)r * cols, c, res[4 * k + j]);
                }
            }
        }
        if (r + 1 == r1) break;
        if (PREFETCH) {
#pragma unroll
            for (int i = 0; i < 4 * ITEMS; i++) a[i] = na[i], b[i] = nb[i], res[i] = nres[i];
        } else {
            ln_load_row3<ITEMS, VEC>(dy + (size_t)(r + 1) * cols, x + (size_t)(r + 1) * cols, dxr + cols, cols, a, b, res);
        }
    }
#pragma unroll
    for (int i = 0; i < 4 * ITEMS; i++) {
        int c = LN_COL(i);
        if (c >= cols) continue;
        partial[(size_t)blockIdx.x * cols + c] = dg[i], partial[((size_t)groups + blockIdx.x) * cols + c] = db[i];
        if (SUM) partial[((size_t)2 * groups + blockIdx.x) * cols + c] = ds[i];
    }
#undef LN_COL
}

template <int ITEMS, bool SUM>
static void backward_add_sum(const float *dy, const float *x, const float *mean, const float *rstd, const float *g,
                             float *dx, __nv_bfloat16 *dx16, float *partial, int rows, int cols, int threads, int groups)
{
    if (cols % 4 == 0)
        ln_backward_add_kernel<ITEMS, true, SUM><<<groups, threads>>>(dy, x, mean, rstd, g, dx, dx16, partial, rows, cols);
    else
        ln_backward_add_kernel<ITEMS, false, SUM><<<groups, threads>>>(dy, x, mean, rstd, g, dx, dx16, partial, rows, cols);
}
template <int ITEMS>
static void backward_add_items(const float *dy, const float *x, const float *mean, const float *rstd, const float *g,
                               float *dx, __nv_bfloat16 *dx16, float *partial, int rows, int cols, int threads, int groups,
                               bool sum)
{
    if (sum)
        backward_add_sum<ITEMS, true>(dy, x, mean, rstd, g, dx, dx16, partial, rows, cols, threads, groups);
    else
        backward_add_sum<ITEMS, false>(dy, x, mean, rstd, g, dx, dx16, partial, rows, cols, threads, groups);
}
extern "C" cudaError_t layernorm_backward_add_launch(const float *d_dy, const float *d_x, const float *d_mean,
                                                     const float *d_rstd, const float *d_gamma, float *d_dx,
                                                     uint16_t *d_dx16, float *d_dgamma, float *d_dbeta,
                                                     float *d_dsum, float *d_partial, int rows, int cols)
{
    if (rows < 1 || cols < 1 || cols > LN_MAX_COLS) return cudaErrorInvalidValue;
    /* one float4 a thread where a block of up to 1024 threads covers the row (4096 columns):
     * a thread holds seven values a column (dY, X, R, gamma and three sums), and at 4 float4
     * a thread, as version 3's forward takes 4096 columns, they spill past the 64 registers
     * that 1024 threads leave each (1.27 ms at 16384x4096 against the three-read backward's
     * 0.59, H100); at least 256 threads (ch12's 768 columns: 192 of them busy) */
    int groups = (rows + LN_BWD_ROWS - 1) / LN_BWD_ROWS, threads = 256;
    bool sum = d_dsum != NULL;
    while (threads < 1024 && cols > threads * 4) threads *= 2;
    int per_thread = (cols + 4 * threads - 1) / (4 * threads);
    __nv_bfloat16 *dx16 = reinterpret_cast<__nv_bfloat16 *>(d_dx16);
    if (per_thread <= 1)
        backward_add_items<1>(d_dy, d_x, d_mean, d_rstd, d_gamma, d_dx, dx16, d_partial, rows, cols, threads, groups, sum);
    else if (per_thread <= 2)
        backward_add_items<2>(d_dy, d_x, d_mean, d_rstd, d_gamma, d_dx, dx16, d_partial, rows, cols, threads, groups, sum);
    else if (per_thread <= 4)
        backward_add_items<4>(d_dy, d_x, d_mean, d_rstd, d_gamma, d_dx, dx16, d_partial, rows, cols, threads, groups, sum);
    else
        backward_add_items<8>(d_dy, d_x, d_mean, d_rstd, d_gamma, d_dx, dx16, d_partial, rows, cols, threads, groups, sum);
    ln_backward_sum_kernel<<<(cols + 31) / 32, 32 * LN_SUM_LANES>>>(d_partial, d_dgamma, d_dbeta, d_dsum, groups, cols);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- launchers */

typedef cudaError_t (*launcher)(const float *, const float *, const float *, float *, float *, float *, int, int);
static const launcher launchers[] = {NULL, launch1, launch2, launch3};
static_assert(sizeof launchers / sizeof launchers[0] == LN_VERSIONS,
              "one launcher per version: LN_VERSIONS in layernorm_kernels.h");

extern "C" cudaError_t layernorm_forward_launch(int v, const float *d_x, const float *d_gamma, const float *d_beta,
                                                float *d_y, float *d_mean, float *d_rstd, int rows, int cols)
{
    if (v < 1 || v >= LN_VERSIONS || rows < 1 || cols < 1 || cols > LN_MAX_COLS) return cudaErrorInvalidValue;
    return launchers[v](d_x, d_gamma, d_beta, d_y, d_mean, d_rstd, rows, cols);
}
