/* attention_backward_hopper.cu - attention's backward versions 3 and 4: FlashAttention-2's loop
 * order with Hopper's wgmma, and FlashAttention-3's backward. Its instructions exist only in sm_90a, so this file is compiled for sm_90a alone,
 * whatever ARCH is (common/rules.mk); on any GPU but an H100/H200 the version is listed as skipped.
 * Versions 0-2, the table of launchers and the problem's description are in
 * attention_backward_kernels.cu and attention_backward_kernels.h.
 *
 *   3  a block (one warpgroup) owns 64 keys, their dK and dV in its accumulators, and walks the
 *      query tiles of 64; every tile is copied into shared memory in the 128-byte swizzle that
 *      wgmma's descriptors read (16 bytes a thread, the layout TMA would write); per tile:
 *      S^T = K Q^T and dP^T = V dO^T (wgmma, both operands in shared memory), P^T and dS^T in the
 *      accumulators, dV += P^T dO and dK += dS^T Q (wgmma with the A operand from registers, dO and
 *      Q read transposed), dS^T into shared memory, and dQ = dS K (wgmma with both operands read
 *      transposed) added into dq_acc with atomics. No TMA and one warpgroup: the copies and the
 *      products take turns (the producer warpgroup of FlashAttention-3 is the next step).
 *   4  FlashAttention-3's shape: a block of 128 keys, a producer thread and two consumer
 *      warpgroups (64 keys each). The producer loads K and V once and each query tile's Q and dO
 *      by TMA into a two-stage ring, so that the next tile arrives while this one is worked on
 *      (the consumers load its log-sum-exps and deltas themselves, a tile ahead); the consumers run version 3's products on their keys,
 *      share the tile's dS^T, split its dQ into two 64 x 64 blocks and add each into dq_acc with
 *      one TMA reduce-add (the copy engine sums in L2) instead of an atomic per element.
 */
#include "attention_backward_kernels.h"
#include "attention_device.cuh" /* pack_bf16 */
#include "labbook.h"            /* lb_sm90a_unavailable */
#include "lb_tensor_core.cuh"   /* wgmma, descriptors, fences */
#include "attention_maps.cuh"   /* attention_heads_map */

#include <cuda.h> /* CUtensorMap (a type only: no libcuda link) */
#include <stdlib.h>

#define BWD3_KEYS 64    /* a block's keys: the warpgroup's 64 rows */
#define BWD3_QUERIES 64 /* a tile of query rows */
#define BWD3_THREADS 128
#define BWD3_BOX (64 * 128) /* a box: 64 rows x 128 bytes (64 bf16), one swizzle row each */

/* shared memory, 1024-byte aligned: K, V, Q, dO as D/64 boxes each, then dS^T (64 keys x 64
 * queries: one box), then the tile's lse and delta */
template <int D> struct bwd3_layout {
    static const int TILE = (D / 64) * BWD3_BOX;
    static const int BYTES = 4 * TILE + BWD3_BOX + 2 * BWD3_QUERIES * 4 + 1024;
};

/* 64 rows of D bf16 (rows past `valid` as zeros) into a tile of boxes in the 128-byte swizzle:
 * the 16-byte chunk c of row r of a box lands at r * 128 + ((c ^ r % 8) * 16) */
template <int D> __device__ __forceinline__ void load_swizzled(uint8_t *tile, const uint16_t *src, int valid)
{
    for (int i = threadIdx.x; i < 64 * D / 8; i += BWD3_THREADS) {
        int r = i / (D / 8), c = i % (D / 8), box = c / 8, cb = c % 8;
        uint4 x = make_uint4(0, 0, 0, 0);
        if (r < valid) x = *reinterpret_cast<const uint4 *>(src + (size_t)r * D + 8 * c);
        *reinterpret_cast<uint4 *>(tile + box * BWD3_BOX + r * 128 + ((cb ^ (r % 8)) * 16)) = x;
    }
}

/* out (64 rows of A x 64 rows of B) = A B^T, both tiles K-major (D contiguous), issued as one group */
template <int D> __device__ __forceinline__ void issue_rows_rows(float out[32], const uint8_t *A, const uint8_t *B)
{
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) { /* k-step ks: 32 bytes into box ks / 4 */
        int off = (ks / 4) * BWD3_BOX + (ks % 4) * 32;
        wgmma_m64n64k16_bf16_ss(out, wgmma_desc(A + off), wgmma_desc(B + off), ks > 0);
    }
}

/* acc (64 x D) += X (64 x 64, registers: the accumulators of a 64 x 64 product as A operands) Y
 * (64 rows of a tile, read transposed: N = D contiguous, the next 64 columns a box further) */
