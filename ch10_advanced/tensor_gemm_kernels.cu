/* tensor_gemm_kernels.cu - C = A B on the tensor cores, from wmma to warp-specialised wgmma.
 *
 *   A is (M,K) row-major, B is (K,N) column-major, C is (M,N) row-major fp32; A and B bf16 (or
 *   fp32 read as tf32) in zero-padded buffers (tensor_gemm_kernels.h). Both operands are
 *   "K-major" (K is the contiguous index): the layout mma.sync's row.col form and wgmma's
 *   descriptors read without a transpose, and the only one wgmma accepts for tf32.
 *
 * versions (tensor_gemm.c's table):
 *   1  wmma: one warp per 16x16 tile of C, fragments loaded straight from global memory
 *   2  mma.sync m16n8k16 + ldmatrix: 128x128 block tile, 8 warps of 64x32, cp.async double buffer
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
 * Versions 3-9 exist only in builds for sm_90 (compiled for sm_90a: see the Makefile).
 */
#include "tensor_gemm_kernels.h"
#include "labbook.h" /* lb_sm90a_unavailable */

#include <cuda.h> /* CUtensorMap and the cuTensorMapEncodeTiled types (no libcuda link) */
#include <cuda_bf16.h>
#include <mma.h>
#include <stdint.h>
#include <stdlib.h>

#include "lb_tensor_core.cuh" /* cp.async, ldmatrix, mma.sync, mbarrier, TMA, wgmma's descriptors */

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TG_SM80 1 /* device code for sm_80 and newer: bf16 and tf32 wmma, mma.sync, cp.async */
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TG_SM90A 1 /* device code for sm_90a: wgmma, setmaxnreg */
#endif

/* Versions 4-9: the ring's depth (make tensor_gemm TG_STAGES=2), 48 KiB a stage, 1 KiB for
 * the barriers and 32 KiB for version 9's C on its way out: at most 4 fit in the 227 KiB a block
 * may have on an H100/H200, and a ring needs 2. Refused here, when building, rather than by the
 * driver when the program sets up. */
#ifndef TG_STAGES
#define TG_STAGES 4
#endif
#if TG_STAGES < 2 || TG_STAGES * 48 + 32 + 1 > 227
#error "TG_STAGES must be 2..4: a stage is 48 KiB, and a block may have at most 227 KiB of shared memory"
#endif
#define TGW_STAGES TG_STAGES
/* version 9: C leaves a consumer in chunks of 64 rows x 32 floats (128 bytes: one swizzle row),
 * through two buffers a consumer */
#define TGW_C_CHUNK_BYTES (64 * 128)
#define TGW_C_BYTES (2 * 2 * TGW_C_CHUNK_BYTES)

/* ================================================================ version 1: wmma */

