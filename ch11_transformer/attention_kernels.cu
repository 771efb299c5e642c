/* attention_kernels.cu - O = softmax(Q K^T / sqrt(D)) V, from a thread per query to
 * FlashAttention on Hopper's tensor cores.
 *
 *   Q, K, V, O: bf16, (B, H, S, D) contiguous; head (b, h) is an S x D row-major matrix. The
 *   logits are taken in log2 units (scaled by log2(e) / sqrt(D)) so that exp is one exp2.
 *
 * versions (attention.c's table; 0 is cuBLAS around attention_softmax_kernel, below):
 *   1  naive: a thread per query row; two passes over the keys (the max, then the weights and the
 *      weighted sum of V), every operand from global memory (L1 and L2 catch the reuse)
 *   2  flash on the CUDA cores, fp32: a block takes 64 queries (4 threads a query, each a quarter
 *      of D), K and V tiles of 32 keys in shared memory; the online softmax: the row's max and
 *      sum carried from tile to tile, O rescaled by exp(old max - new max) when the max grows;
 *      the S x S scores never leave the registers
 *   3  flash on the tensor cores with mma.sync (FlashAttention-2's layout): 4 warps of 16
 *      queries, Q in registers, K and V tiles of 64 keys double-buffered by cp.async, S = Q K^T
 *      and O += P V by mma.sync m16n8k16; P goes from the accumulators to the next product's
 *      operand without shared memory (their layouts agree)
 *   4  flash with wgmma and TMA (sm_90a, FlashAttention-3's structure): a producer warp asks the
 *      copy engine for Q once and K and V tiles of 128 keys into a ring of two stages; two
 *      consumer warpgroups of 64 queries each run S = Q K^T (wgmma, both operands in shared
 *      memory), the softmax, and O += P V (wgmma with P from registers, V read transposed);
 *      while one consumer does its softmax on the CUDA cores the other keeps the tensor cores
 *      busy
 *   5  FlashAttention-3's schedule: each consumer issues S of tile t together with P V of tile
 *      t - 1, and the two consumers take turns at issuing (named barriers hand the turn over), so
 *      that one's softmax runs on the CUDA cores while the other's products run
 *   6  5, persistent: one block an SM walks the (head, query block) items, its producer loading
 *      the next item's Q, K and V while the consumers finish the last one (a block's start, its
 *      first copies' latency, is paid once per SM instead of once per item)
 * Causal (query i sees keys 0..i): every version stops at the diagonal; the tiled versions skip
 * the tiles above it entirely and mask only the tile that crosses it.
 */
#include "attention_kernels.h"
#include "labbook.h"          /* lb_sm90a_unavailable */
#include "row_reduce.cuh"     /* fast_exp, block_online_merge (version 0's softmax) */
#include "lb_tensor_core.cuh" /* cp.async, ldmatrix, mma.sync, mbarrier, TMA, wgmma's descriptors */

#include <cuda.h> /* CUtensorMap and the cuTensorMapEncodeTiled types (no libcuda link) */
#include <cuda_bf16.h>
#include <stdlib.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define ATT_SM80 1 /* device code for sm_80 and newer: bf16 mma.sync, cp.async */
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATT_SM90A 1 /* device code for sm_90a: wgmma, setmaxnreg */
#endif

#define LOG2E 1.4426950408889634f

/* Versions 4-6: the depth of the ring of K and V tiles (make attention ATT_STAGES=3). A stage
 * holds a tile of K and one of V, 64 KiB at D = 128 (32 at D = 64), beside Q's 32 KiB: at most 3
 * fit in the 227 KiB a block may have on an H100/H200, and a ring needs 2. With 2, version 5's
 * consumers hold both at once (S of tile t, P V of tile t - 1), so the next tile's copy starts
 * only when P V of t - 1 is done; a third lets it start a tile earlier. Refused here, when
 * building, rather than by the driver when the program sets up. */
#ifndef ATT_STAGES
#define ATT_STAGES 2
#endif
#if ATT_STAGES < 2 || 32 + ATT_STAGES * 64 + 1 > 226
#error \
    "ATT_STAGES must be 2..3: a stage of K and V is 64 KiB at D = 128, and a block may have at most 227 KiB of shared memory"
#endif

/* a bf16 is the top half of a float: widening is a shift; narrowing rounds to nearest even */
__device__ __forceinline__ float bf16_float(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }
__device__ __forceinline__ uint16_t float_bf16(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
/* two floats as one register of two bf16, lo in the low half (the lower column, for mma) */
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    return (uint32_t)float_bf16(lo) | ((uint32_t)float_bf16(hi) << 16);
}

/* 2^x on the special function unit, subnormal results flushed to 0 (exp2f would add a scaling
 * around it for them: 2 FMULs and a compare an exponential; a weight below 2^-126 is nothing
 * beside the row's largest, which is 1) */
__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* The keys a query row may see: all S, or up to itself when causal. A tile's scores past it are
 * set to -inf (exp2 gives 0). */
__device__ __forceinline__ int last_key(int query, int seq, int causal)
{
    return causal ? min(query, seq - 1) : seq - 1;
}

/* The online softmax's step for the two rows a lane holds in versions 3 and 4 (an mma.sync or
 * wgmma accumulator layout: the rest of each row sits in the lane's quad): the tile's max of
 * each row across the quad, the new running max m, the factor alpha = exp2(old m - new m) by
 * which the row's sum l (scaled here) and its partial O (by the caller) shrink, and m_use, the
 * max the tile's weights are taken against (0 while a row has seen no key: -inf - -inf is NaN). */
__device__ __forceinline__ void online_rows(float tile_max[2], float m[2], float l[2], float alpha[2], float m_use[2])
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(FULL_MASK, tile_max[h], 1));
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(FULL_MASK, tile_max[h], 2));
        float m_new = fmaxf(m[h], tile_max[h]);
        m_use[h] = m_new == -INFINITY ? 0.0f : m_new;
        alpha[h] = fast_exp2(m[h] - m_use[h]);
        m[h] = m_new;
        l[h] *= alpha[h];
    }
}

/* At the end: each row's sum across its quad (the lanes kept their own parts), as 1 / sum */
__device__ __forceinline__ void inverse_row_sums(float l[2])
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(FULL_MASK, l[h], 1);
        l[h] += __shfl_xor_sync(FULL_MASK, l[h], 2);
        l[h] = 1.0f / l[h];
    }
}

/* ================================================================ version 0's softmax */

#define ATT_SOFTMAX_BLOCK 256

/* One block a row of scores (already scaled by 1/sqrt(D)): the online max and sum over the keys
 * the row may see, then the probabilities in bf16 (0 past the diagonal, when causal). */
