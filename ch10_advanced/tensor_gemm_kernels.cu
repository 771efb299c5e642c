/* tensor_gemm_kernels.cu - C = A B on the tensor cores, from wmma to warp-specialised wgmma.
 *
 *   A is (M,K) row-major, B is (K,N) column-major, C is (M,N) row-major fp32; A and B bf16 (or
 *   fp32 read as tf32; fp8 for 3-12, whose C is then bf16) in zero-padded buffers (tensor_gemm_kernels.h). Both operands are
 *   "K-major" (K is the contiguous index): the layout mma.sync's row.col form and wgmma's
 *   descriptors read without a transpose, and the only one wgmma accepts for tf32.
 *
 * versions (tensor_gemm.c's table):
 *   1  wmma: one warp per 16x16 tile of C, fragments loaded straight from global memory
 *   2  mma.sync m16n8k16 + ldmatrix: 128x128 block tile, 8 warps of 64x32, cp.async double buffer
 *   (3-12 are Hopper's own, in tensor_gemm_hopper.cu)
 *   3  wgmma m64n256k16 (sm_90a): one warpgroup, 64x256 tile, TMA loads, 128-byte swizzle, one
 *      stage, mbarrier waits
 *   4  warp-specialised: a producer warpgroup issues TMA, two consumer warpgroups (setmaxnreg)
 *      run wgmma; 128x256 tile, a ring of 4 stages with full/empty mbarriers
 *   5  4, persistent: one block per SM walks the tiles in groups of 16 tile rows (L2 reuse),
 *      its producer loading the next tile while the consumers store the last
 *   6  5, in clusters of two blocks (the tiles above each other): each loads half of the
 *      shared B tile and the TMA multicasts it into both; as many clusters as fit at once
 *   7  5, with the next k tile's wgmma issued before waiting for the last one's: the tensor
 *      cores always have a group queued (a stage is released one tile later)
 *   8  6 and 7 together: clusters with multicast, wgmma kept queued
 *   9  5, with C written through shared memory by TMA stores, which run on while the consumers
 *      start their next tile (where N is a multiple of 4: C's rows must be 16-byte aligned)
 *  10  6 and 9 together (clusters with B multicast, C out by TMA stores), the pairs of tiles
 *      walked in the order of a Hilbert curve that the host computes once (N a multiple of 4)
 *  11  9, stream-K: the whole waves of tiles as 9 deals them, the last, partial wave's tiles
 *      (when it is at most three quarters full) cut along K into equal runs, one a block; a
 *      split tile's sums meet in global memory (N a multiple of 4)
 *  12  ping-pong: each consumer its own 128x128 tiles, taken in turn, the main loops
 *      alternating, so that one consumer's epilogue runs under the other's main loop; 6 stages
 *      of 32 KiB, C out by TMA stores (N a multiple of 4)
 */
#include "tensor_gemm_kernels.h"
#include "tensor_gemm_device.cuh" /* store_pair (shared with tensor_gemm_hopper.cu) */
#include "lb_tensor_core.cuh"     /* cp.async, ldmatrix, mma.sync */

#include <cuda_bf16.h>
#include <mma.h>
#include <stdint.h>
#include <stdlib.h>

/* ================================================================ version 1: wmma */

/* The wmma shapes: bf16 multiplies 16x16x16 per instruction, tf32 16x16x8. */
template <typename In> struct wmma_shape;
template <> struct wmma_shape<__nv_bfloat16> {
    typedef __nv_bfloat16 frag_t;
    static const int K = 16;
};
template <> struct wmma_shape<float> {
#if !defined(__CUDA_ARCH__) || LB_SM80
    typedef nvcuda::wmma::precision::tf32 frag_t;
#else
    typedef float frag_t; /* sm_75 has no tf32 fragments; version 1's body is not compiled there */
#endif
    static const int K = 8;
};