template <int D> __device__ __forceinline__ void issue_regs_rows(float *acc, const float x[32], const uint8_t *Y)
{
#pragma unroll
    for (int ks = 0; ks < 4; ks++) { /* k-step ks: rows 16ks.. of Y, 2048 bytes a step */
        uint32_t a[4] = {lb_bf16_pack2(x[8 * ks], x[8 * ks + 1]), lb_bf16_pack2(x[8 * ks + 2], x[8 * ks + 3]),
                         lb_bf16_pack2(x[8 * ks + 4], x[8 * ks + 5]), lb_bf16_pack2(x[8 * ks + 6], x[8 * ks + 7])};
        uint64_t dy = wgmma_desc_mn(Y + ks * 16 * 128, BWD3_BOX);
        if constexpr (D == 128)
            wgmma_m64n128k16_bf16_rs_bt(acc, a, dy);
        else
            wgmma_m64n64k16_bf16_rs_bt(acc, a, dy);
    }
}

template <int D>
__global__ void __launch_bounds__(BWD3_THREADS, 1)
    attention_bwd_kernel3(const uint16_t *Q, const uint16_t *K, const uint16_t *V, const uint16_t *dO,
                          const float *lse, const float *delta, float *dq_acc, uint16_t *dK, uint16_t *dV, int seq,
                          int causal)
{
    typedef bwd3_layout<D> L;
    extern __shared__ uint8_t smem_bwd3[];
    uint8_t *sK = aligned_smem(smem_bwd3), *sV = sK + L::TILE, *sQ = sV + L::TILE, *sdO = sQ + L::TILE,
            *sdST = sdO + L::TILE;
    float *sL = reinterpret_cast<float *>(sdST + BWD3_BOX), *sDelta = sL + BWD3_QUERIES;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    int k0 = blockIdx.x * BWD3_KEYS;
    size_t head = (size_t)blockIdx.y * seq * D, head_row = (size_t)blockIdx.y * seq;
    const float scale = rsqrtf((float)D);
    load_swizzled<D>(sK, K + head + (size_t)k0 * D, seq - k0);
    load_swizzled<D>(sV, V + head + (size_t)k0 * D, seq - k0);
    int key[2] = {k0 + 16 * warp + g, k0 + 16 * warp + g + 8}; /* this thread's two keys (rows) */
    float dk[D / 2] = {}, dv[D / 2] = {};
    for (int q0 = causal ? k0 : 0; q0 < seq; q0 += BWD3_QUERIES) {
        __syncthreads(); /* the last tile's Q, dO and dS^T no longer read */
        load_swizzled<D>(sQ, Q + head + (size_t)q0 * D, seq - q0);
        load_swizzled<D>(sdO, dO + head + (size_t)q0 * D, seq - q0);
        if (threadIdx.x < BWD3_QUERIES) {
            int row = q0 + threadIdx.x;
            sL[threadIdx.x] = row < seq ? lse[head_row + row] : 0.0f;
            sDelta[threadIdx.x] = row < seq ? delta[head_row + row] : 0.0f;
        }
        fence_proxy_async_shared(); /* the threads' copies visible to wgmma (the async proxy) */
        __syncthreads();
        float pt[32], ds[32];
        wgmma_fence();
        issue_rows_rows<D>(pt, sK, sQ);  /* S^T */
        issue_rows_rows<D>(ds, sV, sdO); /* dP^T, for now */
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_settle<32>(pt);
        wgmma_settle<32>(ds);
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int ql = 8 * j + 2 * t4 + (e & 1), row = q0 + ql, kj = key[e / 2];
                bool seen = kj < seq && row < seq && (!causal || kj <= row);
                float p = seen ? expf(pt[4 * j + e] * scale - sL[ql]) : 0.0f;
                pt[4 * j + e] = p;
                ds[4 * j + e] = p * (ds[4 * j + e] - sDelta[ql]) * scale;
            }
        wgmma_fence();
        issue_regs_rows<D>(dv, pt, sdO); /* dV += P^T dO */
        issue_regs_rows<D>(dk, ds, sQ);  /* dK += dS^T Q */
        wgmma_commit();
        /* dS^T into shared memory, bf16, in the swizzle: keys are rows, queries the 128 bytes */
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int r = 16 * warp + g + 8 * h, c = 8 * j + 2 * t4;
                *reinterpret_cast<uint32_t *>(sdST + r * 128 + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2) =
                    lb_bf16_pack2(ds[4 * j + 2 * h], ds[4 * j + 2 * h + 1]);
            }
        fence_proxy_async_shared();
        wgmma_wait<0>(); /* dV and dK have landed; P^T's and dS^T's registers are free */
        wgmma_settle<D / 2>(dv);
        wgmma_settle<D / 2>(dk);
        __syncthreads(); /* the block's dS^T complete */
        /* dQ (64 queries x D) = dS K: dS^T read transposed (queries contiguous, one box), K read
         * transposed (D contiguous, a box a 64 columns); k-steps of 16 keys, 2048 bytes each */
        float dq[D / 2];
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            uint64_t da = wgmma_desc_mn(sdST + ks * 16 * 128, BWD3_BOX), db = wgmma_desc_mn(sK + ks * 16 * 128, BWD3_BOX);
            if constexpr (D == 128)
                wgmma_m64n128k16_bf16_ss_tt(dq, da, db, ks > 0);
            else
                wgmma_m64n64k16_bf16_ss_tt(dq, da, db, ks > 0);
        }
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_settle<D / 2>(dq);
        int row = q0 + 16 * warp + g; /* this thread's two query rows of dQ: row and row + 8 */
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            int c = 8 * j + 2 * t4;
            if (row < seq) {
                atomicAdd(dq_acc + head + (size_t)row * D + c, dq[4 * j]);
                atomicAdd(dq_acc + head + (size_t)row * D + c + 1, dq[4 * j + 1]);
            }
            if (row + 8 < seq) {
                atomicAdd(dq_acc + head + (size_t)(row + 8) * D + c, dq[4 * j + 2]);
                atomicAdd(dq_acc + head + (size_t)(row + 8) * D + c + 1, dq[4 * j + 3]);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < D / 8; j++) { /* the thread's two keys, columns 8j + 2 t4 and + 1 */
        int c = 8 * j + 2 * t4;
        for (int h = 0; h < 2; h++) {
            if (key[h] >= seq) continue;
            *reinterpret_cast<uint32_t *>(dK + head + (size_t)key[h] * D + c) = lb_bf16_pack2(dk[4 * j + 2 * h], dk[4 * j + 2 * h + 1]);
            *reinterpret_cast<uint32_t *>(dV + head + (size_t)key[h] * D + c) = lb_bf16_pack2(dv[4 * j + 2 * h], dv[4 * j + 2 * h + 1]);
        }
    }
}

