/* attention_backward_kernels.cu - the gradients of attention: dQ, dK, dV from dO.
 *
 *   Q, K, V, O, dO, dQ, dK, dV: bf16, (B, H, S, D) contiguous; lse: each query row's log-sum-exp
 *   of its scaled logits, as the forward writes it. P is recomputed, not stored by the forward:
 *   P_ij = exp(q_i . k_j / sqrt(D) - lse_i). With dP = dO V^T and delta_i = rowsum(dO o O)_i,
 *   dS = P o (dP - delta) / sqrt(D), and dV = P^T dO, dQ = dS K, dK = dS^T Q.
 *
 * versions (attention_backward.c's table; 0 is cuBLAS around attention_bwd_rows_kernel, below):
 *   1  flash on the CUDA cores, fp32 (FlashAttention-2's loop order): a block owns 32 keys, their
 *      dK and dV in registers (4 threads a key, each a quarter of D), and walks the query rows in
 *      tiles of 16 (a causal block starts at its first key's tile): P and dS of the tile against
 *      its keys, dV += P^T dO and dK += dS^T Q in registers, and dQ += dS K added into an fp32
 *      buffer (atomics: every key block adds to every query row it sees), converted to bf16 by a
 *      last pass. Nothing S x S is written.
 *   2  the same order on the tensor cores with mma.sync (bf16 operands, fp32 accumulators): a
 *      block owns 64 keys (4 warps of 16), walks query tiles of 64; S^T = K Q^T and dP^T = V dO^T
 *      by mma, P^T and dS^T in the accumulators, dV += P^T dO and dK += dS^T Q with the
 *      accumulators as the A operand, dS^T through shared memory for dQ = dS K (atomics again)
 *   3  the same with Hopper's wgmma (sm_90a): attention_backward_hopper.cu
 *   4  FlashAttention-3's backward (sm_90a): a producer thread loading by TMA, two consumer
 *      warpgroups, dQ added by the copy engine's reduce-add: attention_backward_hopper.cu
 * Every version first computes delta (attention_bwd_delta_kernel).
 */
#include "attention_backward_kernels.h"
#include "attention_device.cuh" /* bf16_float, float_bf16, pack_bf16 */
#include "lb_tensor_core.cuh"   /* ldmatrix, mma.sync */

#include <stdlib.h>

/* four bf16 (8 bytes) as floats */
__device__ __forceinline__ float4 bf16x4_float4(uint2 b)
{
    return make_float4(__uint_as_float(b.x << 16), __uint_as_float(b.x & 0xFFFF0000u), __uint_as_float(b.y << 16),
                       __uint_as_float(b.y & 0xFFFF0000u));
}
__device__ __forceinline__ float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

/* ================================================================ every version: delta */

#define BWD_DELTA_BLOCK 256 /* 8 warps, a row each */

/* where row `row` (b H S + h S + s, the count of (B H S) rows) of a tensor of heads starts */
__device__ __forceinline__ long long head_row(const attention_rows &r, long long row, int seq)
{
    long long bh = row / seq;
    return (bh / r.heads) * r.batch + (bh % r.heads) * r.head + (row % seq) * r.row;
}

/* delta_i = sum_d dO_id O_id: a warp a row, lanes on neighbouring pairs of columns; O and dO
 * where `rows` says. The warps walk the rows in memory's order: head by head when the heads are
 * contiguous, token by token (a token's H heads side by side) on token rows, where head-major
 * order would read one 2D-byte piece of each token row at a time */