/* The wmma shapes: bf16 multiplies 16x16x16 per instruction, tf32 16x16x8. */
template <typename In> struct wmma_shape;
template <> struct wmma_shape<__nv_bfloat16> {
    typedef __nv_bfloat16 frag_t;
    static const int K = 16;
};
template <> struct wmma_shape<float> {
#if !defined(__CUDA_ARCH__) || TG_SM80
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
#if TG_SM80
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

/* ================================================================ shared by versions 2-6 */

/* Store two neighbouring accumulators (row r, columns c and c+1) where they fall inside C;
 * one 8-byte store when N is even (then r N + c is even and the address 8-byte aligned). */
__device__ __forceinline__ void store_pair(float *C, int M, int N, int r, int c, float v0, float v1)
{
    if (r >= M) return;
    float *p = C + (size_t)r * N + c;
    if ((N & 1) == 0 && c + 1 < N) {
        *reinterpret_cast<float2 *>(p) = make_float2(v0, v1);
    } else {
        if (c < N) p[0] = v0;
        if (c + 1 < N) p[1] = v1;
    }
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
#if TG_SM80
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

/* ================================================================ Hopper: TMA, mbarrier, wgmma */

#ifdef TG_HOPPER

/* A k tile is 128 bytes of K per row: 64 bf16 or 32 tf32, one row of the 128-byte swizzle. A
 * wgmma instruction eats 32 bytes of it (k16 bf16, k8 tf32), so 4 instructions per tile. */
#define TG_TILE_K_BYTES 128
#define TG_WG_THREADS 128 /* a warpgroup: 4 consecutive warps that issue wgmma together */

/* d (64 x 256, fp32) += A (64 x k, from descriptor da) B (k x 256, from db), issued by the 128
 * threads of a warpgroup together. Each thread holds 128 of the 16384 accumulators: warp w of
 * the group has rows 16w..16w+15, and lane t, for each 8 columns j, has d[4j], d[4j+1] at row
 * t/4, columns 8j + 2(t%4) and +1, and d[4j+2], d[4j+3] eight rows further down. */
#define TG_REGS128                                                                                 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                       \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "             \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "             \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "             \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "             \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "             \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define TG_D8(i)                                                                                                \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
/* scale-d = 1 (d += a b, the accumulators start at zero); bf16 also takes two transpose flags (0:
 * both K-major), tf32 has none (K-major only) */
#define TG_WGMMA_256(INSTR, TAIL)                                                                                   \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" INSTR " {" TG_REGS128 "}, %128, %129, p, 1, 1" TAIL  \
                 ";\n}\n"                                                                                           \
                 : TG_D8(0), TG_D8(8), TG_D8(16), TG_D8(24), TG_D8(32), TG_D8(40), TG_D8(48), TG_D8(56), TG_D8(64), \
                   TG_D8(72), TG_D8(80), TG_D8(88), TG_D8(96), TG_D8(104), TG_D8(112), TG_D8(120)                   \
                 : "l"(da), "l"(db), "r"(1))

template <typename In> __device__ __forceinline__ void wgmma_256(float d[128], uint64_t da, uint64_t db);
template <> __device__ __forceinline__ void wgmma_256<__nv_bfloat16>(float d[128], uint64_t da, uint64_t db)
{
#if TG_SM90A
    TG_WGMMA_256("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", ", 0, 0");
#endif
}
template <> __device__ __forceinline__ void wgmma_256<float>(float d[128], uint64_t da, uint64_t db)
{
#if TG_SM90A
    TG_WGMMA_256("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", "");
#endif
}

/* One k tile for one warpgroup: 4 wgmma, each 32 bytes further along K in both tiles, started
 * as one group; they run while the warps go on. */
template <typename In> __device__ __forceinline__ void wgmma_issue(float d[128], const uint8_t *a, const uint8_t *b)
{
    wgmma_fence(); /* the accumulator registers are ready for the async unit */
#pragma unroll
    for (int ks = 0; ks < TG_TILE_K_BYTES / 32; ks++)
        wgmma_256<In>(d, wgmma_desc(a + 32 * ks), wgmma_desc(b + 32 * ks));
    wgmma_commit();
}
/* A consumer warpgroup's 64 x 256 accumulators into C at rows m0.., columns n0.. */
__device__ __forceinline__ void store_wgmma_tile(float *C, int M, int N, int m0, int n0, const float d[128])
{
    int warp = (threadIdx.x % TG_WG_THREADS) / 32, lane = threadIdx.x % 32;
    int r = m0 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < 32; j++) {
        int c = n0 + 8 * j + 2 * (lane % 4);
        store_pair(C, M, N, r, c, d[4 * j], d[4 * j + 1]);
        store_pair(C, M, N, r + 8, c, d[4 * j + 2], d[4 * j + 3]);
    }
}

/* A consumer warpgroup is done reading a stage: one thread arrives on its empty barrier, in
 * every block of the cluster (each block's producer writes into both). */
template <int CLUSTER> __device__ __forceinline__ void release_stage(uint64_t *empty)
{
    if (threadIdx.x % TG_WG_THREADS != 0) return;
    if (CLUSTER == 1)
        mbar_arrive(empty);
    else
        for (int r = 0; r < CLUSTER; r++) mbar_arrive_cluster(empty, r);
}

/* ---------------------------------------------------------------- version 3 */

#define TG3_BM 64
#define TG3_BN 256

/* One warpgroup, one stage: thread 0 starts the two TMA copies of a k tile and every thread
 * waits on the barrier; the warpgroup runs 4 wgmma on the tile and waits for them; a block
 * barrier, and the next tile may overwrite the buffers. Simple, and the copy engine and the
 * tensor cores take turns instead of overlapping. */
