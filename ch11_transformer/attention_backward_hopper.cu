/* attention_backward_hopper.cu - attention's backward version 3: FlashAttention-2's loop order with
 * Hopper's wgmma. Its instructions exist only in sm_90a, so this file is compiled for sm_90a alone,
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
 */
#include "attention_backward_kernels.h"
#include "attention_device.cuh" /* pack_bf16 */
#include "labbook.h"            /* lb_sm90a_unavailable */
#include "lb_tensor_core.cuh"   /* wgmma, descriptors, fences */

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
        uint32_t a[4] = {pack_bf16(x[8 * ks], x[8 * ks + 1]), pack_bf16(x[8 * ks + 2], x[8 * ks + 3]),
                         pack_bf16(x[8 * ks + 4], x[8 * ks + 5]), pack_bf16(x[8 * ks + 6], x[8 * ks + 7])};
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
                    pack_bf16(ds[4 * j + 2 * h], ds[4 * j + 2 * h + 1]);
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
            *reinterpret_cast<uint32_t *>(dK + head + (size_t)key[h] * D + c) = pack_bf16(dk[4 * j + 2 * h], dk[4 * j + 2 * h + 1]);
            *reinterpret_cast<uint32_t *>(dV + head + (size_t)key[h] * D + c) = pack_bf16(dv[4 * j + 2 * h], dv[4 * j + 2 * h + 1]);
        }
    }
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