__global__ void __launch_bounds__(ATT_SOFTMAX_BLOCK)
    attention_softmax_kernel(const float *scores, uint16_t *probs, int seq, int causal)
{
    __shared__ float slots[64];
    long long row = blockIdx.x;
    const float *x = scores + row * seq;
    uint16_t *p = probs + row * seq;
    int visible = last_key((int)(row % seq), seq, causal) + 1;
    float m = -INFINITY, d = 0.0f;
    for (int c = threadIdx.x; c < visible; c += ATT_SOFTMAX_BLOCK) online_add(m, d, x[c]);
    block_online_merge(m, d, slots);
    float inv = 1.0f / d;
    for (int c = threadIdx.x; c < seq; c += ATT_SOFTMAX_BLOCK)
        p[c] = c < visible ? float_bf16(fast_exp(x[c] - m) * inv) : 0;
}

extern "C" cudaError_t attention_softmax_launch(const float *scores, uint16_t *probs, long long rows, int seq,
                                                int causal)
{
    if (rows < 1 || rows > 2147483647LL || seq < 1) return cudaErrorInvalidValue;
    attention_softmax_kernel<<<(unsigned)rows, ATT_SOFTMAX_BLOCK>>>(scores, probs, seq, causal);
    return cudaGetLastError();
}

/* ================================================================ version 1: naive */

#define ATT1_BLOCK 128

/* A thread per query row. Pass 1: the max logit over the keys it sees. Pass 2: each key's weight
 * exp2(s - max), their sum, and the weighted sum of V rows in D registers. The 32 threads of a
 * warp are 32 neighbouring queries of one head: they read the same key at the same time, so
 * every K and V load is one broadcast, served from L1 or L2 after the first block; but q[d] is
 * each thread's own row, so each load of it touches 32 rows (from L1, 32 wavefronts): two loads
 * a multiply-add, and the load units are the limit. */
template <int D>
__global__ void __launch_bounds__(ATT1_BLOCK) attention_kernel1(const uint16_t *Q, const uint16_t *K, const uint16_t *V,
                                                                uint16_t *O, int seq, long long rows, int causal)
{
    long long row = blockIdx.x * (long long)ATT1_BLOCK + threadIdx.x;
    if (row >= rows) return;
    long long head = row / seq;
    int keys = last_key((int)(row % seq), seq, causal) + 1;
    const uint16_t *q = Q + row * D, *k = K + head * seq * D, *v = V + head * seq * D;
    const float scale = LOG2E * rsqrtf((float)D);

    float m = -INFINITY;
    for (int j = 0; j < keys; j++) {
        float dot = 0.0f;
#pragma unroll 16
        for (int d = 0; d < D; d++) dot += bf16_float(q[d]) * bf16_float(k[(size_t)j * D + d]);
        m = fmaxf(m, dot * scale);
    }
    float o[D], l = 0.0f;
#pragma unroll
    for (int d = 0; d < D; d++) o[d] = 0.0f;
    for (int j = 0; j < keys; j++) {
        float dot = 0.0f;
#pragma unroll 16
        for (int d = 0; d < D; d++) dot += bf16_float(q[d]) * bf16_float(k[(size_t)j * D + d]);
        float p = exp2f(dot * scale - m);
        l += p;
#pragma unroll
        for (int d = 0; d < D; d++) o[d] += p * bf16_float(v[(size_t)j * D + d]);
    }
#pragma unroll
    for (int d = 0; d < D; d++) O[row * D + d] = float_bf16(o[d] / l);
}

/* ================================================================ version 2: flash, fp32 on the CUDA cores */

#define ATT2_QUERIES 64 /* a block's queries */
#define ATT2_KEYS 32    /* a K/V tile's keys */
#define ATT2_THREADS (ATT2_QUERIES * 4)

/* Thread t works on query t/4 and, of its D dimensions, the float4 groups 4(t%4) + 16c: the 4
 * threads of a query read 64 neighbouring bytes of a key, and the warp's 8 queries the same 64
 * bytes (a broadcast). A dot product is 4 partial sums added by two shuffles within the quad.
 * The tile loop: scores of 32 keys in registers, the tile's max, then O and the sum rescaled by
 * exp2(old max - new max) (0 at the first tile, where the old max is -inf), then the weights. */
template <int D>
__global__ void __launch_bounds__(ATT2_THREADS, 2)
    attention_kernel2(const uint16_t *Q, const uint16_t *K, const uint16_t *V, uint16_t *O, int seq, int causal)
{
    const int C = D / 16; /* float4 groups a thread holds */
    __shared__ float4 sK[ATT2_KEYS][D / 4], sV[ATT2_KEYS][D / 4];
    int qblock = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x; /* causal: the longest rows start first */
    int q0 = qblock * ATT2_QUERIES, query = q0 + threadIdx.x / 4, part = threadIdx.x % 4;
    size_t head = (size_t)blockIdx.y * seq * D;
    const float scale = LOG2E * rsqrtf((float)D);

    float4 q[C], o[C];
#pragma unroll
    for (int c = 0; c < C; c++) {
        q[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f), o[c] = q[c];
        if (query < seq) {
            const uint16_t *qp = Q + head + (size_t)query * D + 16 * c + 4 * part;
            q[c] = make_float4(bf16_float(qp[0]) * scale, bf16_float(qp[1]) * scale, bf16_float(qp[2]) * scale,
                               bf16_float(qp[3]) * scale);
        }
    }
    int last = last_key(query, seq, causal);
    int tiles = (seq + ATT2_KEYS - 1) / ATT2_KEYS;
    if (causal) tiles = min(tiles, (q0 + ATT2_QUERIES - 1) / ATT2_KEYS + 1); /* none above the diagonal */
    float m = -INFINITY, l = 0.0f;
    for (int t = 0; t < tiles; t++) {
        int k0 = t * ATT2_KEYS;
        /* the tile into shared memory as floats, 4 bf16 (8 bytes) a load; keys past S as zeros */
        for (int i = threadIdx.x; i < ATT2_KEYS * D / 4; i += ATT2_THREADS) {
            int r = i / (D / 4), c4 = i % (D / 4);
            uint2 kb = make_uint2(0, 0), vb = kb;
            if (k0 + r < seq) {
                kb = *reinterpret_cast<const uint2 *>(K + head + (size_t)(k0 + r) * D + 4 * c4);
                vb = *reinterpret_cast<const uint2 *>(V + head + (size_t)(k0 + r) * D + 4 * c4);
            }
            sK[r][c4] = make_float4(__uint_as_float(kb.x << 16), __uint_as_float(kb.x & 0xFFFF0000u),
                                    __uint_as_float(kb.y << 16), __uint_as_float(kb.y & 0xFFFF0000u));
            sV[r][c4] = make_float4(__uint_as_float(vb.x << 16), __uint_as_float(vb.x & 0xFFFF0000u),
                                    __uint_as_float(vb.y << 16), __uint_as_float(vb.y & 0xFFFF0000u));
        }
        __syncthreads();
        float s[ATT2_KEYS], tile_max = -INFINITY;
#pragma unroll
        for (int j = 0; j < ATT2_KEYS; j++) {
            float dot = 0.0f;
#pragma unroll
            for (int c = 0; c < C; c++) {
                float4 kk = sK[j][4 * c + part];
                dot += q[c].x * kk.x + q[c].y * kk.y + q[c].z * kk.z + q[c].w * kk.w;
            }
            dot += __shfl_xor_sync(FULL_MASK, dot, 1);
            dot += __shfl_xor_sync(FULL_MASK, dot, 2);
            s[j] = k0 + j <= last ? dot : -INFINITY;
            tile_max = fmaxf(tile_max, s[j]);
        }
        float m_new = fmaxf(m, tile_max);
        float alpha = fast_exp2(m - m_new); /* how much smaller the old terms are at the new max */
        l *= alpha;
#pragma unroll
        for (int c = 0; c < C; c++) o[c].x *= alpha, o[c].y *= alpha, o[c].z *= alpha, o[c].w *= alpha;
#pragma unroll
        for (int j = 0; j < ATT2_KEYS; j++) {
            float p = fast_exp2(s[j] - m_new);
            l += p;
#pragma unroll
            for (int c = 0; c < C; c++) {
                float4 vv = sV[j][4 * c + part];
                o[c].x += p * vv.x, o[c].y += p * vv.y, o[c].z += p * vv.z, o[c].w += p * vv.w;
            }
        }
        m = m_new;
        __syncthreads(); /* every thread is done with the tile before the next one overwrites it */
    }
    if (query >= seq) return;
    float inv = 1.0f / l;
#pragma unroll
    for (int c = 0; c < C; c++) {
        uint2 packed = make_uint2(pack_bf16(o[c].x * inv, o[c].y * inv), pack_bf16(o[c].z * inv, o[c].w * inv));
        *reinterpret_cast<uint2 *>(O + head + (size_t)query * D + 16 * c + 4 * part) = packed;
    }
}