template <typename In>
__global__ void __launch_bounds__(TG_WG_THREADS)
    tensor_gemm_kernel3(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB, float *C,
                        int M, int N, int kp)
{
#if TG_SM90A
    extern __shared__ uint8_t smem_raw[];
    uint8_t *sA = aligned_smem(smem_raw), *sB = sA + TG3_BM * TG_TILE_K_BYTES;
    __shared__ uint64_t full;
    const int tile_k = TG_TILE_K_BYTES / sizeof(In);
    int m0 = blockIdx.y * TG3_BM, n0 = blockIdx.x * TG3_BN;
    if (threadIdx.x == 0) {
        mbar_init(&full, 1);
        mbar_fence_init(); /* the copy engine sees it initialised */
    }
    __syncthreads();

    float d[128] = {};
    for (int t = 0; t < kp / tile_k; t++) {
        if (threadIdx.x == 0) {
            mbar_arrive_expect(&full, (TG3_BM + TG3_BN) * TG_TILE_K_BYTES);
            tma_load(sA, &mapA, t * tile_k, m0, &full);
            tma_load(sB, &mapB, t * tile_k, n0, &full);
        }
        mbar_wait(&full, t & 1);
        wgmma_issue<In>(d, sA, sB);
        wgmma_wait<0>(); /* the accumulators are final and the tile no longer read */
        __syncthreads(); /* all four warps are done with the tile before thread 0 refills it */
    }
    store_wgmma_tile(C, M, N, m0, n0, d);
#endif
}

/* ---------------------------------------------------------------- versions 4-6 */

#define TGW_BM 128 /* two consumer warpgroups of 64 rows */
#define TGW_BN 256
#define TGW_THREADS (3 * TG_WG_THREADS)
/* The persistent versions' order (make tensor_gemm TG_GROUP=8): TG_GROUP tile rows at a time,
 * walked column by column, so that the tiles in flight share a few B tiles (and A's rows) in
 * L2. 16 rows of 128 and the B tiles they meet are about 6 MiB of bf16 at K = 4096. */
#ifndef TG_GROUP
#define TG_GROUP 16
#endif
#if TG_GROUP < 1
#error "TG_GROUP must be at least 1 (tile rows walked together)"
#endif
#define TGW_GROUP TG_GROUP
#define TGW_A_BYTES (TGW_BM * TG_TILE_K_BYTES)
#define TGW_B_BYTES (TGW_BN * TG_TILE_K_BYTES)
#define TGW_STAGE_BYTES (TGW_A_BYTES + TGW_B_BYTES)
#define TGW_SMEM (TGW_STAGES * TGW_STAGE_BYTES + 1024)
#define TGW_SMEM_TMA_STORE (TGW_SMEM + TGW_C_BYTES) /* version 9: and C's buffers after the ring */

/* The tile (m0, n0) that work item `item` covers: one tile, or (CLUSTER = 2) the pair of tiles
 * above each other, in groups of TGW_GROUP tile rows walked column by column, so that the
 * tiles in flight at once reuse a few columns of B and rows of A from L2. */
template <int CLUSTER> __device__ __forceinline__ void tile_of(int item, int tiles_m, int tiles_n, int *m0, int *n0)
{
    int rows = tiles_m / CLUSTER; /* work-item rows */
    int group = item / (TGW_GROUP * tiles_n), first = group * TGW_GROUP;
    int height = min(TGW_GROUP, rows - first);
    int within = item - group * TGW_GROUP * tiles_n;
    *m0 = (first + within % height) * CLUSTER * TGW_BM;
    *n0 = (within / height) * TGW_BN;
}

/* This block's tile for work item `item`: the grid's (one tile per block) or tile_of's, and in
 * a cluster the block of rank r takes the r-th of the tiles above each other. The producer and
 * the consumers walk the same items and call this alike. */
template <int PERSISTENT, int CLUSTER>
__device__ __forceinline__ void tile_origin(int item, int tiles_m, int tiles_n, uint32_t rank, int *m0, int *n0)
{
    if (PERSISTENT)
        tile_of<CLUSTER>(item, tiles_m, tiles_n, m0, n0);
    else
        *m0 = blockIdx.y * TGW_BM, *n0 = blockIdx.x * TGW_BN;
    *m0 += rank * TGW_BM;
}