/* ================================================================ version 4: FlashAttention-3's backward */

#define BWD4_KEYS 128    /* a block's keys: 64 for each of the two consumer warpgroups */
#define BWD4_STAGES 2    /* query tiles in flight: the producer loads one while the consumers work on the other */
#define BWD4_THREADS 384 /* warpgroup 0 the producer (one warp of it), 1 and 2 the consumers */
#define BWD4_DQ_BOX (64 * 128) /* an fp32 box of dQ: 64 rows x 32 floats (128 bytes) */

/* A tile has QT queries: 64 at D = 128, 128 at D = 64, so that either way each consumer computes
 * one 64 x 64 block of the tile's dQ (at D = 128 the consumers split D, at 64 the queries).
 * Shared memory, 1024-byte aligned; a tile of R rows is D/64 "column boxes" of R rows x 128 bytes
 * (64 bf16), R * 128 bytes apart, each in the 128-byte swizzle (what TMA writes, wgmma reads):
 *   K, V: 128 rows each, loaded once; Q and dO: QT rows, one of each a stage;
 *   dS^T: 128 key rows x QT queries (QT/64 column boxes), two buffers (tile t in buffer t % 2:
 *     the other consumer may still read tile t - 1's in its dQ product while this one writes);
 *   dQ: a consumer's 64 x 64 fp32 block, two boxes of 32 columns, the TMA reduce-add's source;
 *   the tile's log-sum-exps (log2 units) and deltas, QT floats each, two buffers (tile t in
 *   buffer t % 2: the consumers load tile t + 1's while they work on tile t). */
template <int D> struct bwd4_layout {
    static const int QT = D == 128 ? 64 : 128;
    static const int KV_BYTES = BWD4_KEYS * D * 2, K_BOX = BWD4_KEYS * 128;
    static const int QT_BYTES = QT * D * 2, Q_BOX = QT * 128;
    static const int DST_BYTES = BWD4_KEYS * QT * 2, DST_BOX = BWD4_KEYS * 128;
    static const int DQ_BYTES = 2 * BWD4_DQ_BOX;
    static const int Q_AT = 2 * KV_BYTES, DST_AT = Q_AT + BWD4_STAGES * 2 * QT_BYTES, DQ_AT = DST_AT + 2 * DST_BYTES,
                     ROWS_AT = DQ_AT + 2 * DQ_BYTES;
    static const int BYTES = ROWS_AT + 2 * 2 * QT * 4 + 1024;
};