template <int D>
__global__ void __launch_bounds__(BWD_DELTA_BLOCK)
    attention_bwd_delta_kernel(const uint16_t *O, const uint16_t *dO, attention_rows rows, int seq, float *delta,
                               long long count)
{
    long long i = blockIdx.x * (long long)(BWD_DELTA_BLOCK / 32) + threadIdx.x / 32, row = i;
    int lane = threadIdx.x % 32;
    if (i >= count) return;
    if (rows.head == D) { /* token rows: i counts tokens, then heads within one */
        long long token = i / rows.heads, b = token / seq;
        row = (b * rows.heads + i % rows.heads) * seq + token % seq;
    }
    long long at = head_row(rows, row, seq);
    float sum = 0.0f;
#pragma unroll
    for (int c = 2 * lane; c < D; c += 64) {
        uint32_t o = *reinterpret_cast<const uint32_t *>(O + at + c),
                 g = *reinterpret_cast<const uint32_t *>(dO + at + c);
        sum += __uint_as_float(o << 16) * __uint_as_float(g << 16) +
               __uint_as_float(o & 0xFFFF0000u) * __uint_as_float(g & 0xFFFF0000u);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(FULL_MASK, sum, off);
    if (lane == 0) delta[row] = sum;
}

extern "C" cudaError_t attention_bwd_delta_launch(const attention_bwd_problem *p)
{
    long long count = (long long)p->batch * p->heads * p->seq;
    unsigned blocks = (unsigned)((count + BWD_DELTA_BLOCK / 32 - 1) / (BWD_DELTA_BLOCK / 32));
    attention_rows rows = attention_rows_of(p->heads, p->seq, p->dim, p->ld_o);
    if (p->dim == 64)
        attention_bwd_delta_kernel<64><<<blocks, BWD_DELTA_BLOCK>>>(p->o, p->d_o, rows, p->seq, p->delta, count);
    else
        attention_bwd_delta_kernel<128><<<blocks, BWD_DELTA_BLOCK>>>(p->o, p->d_o, rows, p->seq, p->delta, count);
    return cudaGetLastError();
}

/* ================================================================ version 0's rows */

#define BWD_ROWS_BLOCK 256

/* One block a row of scores: P and dS in bf16, zero where the row may not look */
__global__ void __launch_bounds__(BWD_ROWS_BLOCK)
    attention_bwd_rows_kernel(const float *s, const float *dp, const float *lse, const float *delta, uint16_t *P,
                              uint16_t *dS, int seq, float scale, int causal)
{
    long long row = blockIdx.x;
    int visible = last_key((int)(row % seq), seq, causal) + 1;
    float l = lse[row], dl = delta[row];
    for (int c = threadIdx.x; c < seq; c += BWD_ROWS_BLOCK) {
        size_t e = (size_t)row * seq + c;
        float p = c < visible ? expf(s[e] - l) : 0.0f;
        P[e] = lb_bf16_rn(p);
        dS[e] = lb_bf16_rn(p * (dp[e] - dl) * scale);
    }
}

extern "C" cudaError_t attention_bwd_rows_launch(const float *s, const float *dp, const float *lse, const float *delta,
                                                 uint16_t *p, uint16_t *ds, long long rows, int seq, int dim, int causal)
{
    if (rows < 1 || rows > 2147483647LL || seq < 1) return cudaErrorInvalidValue;
    attention_bwd_rows_kernel<<<(unsigned)rows, BWD_ROWS_BLOCK>>>(s, dp, lse, delta, p, ds, seq, rsqrtf((float)dim),
                                                                 causal);
    return cudaGetLastError();
}

/* ================================================================ version 1: flash, fp32 on the CUDA cores */

#define BWD1_KEYS 32    /* a block's keys */
#define BWD1_QUERIES 16 /* a tile of query rows */
#define BWD1_THREADS (BWD1_KEYS * 4)

/* Thread t works on key t/4 and, of its D dimensions, the float4 groups 4(t%4) + 16c (as the
 * forward's version 2 splits a query): a dot product is 4 partial sums added by two shuffles in
 * the quad. Per tile of 16 queries: Q and dO of the tile into shared memory as floats; for each
 * row i, s_ij and dP_ij, P_ij = exp(s_ij - lse_i), dS_ij = P_ij (dP_ij - delta_i) / sqrt(D),
 * and the quad adds P_ij dO_i to dV_j and dS_ij q_i to dK_j in its registers; then the block
 * sums dS_i. K over its 32 keys for each row of the tile and adds that into dq_acc. */
template <int D>
__global__ void __launch_bounds__(BWD1_THREADS)
    attention_bwd_kernel1(const uint16_t *Q, const uint16_t *K, const uint16_t *V, const uint16_t *dO,
                          const float *lse, const float *delta, float *dq_acc, uint16_t *dK, uint16_t *dV, int seq,
                          int causal)
{
    const int C = D / 16; /* float4 groups a thread holds of its key's row */
    __shared__ float4 sK[BWD1_KEYS][D / 4], sQ[BWD1_QUERIES][D / 4], sdO[BWD1_QUERIES][D / 4];
    __shared__ float sdS[BWD1_QUERIES][BWD1_KEYS + 1], sL[BWD1_QUERIES], sDelta[BWD1_QUERIES];
    int kl = threadIdx.x / 4, part = threadIdx.x % 4;
    int k0 = blockIdx.x * BWD1_KEYS, key = k0 + kl;
    size_t head = (size_t)blockIdx.y * seq * D, head_row = (size_t)blockIdx.y * seq;
    const float scale = rsqrtf((float)D);

    float4 k[C], v[C], dk[C], dv[C];
#pragma unroll
    for (int c = 0; c < C; c++) {
        k[c] = v[c] = dk[c] = dv[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (key < seq) {
            size_t at = head + (size_t)key * D + 16 * c + 4 * part;
            k[c] = bf16x4_float4(*reinterpret_cast<const uint2 *>(K + at));
            v[c] = bf16x4_float4(*reinterpret_cast<const uint2 *>(V + at));
        }
        sK[kl][4 * c + part] = k[c];
    }
    /* causal: query rows before the block's first key see none of its keys */
    int q_first = causal ? k0 / BWD1_QUERIES * BWD1_QUERIES : 0;
    for (int q0 = q_first; q0 < seq; q0 += BWD1_QUERIES) {
        __syncthreads(); /* sK written; the last tile's Q, dO and dS no longer read */
        for (int i = threadIdx.x; i < BWD1_QUERIES * D / 4; i += BWD1_THREADS) {
            int r = i / (D / 4), c4 = i % (D / 4);
            uint2 qb = make_uint2(0, 0), gb = qb;
            if (q0 + r < seq) {
                qb = *reinterpret_cast<const uint2 *>(Q + head + (size_t)(q0 + r) * D + 4 * c4);
                gb = *reinterpret_cast<const uint2 *>(dO + head + (size_t)(q0 + r) * D + 4 * c4);
            }
            sQ[r][c4] = bf16x4_float4(qb), sdO[r][c4] = bf16x4_float4(gb);
        }
        if (threadIdx.x < BWD1_QUERIES) {
            int row = q0 + threadIdx.x;
            sL[threadIdx.x] = row < seq ? lse[head_row + row] : 0.0f;
            sDelta[threadIdx.x] = row < seq ? delta[head_row + row] : 0.0f;
        }
        __syncthreads();
        for (int r = 0; r < BWD1_QUERIES; r++) {
            float s = 0.0f, dp = 0.0f;
#pragma unroll
            for (int c = 0; c < C; c++) s += dot4(sQ[r][4 * c + part], k[c]), dp += dot4(sdO[r][4 * c + part], v[c]);
            s += __shfl_xor_sync(FULL_MASK, s, 1);
            s += __shfl_xor_sync(FULL_MASK, s, 2);
            dp += __shfl_xor_sync(FULL_MASK, dp, 1);
            dp += __shfl_xor_sync(FULL_MASK, dp, 2);
            int row = q0 + r;
            bool seen = key < seq && row < seq && (!causal || key <= row);
            float p = seen ? expf(s * scale - sL[r]) : 0.0f;
            float ds = p * (dp - sDelta[r]) * scale;
            if (part == 0) sdS[r][kl] = ds;
#pragma unroll
            for (int c = 0; c < C; c++) {
                float4 g = sdO[r][4 * c + part], q = sQ[r][4 * c + part];
                dv[c].x += p * g.x, dv[c].y += p * g.y, dv[c].z += p * g.z, dv[c].w += p * g.w;
                dk[c].x += ds * q.x, dk[c].y += ds * q.y, dk[c].z += ds * q.z, dk[c].w += ds * q.w;
            }
        }
        __syncthreads(); /* the tile's dS complete */
        const float *sKf = reinterpret_cast<const float *>(sK);
        for (int i = threadIdx.x; i < BWD1_QUERIES * D; i += BWD1_THREADS) {
            int r = i / D, d = i % D;
            if (q0 + r >= seq) continue;
            float acc = 0.0f;
#pragma unroll 8
            for (int j = 0; j < BWD1_KEYS; j++) acc += sdS[r][j] * sKf[j * D + d];
            atomicAdd(dq_acc + head + (size_t)(q0 + r) * D + d, acc);
        }
    }
    if (key >= seq) return;
#pragma unroll
    for (int c = 0; c < C; c++) {
        size_t at = head + (size_t)key * D + 16 * c + 4 * part;
        *reinterpret_cast<uint2 *>(dK + at) = make_uint2(lb_bf16_pack2(dk[c].x, dk[c].y), lb_bf16_pack2(dk[c].z, dk[c].w));
        *reinterpret_cast<uint2 *>(dV + at) = make_uint2(lb_bf16_pack2(dv[c].x, dv[c].y), lb_bf16_pack2(dv[c].z, dv[c].w));
    }
}

/* dQ from its fp32 sum ((B H S, D) contiguous) to bf16 where `rows` says: four columns a thread
 * (D is 64 or 128: a row's fours never straddle rows) */
__global__ void attention_bwd_convert_kernel(const float *acc, uint16_t *out, attention_rows rows, int seq, int dim,
                                             size_t n)
{
    size_t i = 4 * (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (i >= n) return;
    float4 a = *reinterpret_cast<const float4 *>(acc + i);
    long long at = head_row(rows, (long long)(i / dim), seq) + (long long)(i % dim);
    *reinterpret_cast<uint2 *>(out + at) = lb_bf16_pack4(a.x, a.y, a.z, a.w);
}

/* ================================================================ version 2: mma.sync, FlashAttention-2 */

#define BWD2_KEYS 64    /* a block's keys: 4 warps of 16 */
#define BWD2_QUERIES 64 /* a tile of query rows */
#define BWD2_THREADS 128

/* shared memory: K, V (the block's keys), Q, dO (a query tile), rows of D bf16 padded by 16 bytes
 * so that ldmatrix's 8 row addresses fall in 8 different bank groups; then dS^T (keys x queries,
 * bf16, padded the same way), and the tile's lse and delta */
template <int D> struct bwd2_layout {
    static const int LD = D + 8, LDS = BWD2_QUERIES + 8;
    static const int TILE = 64 * LD; /* elements of one 64-row tile */
    static const int BYTES = 4 * TILE * 2 + BWD2_KEYS * LDS * 2 + 2 * BWD2_QUERIES * 4;
};

/* 64 rows of D bf16 from global (rows past `valid` as zeros) into a padded tile, 16 bytes a load */
template <int D> __device__ __forceinline__ void load_tile2(uint16_t *dst, const uint16_t *src, int valid)
{
    const int LD = bwd2_layout<D>::LD, CHUNKS = D / 8;
    for (int i = threadIdx.x; i < 64 * CHUNKS; i += BWD2_THREADS) {
        int r = i / CHUNKS, c = (i % CHUNKS) * 8;
        uint4 x = make_uint4(0, 0, 0, 0);
        if (r < valid) x = *reinterpret_cast<const uint4 *>(src + (size_t)r * D + c);
        *reinterpret_cast<uint4 *>(dst + r * LD + c) = x;
    }
}

/* out (16 x 64, eight 16x8 accumulator tiles) = A (16 rows of a padded tile, from row a0, all of
 * D) times B^T (64 rows of another tile, all of D): S^T = K Q^T, dP^T = V dO^T */
template <int D>
__device__ __forceinline__ void mma_rows_rows(float out[8][4], const uint16_t *A, int a0, const uint16_t *B, int lane)
{
    const int LD = bwd2_layout<D>::LD;
#pragma unroll
    for (int j = 0; j < 8; j++) out[j][0] = out[j][1] = out[j][2] = out[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        uint32_t a[4];
        ldmatrix_x4(a, A + (a0 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
#pragma unroll
        for (int p = 0; p < 4; p++) { /* B's rows 16p..16p+15: two 8-column tiles of out */
            uint32_t r[4];
            ldmatrix_x4(r, B + (p * 16 + (lane / 16) * 8 + lane % 8) * LD + kk * 16 + ((lane / 8) & 1) * 8);
            uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
            mma_16816(out[2 * p], a, b0);
            mma_16816(out[2 * p + 1], a, b1);
        }
    }
}

/* acc (16 x D) += X (16 x 64, accumulator tiles in registers, rounded to bf16 as the A operand:
 * two 16x8 tiles are one 16x16 A fragment) times Y (64 rows of a padded tile, all of D, read
 * transposed by ldmatrix.trans as the B operand): dV += P^T dO, dK += dS^T Q */
template <int D>
__device__ __forceinline__ void mma_regs_rows(float (*acc)[4], const float x[8][4], const uint16_t *Y, int lane)
{
    const int LD = bwd2_layout<D>::LD;
#pragma unroll
    for (int ks = 0; ks < 4; ks++) {
        uint32_t a[4] = {lb_bf16_pack2(x[2 * ks][0], x[2 * ks][1]), lb_bf16_pack2(x[2 * ks][2], x[2 * ks][3]),
                         lb_bf16_pack2(x[2 * ks + 1][0], x[2 * ks + 1][1]), lb_bf16_pack2(x[2 * ks + 1][2], x[2 * ks + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
            uint32_t r[4];
            ldmatrix_x4_trans(r, Y + (ks * 16 + ((lane / 8) & 1) * 8 + lane % 8) * LD + dp * 16 + (lane / 16) * 8);
            uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
            mma_16816(acc[2 * dp], a, b0);
            mma_16816(acc[2 * dp + 1], a, b1);
        }
    }
}

/* A block owns 64 keys (warp w: keys 16w..16w+15, their dK and dV in its registers) and walks the
 * query tiles of 64 (a causal block from its own first key's tile). Per tile, each warp:
 *   S^T (16 keys x 64 queries) = K Q^T and dP^T = V dO^T by mma.sync (both operands rows of a
 *   shared tile, by ldmatrix); P^T = exp(S^T / sqrt(D) - lse) and dS^T = P^T (dP^T - delta) /
 *   sqrt(D) in the accumulators (a lane holds two keys and, of each 8 queries, two);
 *   dV += P^T dO and dK += dS^T Q: the accumulators become the A operand as they are, dO and Q are
 *   read transposed (ldmatrix.trans);
 *   dS^T into shared memory (bf16); then, the block's dS^T complete, warp w takes the tile's
 *   queries 16w..16w+15: dQ (16 x D) = dS K over the block's 64 keys, A from dS^T by
 *   ldmatrix.trans, B from K by ldmatrix.trans, added into dq_acc with atomics. */
template <int D>
__global__ void __launch_bounds__(BWD2_THREADS)
    attention_bwd_kernel2(const uint16_t *Q, const uint16_t *K, const uint16_t *V, const uint16_t *dO,
                          const float *lse, const float *delta, float *dq_acc, uint16_t *dK, uint16_t *dV, int seq,
                          int causal)
{
#if LB_SM80
    typedef bwd2_layout<D> L;
    extern __shared__ __align__(16) uint16_t smem_bwd2[];
    uint16_t *sK = smem_bwd2, *sV = sK + L::TILE, *sQ = sV + L::TILE, *sdO = sQ + L::TILE, *sdS = sdO + L::TILE;
    float *sL = reinterpret_cast<float *>(sdS + BWD2_KEYS * L::LDS), *sDelta = sL + BWD2_QUERIES;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    int k0 = blockIdx.x * BWD2_KEYS;
    size_t head = (size_t)blockIdx.y * seq * D, head_row = (size_t)blockIdx.y * seq;
    const float scale = rsqrtf((float)D);
    load_tile2<D>(sK, K + head + (size_t)k0 * D, seq - k0);
    load_tile2<D>(sV, V + head + (size_t)k0 * D, seq - k0);
    int key[2] = {k0 + 16 * warp + g, k0 + 16 * warp + g + 8}; /* this lane's two keys */
    float dk[D / 8][4] = {}, dv[D / 8][4] = {};
    for (int q0 = causal ? k0 : 0; q0 < seq; q0 += BWD2_QUERIES) {
        __syncthreads(); /* the last tile's Q, dO and dS^T no longer read (and K, V written) */
        load_tile2<D>(sQ, Q + head + (size_t)q0 * D, seq - q0);
        load_tile2<D>(sdO, dO + head + (size_t)q0 * D, seq - q0);
        if (threadIdx.x < BWD2_QUERIES) {
            int row = q0 + threadIdx.x;
            sL[threadIdx.x] = row < seq ? lse[head_row + row] : 0.0f;
            sDelta[threadIdx.x] = row < seq ? delta[head_row + row] : 0.0f;
        }
        __syncthreads();
        float pt[8][4], ds[8][4];
        mma_rows_rows<D>(pt, sK, 16 * warp, sQ, lane);
        mma_rows_rows<D>(ds, sV, 16 * warp, sdO, lane); /* dP^T for now */
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int ql = 8 * j + 2 * t4 + (e & 1), row = q0 + ql, kj = key[e / 2];
                bool seen = kj < seq && row < seq && (!causal || kj <= row);
                pt[j][e] = seen ? expf(pt[j][e] * scale - sL[ql]) : 0.0f;
                ds[j][e] = pt[j][e] * (ds[j][e] - sDelta[ql]) * scale;
            }
        mma_regs_rows<D>(dv, pt, sdO, lane);
        mma_regs_rows<D>(dk, ds, sQ, lane);
#pragma unroll
        for (int j = 0; j < 8; j++) { /* dS^T's rows 16w + g and + 8, columns 8j + 2 t4 and + 1 */
            int c = 8 * j + 2 * t4;
            *reinterpret_cast<uint32_t *>(sdS + (16 * warp + g) * L::LDS + c) = lb_bf16_pack2(ds[j][0], ds[j][1]);
            *reinterpret_cast<uint32_t *>(sdS + (16 * warp + g + 8) * L::LDS + c) = lb_bf16_pack2(ds[j][2], ds[j][3]);
        }
        __syncthreads(); /* the block's dS^T complete */
        float dq[D / 8][4] = {};
#pragma unroll
        for (int kk = 0; kk < BWD2_KEYS / 16; kk++) {
            uint32_t a[4]; /* dS (queries 16w.. x keys 16kk..): dS^T's block read transposed */
            ldmatrix_x4_trans(a, sdS + (kk * 16 + (lane / 16) * 8 + lane % 8) * L::LDS + 16 * warp + ((lane / 8) & 1) * 8);
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t r[4];
                ldmatrix_x4_trans(r, sK + (kk * 16 + ((lane / 8) & 1) * 8 + lane % 8) * L::LD + dp * 16 + (lane / 16) * 8);
                uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
                mma_16816(dq[2 * dp], a, b0);
                mma_16816(dq[2 * dp + 1], a, b1);
            }
        }
        int row = q0 + 16 * warp + g;
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            int c = 8 * j + 2 * t4;
            if (row < seq) {
                atomicAdd(dq_acc + head + (size_t)row * D + c, dq[j][0]);
                atomicAdd(dq_acc + head + (size_t)row * D + c + 1, dq[j][1]);
            }
            if (row + 8 < seq) {
                atomicAdd(dq_acc + head + (size_t)(row + 8) * D + c, dq[j][2]);
                atomicAdd(dq_acc + head + (size_t)(row + 8) * D + c + 1, dq[j][3]);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < D / 8; j++) { /* the lane's two keys, columns 8j + 2 t4 and + 1 */
        int c = 8 * j + 2 * t4;
        if (key[0] < seq) {
            *reinterpret_cast<uint32_t *>(dK + head + (size_t)key[0] * D + c) = lb_bf16_pack2(dk[j][0], dk[j][1]);
            *reinterpret_cast<uint32_t *>(dV + head + (size_t)key[0] * D + c) = lb_bf16_pack2(dv[j][0], dv[j][1]);
        }
        if (key[1] < seq) {
            *reinterpret_cast<uint32_t *>(dK + head + (size_t)key[1] * D + c) = lb_bf16_pack2(dk[j][2], dk[j][3]);
            *reinterpret_cast<uint32_t *>(dV + head + (size_t)key[1] * D + c) = lb_bf16_pack2(dv[j][2], dv[j][3]);
        }
    }
#endif
}

/* ================================================================ launchers */

/* Every tiled version (1-3) runs the same way around its kernel: delta, dq_acc zeroed, the kernel
 * (`kernel` launches it), then dQ from its fp32 sum to bf16 */
extern "C" cudaError_t attention_bwd_tiled(const attention_bwd_problem *p,
                                           cudaError_t (*kernel)(const attention_bwd_problem *p))
{
    size_t n = (size_t)p->batch * p->heads * p->seq * p->dim;
    cudaError_t e = attention_bwd_delta_launch(p);
    if (e == cudaSuccess) e = cudaMemsetAsync(p->dq_acc, 0, sizeof(float) * n);
    if (e == cudaSuccess) e = kernel(p);
    if (e != cudaSuccess || !p->dq) return e; /* no dq: the caller reads dQ's fp32 sum itself */
    attention_bwd_convert_kernel<<<(unsigned)((n / 4 + 255) / 256), 256>>>(
        p->dq_acc, p->dq, attention_rows_of(p->heads, p->seq, p->dim, p->ld_qkv), p->seq, p->dim, n);
    return cudaGetLastError();
}

/* version 1: a block a tile of 32 keys */
template <int D> static cudaError_t kernel1(const attention_bwd_problem *p)
{
    dim3 grid((p->seq + BWD1_KEYS - 1) / BWD1_KEYS, p->batch * p->heads);
    attention_bwd_kernel1<D><<<grid, BWD1_THREADS>>>(p->q, p->k, p->v, p->d_o, p->lse, p->delta, p->dq_acc, p->dk,
                                                     p->dv, p->seq, p->causal);
    return cudaGetLastError();
}
static cudaError_t launch1(const attention_bwd_problem *p)
{
    return attention_bwd_tiled(p, p->dim == 64 ? kernel1<64> : kernel1<128>);
}

/* version 2: a block a tile of 64 keys; its shared memory (45 or 79 KiB) past the default 48 KiB
 * at D = 128, raised at the first launch at each D */
template <int D> static cudaError_t kernel2(const attention_bwd_problem *p)
{
    static const cudaError_t allowed =
        cudaFuncSetAttribute(attention_bwd_kernel2<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bwd2_layout<D>::BYTES);
    if (allowed != cudaSuccess) return allowed;
    dim3 grid((p->seq + BWD2_KEYS - 1) / BWD2_KEYS, p->batch * p->heads);
    attention_bwd_kernel2<D><<<grid, BWD2_THREADS, bwd2_layout<D>::BYTES>>>(
        p->q, p->k, p->v, p->d_o, p->lse, p->delta, p->dq_acc, p->dk, p->dv, p->seq, p->causal);
    return cudaGetLastError();
}
static cudaError_t launch2(const attention_bwd_problem *p)
{
    return attention_bwd_tiled(p, p->dim == 64 ? kernel2<64> : kernel2<128>);
}

/* Every version's launcher, and for Hopper's (attention_backward_hopper.cu) the test of whether
 * this GPU runs it; version 0 is the library way, in attention_backward.c. To add a version: its
 * kernel and launcher here (or in attention_backward_hopper.cu for sm_90a's instructions), a row here, ATTENTION_BWD_VERSIONS in
 * attention_backward_kernels.h, and a row in attention_backward.c's versions[]. */
static const struct {
    cudaError_t (*launch)(const attention_bwd_problem *p);
    const char *(*unavailable)(void); /* NULL: every GPU the program runs on */
} launchers[] = {
    {NULL, NULL},
    {launch1, NULL},
    {launch2, NULL},
    {attention_bwd_launch3, attention_bwd_hopper_unavailable},
    {attention_bwd_launch4, attention_bwd_hopper_unavailable},
};
static_assert(sizeof launchers / sizeof launchers[0] == ATTENTION_BWD_VERSIONS,
              "one row in launchers[] per version: ATTENTION_BWD_VERSIONS in attention_backward_kernels.h");

extern "C" const char *attention_bwd_unavailable(int v)
{
    if (v < 0 || v >= ATTENTION_BWD_VERSIONS || !launchers[v].unavailable) return NULL;
    return launchers[v].unavailable();
}

extern "C" cudaError_t attention_bwd_prepare(attention_bwd_problem *p)
{
    p->prepared = NULL;
    if (attention_bwd_hopper_unavailable()) return cudaSuccess; /* no wgmma here: no maps to make */
    return attention_bwd_hopper_prepare(p);
}

extern "C" void attention_bwd_release(attention_bwd_problem *p)
{
    free(p->prepared);
    p->prepared = NULL;
}

extern "C" cudaError_t attention_bwd_launch(int v, const attention_bwd_problem *p)
{
    if (v < 1 || v >= ATTENTION_BWD_VERSIONS || (p->dim != 64 && p->dim != 128)) return cudaErrorInvalidValue;
    if ((p->ld_qkv || p->ld_o) && v < 4) return cudaErrorNotSupported; /* token rows: the tensor maps' version */
    return launchers[v].launch(p);
}