/* Consumer c's 128 threads wait for each other (named barrier 1 + c) */
__device__ __forceinline__ void consumer_sync(int c)
{
    if (c == 0)
        bar_sync<1, 128>();
    else
        bar_sync<2, 128>();
}

/* Version 9's epilogue: a consumer's 64 x 256 accumulators (rows m0.., columns n0..) leave
 * through shared memory, 32 columns (8 KiB) at a time, in two buffers taken in turn. For each
 * chunk: the thread that issues the stores waits until the store of two chunks ago has read
 * its buffer, the consumer's threads write the chunk into it (in the 128-byte swizzle the map
 * reads, float2 stores a warp spreads over all 32 banks), make the writes visible to the copy
 * engine, and one thread starts the TMA store and goes on. The stores finish while the
 * consumer waits for its next tile's first stage and multiplies it. */
__device__ __forceinline__ void store_tile_tma(const CUtensorMap *mapC, uint8_t *buffers, int c, int m0, int n0,
                                               const float d[128])
{
    int t = threadIdx.x % TG_WG_THREADS, lane = t % 32;
    int row = (t / 32) * 16 + lane / 4; /* this thread's rows: row and row + 8 */
#pragma unroll
    for (int q = 0; q < TGW_BN / 32; q++) {
        uint8_t *buf = buffers + (q % 2) * TGW_C_CHUNK_BYTES;
        if (t == 0) bulk_wait_read<1>(); /* the store of chunk q - 2 is done with buf */
        consumer_sync(c);
#pragma unroll
        for (int jj = 0; jj < 4; jj++) { /* the chunk's 8-column groups: accumulators 4j.. */
            int j = 4 * q + jj;
            uint32_t col_bytes = (8 * jj + 2 * (lane % 4)) * 4;
#pragma unroll
            for (int h = 0; h < 2; h++) { /* rows row and row + 8 */
                uint32_t r = row + 8 * h, swizzled = r * 128 + (col_bytes ^ ((r % 8) << 4));
                *reinterpret_cast<float2 *>(buf + swizzled) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
            }
        }
        fence_proxy_async_shared();
        consumer_sync(c);
        if (t == 0) {
            tma_store_2d(mapC, buf, n0 + 32 * q, m0);
            bulk_commit();
        }
    }
}

/* Warp-specialised: warpgroup 0 produces, warpgroups 1 and 2 consume. The producer (one
 * thread) fills a ring of TGW_STAGES stages; full[s] completes when stage s has landed,
 * empty[s] when both consumers (in both blocks of a cluster) are done with it. setmaxnreg
 * moves registers from the producer, which needs few, to the consumers' 128 accumulators.
 *   PERSISTENT 0: one tile per block; 1: gridDim.x blocks walk all tiles (tile_of's order).
 *   CLUSTER 2: blocks 2i and 2i+1 take the tiles above each other; each loads its own A and
 *   half of the common B, multicast into both, so each B byte leaves L2 once per pair.
 *   TMA_STORE 1: C leaves through shared memory and mapC (store_tile_tma), else straight from
 *   the registers. */