/* ================================================================ version 3: mma.sync, FlashAttention-2 */

#define ATT3_QUERIES 64 /* 4 warps x 16 */
#define ATT3_KEYS 64
#define ATT3_THREADS 128

/* shared memory: Q, then two stages of K and V, rows padded by 16 bytes so that ldmatrix's 8 row
 * addresses fall in 8 different 16-byte bank groups */
template <int D> struct att3_layout {
    static const int LD = D + 8; /* bf16 a row */
    static const int TILE = ATT3_KEYS * LD;
    static const int BYTES = (ATT3_QUERIES * LD + 4 * TILE) * 2;
};

/* rows r0.. of a (rows x D) bf16 matrix into shared memory (row stride LD) by cp.async, 16 bytes
 * a copy; rows past `valid` arrive as zeros (their source is row 0, never read) */
template <int D, int ROWS> __device__ __forceinline__ void load_rows(uint16_t *dst, const uint16_t *src, int valid)
{
    const int LD = att3_layout<D>::LD, CHUNKS = D / 8;
    for (int i = threadIdx.x; i < ROWS * CHUNKS; i += ATT3_THREADS) {
        int r = i / CHUNKS, c = (i % CHUNKS) * 8;
        cp_async16_or_zero(dst + r * LD + c, src + (size_t)(r < valid ? r : 0) * D + c, r < valid);
    }
}

/* Each warp: 16 queries, all of D. Per K/V tile of 64 keys:
 *   S (16 x 64) = Q K^T: D/16 k-steps x 8 mma of 16x8, K's fragments by ldmatrix (K rows are
 *   keys with D contiguous: the "col" operand as stored);
 *   the online softmax on S in registers: lane t holds rows t/4 and t/4 + 8, so a row's max and
 *   sum are over the lane's own 16 values and its quad (2 shuffles); the sum is kept per lane and
 *   added across the quad once, at the end;
 *   O (16 x D) += P V: P's accumulators become the A operand as they are (two 16x8 tiles of S are
 *   one 16x16 A fragment), V's fragments by ldmatrix.trans (V rows are keys with D contiguous:
 *   the B operand wants it transposed).
 * Tile t + 1 loads by cp.async while tile t is multiplied. */
template <int D>
__global__ void __launch_bounds__(ATT3_THREADS)
    attention_kernel3(const uint16_t *Q, const uint16_t *K, const uint16_t *V, uint16_t *O, int seq, int causal)
{
#if ATT_SM80
    typedef att3_layout<D> L;
    extern __shared__ __align__(16) uint16_t smem3[];
    uint16_t *sQ = smem3, *sK = sQ + ATT3_QUERIES * L::LD, *sV = sK + 2 * L::TILE;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    int qblock = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    int q0 = qblock * ATT3_QUERIES;
    size_t head = (size_t)blockIdx.y * seq * D;
    const float scale = LOG2E * rsqrtf((float)D);
    int tiles = (seq + ATT3_KEYS - 1) / ATT3_KEYS;
    if (causal) tiles = min(tiles, (q0 + ATT3_QUERIES - 1) / ATT3_KEYS + 1);

    load_rows<D, ATT3_QUERIES>(sQ, Q + head + (size_t)q0 * D, seq - q0);
    load_rows<D, ATT3_KEYS>(sK, K + head, seq);
    load_rows<D, ATT3_KEYS>(sV, V + head, seq);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qf[D / 16][4]; /* this warp's 16 rows of Q as A fragments, for every k-step */
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        ldmatrix_x4(qf[kk], sQ + (warp * 16 + lane % 16) * L::LD + kk * 16 + (lane / 16) * 8);

    int row0 = q0 + warp * 16 + g; /* this lane's two rows: row0 and row0 + 8 */
    int last[2] = {last_key(row0, seq, causal), last_key(row0 + 8, seq, causal)};
    float o[D / 8][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    for (int t = 0; t < tiles; t++) {
        int st = t & 1, k0 = t * ATT3_KEYS;
        if (t + 1 < tiles) { /* the next tile into the other stage, while this one is used */
            int k1 = k0 + ATT3_KEYS;
            load_rows<D, ATT3_KEYS>(sK + (st ^ 1) * L::TILE, K + head + (size_t)k1 * D, seq - k1);
            load_rows<D, ATT3_KEYS>(sV + (st ^ 1) * L::TILE, V + head + (size_t)k1 * D, seq - k1);
            cp_async_commit();
            cp_async_wait<1>(); /* all but the newest group: tile t has landed */
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const uint16_t *tK = sK + st * L::TILE, *tV = sV + st * L::TILE;

        /* S = Q K^T, 16 x 64 */
        float s[8][4] = {};
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
            for (int p = 0; p < 4; p++) { /* keys 16p..16p+15: two 8-key tiles, both k halves */
                uint32_t r[4];
                ldmatrix_x4(r, tK + (p * 16 + (lane / 16) * 8 + lane % 8) * L::LD + kk * 16 + ((lane / 8) & 1) * 8);
                uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                mma_16816(s[2 * p], qf[kk], b0);
                mma_16816(s[2 * p + 1], qf[kk], b1);
            }

        /* the online softmax of the two rows, in log2 units */
        float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int key = k0 + 8 * j + 2 * t4 + (e & 1), h = e / 2;
                s[j][e] = key <= last[h] ? s[j][e] * scale : -INFINITY;
                tile_max[h] = fmaxf(tile_max[h], s[j][e]);
            }
        float alpha[2], m_use[2];
        online_rows(tile_max, m, l, alpha, m_use);
#pragma unroll
        for (int j = 0; j < D / 8; j++)
            o[j][0] *= alpha[0], o[j][1] *= alpha[0], o[j][2] *= alpha[1], o[j][3] *= alpha[1];
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[j][e] = fast_exp2(s[j][e] - m_use[e / 2]);
                l[e / 2] += s[j][e];
            }

            /* O += P V: P (16 x 64) as 4 A fragments of 16 keys, V's 64 x D through ldmatrix.trans */
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            uint32_t a[4] = {pack_bf16(s[2 * ks][0], s[2 * ks][1]), pack_bf16(s[2 * ks][2], s[2 * ks][3]),
                             pack_bf16(s[2 * ks + 1][0], s[2 * ks + 1][1]),
                             pack_bf16(s[2 * ks + 1][2], s[2 * ks + 1][3])};
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) { /* columns 16dp..16dp+15 of O: two 8-column tiles */
                uint32_t r[4];
                ldmatrix_x4_trans(r,
                                  tV + (ks * 16 + ((lane / 8) & 1) * 8 + lane % 8) * L::LD + dp * 16 + (lane / 16) * 8);
                uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                mma_16816(o[2 * dp], a, b0);
                mma_16816(o[2 * dp + 1], a, b1);
            }
        }
        __syncthreads(); /* every warp is done with stage st before the next iteration refills it */
    }

    /* the sums across the quad, then O / l in bf16, two columns a store */
    inverse_row_sums(l);
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        int col = 8 * j + 2 * t4;
        if (row0 < seq)
            *reinterpret_cast<uint32_t *>(O + head + (size_t)row0 * D + col) =
                pack_bf16(o[j][0] * l[0], o[j][1] * l[0]);
        if (row0 + 8 < seq)
            *reinterpret_cast<uint32_t *>(O + head + (size_t)(row0 + 8) * D + col) =
                pack_bf16(o[j][2] * l[1], o[j][3] * l[1]);
    }
