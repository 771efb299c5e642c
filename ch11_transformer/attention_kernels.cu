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
 *   (4-7 are Hopper's own, in attention_hopper.cu)
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
 *   7  5 with three consumer warpgroups at D = 64 (blocks of 192 queries; two, as 5, at D = 128):
 *      at D = 64 a product is short beside a softmax, and two softmaxes hide it better than one
 * Causal (query i sees keys 0..i): every version stops at the diagonal; the tiled versions skip
 * the tiles above it entirely and mask only the tile that crosses it.
 */
#include "attention_kernels.h"
#include "attention_device.cuh" /* bf16, last_key, online_rows (shared with attention_hopper.cu) */
#include "row_reduce.cuh"       /* fast_exp, block_online_merge (version 0's softmax) */
#include "lb_tensor_core.cuh"   /* cp.async, ldmatrix, mma.sync */

#include <stdlib.h>

/* ================================================================ version 0's softmax */

#define ATT_SOFTMAX_BLOCK 256

/* One block a row of scores (already scaled by 1/sqrt(D)): the online max and sum over the keys
 * the row may see, then the probabilities in bf16 (0 past the diagonal, when causal). */
__global__ void __launch_bounds__(ATT_SOFTMAX_BLOCK)
    attention_softmax_kernel(const float *scores, uint16_t *probs, int seq, int causal, float *lse)
{
    __shared__ float slots[64];
    long long row = blockIdx.x;
    const float *x = scores + row * seq;
    uint16_t *p = probs + row * seq;
    int visible = last_key((int)(row % seq), seq, causal) + 1;
    float m = -INFINITY, d = 0.0f;
    for (int c = threadIdx.x; c < visible; c += ATT_SOFTMAX_BLOCK) online_add(m, d, x[c]);
    block_online_merge(m, d, slots);
    if (lse && threadIdx.x == 0) lse[row] = m + logf(d);
    float inv = 1.0f / d;
    for (int c = threadIdx.x; c < seq; c += ATT_SOFTMAX_BLOCK)
        p[c] = c < visible ? lb_bf16_rn(fast_exp(x[c] - m) * inv) : 0;
}

extern "C" cudaError_t attention_softmax_launch(const float *scores, uint16_t *probs, long long rows, int seq,
                                                int causal, float *lse)
{
    if (rows < 1 || rows > 2147483647LL || seq < 1) return cudaErrorInvalidValue;
    attention_softmax_kernel<<<(unsigned)rows, ATT_SOFTMAX_BLOCK>>>(scores, probs, seq, causal, lse);
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
                                                                uint16_t *O, float *lse_out, int seq, long long rows,
                                                                int causal)
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
        for (int d = 0; d < D; d++) dot += lb_bf16_float(q[d]) * lb_bf16_float(k[(size_t)j * D + d]);
        m = fmaxf(m, dot * scale);
    }
    float o[D], l = 0.0f;
#pragma unroll
    for (int d = 0; d < D; d++) o[d] = 0.0f;
    for (int j = 0; j < keys; j++) {
        float dot = 0.0f;
#pragma unroll 16
        for (int d = 0; d < D; d++) dot += lb_bf16_float(q[d]) * lb_bf16_float(k[(size_t)j * D + d]);
        float p = exp2f(dot * scale - m);
        l += p;
#pragma unroll
        for (int d = 0; d < D; d++) o[d] += p * lb_bf16_float(v[(size_t)j * D + d]);
    }
#pragma unroll
    for (int d = 0; d < D; d++) O[row * D + d] = lb_bf16_rn(o[d] / l);
    if (lse_out) lse_out[row] = lse_of(m, l);
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
    attention_kernel2(const uint16_t *Q, const uint16_t *K, const uint16_t *V, uint16_t *O, float *lse_out, int seq, int causal)
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
            q[c] = make_float4(lb_bf16_float(qp[0]) * scale, lb_bf16_float(qp[1]) * scale, lb_bf16_float(qp[2]) * scale,
                               lb_bf16_float(qp[3]) * scale);
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
    if (lse_out && part == 0) lse_out[(size_t)blockIdx.y * seq + query] = lse_of(m, l);
    float inv = 1.0f / l;
#pragma unroll
    for (int c = 0; c < C; c++) {
        uint2 packed = make_uint2(lb_bf16_pack2(o[c].x * inv, o[c].y * inv), lb_bf16_pack2(o[c].z * inv, o[c].w * inv));
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
    attention_kernel3(const uint16_t *Q, const uint16_t *K, const uint16_t *V, uint16_t *O, float *lse_out, int seq, int causal)
{
#if LB_SM80
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
            uint32_t a[4] = {lb_bf16_pack2(s[2 * ks][0], s[2 * ks][1]), lb_bf16_pack2(s[2 * ks][2], s[2 * ks][3]),
                             lb_bf16_pack2(s[2 * ks + 1][0], s[2 * ks + 1][1]),
                             lb_bf16_pack2(s[2 * ks + 1][2], s[2 * ks + 1][3])};
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
    store_lse(lse_out, (size_t)blockIdx.y * seq, seq, row0, t4, m, l);
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        int col = 8 * j + 2 * t4;
        if (row0 < seq)
            *reinterpret_cast<uint32_t *>(O + head + (size_t)row0 * D + col) =
                lb_bf16_pack2(o[j][0] * l[0], o[j][1] * l[0]);
        if (row0 + 8 < seq)
            *reinterpret_cast<uint32_t *>(O + head + (size_t)(row0 + 8) * D + col) =
                lb_bf16_pack2(o[j][2] * l[1], o[j][3] * l[1]);
    }
#endif
}

