/* gpt_kernels.cu - the kernels a GPT needs beyond ch11's (gpt_kernels.h), fp32: the embeddings,
 * bias and residual adds, GELU, attention's head reshapes, its causal mask and softmax backward,
 * and the gradient's global norm. Each is the GPU twin of a function of gpt_cpu.c; the program
 * (gpt.c) checks the whole step against gpt_model_cpu. Element-wise kernels walk their arrays in a
 * grid-stride loop, one element a thread a step, consecutive threads on consecutive elements (the
 * loads coalesce). Built by make in this folder. */
#include "gpt_kernels.h"

#include "lb_bf16.cuh" /* lb_bf16_rn, lb_bf16_float, lb_bf16_pack2 */

#include <math.h>

#define GPT_BLOCK 256

/* blocks for n elements, a grid-stride loop covering the rest (at most 65535 x 16 blocks) */
static unsigned blocks_for(size_t n)
{
    size_t b = (n + GPT_BLOCK - 1) / GPT_BLOCK;
    return (unsigned)(b < 1 ? 1 : b > 1048560 ? 1048560 : b);
}
#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* ---------------------------------------------------------------- embeddings */

__global__ void embed_kernel(float *x, const int *tokens, const float *wte, const float *wpe, int T, int C, size_t n)
{
    GRID_STRIDE(i, n)
    {
        size_t row = i / C;
        int c = (int)(i % C);
        x[i] = wte[(size_t)tokens[row] * C + c] + wpe[(size_t)(row % T) * C + c];
    }
}
extern "C" cudaError_t gpt_embed_launch(float *x, const int *tokens, const float *wte, const float *wpe, int B, int T, int C)
{
    size_t n = (size_t)B * T * C;
    embed_kernel<<<blocks_for(n), GPT_BLOCK>>>(x, tokens, wte, wpe, T, C, n);
    return cudaGetLastError();
}

__global__ void embed_backward_wte_kernel(float *dwte, const float *dx, const int *tokens, int C, size_t n)
{
    GRID_STRIDE(i, n)
    {
        size_t row = i / C;
        atomicAdd(&dwte[(size_t)tokens[row] * C + i % C], dx[i]);
    }
}
/* a thread per (position, channel): the batch's B rows summed in order */
__global__ void embed_backward_wpe_kernel(float *dwpe, const float *dx, int B, int T, int C)
{
    size_t tc = (size_t)T * C;
    GRID_STRIDE(i, tc)
    {
        float s = 0.0f;
        for (int b = 0; b < B; b++) s += dx[(size_t)b * tc + i];
        dwpe[i] += s;
    }
}
extern "C" cudaError_t gpt_embed_backward_launch(float *dwte, float *dwpe, const float *dx, const int *tokens, int B,
                                                 int T, int C)
{
    size_t n = (size_t)B * T * C;
    embed_backward_wte_kernel<<<blocks_for(n), GPT_BLOCK>>>(dwte, dx, tokens, C, n);
    embed_backward_wpe_kernel<<<blocks_for((size_t)T * C), GPT_BLOCK>>>(dwpe, dx, B, T, C);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- bias, column sums, adds */

__global__ void bias_add_kernel(float *out, const float *b, int O, size_t n)
{
    GRID_STRIDE(i, n) out[i] += b[i % O];
}
extern "C" cudaError_t gpt_bias_add_launch(float *out, const float *b, int N, int O)
{
    size_t n = (size_t)N * O;
    bias_add_kernel<<<blocks_for(n), GPT_BLOCK>>>(out, b, O, n);
    return cudaGetLastError();
}

/* The column sums in two passes, so that every SM has work (a thread a column alone gives 768 to
 * 3072 threads, each reading all N rows one after another: 13.7 ms a step at GPT-2's shape on an
 * H100, the step's largest kernel). First, a block of 32 columns x 8 row lanes sums a slab of
 * GPT_COLUMN_SLAB rows (consecutive threads on consecutive columns: coalesced), the lanes added
 * in shared memory, into part (slabs x O); then each column adds its slabs in order: the same
 * sum from run to run (no atomics). */
__global__ void column_slab_kernel(float *part, const float *d, int N, int O)
{
    __shared__ float lanes[8][33];
    int o = blockIdx.x * 32 + threadIdx.x, slab = blockIdx.y;
    int end = min(N, (slab + 1) * GPT_COLUMN_SLAB);
    float s = 0.0f;
    if (o < O)
        for (int r = slab * GPT_COLUMN_SLAB + threadIdx.y; r < end; r += 8) s += d[(size_t)r * O + o];
    lanes[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && o < O) {
        for (int k = 1; k < 8; k++) s += lanes[k][threadIdx.x];
        part[(size_t)slab * O + o] = s;
    }
}
__global__ void column_total_kernel(float *db, const float *part, int slabs, int O)
{
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= O) return;
    float s = 0.0f;
    for (int k = 0; k < slabs; k++) s += part[(size_t)k * O + o];
    db[o] = s;
}
extern "C" cudaError_t gpt_column_sum_launch(float *db, const float *d, int N, int O, float *part)
{
    int slabs = (N + GPT_COLUMN_SLAB - 1) / GPT_COLUMN_SLAB;
    column_slab_kernel<<<dim3((O + 31) / 32, slabs), dim3(32, 8)>>>(part, d, N, O);
    column_total_kernel<<<(O + GPT_BLOCK - 1) / GPT_BLOCK, GPT_BLOCK>>>(db, part, slabs, O);
    return cudaGetLastError();
}