#endif
}

/* ================================================================ version 4: wgmma + TMA (sm_90a) */

#define ATT4_QUERIES 128 /* two consumer warpgroups of 64 */
#define ATT4_KEYS 128
#define ATT4_THREADS 384 /* warpgroup 0 the producer, 1 and 2 the consumers */
#define ATT4_STAGES ATT_STAGES
#define ATT4_BOX_BYTES(rows) ((rows)*128) /* a box: rows x 64 bf16 (128 bytes, one swizzle row) */

/* shared memory, each tile as D/64 boxes of rows x 128 bytes, 1024-byte aligned: Q, then the
 * ring of K and V stages */
template <int D> struct att4_layout {
    static const int Q_BYTES = (D / 64) * ATT4_BOX_BYTES(ATT4_QUERIES);
    static const int KV_BYTES = (D / 64) * ATT4_BOX_BYTES(ATT4_KEYS); /* one of K or V */
    static const int BYTES = Q_BYTES + ATT4_STAGES * 2 * KV_BYTES + 1024;
};

#ifdef ATT_HOPPER

/* The wgmma instructions, one for each shape used: the operand lists of 64 and 32 accumulators */
#define ATT_R32                                                                                                 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
    "%23, %24, %25, %26, %27, %28, %29, %30, %31"
#define ATT_R64                                                                                                 \
    ATT_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, " \
            "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define ATT_D8(i)                                                                                               \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])

/* S (64 x 128) = or += Q (64 x 16, descriptor) K^T (16 x 128, descriptor, K-major): both
 * operands in shared memory. accumulate 0 overwrites d (the first k-step of a tile). */
__device__ __forceinline__ void wgmma_qk(float d[64], uint64_t dq, uint64_t dk, int accumulate)
{
#if ATT_SM90A
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" ATT_R64 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : ATT_D8(0), ATT_D8(8), ATT_D8(16), ATT_D8(24), ATT_D8(32), ATT_D8(40), ATT_D8(48), ATT_D8(56)
                 : "l"(dq), "l"(dk), "r"(accumulate));
#endif
}
/* O (64 x D) += P (64 x 16, four registers a thread: the layout of mma.sync's A) V (16 x D,
 * descriptor, N-major: the last flag reads it transposed) */
template <int D> __device__ __forceinline__ void wgmma_pv(float *d, const uint32_t a[4], uint64_t dv);
template <> __device__ __forceinline__ void wgmma_pv<128>(float *d, const uint32_t a[4], uint64_t dv)
{
#if ATT_SM90A
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" ATT_R64
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : ATT_D8(0), ATT_D8(8), ATT_D8(16), ATT_D8(24), ATT_D8(32), ATT_D8(40), ATT_D8(48), ATT_D8(56)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(dv), "r"(1));
#endif
}
template <> __device__ __forceinline__ void wgmma_pv<64>(float *d, const uint32_t a[4], uint64_t dv)
{
#if ATT_SM90A
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" ATT_R32
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : ATT_D8(0), ATT_D8(8), ATT_D8(16), ATT_D8(24)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(dv), "r"(1));
#endif
}

/* After a wgmma.wait: the compiler may not move reads or writes of these registers across this
 * point (an empty asm that "changes" each), so nothing touches them while the tensor cores may */
template <int N> __device__ __forceinline__ void settle(float *r)
{
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
}

/* ---- the pieces of versions 4-6, each run by one consumer warpgroup (c: 0 or 1, its 64
 * queries are q0 + 64c ..) on the tile of keys in a stage (sK, sV) */

/* S (64 x 128) = Q_c K^T, issued as one group: k-step ks is 32 bytes into box ks / 4 of Q and K */
template <int D> __device__ __forceinline__ void issue_qk(float sc[64], const uint8_t *sQ, const uint8_t *sK, int c)
{
    wgmma_fence(); /* sc's registers may be written by the tensor cores now */
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) {
        int box = ks / 4, off = (ks % 4) * 32;
        wgmma_qk(sc, wgmma_desc(sQ + box * ATT4_BOX_BYTES(ATT4_QUERIES) + c * 64 * 128 + off),
                 wgmma_desc(sK + box * ATT4_BOX_BYTES(ATT4_KEYS) + off), ks > 0);
    }
    wgmma_commit();
}

/* O (64 x D) += P V, issued as one group: k-step ks is keys 16ks.., 2048 bytes into V's boxes;
 * the next 64 columns of D are the next box, ATT4_BOX_BYTES(ATT4_KEYS) further */
template <int D> __device__ __forceinline__ void issue_pv(float *o, const uint32_t p[8][4], const uint8_t *sV)
{
    wgmma_fence(); /* o was rescaled and p written by the CUDA cores: both ready for the tensor cores */
#pragma unroll
    for (int ks = 0; ks < 8; ks++) wgmma_pv<D>(o, p[ks], wgmma_desc_mn(sV + ks * 16 * 128, ATT4_BOX_BYTES(ATT4_KEYS)));
    wgmma_commit();
}