/* The block's shared memory by name */
template <int D> struct bwd4_smem {
    typedef bwd4_layout<D> L;
    uint8_t *base;
    __device__ uint8_t *k() const { return base; }
    __device__ uint8_t *v() const { return base + L::KV_BYTES; }
    __device__ uint8_t *q(int s) const { return base + L::Q_AT + 2 * s * L::QT_BYTES; }
    __device__ uint8_t *d_o(int s) const { return q(s) + L::QT_BYTES; }
    __device__ uint8_t *dst(int b) const { return base + L::DST_AT + b * L::DST_BYTES; }
    __device__ uint8_t *dq(int c) const { return base + L::DQ_AT + c * L::DQ_BYTES; }
    __device__ float *lse(int b) const { return reinterpret_cast<float *>(base + L::ROWS_AT) + 2 * b * L::QT; }
    __device__ float *delta(int b) const { return lse(b) + L::QT; }
};

/* The producer (one thread of warpgroup 0): K and V once (kv_full), then per query tile its Q and
 * dO boxes by TMA (full[s]), once both consumers have released the stage's last use (empty[s]) */
template <int D>
__device__ __forceinline__ void produce4(const bwd4_smem<D> &sm, const CUtensorMap *mapQ, const CUtensorMap *mapK,
                                         const CUtensorMap *mapV, const CUtensorMap *mapdO, uint64_t *kv_full,
                                         uint64_t *full, uint64_t *empty, int k0, int q_first, int tiles, int bh,
                                         int heads)
{
    typedef bwd4_layout<D> L;
    int h = bh % heads, b4 = bh / heads; /* the maps' (d, s, h, b) */
    mbar_arrive_expect(kv_full, 2 * L::KV_BYTES);
    for (int b = 0; b < D / 64; b++) {
        tma_load_4d(sm.k() + b * L::K_BOX, mapK, 64 * b, k0, h, b4, kv_full);
        tma_load_4d(sm.v() + b * L::K_BOX, mapV, 64 * b, k0, h, b4, kv_full);
    }
    for (int t = 0; t < tiles; t++) {
        int s = t % BWD4_STAGES, use = t / BWD4_STAGES, q0 = q_first + t * L::QT;
        if (use > 0) mbar_wait(&empty[s], (use - 1) & 1);
        mbar_arrive_expect(&full[s], 2 * L::QT_BYTES);
        for (int b = 0; b < D / 64; b++) {
            tma_load_4d(sm.q(s) + b * L::Q_BOX, mapQ, 64 * b, q0, h, b4, &full[s]);
            tma_load_4d(sm.d_o(s) + b * L::Q_BOX, mapdO, 64 * b, q0, h, b4, &full[s]);
        }
    }
}

/* A consumer thread's share of a tile's log-sum-exps (times log2 e, for exp2) and deltas: of the
 * 256 consumer threads, thread i < QT loads row i's log-sum-exp, QT <= i < 2 QT row i - QT's delta
 * (zero past S) */
template <int D>
__device__ __forceinline__ float load_row_value(const float *lse, const float *delta, int q0, int bh, int seq)
{
    const int QT = bwd4_layout<D>::QT;
    int i = threadIdx.x - 128, row = q0 + i % QT;
    if (i >= 2 * QT || row >= seq) return 0.0f;
    return i < QT ? lse[(size_t)bh * seq + row] * LOG2E : delta[(size_t)bh * seq + row];
}
template <int D> __device__ __forceinline__ void store_row_value(const bwd4_smem<D> &sm, int b, float x)
{
    int i = threadIdx.x - 128;
    if (i < 2 * bwd4_layout<D>::QT) sm.lse(b)[i] = x; /* lse(b) and delta(b) are adjacent */
}

/* out (64 keys x QT queries) = K_c Q^T or V_c dO^T: the consumer's 64 rows of a 128-row tile
 * (from byte `rows_at` of each column box) times a stage's tile, both K-major */
template <int D>
__device__ __forceinline__ void issue_keys_queries(float *out, const uint8_t *keys, int rows_at, const uint8_t *queries)
{
    typedef bwd4_layout<D> L;
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) { /* k-step ks: 32 bytes into column box ks / 4 */
        uint64_t da = wgmma_desc(keys + (ks / 4) * L::K_BOX + rows_at + (ks % 4) * 32);
        uint64_t db = wgmma_desc(queries + (ks / 4) * L::Q_BOX + (ks % 4) * 32);
        if constexpr (L::QT == 128)
            wgmma_m64n128k16_bf16_ss(out, da, db, ks > 0);
        else
            wgmma_m64n64k16_bf16_ss(out, da, db, ks > 0);
    }
}