/* Each warp owns one 16x16 tile of C and walks K, loading a 16xK16 piece of A and of B
 * straight from global memory into fragments: opaque per-lane registers whose layout the
 * compiler picks. Four warps per block (2x2 tiles), only so the grid is not huge. */
template <typename In>
__global__ void __launch_bounds__(128) tensor_gemm_kernel1(const In *A, const In *B, float *C, int M, int N, int kp)
{
#if LB_SM80
    using namespace nvcuda;
    const int KS = wmma_shape<In>::K;
    typedef typename wmma_shape<In>::frag_t F;
    __shared__ float staged[4][16 * 16];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int row0 = blockIdx.y * 32 + (warp / 2) * 16, col0 = blockIdx.x * 32 + (warp % 2) * 16;

    wmma::fragment<wmma::matrix_a, 16, 16, KS, F, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, KS, F, wmma::col_major> b; /* element (k, n) at B[n kp + k] */
    wmma::fragment<wmma::accumulator, 16, 16, KS, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < kp; k += KS) {
        wmma::load_matrix_sync(a, A + (size_t)row0 * kp + k, kp);
        wmma::load_matrix_sync(b, B + (size_t)col0 * kp + k, kp);
        if constexpr (sizeof(In) == 4) { /* tf32: the fragment holds fp32 values, rounded here */
            for (int i = 0; i < a.num_elements; i++) a.x[i] = wmma::__float_to_tf32(a.x[i]);
            for (int i = 0; i < b.num_elements; i++) b.x[i] = wmma::__float_to_tf32(b.x[i]);
        }
        wmma::mma_sync(acc, a, b, acc);
    }
    /* C is not padded (N may be odd): stage the tile in shared memory, store what is inside */
    wmma::store_matrix_sync(staged[warp], acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 256; i += 32) {
        int r = row0 + i / 16, c = col0 + i % 16;
        if (r < M && c < N) C[(size_t)r * N + c] = staged[warp][i];
    }
#endif
}

/* ================================================================ version 2: mma.sync */

#define TG2_BM 128
#define TG2_BN 128
#define TG2_BK 32
#define TG2_LD (TG2_BK + 8) /* a row of 32 bf16 padded to 80 bytes: ldmatrix's 8 rows hit 8 different bank quads */

/* One k tile (128 rows of A, 128 rows of B, 32 deep) into shared memory: 16-byte cp.async
 * copies that skip the registers, two per thread per operand. */
__device__ __forceinline__ void load_tile2(__nv_bfloat16 (*sA)[TG2_LD], __nv_bfloat16 (*sB)[TG2_LD],
                                           const __nv_bfloat16 *A, const __nv_bfloat16 *B, int m0, int n0, int k0,
                                           int kp)
{
    for (int c = threadIdx.x; c < TG2_BM * TG2_BK / 8; c += blockDim.x) {
        int r = c / (TG2_BK / 8), col = (c % (TG2_BK / 8)) * 8;
        cp_async16(&sA[r][col], A + (size_t)(m0 + r) * kp + k0 + col);
        cp_async16(&sB[r][col], B + (size_t)(n0 + r) * kp + k0 + col);
    }
    cp_async_commit();
}

/* 8 warps as 2 (rows) x 4 (columns), each a 64x32 warp tile: 4 x 4 mma tiles of 16x8, 64
 * accumulators per lane. While the warps multiply stage s, cp.async fills stage s^1. */