/* The online softmax of a tile of S in place: sc[4j + e] is row (e < 2 ? g : g + 8), key
 * k0 + 8j + 2 t4 + (e & 1). Keys past a row's last are masked (only where the tile reaches past
 * S or the diagonal: `edge`); the tile's max and the running max m, in log2 units (the raw scores
 * times scale); each weight as one exp2 of s scale - m; l rescaled and grown. Returns in alpha
 * the factor O must be multiplied by before this tile's P V is added. */
__device__ __forceinline__ void softmax_tile(float sc[64], int k0, int t4, const int last[2], bool edge, float scale,
                                             float m[2], float l[2], float alpha[2])
{
    float tile_max[2] = {-INFINITY, -INFINITY};
    /* key k0 + 8j + 2 t4 + (e & 1) is past the row's last when 8j + (e & 1) > last - k0 - 2 t4:
     * one subtraction a row, then comparisons with constants (no register for each key) */
    int lim[2] = {last[0] - k0 - 2 * t4, last[1] - k0 - 2 * t4};
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            if (edge && 8 * j + (e & 1) > lim[e / 2]) sc[4 * j + e] = -INFINITY;
            tile_max[e / 2] = fmaxf(tile_max[e / 2], sc[4 * j + e]);
        }
    tile_max[0] *= scale, tile_max[1] *= scale; /* scale > 0: the max of the scaled scores */
    float m_use[2];
    online_rows(tile_max, m, l, alpha, m_use);
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            sc[4 * j + e] = fast_exp2(fmaf(sc[4 * j + e], scale, -m_use[e / 2]));
            l[e / 2] += sc[4 * j + e];
        }
}

template <int D> __device__ __forceinline__ void rescale_o(float *o, const float alpha[2])
{
#pragma unroll
    for (int j = 0; j < D / 8; j++)
        o[4 * j] *= alpha[0], o[4 * j + 1] *= alpha[0], o[4 * j + 2] *= alpha[1], o[4 * j + 3] *= alpha[1];
}

/* P (64 x 128, floats in S's layout) as 8 A operands of 16 keys each, bf16: two 8-column tiles
 * of the accumulators make one operand, as with mma.sync */
__device__ __forceinline__ void pack_p(uint32_t p[8][4], const float sc[64])
{
#pragma unroll
    for (int ks = 0; ks < 8; ks++) {
        const float *x = sc + 8 * ks;
        p[ks][0] = pack_bf16(x[0], x[1]), p[ks][1] = pack_bf16(x[2], x[3]);
        p[ks][2] = pack_bf16(x[4], x[5]), p[ks][3] = pack_bf16(x[6], x[7]);
    }
}

/* O / l in bf16, two columns a store, rows row0 and row0 + 8 where they are inside S */
template <int D>
__device__ __forceinline__ void store_o(uint16_t *O, size_t head, int seq, int row0, int t4, const float *o, float l[2])
{
    inverse_row_sums(l);
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        int col = 8 * j + 2 * t4;
        if (row0 < seq)
            *reinterpret_cast<uint32_t *>(O + head + (size_t)row0 * D + col) =
                pack_bf16(o[4 * j] * l[0], o[4 * j + 1] * l[0]);
        if (row0 + 8 < seq)
            *reinterpret_cast<uint32_t *>(O + head + (size_t)(row0 + 8) * D + col) =
                pack_bf16(o[4 * j + 2] * l[1], o[4 * j + 3] * l[1]);
    }
}

/* The tiles of 128 keys a block of queries from q0 sees: all of S, or, causal, up to the
 * diagonal (none above it) */
__device__ __forceinline__ int att4_tiles(int q0, int seq, int causal)
{
    int tiles = (seq + ATT4_KEYS - 1) / ATT4_KEYS;
    return causal ? min(tiles, (q0 + ATT4_QUERIES - 1) / ATT4_KEYS + 1) : tiles;
}

/* The producer (one thread of warpgroup 0), for one block of queries: Q's boxes on q_full, then
 * each tile's K and V boxes on full[s], once both consumers have released the stage's last use
 * (empty[s]). The ring's uses are counted on from u (version 6 runs one ring through many
 * blocks of queries); returns the count after this block's tiles. */
template <int D>
__device__ __forceinline__ int produce(const CUtensorMap *mapQ, const CUtensorMap *mapK, const CUtensorMap *mapV,
                                       uint8_t *sQ, uint8_t *sKV, uint64_t *q_full, uint64_t *full, uint64_t *empty,
                                       int q0, int bh, int tiles, int u)
{
    typedef att4_layout<D> L;
    mbar_arrive_expect(q_full, L::Q_BYTES);
    for (int b = 0; b < D / 64; b++) tma_load_3d(sQ + b * ATT4_BOX_BYTES(ATT4_QUERIES), mapQ, 64 * b, q0, bh, q_full);
    for (int t = 0; t < tiles; t++, u++) {
        int s = u % ATT4_STAGES, use = u / ATT4_STAGES;
        if (use > 0) mbar_wait(&empty[s], (use - 1) & 1);
        uint8_t *sK = sKV + 2 * s * L::KV_BYTES, *sV = sK + L::KV_BYTES;
        mbar_arrive_expect(&full[s], 2 * L::KV_BYTES);
        for (int b = 0; b < D / 64; b++) {
            tma_load_3d(sK + b * ATT4_BOX_BYTES(ATT4_KEYS), mapK, 64 * b, t * ATT4_KEYS, bh, &full[s]);
            tma_load_3d(sV + b * ATT4_BOX_BYTES(ATT4_KEYS), mapV, 64 * b, t * ATT4_KEYS, bh, &full[s]);
        }
    }
    return u;
}

/* Ping-pong (versions 5 and 6): the two consumers take turns at issuing their products, so
 * that one's softmax runs on the CUDA cores while the other's products run on the tensor cores.
 * Consumer c waits on named barrier 1 + c until the other has issued (bar.sync: its 128
 * threads and the other's 128 arrivals), issues, then lets the other go (bar.arrive on the
 * other's barrier). Consumer 1 lets consumer 0 start, and skips its very last handoff, so that
 * every barrier completes as often as it is waited on. Named barrier 0 is __syncthreads'. */
__device__ __forceinline__ void my_turn(int c)
{
    if (c == 0)
        bar_sync<1, 256>();
    else
        bar_sync<2, 256>();
}
__device__ __forceinline__ void your_turn(int c)
{
    if (c == 0)
        bar_arrive<2, 256>();
    else
        bar_arrive<1, 256>();
}
/* the end of consumer c's turn: the handoff, but for consumer 1's very last (`final`) */
__device__ __forceinline__ void end_turn(int c, bool final)
{
    if (!(final && c == 1)) your_turn(c);
}

/* What a consumer warpgroup of versions 4-6 works on: its 64 queries from q0 + 64c, the tiles
 * of K and V they see (ring uses u .. u + tiles - 1), and what it needs to know of them */