template <typename In, int PERSISTENT, int CLUSTER, int INFLIGHT, int TMA_STORE>
__global__ void __launch_bounds__(TGW_THREADS, 1)
    tensor_gemm_kernel_ws(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
                          const __grid_constant__ CUtensorMap mapC, float *C, int M, int N, int kp, int tiles_m,
                          int tiles_n)
{
#if TG_SM90A
    extern __shared__ uint8_t smem_raw[];
    uint8_t *stages = aligned_smem(smem_raw);
    __shared__ uint64_t full[TGW_STAGES], empty[TGW_STAGES];
    const int tile_k = TG_TILE_K_BYTES / sizeof(In), k_tiles = kp / tile_k;
    const uint32_t rank = CLUSTER > 1 ? cluster_rank() : 0;
    if (threadIdx.x == 0) {
        for (int s = 0; s < TGW_STAGES; s++) {
            mbar_init(&full[s], 1);            /* the producer's arrive (+ the bytes) */
            mbar_init(&empty[s], 2 * CLUSTER); /* one arrive per consumer warpgroup, per block */
        }
        mbar_fence_init();
    }
    if (CLUSTER > 1)
        cluster_sync(); /* the peer's barriers exist before anyone signals them */
    else
        __syncthreads();

    int items = PERSISTENT ? tiles_m * tiles_n / CLUSTER : 1;
    int first = PERSISTENT ? blockIdx.x / CLUSTER : 0, step = PERSISTENT ? gridDim.x / CLUSTER : 1;
    int wg = threadIdx.x / TG_WG_THREADS;
    if (wg == 0) {
        setmaxnreg_dec<40>(); /* the producer gives registers back */
        if (threadIdx.x == 0) {
            int u = 0; /* stage uses so far: stage u % STAGES, its (u / STAGES)-th use */
            for (int item = first; item < items; item += step) {
                int m0, n0;
                tile_origin<PERSISTENT, CLUSTER>(item, tiles_m, tiles_n, rank, &m0, &n0);
                for (int t = 0; t < k_tiles; t++, u++) {
                    int s = u % TGW_STAGES, use = u / TGW_STAGES;
                    if (use > 0) mbar_wait(&empty[s], (use - 1) & 1); /* consumers released its last use */
                    uint8_t *sA = stages + s * TGW_STAGE_BYTES, *sB = sA + TGW_A_BYTES;
                    mbar_arrive_expect(&full[s], TGW_STAGE_BYTES);
                    tma_load(sA, &mapA, t * tile_k, m0, &full[s]);
                    if (CLUSTER == 1) {
                        tma_load(sB, &mapB, t * tile_k, n0, &full[s]);
                    } else { /* my half of B's rows, into both blocks */
                        int half = TGW_BN / CLUSTER;
                        tma_load_multicast(sB + rank * half * TG_TILE_K_BYTES, &mapB, t * tile_k, n0 + rank * half,
                                           &full[s], (uint16_t)((1u << CLUSTER) - 1));
                    }
                }
            }
        }
    } else {
        setmaxnreg_inc<232>(); /* the consumers take them */
        int c = wg - 1;        /* rows 64c..64c+63 of the block's tile */
        int u = 0;
        for (int item = first; item < items; item += step) {
            int m0, n0;
            tile_origin<PERSISTENT, CLUSTER>(item, tiles_m, tiles_n, rank, &m0, &n0);
            float d[128] = {};
            for (int t = 0; t < k_tiles; t++, u++) {
                int s = u % TGW_STAGES;
                mbar_wait(&full[s], (u / TGW_STAGES) & 1);
                uint8_t *sA = stages + s * TGW_STAGE_BYTES, *sB = sA + TGW_A_BYTES;
                wgmma_issue<In>(d, sA + c * 64 * TG_TILE_K_BYTES, sB);
                if (INFLIGHT) { /* tile t's wgmma keep running; wait for t-1's and release its stage */
                    wgmma_wait<1>();
                    if (t > 0) release_stage<CLUSTER>(&empty[(u - 1) % TGW_STAGES]);
                } else { /* wait for tile t's wgmma and release its stage */
                    wgmma_wait<0>();
                    release_stage<CLUSTER>(&empty[s]);
                }
            }
            if (INFLIGHT) {
                wgmma_wait<0>();
                release_stage<CLUSTER>(&empty[(u - 1) % TGW_STAGES]);
            }
            if (TMA_STORE)
                store_tile_tma(&mapC, stages + TGW_STAGES * TGW_STAGE_BYTES + c * 2 * TGW_C_CHUNK_BYTES, c, m0 + c * 64,
                               n0, d);
            else
                store_wgmma_tile(C, M, N, m0 + c * 64, n0, d);
        }
        if (TMA_STORE && threadIdx.x % TG_WG_THREADS == 0) bulk_wait<0>(); /* C written before the block ends */
    }
    if (CLUSTER > 1) cluster_sync(); /* no block leaves while its peer may still signal or write it */
#endif
}

#endif /* TG_HOPPER */

/* ================================================================ launchers */

/* What each version accepts: 2 is bf16 only (ldmatrix moves 16-bit elements); the rest both. */
static int supports(int version, tg_type type) { return type == TG_BF16 || version != 2; }