/* ================================================================ launchers */

/* One launcher per version, each with its grid next to its kernel's choice of D */
static cudaError_t launch1(const attention_problem *p)
{
    long long rows = (long long)p->batch * p->heads * p->seq;
    unsigned blocks = (unsigned)((rows + ATT1_BLOCK - 1) / ATT1_BLOCK);
    if (p->dim == 64)
        attention_kernel1<64><<<blocks, ATT1_BLOCK>>>(p->q, p->k, p->v, p->o, p->lse, p->seq, rows, p->causal);
    else
        attention_kernel1<128><<<blocks, ATT1_BLOCK>>>(p->q, p->k, p->v, p->o, p->lse, p->seq, rows, p->causal);
    return cudaGetLastError();
}

static cudaError_t launch2(const attention_problem *p)
{
    dim3 grid((p->seq + ATT2_QUERIES - 1) / ATT2_QUERIES, p->batch * p->heads);
    if (p->dim == 64)
        attention_kernel2<64><<<grid, ATT2_THREADS>>>(p->q, p->k, p->v, p->o, p->lse, p->seq, p->causal);
    else
        attention_kernel2<128><<<grid, ATT2_THREADS>>>(p->q, p->k, p->v, p->o, p->lse, p->seq, p->causal);
    return cudaGetLastError();
}

/* version 3's shared memory (46 or 85 KiB) is past the default 48 KiB at D = 128: the limit is
 * raised at the first launch at each D (a function's static is initialised once) */
template <int D> static cudaError_t launch3_d(const attention_problem *p)
{
    static const cudaError_t allowed =
        cudaFuncSetAttribute(attention_kernel3<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, att3_layout<D>::BYTES);
    if (allowed != cudaSuccess) return allowed;
    dim3 grid((p->seq + ATT3_QUERIES - 1) / ATT3_QUERIES, p->batch * p->heads);
    attention_kernel3<D>
        <<<grid, ATT3_THREADS, att3_layout<D>::BYTES>>>(p->q, p->k, p->v, p->o, p->lse, p->seq, p->causal);
    return cudaGetLastError();
}
static cudaError_t launch3(const attention_problem *p) { return p->dim == 64 ? launch3_d<64>(p) : launch3_d<128>(p); }

/* Every version's launcher, and for Hopper's (attention_hopper.cu) the test of whether this GPU
 * runs them. Version 0 is the library way, in attention.c. To add a version: its kernel and
 * launcher (here, or in attention_hopper.cu for sm_90a's instructions), a row here,
 * ATTENTION_VERSIONS in attention_kernels.h, and a row in attention.c's versions[]. */
static const struct {
    cudaError_t (*launch)(const attention_problem *p);
    const char *(*unavailable)(void); /* NULL: every GPU the program runs on */
} launchers[] = {
    {NULL, NULL},
    {launch1, NULL},
    {launch2, NULL},
    {launch3, NULL},
    {attention_launch4, attention_hopper_unavailable},
    {attention_launch5, attention_hopper_unavailable},
    {attention_launch6, attention_hopper_unavailable},
    {attention_launch7, attention_hopper_unavailable},
};
static_assert(sizeof launchers / sizeof launchers[0] == ATTENTION_VERSIONS,
              "one row in launchers[] per version: ATTENTION_VERSIONS in attention_kernels.h");

extern "C" cudaError_t attention_launch(int v, const attention_problem *p)
{
    if (v < 1 || v >= ATTENTION_VERSIONS || (p->dim != 64 && p->dim != 128)) return cudaErrorInvalidValue;
    if ((p->ld_qkv || p->ld_o) && v < 4) return cudaErrorNotSupported; /* token rows: the tensor maps' versions */
    return launchers[v].launch(p);
}

extern "C" const char *attention_unavailable(int v)
{
    if (v < 0 || v >= ATTENTION_VERSIONS || !launchers[v].unavailable) return NULL;
    return launchers[v].unavailable();
}

extern "C" cudaError_t attention_prepare(attention_problem *p)
{
    p->prepared = NULL;
    if (attention_hopper_unavailable()) return cudaSuccess; /* no wgmma here: no maps to make */
    return attention_hopper_prepare(p);
}

extern "C" void attention_release(attention_problem *p)
{
    free(p->prepared);
    p->prepared = NULL;
}