template <int D> struct att4_job {
    const uint8_t *sQ, *sKV; /* Q's boxes; the ring (stage s: K at 2s, V at 2s + 1) */
    uint64_t *full, *empty;  /* the ring's barriers */
    int c, q0, bh, tiles, u, seq, causal;
    __device__ const uint8_t *stage_k(int v) const { return sKV + 2 * (v % ATT4_STAGES) * att4_layout<D>::KV_BYTES; }
    __device__ const uint8_t *stage_v(int v) const { return stage_k(v) + att4_layout<D>::KV_BYTES; }
    /* keys past a row's last only where the tile reaches past S or the diagonal */
    __device__ bool edge(int k0) const { return k0 + ATT4_KEYS > seq || (causal && k0 + ATT4_KEYS > q0 + 64 * c); }
};

/* Versions 4-6: warp-specialised. Warpgroup 0 produces (above); consumer c (warpgroups 1 and 2)
 * takes queries q0 + 64c .. and, per tile of 128 keys: S = Q_c K^T, the online softmax on S's 64
 * registers (a lane holds two rows, as with mma.sync: rows g and g + 8 of its warp's 16, whose
 * other values sit in its quad), P to bf16 registers, O += P V, and the stage released; at the
 * end O / l is stored. setmaxnreg moves registers from the producer, which needs few, to the
 * consumers' S (64), O (D/2) and P (32).
 *   version 4 (consume_in_order): those steps one after the other; the two consumers share the
 *     tensor cores as the warp schedulers happen to interleave them.
 *   versions 5 and 6 (consume_fa3, FlashAttention-3's schedule): S of tile t is issued together
 *     with P V of tile t - 1, and the consumers take turns at issuing (my_turn / your_turn): one's
 *     softmax runs on the CUDA cores while the other's products run on the tensor cores; O is
 *     rescaled once its product has landed. (A turn for each product separately, without
 *     issuing the two together, does not survive ptxas: it moves the softmax, pure register
 *     work, past the turn's bar.sync, into the turn. NOTES.) */
template <int D> __device__ __forceinline__ void consume_in_order(const att4_job<D> &j, uint16_t *O)
{
    int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    int row0 = j.q0 + 64 * j.c + 16 * warp + g; /* this lane's rows: row0 and row0 + 8 */
    int last[2] = {last_key(row0, j.seq, j.causal), last_key(row0 + 8, j.seq, j.causal)};
    const float scale = LOG2E * rsqrtf((float)D);
    float o[D / 2] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, sc[64], alpha[2];
    uint32_t p[8][4];
    bool releaser = threadIdx.x % 128 == 0; /* one arrival a consumer on a stage's empty barrier */
    for (int t = 0; t < j.tiles; t++) {
        int v = j.u + t, k0 = t * ATT4_KEYS;
        mbar_wait(&j.full[v % ATT4_STAGES], (v / ATT4_STAGES) & 1);
        issue_qk<D>(sc, j.sQ, j.stage_k(v), j.c);
        wgmma_wait<0>();
        settle<64>(sc);
        softmax_tile(sc, k0, t4, last, j.edge(k0), scale, m, l, alpha);
        rescale_o<D>(o, alpha);
        pack_p(p, sc);
        issue_pv<D>(o, p, j.stage_v(v));
        wgmma_wait<0>();
        settle<D / 2>(o);
        if (releaser) mbar_arrive(&j.empty[v % ATT4_STAGES]);
    }
    store_o<D>(O, (size_t)j.bh * j.seq * D, j.seq, row0, t4, o, l);
}

/* q_empty (version 6): arrived on once the job's last S has landed (Q may be reloaded); final:
 * this consumer's last job, whose last turn consumer 1 hands to nobody */
template <int D>
__device__ __forceinline__ void consume_fa3(const att4_job<D> &j, uint16_t *O, uint64_t *q_empty, bool final)
{
    int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4, c = j.c;
    int row0 = j.q0 + 64 * c + 16 * warp + g; /* this lane's rows: row0 and row0 + 8 */
    int last[2] = {last_key(row0, j.seq, j.causal), last_key(row0 + 8, j.seq, j.causal)};
    const float scale = LOG2E * rsqrtf((float)D);
    float o[D / 2] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}, sc[64], alpha[2];
    uint32_t p[8][4];
    bool releaser = threadIdx.x % 128 == 0;
    /* tile 0's S and softmax alone (O is still zero: nothing to rescale) */
    mbar_wait(&j.full[j.u % ATT4_STAGES], (j.u / ATT4_STAGES) & 1);
    my_turn(c);
    issue_qk<D>(sc, j.sQ, j.stage_k(j.u), c);
    end_turn(c, false);
    wgmma_wait<0>();
    settle<64>(sc);
    if (q_empty && j.tiles == 1 && releaser) mbar_arrive(q_empty); /* the only S has landed */
    softmax_tile(sc, 0, t4, last, j.edge(0), scale, m, l, alpha);
    pack_p(p, sc);
    for (int t = 1; t < j.tiles; t++) {
        int v = j.u + t, k0 = t * ATT4_KEYS;
        mbar_wait(&j.full[v % ATT4_STAGES], (v / ATT4_STAGES) & 1);
        my_turn(c);
        issue_qk<D>(sc, j.sQ, j.stage_k(v), c); /* S of tile t ... */
        issue_pv<D>(o, p, j.stage_v(v - 1));    /* ... and P V of tile t - 1, queued behind it */
        end_turn(c, false);
        wgmma_wait<1>(); /* S has landed; P V may still run */
        settle<64>(sc);
        if (q_empty && t == j.tiles - 1 && releaser) mbar_arrive(q_empty); /* the last S: Q is free */
        softmax_tile(sc, k0, t4, last, j.edge(k0), scale, m, l, alpha);
        settle<64>(sc);  /* the softmax before the wait, for nvcc's front end (ptxas: NOTES) */
        wgmma_wait<0>(); /* P V has landed: O and p are free again */
        settle<D / 2>(o);
        if (releaser) mbar_arrive(&j.empty[(v - 1) % ATT4_STAGES]);
        rescale_o<D>(o, alpha);
        pack_p(p, sc);
    }
    int v = j.u + j.tiles - 1;
    my_turn(c);
    issue_pv<D>(o, p, j.stage_v(v)); /* the last tile's P V */
    end_turn(c, final);
    wgmma_wait<0>();
    settle<D / 2>(o);
    if (releaser) mbar_arrive(&j.empty[v % ATT4_STAGES]);
    store_o<D>(O, (size_t)j.bh * j.seq * D, j.seq, row0, t4, o, l);
}

/* The block's barriers, made by one thread before anyone uses them: Q's (q_full; q_empty for
 * version 6, which reloads Q), and each stage's full (the producer's arrival and the bytes) and
 * empty (one arrival per consumer) */