/* acc (64 keys x D) += X (64 x QT, accumulators as A operands) Y (a stage's QT rows, read
 * transposed): dV += P^T dO, dK += dS^T Q */
template <int D> __device__ __forceinline__ void issue_regs_queries(float *acc, const float *x, const uint8_t *Y)
{
    typedef bwd4_layout<D> L;
#pragma unroll
    for (int ks = 0; ks < L::QT / 16; ks++) {
        uint32_t a[4] = {lb_bf16_pack2(x[8 * ks], x[8 * ks + 1]), lb_bf16_pack2(x[8 * ks + 2], x[8 * ks + 3]),
                         lb_bf16_pack2(x[8 * ks + 4], x[8 * ks + 5]), lb_bf16_pack2(x[8 * ks + 6], x[8 * ks + 7])};
        uint64_t dy = wgmma_desc_mn(Y + ks * 16 * 128, L::Q_BOX);
        if constexpr (D == 128)
            wgmma_m64n128k16_bf16_rs_bt(acc, a, dy);
        else
            wgmma_m64n64k16_bf16_rs_bt(acc, a, dy);
    }
}

/* P^T = exp2(S^T scale log2 e - lse) of a consumer's 64 keys x QT queries, in place (element e
 * of j: query 8j + 2 t4 + (e & 1), key key[e / 2]); MASKED: zero past S's end and, when causal,
 * where the key comes after the query (a tile wholly inside skips these compares) */
template <int QT, bool MASKED>
__device__ __forceinline__ void probabilities(float *pt, const float *sL, float scale_log2, int q0, const int key[2],
                                              int seq, int causal)
{
    int t4 = threadIdx.x % 4;
#pragma unroll
    for (int j = 0; j < QT / 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int ql = 8 * j + 2 * t4 + (e & 1), row = q0 + ql, kj = key[e / 2];
            float p = fast_exp2(fmaf(pt[4 * j + e], scale_log2, -sL[ql]));
            if (MASKED && !(kj < seq && row < seq && (!causal || kj <= row))) p = 0.0f;
            pt[4 * j + e] = p;
        }
}

/* Consumer c (0 or 1) owns keys k0 + 64c .. + 63: their dK and dV in its accumulators. Per query
 * tile (stage s, dS^T buffer b = t % 2):
 *   S^T and dP^T (64 x QT) by wgmma from shared memory, committed as two groups; once S^T has
 *   landed, P^T = exp2(S^T scale log2 e - lse) in the registers while dP^T is still computed
 *   (at D = 128 dV += P^T dO issued then, A from registers); once dP^T has landed, dS^T = P^T
 *   (dP^T - delta) / sqrt(D); dS^T (bf16) into its rows of buffer b; dK += dS^T Q issued;
 *   named barrier 1 (both consumers): the tile's whole dS^T written; then this consumer's block of
 *   dQ = dS K over all 128 keys (queries 64 mq.., columns 64 nd..: mq = c at D = 64, nd = c at
 *   128), both operands read transposed; the stage released once dV and dK have landed;
 *   the dQ block into its fp32 boxes (swizzled), named barrier 2 + c (the consumer's 128
 *   threads), and its first thread adds the boxes into dq_acc by TMA reduce-add. Before that
 *   thread meets barrier 1 again it waits until its last reduce has read the boxes. */