__global__ void __launch_bounds__(256)
    tensor_gemm_kernel2(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N, int kp)
{
#if LB_SM80
    __shared__ __align__(16) __nv_bfloat16 sA[2][TG2_BM][TG2_LD], sB[2][TG2_BN][TG2_LD];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int wm = warp / 4, wn = warp % 4;
    int m0 = blockIdx.y * TG2_BM, n0 = blockIdx.x * TG2_BN;
    float acc[4][4][4] = {};
    int tiles = kp / TG2_BK;

    load_tile2(sA[0], sB[0], A, B, m0, n0, 0, kp);
    for (int t = 0; t < tiles; t++) {
        int s = t & 1;
        if (t + 1 < tiles) {
            load_tile2(sA[s ^ 1], sB[s ^ 1], A, B, m0, n0, (t + 1) * TG2_BK, kp);
            cp_async_wait<1>(); /* all but the newest group: tile t has landed */
        } else {
            cp_async_wait<0>();
        }
        __syncthreads(); /* every thread's copies of tile t are visible to every warp */
        for (int kk = 0; kk < TG2_BK; kk += 16) {
            uint32_t a[4][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 4; mi++) /* lanes 0-15 point at rows 0-15, k 0-7; lanes 16-31 at k 8-15 */
                ldmatrix_x4(a[mi], &sA[s][wm * 64 + mi * 16 + lane % 16][kk + (lane / 16) * 8]);
#pragma unroll
            for (int p = 0; p < 2; p++) { /* two 8-column tiles per ldmatrix: (n 0-7 | 8-15) x (k 0-7 | 8-15) */
                uint32_t r[4];
                ldmatrix_x4(r, &sB[s][wn * 32 + p * 16 + (lane / 16) * 8 + lane % 8][kk + ((lane / 8) & 1) * 8]);
                b[2 * p][0] = r[0], b[2 * p][1] = r[1], b[2 * p + 1][0] = r[2], b[2 * p + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++) mma_16816(acc[mi][ni], a[mi], b[ni]);
        }
        __syncthreads(); /* every warp is done with stage s before the next iteration refills it */
    }
#pragma unroll
    for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++) {
            int r = m0 + wm * 64 + mi * 16 + lane / 4, c = n0 + wn * 32 + ni * 8 + (lane % 4) * 2;
            store_pair(C, M, N, r, c, acc[mi][ni][0], acc[mi][ni][1]);
            store_pair(C, M, N, r + 8, c, acc[mi][ni][2], acc[mi][ni][3]);
        }
#endif
}

/* ================================================================ launchers */

/* version 1: a warp per 16 x 16 tile of C, 4 warps a block */
static cudaError_t launch1(const tg_gemm *g)
{
    if (g->type == TG_FP8 || g->alpha != 1.0f) return cudaErrorInvalidValue; /* bf16 and tf32 only */
    dim3 grid((g->n + 31) / 32, (g->m + 31) / 32);
    if (g->type == TG_BF16)
        tensor_gemm_kernel1<__nv_bfloat16>
            <<<grid, 128>>>((const __nv_bfloat16 *)g->a, (const __nv_bfloat16 *)g->b, (float *)g->c, g->m, g->n, g->kp);
    else
        tensor_gemm_kernel1<float><<<grid, 128>>>((const float *)g->a, (const float *)g->b, (float *)g->c, g->m, g->n, g->kp);
    return cudaGetLastError();
}
static tg_shape shape1(tg_type type) { return (tg_shape){32, 32, type == TG_BF16 ? 16 : 8, 128, 1, 0}; }
static const char *no_fp8(tg_type type, int) { return type == TG_FP8 ? "bf16 and tf32 only (its wmma fragments are theirs)" : NULL; }

/* version 2: a block per 128 x 128 tile of C; bf16 only (ldmatrix moves 16-bit elements) */
static cudaError_t launch2(const tg_gemm *g)
{
    if (g->type != TG_BF16 || g->alpha != 1.0f) return cudaErrorInvalidValue;
    dim3 grid((g->n + TG2_BN - 1) / TG2_BN, (g->m + TG2_BM - 1) / TG2_BM);
    tensor_gemm_kernel2<<<grid, 256>>>((const __nv_bfloat16 *)g->a, (const __nv_bfloat16 *)g->b, (float *)g->c, g->m, g->n,
                                       g->kp);
    return cudaGetLastError();
}
static tg_shape shape2(tg_type) { return (tg_shape){TG2_BM, TG2_BN, TG2_BK, 256, 2, 0}; }
static const char *bf16_only(tg_type type, int) { return type == TG_BF16 ? NULL : "bf16 only (ldmatrix moves 16-bit elements)"; }