__device__ __forceinline__ void init_barriers(uint64_t *q_full, uint64_t *q_empty, uint64_t *full, uint64_t *empty)
{
    if (threadIdx.x == 0) {
        mbar_init(q_full, 1), mbar_init(q_empty, 2);
        for (int s = 0; s < ATT4_STAGES; s++) mbar_init(&full[s], 1), mbar_init(&empty[s], 2);
        mbar_fence_init();
    }
    __syncthreads();
}

/* Versions 4 and 5: one block of 128 queries a block of threads (causal: the longest rows first) */
template <int D, bool FA3>
__device__ __forceinline__ void flash_wgmma_body(const CUtensorMap *mapQ, const CUtensorMap *mapK,
                                                 const CUtensorMap *mapV, uint16_t *O, int seq, int causal)
{
    typedef att4_layout<D> L;
    extern __shared__ uint8_t smem4_raw[];
    uint8_t *sQ = aligned_smem(smem4_raw), *sKV = sQ + L::Q_BYTES;
    __shared__ uint64_t q_full, q_empty, full[ATT4_STAGES], empty[ATT4_STAGES];
    int qblock = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    int q0 = qblock * ATT4_QUERIES, bh = blockIdx.y, tiles = att4_tiles(q0, seq, causal);
    init_barriers(&q_full, &q_empty, full, empty);
    int wg = threadIdx.x / 128;
    if (wg == 0) {
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) produce<D>(mapQ, mapK, mapV, sQ, sKV, &q_full, full, empty, q0, bh, tiles, 0);
        return;
    }
    setmaxnreg_inc<232>();
    att4_job<D> j = {sQ, sKV, full, empty, wg - 1, q0, bh, tiles, 0, seq, causal};
    mbar_wait(&q_full, 0);
    if (!FA3) {
        consume_in_order<D>(j, O);
    } else {
        if (j.c == 1) your_turn(j.c); /* consumer 0 goes first */
        consume_fa3<D>(j, O, NULL, true);
    }
}

/* version 4: warp-specialised, each consumer's steps one after the other */
template <int D>
__global__ void __launch_bounds__(ATT4_THREADS, 1)
    attention_kernel4(const __grid_constant__ CUtensorMap mapQ, const __grid_constant__ CUtensorMap mapK,
                      const __grid_constant__ CUtensorMap mapV, uint16_t *O, int seq, int causal)
{
#if ATT_SM90A
    flash_wgmma_body<D, false>(&mapQ, &mapK, &mapV, O, seq, causal);
#endif
}

/* version 5: FlashAttention-3's schedule: S of tile t with P V of tile t - 1, consumers in turn */
template <int D>
__global__ void __launch_bounds__(ATT4_THREADS, 1)
    attention_kernel5(const __grid_constant__ CUtensorMap mapQ, const __grid_constant__ CUtensorMap mapK,
                      const __grid_constant__ CUtensorMap mapV, uint16_t *O, int seq, int causal)
{
#if ATT_SM90A
    flash_wgmma_body<D, true>(&mapQ, &mapK, &mapV, O, seq, causal);
#endif
}

/* ---- version 6: version 5, persistent. Work item i is a block of 128 queries of one head.
 * Not causal, the items of a head are neighbours (its K and V stay in L2 while its query blocks
 * run); causal, the longest first (the query blocks at the bottom of the triangle, every head's,
 * then the next row up). A block takes its items in a snake over the grid of G blocks: k-th
 * round, item k G + b, or k G + G - 1 - b on odd rounds, so that with longest first each block
 * gets a fair share of long and short ones. */
__device__ __forceinline__ int att6_item(int round, int block, int blocks)
{
    return round * blocks + (round % 2 ? blocks - 1 - block : block);
}
__device__ __forceinline__ void att6_decode(int item, int qblocks, int heads, int causal, int *q0, int *bh)
{
    int qblock = causal ? qblocks - 1 - item / heads : item % qblocks;
    *q0 = qblock * ATT4_QUERIES, *bh = causal ? item % heads : item / qblocks;
}

/* The block walks its items: the producer loads each one's Q once both consumers are done with
 * the last one's (q_empty) and runs the ring on from item to item; the consumers do version 5's
 * work on each, their turns running on across items (consumer 1 skips its handoff only at its
 * very last item). */
template <int D>
__global__ void __launch_bounds__(ATT4_THREADS, 1)
    attention_kernel6(const __grid_constant__ CUtensorMap mapQ, const __grid_constant__ CUtensorMap mapK,
                      const __grid_constant__ CUtensorMap mapV, uint16_t *O, int seq, int heads, int causal)
{
#if ATT_SM90A
    typedef att4_layout<D> L;
    extern __shared__ uint8_t smem6_raw[];
    uint8_t *sQ = aligned_smem(smem6_raw), *sKV = sQ + L::Q_BYTES;
    __shared__ uint64_t q_full, q_empty, full[ATT4_STAGES], empty[ATT4_STAGES];
    const int qblocks = (seq + ATT4_QUERIES - 1) / ATT4_QUERIES, items = qblocks * heads;
    init_barriers(&q_full, &q_empty, full, empty);
    int wg = threadIdx.x / 128, u = 0; /* u: ring uses so far, counted alike by producer and consumers */
    if (wg == 0) {
        setmaxnreg_dec<40>();
        for (int round = 0; threadIdx.x == 0; round++) {
            int item = att6_item(round, blockIdx.x, gridDim.x), q0, bh;
            if (item >= items) break;
            att6_decode(item, qblocks, heads, causal, &q0, &bh);
            if (round > 0) mbar_wait(&q_empty, (round - 1) & 1); /* both consumers' last S of the last item */
            u = produce<D>(&mapQ, &mapK, &mapV, sQ, sKV, &q_full, full, empty, q0, bh, att4_tiles(q0, seq, causal), u);
        }
        return;
    }
    setmaxnreg_inc<232>();
    int c = wg - 1;
    if (c == 1) your_turn(c); /* consumer 0 goes first */
    for (int round = 0;; round++) {
        int item = att6_item(round, blockIdx.x, gridDim.x), q0, bh;
        if (item >= items) break;
        att6_decode(item, qblocks, heads, causal, &q0, &bh);
        att4_job<D> j = {sQ, sKV, full, empty, c, q0, bh, att4_tiles(q0, seq, causal), u, seq, causal};
        mbar_wait(&q_full, round & 1);
        consume_fa3<D>(j, O, &q_empty, att6_item(round + 1, blockIdx.x, gridDim.x) >= items);
        u += j.tiles;
    }
#endif
}

typedef struct {
    CUtensorMap q, k, v;
    int sms; /* version 6's grid: a block an SM */
} att_prepared;

/* A (B H, S, D) bf16 tensor seen by the copy engine in boxes of `rows` x 64 (128 bytes, swizzled)
 * at (d, s, head): rows past S in a box arrive as zeros */