template <int D>
__device__ __forceinline__ void consume4(const bwd4_smem<D> &sm, const CUtensorMap *mapDQ, const float *lse,
                                         const float *delta, uint64_t *kv_full, uint64_t *full, uint64_t *empty, int c,
                                         int k0, int q_first, int tiles, int bh, int seq, int causal, uint16_t *dK,
                                         uint16_t *dV, const attention_rows &rows)
{
    typedef bwd4_layout<D> L;
    const int QT = L::QT, mq = D == 64 ? c : 0, nd = D == 128 ? c : 0;
    int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    bool leader = threadIdx.x % 128 == 0;
    int key[2] = {k0 + 64 * c + 16 * warp + g, k0 + 64 * c + 16 * warp + g + 8}; /* this thread's two keys */
    const float scale = rsqrtf((float)D), scale_log2 = scale * LOG2E;
    float dk[D / 2] = {}, dv[D / 2] = {};
    store_row_value<D>(sm, 0, load_row_value<D>(lse, delta, q_first, bh, seq));
    bar_sync<1, 256>(); /* tile 0's rows in buffer 0 */
    mbar_wait(kv_full, 0);
    for (int t = 0; t < tiles; t++) {
        int s = t % BWD4_STAGES, b = t % 2, q0 = q_first + t * QT;
        /* the next tile's rows, loaded now and stored once this tile's are read (before barrier 1,
         * which every thread passed after its last read of that buffer, a tile ago) */
        float next = t + 1 < tiles ? load_row_value<D>(lse, delta, q0 + QT, bh, seq) : 0.0f;
        mbar_wait(&full[s], (t / BWD4_STAGES) & 1);
        const float *sL = sm.lse(b), *sDelta = sm.delta(b);
        float pt[QT / 2], ds[QT / 2];
        wgmma_fence();
        issue_keys_queries<D>(pt, sm.k(), c * 64 * 128, sm.q(s)); /* S^T */
        wgmma_commit();
        issue_keys_queries<D>(ds, sm.v(), c * 64 * 128, sm.d_o(s)); /* dP^T, for now */
        wgmma_commit();
        wgmma_wait<1>(); /* S^T has landed; dP^T is still on the tensor cores while P^T is made */
        wgmma_settle<QT / 2>(pt);
        /* the mask only where the tile crosses S's end or (causal) reaches above the diagonal: a
         * tile wholly inside skips its compares */
        bool inside = q0 + QT <= seq && k0 + 64 * c + 64 <= seq && (!causal || k0 + 64 * c + 63 <= q0);
        if (inside)
            probabilities<QT, false>(pt, sL, scale_log2, q0, key, seq, causal);
        else
            probabilities<QT, true>(pt, sL, scale_log2, q0, key, seq, causal);
        /* at D = 128, dV += P^T dO is issued now and runs while dS^T is made; at D = 64 (128 queries
         * a tile) P^T and dP^T hold 128 registers, and with dV's operands in flight beside them
         * ptxas serialises the wgmma (C7512): there dV waits for dS^T, as dK does */
        const bool dv_early = D == 128;
        if (dv_early) {
            wgmma_fence();
            issue_regs_queries<D>(dv, pt, sm.d_o(s)); /* dV += P^T dO */
            wgmma_commit();
            wgmma_wait<1>(); /* dP^T has landed (dV may still run) */
        } else {
            wgmma_wait<0>(); /* dP^T has landed */
        }
        wgmma_settle<QT / 2>(ds);
#pragma unroll
        for (int j = 0; j < QT / 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) { /* dS^T = P^T (dP^T - delta) / sqrt(D): zero where P^T is */
                int ql = 8 * j + 2 * t4 + (e & 1);
                ds[4 * j + e] = pt[4 * j + e] * (ds[4 * j + e] - sDelta[ql]) * scale;
            }
        /* dS^T (bf16) into buffer b: key row r, query column ql in column box ql / 64 */
        uint8_t *dst = sm.dst(b);
#pragma unroll
        for (int j = 0; j < QT / 8; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int r = 64 * c + 16 * warp + g + 8 * h, ql = 8 * j + 2 * t4;
                *reinterpret_cast<uint32_t *>(dst + (ql / 64) * L::DST_BOX + r * 128 + ((((ql % 64) / 8) ^ (r % 8)) * 16) +
                                              (ql % 8) * 2) = lb_bf16_pack2(ds[4 * j + 2 * h], ds[4 * j + 2 * h + 1]);
            }
        fence_proxy_async_shared(); /* the stores visible to wgmma (the async proxy) */
        store_row_value<D>(sm, b ^ 1, next);
        wgmma_fence();
        if (!dv_early) issue_regs_queries<D>(dv, pt, sm.d_o(s)); /* dV += P^T dO */
        issue_regs_queries<D>(dk, ds, sm.q(s));                 /* dK += dS^T Q */
        wgmma_commit();
        if (leader) bulk_wait_read<0>(); /* the last reduce has read this consumer's dQ boxes */
        bar_sync<1, 256>();              /* both consumers' dS^T in buffer b, the next tile's rows */
        float dq[32];
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < BWD4_KEYS / 16; ks++) { /* keys 16 ks..: 2048 bytes down the column boxes */
            uint64_t da = wgmma_desc_mn(dst + mq * L::DST_BOX + ks * 2048, L::DST_BOX);
            uint64_t db = wgmma_desc_mn(sm.k() + nd * L::K_BOX + ks * 2048, L::K_BOX);
            wgmma_m64n64k16_bf16_ss_tt(dq, da, db, ks > 0);
        }
        wgmma_commit();
        wgmma_wait<1>(); /* dV and dK have landed (dQ may still run): the stage's Q and dO are free */
        wgmma_settle<D / 2>(dv);
        wgmma_settle<D / 2>(dk);
        if (leader) mbar_arrive(&empty[s]);
        wgmma_wait<0>();
        wgmma_settle<32>(dq);
        /* the block of dQ into two fp32 boxes: row r (a query), column col (of the block's 64) */
        uint8_t *sdq = sm.dq(c);
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int r = 16 * warp + g + 8 * h, col = 8 * j + 2 * t4;
                *reinterpret_cast<float2 *>(sdq + (col / 32) * BWD4_DQ_BOX + r * 128 + ((((col % 32) / 4) ^ (r % 8)) * 16) +
                                            (col % 4) * 4) = make_float2(dq[4 * j + 2 * h], dq[4 * j + 2 * h + 1]);
            }
        fence_proxy_async_shared();
        if (c == 0)
            bar_sync<2, 128>();
        else
            bar_sync<3, 128>();
        if (leader) {
            for (int box = 0; box < 2; box++)
                tma_reduce_add_3d(mapDQ, sdq + box * BWD4_DQ_BOX, 64 * nd + 32 * box, q0 + 64 * mq, bh);
            bulk_commit();
        }
    }
    if (leader) bulk_wait<0>(); /* every reduce done before the block ends */
    long long head = (long long)(bh / rows.heads) * rows.batch + (long long)(bh % rows.heads) * rows.head;