#ifdef TG_HOPPER
/* The resident-cluster count needs the kernel, defined above; the launch settings come first. */
static cudaLaunchConfig_t cluster_config(cudaLaunchAttribute *attr, int blocks);
template <typename In> static cudaError_t resident_clusters(int *clusters);

typedef struct {
    CUtensorMap a64, a128, b256, b128; /* A in boxes of 64 or 128 rows, B of 256 or 128 */
    CUtensorMap c;                     /* version 9: C in boxes of 64 rows x 32 floats */
    int c_ok;                          /* the map of C exists (N a multiple of 4) */
    int sms, clusters;                 /* multiprocessors; clusters of 2 resident at once */
} tg_prepared;

/* A (rows, kp) K-major matrix seen by the copy engine in boxes of box_rows x 128 bytes. */
static cudaError_t make_map(lb_encode_tiled_fn encode, CUtensorMap *map, const void *base, tg_type type, int rows,
                            int kp, int box_rows)
{
    size_t elem = type == TG_BF16 ? 2 : 4;
    cuuint64_t dims[2] = {(cuuint64_t)kp, (cuuint64_t)rows}; /* innermost (contiguous) first */
    cuuint64_t strides[1] = {(cuuint64_t)kp * elem};         /* bytes from one row to the next */
    cuuint32_t box[2] = {(cuuint32_t)(TG_TILE_K_BYTES / elem), (cuuint32_t)box_rows};
    cuuint32_t one[2] = {1, 1};
    CUresult r =
        encode(map, type == TG_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
               (void *)base, dims, strides, box, one, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

/* C (m, n) fp32 row-major, as version 9's stores see it: boxes of 64 rows x 32 floats (128 bytes,
 * swizzled). The copy engine needs rows 16-byte aligned: n a multiple of 4, else no map (and
 * version 9 stores as version 5 does). */
static cudaError_t make_map_c(lb_encode_tiled_fn encode, tg_prepared *p, float *c, int m, int n)
{
    p->c_ok = n % 4 == 0;
    if (!p->c_ok) return cudaSuccess;
    cuuint64_t dims[2] = {(cuuint64_t)n, (cuuint64_t)m}, strides[1] = {(cuuint64_t)n * 4};
    cuuint32_t box[2] = {32, 64}, one[2] = {1, 1};
    CUresult r =
        encode(&p->c, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, c, dims, strides, box, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

template <typename In> static cudaError_t allow_smem()
{
    cudaError_t e = cudaFuncSetAttribute(tensor_gemm_kernel3<In>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (TG3_BM + TG3_BN) * TG_TILE_K_BYTES + 1024);
    /* the warp-specialised kernels of versions 4-8 (PERSISTENT, CLUSTER, INFLIGHT, TMA_STORE 0) */
    const void *ws[] = {
        (const void *)tensor_gemm_kernel_ws<In, 0, 1, 0, 0>, (const void *)tensor_gemm_kernel_ws<In, 1, 1, 0, 0>,
        (const void *)tensor_gemm_kernel_ws<In, 1, 2, 0, 0>, (const void *)tensor_gemm_kernel_ws<In, 1, 1, 1, 0>,
        (const void *)tensor_gemm_kernel_ws<In, 1, 2, 1, 0>};
    for (size_t i = 0; i < sizeof ws / sizeof ws[0] && e == cudaSuccess; i++)
        e = cudaFuncSetAttribute(ws[i], cudaFuncAttributeMaxDynamicSharedMemorySize, TGW_SMEM);
    if (e == cudaSuccess) /* version 9: and its buffers for C */
        e = cudaFuncSetAttribute(tensor_gemm_kernel_ws<In, 1, 1, 0, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 TGW_SMEM_TMA_STORE);
    return e;
}
#endif

extern "C" cudaError_t tensor_gemm_prepare(tg_gemm *g)
{
#ifdef TG_HOPPER
    tg_prepared *p = (tg_prepared *)calloc(1, sizeof *p);
    if (!p) return cudaErrorMemoryAllocation;
    g->prepared = p;
    int dev;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&p->sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess || tensor_gemm_unavailable(3, g->type)) return e; /* no wgmma here: no maps to make */
    lb_encode_tiled_fn encode;
    e = lb_tensor_map_encoder(&encode);
    if (e != cudaSuccess) return e;
    e = make_map(encode, &p->a64, g->a, g->type, g->mp, g->kp, 64);
    if (e == cudaSuccess) e = make_map(encode, &p->a128, g->a, g->type, g->mp, g->kp, 128);
    if (e == cudaSuccess) e = make_map(encode, &p->b256, g->b, g->type, g->np, g->kp, 256);
    if (e == cudaSuccess) e = make_map(encode, &p->b128, g->b, g->type, g->np, g->kp, 128);
    if (e == cudaSuccess) e = make_map_c(encode, p, g->c, g->m, g->n);
    if (e == cudaSuccess) e = g->type == TG_BF16 ? allow_smem<__nv_bfloat16>() : allow_smem<float>();
    if (e == cudaSuccess)
        e = g->type == TG_BF16 ? resident_clusters<__nv_bfloat16>(&p->clusters)
                               : resident_clusters<float>(&p->clusters);
    if (e == cudaSuccess && p->clusters < 1) e = cudaErrorInvalidConfiguration;
    return e;
#else
    g->prepared = NULL;
    return cudaSuccess;
#endif
}

extern "C" void tensor_gemm_release(tg_gemm *g)
{
    free(g->prepared);
    g->prepared = NULL;
}

#ifdef TG_HOPPER
/* Launch settings of the cluster kernels: clusters of 2 blocks (2i, 2i+1) along x. */
static cudaLaunchConfig_t cluster_config(cudaLaunchAttribute *attr, int blocks)
{
    cudaLaunchConfig_t cfg = {};
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = 2, attr->val.clusterDim.y = 1, attr->val.clusterDim.z = 1;
    cfg.gridDim = dim3(blocks), cfg.blockDim = dim3(TGW_THREADS), cfg.dynamicSmemBytes = TGW_SMEM;
    cfg.attrs = attr, cfg.numAttrs = 1;
    return cfg;
}

/* How many clusters of 2 can be resident at once. Not simply SMs / 2: a cluster's blocks must
 * sit in one GPC (a group of SMs), and a GPC with an odd number of free SMs leaves one idle. A
 * persistent grid larger than this would run its last clusters after the others, in a second
 * wave. */
template <typename In> static cudaError_t resident_clusters(int *clusters)
{
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = cluster_config(&attr, 2);
    return cudaOccupancyMaxActiveClusters(clusters, tensor_gemm_kernel_ws<In, 1, 2, 0, 0>, &cfg);
}

template <typename In> static cudaError_t launch_hopper(int version, const tg_gemm *g)
{
    const tg_prepared *p = (const tg_prepared *)g->prepared;
    if (!p) return cudaErrorInvalidValue; /* tensor_gemm_prepare was not called */
    int tiles_m = g->mp / TGW_BM, tiles_n = g->np / TGW_BN;
    if (version == 3) {
        dim3 grid(g->np / TG3_BN, g->mp / TG3_BM);
        tensor_gemm_kernel3<In><<<grid, TG_WG_THREADS, (TG3_BM + TG3_BN) * TG_TILE_K_BYTES + 1024>>>(
            p->a64, p->b256, g->c, g->m, g->n, g->kp);
    } else if (version == 4) {
        dim3 grid(tiles_n, tiles_m);
        tensor_gemm_kernel_ws<In, 0, 1, 0, 0>
            <<<grid, TGW_THREADS, TGW_SMEM>>>(p->a128, p->b256, p->c, g->c, g->m, g->n, g->kp, tiles_m, tiles_n);
    } else if (version == 5 || version == 7 || (version == 9 && !p->c_ok)) { /* one block per SM */
        int blocks = min(p->sms, tiles_m * tiles_n);
        if (version == 7)
            tensor_gemm_kernel_ws<In, 1, 1, 1, 0>
                <<<blocks, TGW_THREADS, TGW_SMEM>>>(p->a128, p->b256, p->c, g->c, g->m, g->n, g->kp, tiles_m, tiles_n);
        else /* 5, and 9 where C's rows are not 16-byte aligned */
            tensor_gemm_kernel_ws<In, 1, 1, 0, 0>
                <<<blocks, TGW_THREADS, TGW_SMEM>>>(p->a128, p->b256, p->c, g->c, g->m, g->n, g->kp, tiles_m, tiles_n);
    } else if (version == 9) { /* 5 with the TMA stores of C */
        int blocks = min(p->sms, tiles_m * tiles_n);
        tensor_gemm_kernel_ws<In, 1, 1, 0, 1><<<blocks, TGW_THREADS, TGW_SMEM_TMA_STORE>>>(
            p->a128, p->b256, p->c, g->c, g->m, g->n, g->kp, tiles_m, tiles_n);
    } else {
        /* as many pairs as can be resident at once (tiles_m is even: mp is a multiple of 256) */
        int pairs = min(p->clusters, tiles_m * tiles_n / 2);
        cudaLaunchAttribute attr;
        cudaLaunchConfig_t cfg = cluster_config(&attr, 2 * pairs);
        if (version == 6)
            return cudaLaunchKernelEx(&cfg, tensor_gemm_kernel_ws<In, 1, 2, 0, 0>, p->a128, p->b128, p->c, g->c, g->m,
                                      g->n, g->kp, tiles_m, tiles_n);
        return cudaLaunchKernelEx(&cfg, tensor_gemm_kernel_ws<In, 1, 2, 1, 0>, p->a128, p->b128, p->c, g->c, g->m, g->n,
                                  g->kp, tiles_m, tiles_n);
    }
    return cudaGetLastError();
}
#endif

extern "C" cudaError_t tensor_gemm_launch(int version, const tg_gemm *g)
{
    if (version < 1 || version >= TENSOR_GEMM_VERSIONS || !supports(version, g->type)) return cudaErrorInvalidValue;
    if (version == 1) {
        dim3 grid((g->n + 31) / 32, (g->m + 31) / 32);
        if (g->type == TG_BF16)
            tensor_gemm_kernel1<__nv_bfloat16>
                <<<grid, 128>>>((const __nv_bfloat16 *)g->a, (const __nv_bfloat16 *)g->b, g->c, g->m, g->n, g->kp);
        else
            tensor_gemm_kernel1<float>
                <<<grid, 128>>>((const float *)g->a, (const float *)g->b, g->c, g->m, g->n, g->kp);
        return cudaGetLastError();
    }
    if (version == 2) {
        dim3 grid((g->n + TG2_BN - 1) / TG2_BN, (g->m + TG2_BM - 1) / TG2_BM);
        tensor_gemm_kernel2<<<grid, 256>>>((const __nv_bfloat16 *)g->a, (const __nv_bfloat16 *)g->b, g->c, g->m, g->n,
                                           g->kp);
        return cudaGetLastError();
    }
#ifdef TG_HOPPER
    return g->type == TG_BF16 ? launch_hopper<__nv_bfloat16>(version, g) : launch_hopper<float>(version, g);
#else
    return cudaErrorInvalidDeviceFunction;
#endif
}

extern "C" const char *tensor_gemm_unavailable(int version, tg_type type)
{
    if (!supports(version, type)) return "bf16 only (ldmatrix moves 16-bit elements)";
    if (version < 3) return NULL;
#ifdef TG_HOPPER
    return lb_sm90a_unavailable(1);
#else
    return lb_sm90a_unavailable(0);
#endif
}

extern "C" tg_shape tensor_gemm_shape(int version, tg_type type)
{
    int k = type == TG_BF16 ? 64 : 32; /* 128 bytes of K */
    switch (version) {
    case 1: return (tg_shape){32, 32, type == TG_BF16 ? 16 : 8, 128, 1, 0};
    case 2: return (tg_shape){TG2_BM, TG2_BN, TG2_BK, 256, 2, 0};
    case 3: return (tg_shape){64, 256, k, 128, 1, (64 + 256) * 128};
    case 9: return (tg_shape){128, 256, k, 384, TGW_STAGES, TGW_STAGES * (128 + 256) * 128 + TGW_C_BYTES};
    default: return (tg_shape){128, 256, k, 384, TGW_STAGES, TGW_STAGES * (128 + 256) * 128};
    }
}