__global__ void add_kernel(float *out, const float *a, const float *b, size_t n)
{
    GRID_STRIDE(i, n) out[i] = a[i] + b[i];
}
extern "C" cudaError_t gpt_add_launch(float *out, const float *a, const float *b, size_t n)
{
    add_kernel<<<blocks_for(n), GPT_BLOCK>>>(out, a, b, n);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- GELU */

#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
__global__ void gelu_kernel(float *out, const float *x, size_t n)
{
    GRID_STRIDE(i, n)
    {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v)));
    }
}
__device__ __forceinline__ float gelu_derivative(float v)
{
    float t = tanhf(GELU_K * (v + 0.044715f * v * v * v)), du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
    return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
}
__global__ void gelu_backward_kernel(float *dx, const float *dout, const float *x, size_t n)
{
    GRID_STRIDE(i, n) dx[i] = dout[i] * gelu_derivative(x[i]);
}
extern "C" cudaError_t gpt_gelu_launch(float *out, const float *x, size_t n)
{
    gelu_kernel<<<blocks_for(n), GPT_BLOCK>>>(out, x, n);
    return cudaGetLastError();
}
extern "C" cudaError_t gpt_gelu_backward_launch(float *dx, const float *dout, const float *x, size_t n)
{
    gelu_backward_kernel<<<blocks_for(n), GPT_BLOCK>>>(dx, dout, x, n);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- attention's heads */

/* element i of a (B, H, T, hs) tensor: its row b T + t of the (N, width) one and its column
 * h hs + d; `part` picks Q (0), K (1) or V (2) of qkv */
__device__ __forceinline__ size_t row_major_of(size_t i, int T, int C, int H, int width, int part)
{
    int hs = C / H, d = (int)(i % hs);
    size_t bht = i / hs;
    int t = (int)(bht % T), h = (int)(bht / T % H);
    size_t b = bht / ((size_t)T * H);
    return (b * T + t) * width + (size_t)part * C + (size_t)h * hs + d;
}
/* The heads' tensors come in two kinds: fp32 (version 0's batched products) and bf16 bits (ch11's
 * flash attention's operands, rounded to nearest even as gpt_to_bf16_launch rounds), and so do
 * the (N, width) tensors they come from (bf16 from version 5 on); the reshapes are written once
 * for all, the element types template parameters */
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(unsigned short bits) { return lb_bf16_float(bits); }
__device__ __forceinline__ void put(float *p, float x) { *p = x; }
__device__ __forceinline__ void put(unsigned short *p, float x) { *p = lb_bf16_rn(x); }

/* A run of R consecutive elements of a head's row, read as type I and written as type O: with
 * R = 8, as 16- or 32-byte vectors (a run starts at a multiple of 8 of a row whose every width,
 * hs, C, 3C, is a multiple of 8: both ends aligned), else one element at a time. The reshapes
 * are pure data movement; element by element they ran at a third of the memory's speed. */
template <int R> __device__ __forceinline__ void load_run(const float *p, float *v)
{
    if (R == 8) {
        float4 a = reinterpret_cast<const float4 *>(p)[0], b = reinterpret_cast<const float4 *>(p)[1];
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    } else {
        for (int r = 0; r < R; r++) v[r] = p[r];
    }
}
template <int R> __device__ __forceinline__ void load_run(const unsigned short *p, float *v)
{
    if (R == 8) {
        uint4 a = *reinterpret_cast<const uint4 *>(p);
        unsigned w[4] = {a.x, a.y, a.z, a.w};
        for (int r = 0; r < 4; r++) v[2 * r] = lb_bf16_float(w[r]), v[2 * r + 1] = lb_bf16_float(w[r] >> 16);
    } else {
        for (int r = 0; r < R; r++) v[r] = to_float(p[r]);
    }
}
template <int R> __device__ __forceinline__ void store_run(float *p, const float *v)
{
    if (R == 8) {
        reinterpret_cast<float4 *>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
        reinterpret_cast<float4 *>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
    } else {
        for (int r = 0; r < R; r++) p[r] = v[r];
    }
}
template <int R> __device__ __forceinline__ void store_run(unsigned short *p, const float *v)
{
    if (R == 8) {
        unsigned w[4];
        for (int r = 0; r < 4; r++) w[r] = lb_bf16_pack2(v[2 * r], v[2 * r + 1]);
        *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
        for (int r = 0; r < R; r++) p[r] = lb_bf16_rn(v[r]);
    }
}
template <int R, typename I, typename O> __device__ __forceinline__ void copy_run(O *dst, const I *src)
{
    float v[R];
    load_run<R>(src, v);
    store_run<R>(dst, v);
}

/* each reshape reads elements of type I and writes type O (float, or bf16 bits), a run of R
 * elements a thread (n / R runs) */
template <int R, typename I, typename O>
__global__ void split_heads_kernel(O *q, O *k, O *v, const I *qkv, int T, int C, int H, size_t n)
{
    GRID_STRIDE(j, n / R)
    {
        size_t i = j * R;
        copy_run<R>(q + i, qkv + row_major_of(i, T, C, H, 3 * C, 0));
        copy_run<R>(k + i, qkv + row_major_of(i, T, C, H, 3 * C, 1));
        copy_run<R>(v + i, qkv + row_major_of(i, T, C, H, 3 * C, 2));
    }
}
template <int R, typename IQ, typename I, typename O> /* dQ's type may differ: version 6 reads its fp32 sum */
__global__ void join_qkv_kernel(O *dqkv, const IQ *dq, const I *dk, const I *dv, int T, int C, int H, size_t n)
{
    GRID_STRIDE(j, n / R)
    {
        size_t i = j * R;
        copy_run<R>(dqkv + row_major_of(i, T, C, H, 3 * C, 0), dq + i);
        copy_run<R>(dqkv + row_major_of(i, T, C, H, 3 * C, 1), dk + i);
        copy_run<R>(dqkv + row_major_of(i, T, C, H, 3 * C, 2), dv + i);
    }
}
template <int R, typename I, typename O>
__global__ void merge_heads_kernel(O *y, const I *yh, int T, int C, int H, size_t n)
{
    GRID_STRIDE(j, n / R) copy_run<R>(y + row_major_of(j * R, T, C, H, C, 0), yh + j * R);
}
template <int R, typename I, typename O>
__global__ void unmerge_heads_kernel(O *yh, const I *y, int T, int C, int H, size_t n)
{
    GRID_STRIDE(j, n / R) copy_run<R>(yh + j * R, y + row_major_of(j * R, T, C, H, C, 0));
}
/* runs of 8 where the head size allows (every version 4 and 5 model: heads of 64 or 128) */
static bool runs_of_8(int C, int H) { return (C / H) % 8 == 0; }
template <typename I, typename O> static cudaError_t split_heads(O *q, O *k, O *v, const I *qkv, int B, int T, int C, int H)
{
    size_t n = (size_t)B * T * C;
    if (runs_of_8(C, H))
        split_heads_kernel<8, I, O><<<blocks_for(n / 8), GPT_BLOCK>>>(q, k, v, qkv, T, C, H, n);
    else
        split_heads_kernel<1, I, O><<<blocks_for(n), GPT_BLOCK>>>(q, k, v, qkv, T, C, H, n);
    return cudaGetLastError();
}
template <typename IQ, typename I, typename O>
static cudaError_t join_qkv(O *dqkv, const IQ *dq, const I *dk, const I *dv, int B, int T, int C, int H)
{
    size_t n = (size_t)B * T * C;
    if (runs_of_8(C, H))
        join_qkv_kernel<8, IQ, I, O><<<blocks_for(n / 8), GPT_BLOCK>>>(dqkv, dq, dk, dv, T, C, H, n);
    else
        join_qkv_kernel<1, IQ, I, O><<<blocks_for(n), GPT_BLOCK>>>(dqkv, dq, dk, dv, T, C, H, n);
    return cudaGetLastError();
}
template <typename I, typename O> static cudaError_t merge_heads(O *y, const I *yh, int B, int T, int C, int H)
{
    size_t n = (size_t)B * T * C;
    if (runs_of_8(C, H))
        merge_heads_kernel<8, I, O><<<blocks_for(n / 8), GPT_BLOCK>>>(y, yh, T, C, H, n);
    else
        merge_heads_kernel<1, I, O><<<blocks_for(n), GPT_BLOCK>>>(y, yh, T, C, H, n);
    return cudaGetLastError();
}
template <typename I, typename O> static cudaError_t unmerge_heads(O *yh, const I *y, int B, int T, int C, int H)
{
    size_t n = (size_t)B * T * C;
    if (runs_of_8(C, H))
        unmerge_heads_kernel<8, I, O><<<blocks_for(n / 8), GPT_BLOCK>>>(yh, y, T, C, H, n);
    else
        unmerge_heads_kernel<1, I, O><<<blocks_for(n), GPT_BLOCK>>>(yh, y, T, C, H, n);
    return cudaGetLastError();
}
extern "C" cudaError_t gpt_split_heads_launch(float *q, float *k, float *v, const float *qkv, int B, int T, int C, int H)
{
    return split_heads(q, k, v, qkv, B, T, C, H);
}
extern "C" cudaError_t gpt_join_qkv_launch(float *dqkv, const float *dq, const float *dk, const float *dv, int B, int T,
                                           int C, int H)
{
    return join_qkv(dqkv, dq, dk, dv, B, T, C, H);
}
extern "C" cudaError_t gpt_merge_heads_launch(float *y, const float *yh, int B, int T, int C, int H)
{
    return merge_heads(y, yh, B, T, C, H);
}
extern "C" cudaError_t gpt_unmerge_heads_launch(float *yh, const float *y, int B, int T, int C, int H)
{
    return unmerge_heads(yh, y, B, T, C, H);
}
extern "C" cudaError_t gpt_split_heads_bf16_launch(unsigned short *q, unsigned short *k, unsigned short *v,
                                                   const float *qkv, int B, int T, int C, int H)
{
    return split_heads(q, k, v, qkv, B, T, C, H);
}
extern "C" cudaError_t gpt_join_qkv_bf16_launch(float *dqkv, const unsigned short *dq, const unsigned short *dk,
                                                const unsigned short *dv, int B, int T, int C, int H)
{
    return join_qkv(dqkv, dq, dk, dv, B, T, C, H);
}
extern "C" cudaError_t gpt_merge_heads_bf16_launch(float *y, const unsigned short *yh, int B, int T, int C, int H)
{
    return merge_heads(y, yh, B, T, C, H);
}
extern "C" cudaError_t gpt_unmerge_heads_bf16_launch(unsigned short *yh, const float *y, int B, int T, int C, int H)
{
    return unmerge_heads(yh, y, B, T, C, H);
}
typedef unsigned short bf16_bits;
extern "C" cudaError_t gpt_split_heads_bf16_bf16_launch(bf16_bits *q, bf16_bits *k, bf16_bits *v, const bf16_bits *qkv,
                                                        int B, int T, int C, int H)
{
    return split_heads(q, k, v, qkv, B, T, C, H);
}
extern "C" cudaError_t gpt_join_qkv_bf16_bf16_launch(bf16_bits *dqkv, const bf16_bits *dq, const bf16_bits *dk,
                                                     const bf16_bits *dv, int B, int T, int C, int H)
{
    return join_qkv(dqkv, dq, dk, dv, B, T, C, H);
}
extern "C" cudaError_t gpt_join_qkv_acc_bf16_launch(bf16_bits *dqkv, const float *dq_acc, const bf16_bits *dk,
                                                    const bf16_bits *dv, int B, int T, int C, int H)
{
    return join_qkv(dqkv, dq_acc, dk, dv, B, T, C, H);
}
extern "C" cudaError_t gpt_merge_heads_bf16_bf16_launch(bf16_bits *y, const bf16_bits *yh, int B, int T, int C, int H)
{
    return merge_heads(y, yh, B, T, C, H);
}

/* ---------------------------------------------------------------- bf16 bias gradients (version 6 on) */

/* A bias gradient is the column sums of its product's output gradient. cuBLASLt's epilogues do
 * them at a price at these shapes: its DGELU epilogue runs on an older kernel than its plain
 * products (the Shakespeare model's 8192 x 1536 x 384: 57.7 us against 17-20 us, H100), and BGRADB
 * is a kernel of its own after the weight's product (14 us a call). So version 6 on, the plain
 * product, then one pass over its bf16 output: GELU's derivative applied in place (pre not NULL)
 * and the columns summed in the same read. A block is 32 threads across, 8 columns each (a run
 * of 16 bytes), and 8 row lanes over a slab of GPT_BF16_SLAB rows; the lanes are added in shared
 * memory into the slab's partial sums. The last block to finish a strip of 256 columns (a counter a
 * strip, counted up by atomics and set back to zero by that block) adds the strip's slabs, in
 * order: the same sums, bit for bit, as a kernel of their own after this one, without its launch
 * (about 7 us a call under the profiler, 12 a step at the Shakespeare model's size). The sums
 * are of the bf16 values written, the ones the weight's product reads. */
template <bool GELU>
__global__ void bias_grad_slab_kernel(float *db, float *part, unsigned *count, unsigned short *d,
                                      const unsigned short *pre, int N, int O)
{
    constexpr int R = 8; /* a thread's run of columns: 16 bytes of bf16 */
    __shared__ float lanes[8][32 * R + 1];
    __shared__ bool last;
    int o = (blockIdx.x * 32 + threadIdx.x) * R, slab = blockIdx.y;
    int end = min(N, (slab + 1) * GPT_BF16_SLAB);
    float s[R];
    for (int k = 0; k < R; k++) s[k] = 0.0f;
    if (o < O)
        for (int r = slab * GPT_BF16_SLAB + threadIdx.y; r < end; r += 8) {
            unsigned short *row = d + (size_t)r * O + o;
            float v[R];
            load_run<R>(row, v);
            if (GELU) {
                float x[R];
                load_run<R>(pre + (size_t)r * O + o, x);
                for (int k = 0; k < R; k++) v[k] = lb_bf16_float(lb_bf16_rn(v[k] * gelu_derivative(x[k])));
                store_run<R>(row, v); /* already bf16 values: stored exactly */
            }
            for (int k = 0; k < R; k++) s[k] += v[k];
        }
    for (int k = 0; k < R; k++) lanes[threadIdx.y][threadIdx.x * R + k] = s[k];
    __syncthreads();
    if (threadIdx.y == 0 && o < O)
        for (int k = 0; k < R; k++) {
            float t = 0.0f;
            for (int lane = 0; lane < 8; lane++) t += lanes[lane][threadIdx.x * R + k];
            part[(size_t)slab * O + o + k] = t;
        }
    /* the slab's sums visible to every block before the count says they are there */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) last = atomicAdd(&count[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    int col = blockIdx.x * 32 * R + threadIdx.y * 32 + threadIdx.x; /* the strip's 256 columns, a thread each */
    if (col < O) {
        float t = 0.0f;
        for (int k = 0; k < (int)gridDim.y; k++) t += __ldcg(part + (size_t)k * O + col); /* past L1: other SMs wrote it */
        db[col] = t;
    }
    if (threadIdx.x == 0 && threadIdx.y == 0) count[blockIdx.x] = 0; /* ready for the next launch */
}
extern "C" cudaError_t gpt_bias_grad_bf16_launch(float *db, unsigned short *d, const unsigned short *pre, int N, int O,
                                                 float *part, unsigned *count)
{
    /* runs of 8 start at multiples of 8 of a row of a multiple of 8: 16 bytes aligned (version 6's
     * models have heads of 64 or 128: C, 3C and 4C are multiples of 64) */
    if (N < 1 || O < 8 || O % 8 || (O + 255) / 256 > GPT_BF16_STRIPS) return cudaErrorInvalidValue;
    int slabs = (N + GPT_BF16_SLAB - 1) / GPT_BF16_SLAB;
    dim3 grid((O / 8 + 31) / 32, slabs), block(32, 8);
    if (pre)
        bias_grad_slab_kernel<true><<<grid, block>>>(db, part, count, d, pre, N, O);
    else
        bias_grad_slab_kernel<false><<<grid, block>>>(db, part, count, d, pre, N, O);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- the causal softmax's edges */

__global__ void causal_mask_kernel(float *s, int T, size_t n)
{
    GRID_STRIDE(i, n)
    {
        int j = (int)(i % T), query = (int)(i / T % T);
        if (j > query) s[i] = -INFINITY;
    }
}
extern "C" cudaError_t gpt_causal_mask_launch(float *s, long long rows, int T)
{
    size_t n = (size_t)rows * T;
    causal_mask_kernel<<<blocks_for(n), GPT_BLOCK>>>(s, T, n);
    return cudaGetLastError();
}

/* a warp a row: the row's sum of p dp by shuffles, then each element */
__global__ void softmax_backward_kernel(float *ds, const float *p, const float *dp, long long rows, int T, float scale)
{
    long long row = blockIdx.x * (long long)(blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float *pr = p + row * T, *dpr = dp + row * T;
    float s = 0.0f;
    for (int j = lane; j < T; j += 32) s += pr[j] * dpr[j];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    for (int j = lane; j < T; j += 32) ds[row * T + j] = pr[j] * (dpr[j] - s) * scale;
}
extern "C" cudaError_t gpt_softmax_backward_launch(float *ds, const float *p, const float *dp, long long rows, int T,
                                                   float scale)
{
    unsigned blocks = (unsigned)((rows + GPT_BLOCK / 32 - 1) / (GPT_BLOCK / 32));
    softmax_backward_kernel<<<blocks, GPT_BLOCK>>>(ds, p, dp, rows, T, scale);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- bf16 operands */

__global__ void to_bf16_kernel(unsigned short *out, const float *in, size_t n)
{
    GRID_STRIDE(i, n) out[i] = lb_bf16_rn(in[i]);
}
extern "C" cudaError_t gpt_to_bf16_launch(unsigned short *out, const float *in, size_t n)
{
    to_bf16_kernel<<<blocks_for(n), GPT_BLOCK>>>(out, in, n);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- the global norm */

/* each block sums its share of squares (warp shuffles, then the block's warps), one atomic a block */
__global__ void sum_squares_kernel(float *sumsq, const float *g, size_t n)
{
    __shared__ float warp_sums[GPT_BLOCK / 32];
    float s = 0.0f;
    GRID_STRIDE(i, n) s += g[i] * g[i];
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int w = 0; w < GPT_BLOCK / 32; w++) t += warp_sums[w];
        atomicAdd(sumsq, t);
    }
}
extern "C" cudaError_t gpt_sum_squares_launch(float *sumsq, const float *g, size_t n)
{
    unsigned blocks = blocks_for(n);
    sum_squares_kernel<<<blocks < 1024 ? blocks : 1024, GPT_BLOCK>>>(sumsq, g, n);
    return cudaGetLastError();
}

/* the clip's factor: min(1, clip / norm) */
__device__ __forceinline__ float clip_factor(const float *sumsq, float clip)
{
    float norm = sqrtf(*sumsq);
    return norm > clip ? clip / norm : 1.0f;
}

__global__ void clip_kernel(float *g, size_t n, const float *sumsq, float clip)
{
    float f = clip_factor(sumsq, clip);
    if (f == 1.0f) return;
    GRID_STRIDE(i, n) g[i] *= f;
}
extern "C" cudaError_t gpt_clip_launch(float *g, size_t n, const float *sumsq, float clip)
{
    clip_kernel<<<blocks_for(n), GPT_BLOCK>>>(g, n, sumsq, clip);
    return cudaGetLastError();
}

__global__ void grad_scale_kernel(float *scale0, float *scale1, const float *sumsq, float clip)
{
    *scale0 = *scale1 = clip_factor(sumsq, clip);
}
extern "C" cudaError_t gpt_grad_scale_launch(float *scale0, float *scale1, const float *sumsq, float clip)
{
    grad_scale_kernel<<<1, 1>>>(scale0, scale1, sumsq, clip);
    return cudaGetLastError();
}