#pragma unroll
    for (int j = 0; j < D / 8; j++) { /* the thread's two keys, columns 8j + 2 t4 and + 1 */
        int col = 8 * j + 2 * t4;
        for (int h = 0; h < 2; h++) {
            if (key[h] >= seq) continue;
            long long at = head + key[h] * rows.row + col;
            *reinterpret_cast<uint32_t *>(dK + at) = lb_bf16_pack2(dk[4 * j + 2 * h], dk[4 * j + 2 * h + 1]);
            *reinterpret_cast<uint32_t *>(dV + at) = lb_bf16_pack2(dv[4 * j + 2 * h], dv[4 * j + 2 * h + 1]);
        }
    }
}

/* A block per 128 keys of a head (blockIdx.x 0 first: causal, the block with the most query
 * tiles); warpgroup 0's first thread produces, warpgroups 1 and 2 consume. setmaxnreg moves
 * registers from the producer (24) to the consumers' (240: dK and dV, D/2 each, S^T and dP^T,
 * QT/2 each, and the A operands of the products in flight). */
template <int D>
__global__ void __launch_bounds__(BWD4_THREADS, 1)
    attention_bwd_kernel4(const __grid_constant__ CUtensorMap mapQ, const __grid_constant__ CUtensorMap mapK,
                          const __grid_constant__ CUtensorMap mapV, const __grid_constant__ CUtensorMap mapdO,
                          const __grid_constant__ CUtensorMap mapDQ, const float *lse, const float *delta, uint16_t *dK,
                          uint16_t *dV, const attention_rows rows, int seq, int causal)
{
    typedef bwd4_layout<D> L;
    extern __shared__ uint8_t smem_bwd4[];
    __shared__ uint64_t kv_full, full[BWD4_STAGES], empty[BWD4_STAGES];
    bwd4_smem<D> sm = {aligned_smem(smem_bwd4)};
    int k0 = blockIdx.x * BWD4_KEYS, bh = blockIdx.y;
    int q_first = causal ? k0 : 0, tiles = (seq - q_first + L::QT - 1) / L::QT;
    if (threadIdx.x == 0) {
        mbar_init(&kv_full, 1);
        for (int s = 0; s < BWD4_STAGES; s++) mbar_init(&full[s], 1), mbar_init(&empty[s], 2);
        mbar_fence_init();
    }
    __syncthreads();
    int wg = threadIdx.x / 128;
    if (wg == 0) {
        setmaxnreg_dec<24>();
        if (threadIdx.x == 0) produce4<D>(sm, &mapQ, &mapK, &mapV, &mapdO, &kv_full, full, empty, k0, q_first, tiles, bh, rows.heads);
        return;
    }
    setmaxnreg_inc<240>(); /* 232 leaves ptxas short: it serialises the wgmma (C7512) */
    consume4<D>(sm, &mapDQ, lse, delta, &kv_full, full, empty, wg - 1, k0, q_first, tiles, bh, seq, causal, dK, dV, rows);
}

/* ================================================================ launcher */