static cudaError_t make_map(lb_encode_tiled_fn encode, CUtensorMap *map, const void *base, const attention_problem *p,
                            int rows)
{
    cuuint64_t dims[3] = {(cuuint64_t)p->dim, (cuuint64_t)p->seq, (cuuint64_t)p->batch * p->heads};
    cuuint64_t strides[2] = {(cuuint64_t)p->dim * 2, (cuuint64_t)p->seq * p->dim * 2}; /* bytes */
    cuuint32_t box[3] = {64, (cuuint32_t)rows, 1}, one[3] = {1, 1, 1};
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)base, dims, strides, box, one,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
#endif /* ATT_HOPPER */

/* ================================================================ launchers */

extern "C" cudaError_t attention_prepare(attention_problem *p)
{
    p->prepared = NULL;
    /* version 3's shared memory (46 or 85 KiB) is past the default 48 KiB at D = 128; only GPUs
     * that run it (sm_80 and newer) are asked, since sm_75 allows a block 64 KiB at most */
    int dev, major = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess && major >= 8)
        e = cudaFuncSetAttribute(attention_kernel3<64>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 att3_layout<64>::BYTES);
    if (e == cudaSuccess && major >= 8)
        e = cudaFuncSetAttribute(attention_kernel3<128>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 att3_layout<128>::BYTES);
    if (e != cudaSuccess) return e;
#ifdef ATT_HOPPER
    if (attention_unavailable(4)) return cudaSuccess; /* no wgmma here: no maps to make */
    att_prepared *m = (att_prepared *)calloc(1, sizeof *m);
    if (!m) return cudaErrorMemoryAllocation;
    p->prepared = m;
    lb_encode_tiled_fn encode;
    e = lb_tensor_map_encoder(&encode);
    if (e != cudaSuccess) return e;
    e = make_map(encode, &m->q, p->q, p, ATT4_QUERIES);
    if (e == cudaSuccess) e = make_map(encode, &m->k, p->k, p, ATT4_KEYS);
    if (e == cudaSuccess) e = make_map(encode, &m->v, p->v, p, ATT4_KEYS);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&m->sms, cudaDevAttrMultiProcessorCount, dev);
    const void *kernels64[] = {(const void *)attention_kernel4<64>, (const void *)attention_kernel5<64>,
                               (const void *)attention_kernel6<64>};
    const void *kernels128[] = {(const void *)attention_kernel4<128>, (const void *)attention_kernel5<128>,
                                (const void *)attention_kernel6<128>};
    for (int i = 0; i < 3 && e == cudaSuccess; i++) {
        e = cudaFuncSetAttribute(kernels64[i], cudaFuncAttributeMaxDynamicSharedMemorySize, att4_layout<64>::BYTES);
        if (e == cudaSuccess)
            e = cudaFuncSetAttribute(kernels128[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     att4_layout<128>::BYTES);
    }
    return e;
#else
    return cudaSuccess;
#endif
}

extern "C" void attention_release(attention_problem *p)
{
    free(p->prepared);
    p->prepared = NULL;
}

extern "C" const char *attention_unavailable(int v)
{
    if (v < 4) return NULL; /* versions 4-6 are Hopper's */
#ifdef ATT_HOPPER
    return lb_sm90a_unavailable(1);
#else
    return lb_sm90a_unavailable(0);
#endif
}

/* One launcher per version, each with its grid next to its kernel's choice of D */
static cudaError_t launch1(const attention_problem *p)
{
    long long rows = (long long)p->batch * p->heads * p->seq;
    unsigned blocks = (unsigned)((rows + ATT1_BLOCK - 1) / ATT1_BLOCK);
    if (p->dim == 64)
        attention_kernel1<64><<<blocks, ATT1_BLOCK>>>(p->q, p->k, p->v, p->o, p->seq, rows, p->causal);
    else
        attention_kernel1<128><<<blocks, ATT1_BLOCK>>>(p->q, p->k, p->v, p->o, p->seq, rows, p->causal);
    return cudaGetLastError();
}

static cudaError_t launch2(const attention_problem *p)
{
    dim3 grid((p->seq + ATT2_QUERIES - 1) / ATT2_QUERIES, p->batch * p->heads);
    if (p->dim == 64)
        attention_kernel2<64><<<grid, ATT2_THREADS>>>(p->q, p->k, p->v, p->o, p->seq, p->causal);
    else
        attention_kernel2<128><<<grid, ATT2_THREADS>>>(p->q, p->k, p->v, p->o, p->seq, p->causal);
    return cudaGetLastError();
}

static cudaError_t launch3(const attention_problem *p)
{
    dim3 grid((p->seq + ATT3_QUERIES - 1) / ATT3_QUERIES, p->batch * p->heads);
    if (p->dim == 64)
        attention_kernel3<64>
            <<<grid, ATT3_THREADS, att3_layout<64>::BYTES>>>(p->q, p->k, p->v, p->o, p->seq, p->causal);
    else
        attention_kernel3<128>
            <<<grid, ATT3_THREADS, att3_layout<128>::BYTES>>>(p->q, p->k, p->v, p->o, p->seq, p->causal);
    return cudaGetLastError();
}

/* versions 4 and 5: a block of 128 queries a (head, query block), one block an SM at a time;
 * version 6: as many blocks as SMs (or items), each walking its items */
#ifdef ATT_HOPPER
template <int D> static void launch_wgmma_d(int v, const att_prepared *m, const attention_problem *p)
{
    int qblocks = (p->seq + ATT4_QUERIES - 1) / ATT4_QUERIES, heads = p->batch * p->heads;
    dim3 grid(qblocks, heads);
    size_t smem = att4_layout<D>::BYTES;
    if (v == 4)
        attention_kernel4<D><<<grid, ATT4_THREADS, smem>>>(m->q, m->k, m->v, p->o, p->seq, p->causal);
    else if (v == 5)
        attention_kernel5<D><<<grid, ATT4_THREADS, smem>>>(m->q, m->k, m->v, p->o, p->seq, p->causal);
    else
        attention_kernel6<D>
            <<<min(m->sms, qblocks * heads), ATT4_THREADS, smem>>>(m->q, m->k, m->v, p->o, p->seq, heads, p->causal);
}
#endif
static cudaError_t launch_wgmma(int v, const attention_problem *p)
{
#ifdef ATT_HOPPER
    const att_prepared *m = (const att_prepared *)p->prepared;
    if (!m) return cudaErrorInvalidValue; /* attention_prepare was not called */
    if (p->dim == 64)
        launch_wgmma_d<64>(v, m, p);
    else
        launch_wgmma_d<128>(v, m, p);
    return cudaGetLastError();
#else
    (void)v, (void)p;
    return cudaErrorInvalidDeviceFunction;
#endif
}

extern "C" cudaError_t attention_launch(int v, const attention_problem *p)
{
    if (p->dim != 64 && p->dim != 128) return cudaErrorInvalidValue;
    switch (v) {
    case 1: return launch1(p);
    case 2: return launch2(p);
    case 3: return launch3(p);
    case 4: return launch_wgmma(4, p);
    case 5: return launch_wgmma(5, p);
    case 6: return launch_wgmma(6, p);
    default: return cudaErrorInvalidValue;
    }
}