/* Every version's launcher, the shape of its work, and what it cannot run (NULL: anything the
 * program gives it); 3-12 are in tensor_gemm_hopper.cu. Version 0 is cuBLAS, in tensor_gemm.c. To
 * add a version: its kernel, launcher and shape (here, or in tensor_gemm_hopper.cu for sm_90a's
 * instructions), a row here, TENSOR_GEMM_VERSIONS in tensor_gemm_kernels.h, and a row in
 * tensor_gemm.c's versions[]. */
static const struct {
    cudaError_t (*launch)(const tg_gemm *g);
    tg_shape (*shape)(tg_type type);
    const char *(*unavailable)(tg_type type, int n);
} launchers[] = {
    {NULL, NULL, NULL},
    {launch1, shape1, no_fp8},
    {launch2, shape2, bf16_only},
    {tensor_gemm_launch3, tensor_gemm_shape3, tensor_gemm_hopper_unavailable},
    {tensor_gemm_launch4, tensor_gemm_shape_ws, tensor_gemm_hopper_unavailable},
    {tensor_gemm_launch5, tensor_gemm_shape_ws, tensor_gemm_hopper_unavailable},
    {tensor_gemm_launch6, tensor_gemm_shape_ws, tensor_gemm_hopper_unavailable},
    {tensor_gemm_launch7, tensor_gemm_shape_ws, tensor_gemm_hopper_unavailable},
    {tensor_gemm_launch8, tensor_gemm_shape_ws, tensor_gemm_hopper_unavailable},
    {tensor_gemm_launch9, tensor_gemm_shape9, tensor_gemm_tma_store_unavailable},
    {tensor_gemm_launch10, tensor_gemm_shape9, tensor_gemm_tma_store_unavailable},
    {tensor_gemm_launch11, tensor_gemm_shape9, tensor_gemm_tma_store_unavailable},
    {tensor_gemm_launch12, tensor_gemm_shape12, tensor_gemm_tma_store_unavailable},
};
static_assert(sizeof launchers / sizeof launchers[0] == TENSOR_GEMM_VERSIONS,
              "one row in launchers[] per version: TENSOR_GEMM_VERSIONS in tensor_gemm_kernels.h");

extern "C" const char *tensor_gemm_unavailable(int version, tg_type type, int n)
{
    if (version < 1 || version >= TENSOR_GEMM_VERSIONS || !launchers[version].unavailable) return NULL;
    return launchers[version].unavailable(type, n);
}

extern "C" cudaError_t tensor_gemm_launch(int version, const tg_gemm *g)
{
    if (version < 1 || version >= TENSOR_GEMM_VERSIONS) return cudaErrorInvalidValue;
    return launchers[version].launch(g); /* each refuses what it cannot run (2: tf32, 9: N % 4) */
}

extern "C" tg_shape tensor_gemm_shape(int version, tg_type type)
{
    if (version < 1 || version >= TENSOR_GEMM_VERSIONS) return (tg_shape){0, 0, 0, 0, 0, 0};
    return launchers[version].shape(type);
}

extern "C" cudaError_t tensor_gemm_prepare(tg_gemm *g)
{
    g->prepared = NULL;
    if (tensor_gemm_hopper_unavailable(g->type, g->n)) return cudaSuccess; /* no wgmma here: no maps to make */
    return tensor_gemm_hopper_prepare(g);
}

extern "C" void tensor_gemm_release(tg_gemm *g)
{
    if (g->prepared) tensor_gemm_hopper_release(g);
    free(g->prepared);
    g->prepared = NULL;
}