extern "C" const char *attention_bwd_hopper_unavailable(void) { return lb_sm90a_unavailable(1); }

/* version 3: a block a tile of 64 keys; its shared memory (42 or 74 KiB) asked for at the first
 * launch at each D */
template <int D> static cudaError_t kernel3(const attention_bwd_problem *p)
{
    static const cudaError_t allowed =
        cudaFuncSetAttribute(attention_bwd_kernel3<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bwd3_layout<D>::BYTES);
    if (allowed != cudaSuccess) return allowed;
    dim3 grid((p->seq + BWD3_KEYS - 1) / BWD3_KEYS, p->batch * p->heads);
    attention_bwd_kernel3<D><<<grid, BWD3_THREADS, bwd3_layout<D>::BYTES>>>(
        p->q, p->k, p->v, p->d_o, p->lse, p->delta, p->dq_acc, p->dk, p->dv, p->seq, p->causal);
    return cudaGetLastError();
}
extern "C" cudaError_t attention_bwd_launch3(const attention_bwd_problem *p)
{
    return attention_bwd_tiled(p, p->dim == 64 ? kernel3<64> : kernel3<128>);
}

/* the state bound to the buffers (attention_bwd_prepare, once): version 4's tensor maps */
typedef struct {
    CUtensorMap q, k, v, d_o, dq_acc;
} bwd_maps;

/* dq_acc: (B H, S, D) fp32, contiguous, in boxes of `rows` x 32 floats (128 bytes) at (d, s, head)
 * for the reduce-add: rows past S are not written */
static cudaError_t make_acc_map(CUtensorMap *map, float *base, const attention_bwd_problem *p, int rows)
{
    cuuint64_t dims[3] = {(cuuint64_t)p->dim, (cuuint64_t)p->seq, (cuuint64_t)p->batch * p->heads};
    cuuint64_t strides[2] = {(cuuint64_t)p->dim * 4, (cuuint64_t)p->seq * p->dim * 4}; /* bytes */
    cuuint32_t box[3] = {32, (cuuint32_t)rows, 1};
    return lb_tensor_map(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, base, dims, strides, box, 0);
}

extern "C" cudaError_t attention_bwd_hopper_prepare(attention_bwd_problem *p)
{
    bwd_maps *m = (bwd_maps *)calloc(1, sizeof *m);
    if (!m) return cudaErrorMemoryAllocation;
    p->prepared = m;
    int qt = p->dim == 128 ? bwd4_layout<128>::QT : bwd4_layout<64>::QT;
    int B = p->batch, H = p->heads, S = p->seq, D = p->dim;
    cudaError_t e = attention_heads_map(&m->q, p->q, B, H, S, D, p->ld_qkv, qt);
    if (e == cudaSuccess) e = attention_heads_map(&m->d_o, p->d_o, B, H, S, D, p->ld_o, qt);
    if (e == cudaSuccess) e = attention_heads_map(&m->k, p->k, B, H, S, D, p->ld_qkv, BWD4_KEYS);
    if (e == cudaSuccess) e = attention_heads_map(&m->v, p->v, B, H, S, D, p->ld_qkv, BWD4_KEYS);
    if (e == cudaSuccess) e = make_acc_map(&m->dq_acc, p->dq_acc, p, 64);
    return e;
}

/* version 4: a block of 384 threads a (128 keys, head); its shared memory (194 or 195 KiB)
 * asked for at the first launch at each D */
template <int D> static cudaError_t kernel4(const attention_bwd_problem *p)
{
    static const cudaError_t allowed =
        cudaFuncSetAttribute(attention_bwd_kernel4<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, bwd4_layout<D>::BYTES);
    if (allowed != cudaSuccess) return allowed;
    const bwd_maps *m = (const bwd_maps *)p->prepared;
    dim3 grid((p->seq + BWD4_KEYS - 1) / BWD4_KEYS, p->batch * p->heads);
    attention_bwd_kernel4<D><<<grid, BWD4_THREADS, bwd4_layout<D>::BYTES>>>(
        m->q, m->k, m->v, m->d_o, m->dq_acc, p->lse, p->delta, p->dk, p->dv,
        attention_rows_of(p->heads, p->seq, p->dim, p->ld_qkv), p->seq, p->causal);
    return cudaGetLastError();
}
extern "C" cudaError_t attention_bwd_launch4(const attention_bwd_problem *p)
{
    if (!p->prepared) return cudaErrorInvalidValue; /* attention_bwd_prepare was not called */
    return attention_bwd_tiled(p, p->dim == 64 ? kernel4<64> : kernel4<128>);
}
