/* tensor_gemm_hopper.cu - tensor_gemm's versions 3-12: wgmma with TMA on Hopper's tensor cores,
 * from one warpgroup and one stage to warp-specialised, persistent, clustered kernels. Their
 * instructions exist only in sm_90a, Hopper's own target, so this file is compiled for sm_90a
 * alone, whatever ARCH is (common/rules.mk): no later GPU runs sm_90a's machine code, and on any
 * GPU but an H100/H200 the versions are listed as skipped (tensor_gemm_hopper_unavailable).
 * Versions 1-2, the table of launchers and the layout of the operands are in
 * tensor_gemm_kernels.cu and tensor_gemm_kernels.h; the versions' list is at the top of
 * tensor_gemm_kernels.cu.
 */
#include "tensor_gemm_kernels.h"
#include "tensor_gemm_device.cuh" /* store_pair */
#include "labbook.h"              /* lb_sm90a_unavailable */
#include "lb_tensor_core.cuh"     /* mbarrier, TMA, clusters, wgmma, tensor maps */

#include <cuda.h> /* CUtensorMap (a type only: no libcuda link) */
#include <cuda_bf16.h>
#include <stdint.h>
#include <stdlib.h>

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

/* A k tile is 128 bytes of K per row: 64 bf16 or 32 tf32, one row of the 128-byte swizzle. A
 * wgmma instruction eats 32 bytes of it (k16 bf16, k8 tf32), so 4 instructions per tile. */
#define TG_TILE_K_BYTES 128
#define TG_WG_THREADS 128 /* a warpgroup: 4 consecutive warps that issue wgmma together */

/* d (64 x 256, fp32) += A (64 x k, from descriptor da) B (k x 256, from db), issued by the 128
 * threads of a warpgroup together (lb_tensor_core.cuh: k16 on bf16, k8 on tf32). Each thread
 * holds 128 of the 16384 accumulators: warp w of the group has rows 16w..16w+15, and lane t, for
 * each 8 columns j, has d[4j], d[4j+1] at row t/4, columns 8j + 2(t%4) and +1, and d[4j+2],
 * d[4j+3] eight rows further down. */
template <typename In> __device__ __forceinline__ void wgmma_256(float d[128], uint64_t da, uint64_t db);
template <> __device__ __forceinline__ void wgmma_256<__nv_bfloat16>(float d[128], uint64_t da, uint64_t db)
{
    wgmma_m64n256k16_bf16_ss(d, da, db);
}
template <> __device__ __forceinline__ void wgmma_256<float>(float d[128], uint64_t da, uint64_t db)
{
    wgmma_m64n256k8_tf32_ss(d, da, db);
}
template <> __device__ __forceinline__ void wgmma_256<uint8_t>(float d[128], uint64_t da, uint64_t db)
{
    wgmma_m64n256k32_e4m3_ss(d, da, db); /* uint8_t: fp8 e4m3 codes */
}

/* C's element: fp32, or bf16 when the inputs are fp8 (tensor_gemm_out_bytes) */
template <typename In> struct tg_out {
    typedef float type;
};
template <> struct tg_out<uint8_t> {
    typedef __nv_bfloat16 type;
};

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
/* C = alpha A B: the accumulators times alpha before they leave (fp8's scales; 1 otherwise, which
 * changes no bit) */
__device__ __forceinline__ void scale_tile(float d[128], float alpha)
{
#pragma unroll
    for (int i = 0; i < 128; i++) d[i] *= alpha;
}
__device__ __forceinline__ void scale_tile64(float d[64], float alpha) /* version 12's halves */
{
#pragma unroll
    for (int i = 0; i < 64; i++) d[i] *= alpha;
}
/* A consumer warpgroup's 64 x 256 accumulators into C at rows m0.., columns n0.. (Out: float or
 * bf16, store_pair's two forms) */
template <typename Out>
__device__ __forceinline__ void store_wgmma_tile(Out *C, int M, int N, int m0, int n0, const float d[128])
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
    tensor_gemm_kernel3(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB, void *C,
                        int M, int N, int kp, float alpha)
{
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
    scale_tile(d, alpha);
    store_wgmma_tile((typename tg_out<In>::type *)C, M, N, m0, n0, d);
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
template <int CLUSTER, int BN = TGW_BN>
__device__ __forceinline__ void tile_of(int item, int tiles_m, int tiles_n, int *m0, int *n0)
{
    int rows = tiles_m / CLUSTER; /* work-item rows */
    int group = item / (TGW_GROUP * tiles_n), first = group * TGW_GROUP;
    int height = min(TGW_GROUP, rows - first);
    int within = item - group * TGW_GROUP * tiles_n;
    *m0 = (first + within % height) * CLUSTER * TGW_BM;
    *n0 = (within / height) * BN;
}

/* This block's tile for work item `item`: the grid's (one tile per block), the host's list
 * (version 10: order[item] is the item's row of tiles (of CLUSTER tiles each) << 16 | its column),
 * or tile_of's; in a cluster the block of rank r takes the r-th of the tiles above each other.
 * The producer and the consumers walk the same items and call this alike. */
template <int PERSISTENT, int CLUSTER>
__device__ __forceinline__ void tile_origin(int item, int tiles_m, int tiles_n, const uint32_t *order, uint32_t rank,
                                            int *m0, int *n0)
{
    if (order) {
        uint32_t cell = order[item];
        *m0 = (int)(cell >> 16) * CLUSTER * TGW_BM, *n0 = (int)(cell & 0xFFFF) * TGW_BN;
    } else if (PERSISTENT)
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

/* Two neighbouring accumulators into shared memory as C's element: a float2, or (bf16 C) the
 * pair rounded into one 4-byte bf16x2 */
__device__ __forceinline__ void put_pair(uint8_t *p, float v0, float v1, float *)
{
    *reinterpret_cast<float2 *>(p) = make_float2(v0, v1);
}
__device__ __forceinline__ void put_pair(uint8_t *p, float v0, float v1, __nv_bfloat16 *)
{
    *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(v0, v1);
}

/* Version 9's epilogue: a consumer's 64 x 256 accumulators (rows m0.., columns n0..) leave
 * through shared memory, 128 bytes of a row (32 fp32 columns, or 64 bf16) and 8 KiB at a time,
 * in two buffers taken in turn. For each chunk: the thread that issues the stores waits until
 * the store of two chunks ago has read its buffer, the consumer's threads write the chunk into
 * it (in the 128-byte swizzle the map reads; a warp's pair stores spread over all 32 banks),
 * make the writes visible to the copy engine, and one thread starts the TMA store and goes on.
 * The stores finish while the consumer waits for its next tile's first stage and multiplies it. */
template <typename Out, int N_TILE = TGW_BN> /* N_TILE: the accumulators' columns (256, or 128: d[64]) */
__device__ __forceinline__ void store_tile_tma(const CUtensorMap *mapC, uint8_t *buffers, int c, int m0, int n0,
                                               const float *d)
{
    const int cols = 128 / sizeof(Out); /* a chunk's columns: one 128-byte swizzle row */
    int t = threadIdx.x % TG_WG_THREADS, lane = t % 32;
    int row = (t / 32) * 16 + lane / 4; /* this thread's rows: row and row + 8 */
#pragma unroll
    for (int q = 0; q < N_TILE / cols; q++) {
        uint8_t *buf = buffers + (q % 2) * TGW_C_CHUNK_BYTES;
        if (t == 0) bulk_wait_read<1>(); /* the store of chunk q - 2 is done with buf */
        consumer_sync(c);
#pragma unroll
        for (int jj = 0; jj < cols / 8; jj++) { /* the chunk's 8-column groups: accumulators 4j.. */
            int j = cols / 8 * q + jj;
            uint32_t col_bytes = (8 * jj + 2 * (lane % 4)) * sizeof(Out);
#pragma unroll
            for (int h = 0; h < 2; h++) { /* rows row and row + 8 */
                uint32_t r = row + 8 * h, swizzled = r * 128 + (col_bytes ^ ((r % 8) << 4));
                put_pair(buf + swizzled, d[4 * j + 2 * h], d[4 * j + 2 * h + 1], (Out *)nullptr);
            }
        }
        fence_proxy_async_shared();
        consumer_sync(c);
        if (t == 0) {
            tma_store_2d(mapC, buf, n0 + cols * q, m0);
            bulk_commit();
        }
    }
}

/* The ring's two sides, for one piece of work: k tiles k0..k1-1 of the block's tile at (m0, n0).
 * u counts the stage uses so far (stage u % STAGES, its (u / STAGES)-th use); the producer and
 * each consumer keep their own count and walk the same pieces, so theirs agree.
 * The producer (one thread): wait until the consumers released a stage's last use, then start
 * its copies. In a cluster each block loads its own A and its half of B's rows, multicast into
 * both blocks (the pair's tiles are above each other: the same B). */
template <int CLUSTER>
__device__ __forceinline__ void produce(const CUtensorMap *mapA, const CUtensorMap *mapB, uint8_t *stages,
                                        uint64_t *full, uint64_t *empty, int tile_k, int m0, int n0, int k0,
                                        int k1, uint32_t rank, int &u)
{
    for (int t = k0; t < k1; t++, u++) {
        int s = u % TGW_STAGES, use = u / TGW_STAGES;
        if (use > 0) mbar_wait(&empty[s], (use - 1) & 1); /* consumers released its last use */
        uint8_t *sA = stages + s * TGW_STAGE_BYTES, *sB = sA + TGW_A_BYTES;
        mbar_arrive_expect(&full[s], TGW_STAGE_BYTES);
        tma_load(sA, mapA, t * tile_k, m0, &full[s]);
        if (CLUSTER == 1) {
            tma_load(sB, mapB, t * tile_k, n0, &full[s]);
        } else { /* my half of B's rows, into both blocks */
            int half = TGW_BN / CLUSTER;
            tma_load_multicast(sB + rank * half * TG_TILE_K_BYTES, mapB, t * tile_k, n0 + rank * half, &full[s],
                               (uint16_t)((1u << CLUSTER) - 1));
        }
    }
}
/* Consumer c (rows 64c..64c+63 of the tile): d += its rows of A times B over the piece's k
 * tiles, each stage released once its wgmma are done reading it. */
template <typename In, int CLUSTER, int INFLIGHT>
__device__ __forceinline__ void consume(float d[128], uint8_t *stages, uint64_t *full, uint64_t *empty, int c,
                                        int k0, int k1, int &u)
{
    for (int t = k0; t < k1; t++, u++) {
        int s = u % TGW_STAGES;
        mbar_wait(&full[s], (u / TGW_STAGES) & 1);
        uint8_t *sA = stages + s * TGW_STAGE_BYTES, *sB = sA + TGW_A_BYTES;
        wgmma_issue<In>(d, sA + c * 64 * TG_TILE_K_BYTES, sB);
        if (INFLIGHT) { /* tile t's wgmma keep running; wait for t-1's and release its stage */
            wgmma_wait<1>();
            if (t > k0) release_stage<CLUSTER>(&empty[(u - 1) % TGW_STAGES]);
        } else { /* wait for tile t's wgmma and release its stage */
            wgmma_wait<0>();
            release_stage<CLUSTER>(&empty[s]);
        }
    }
    if (INFLIGHT && k1 > k0) {
        wgmma_wait<0>();
        release_stage<CLUSTER>(&empty[(u - 1) % TGW_STAGES]);
    }
}
/* The ring's barriers: full[s] completes when stage s has landed (the producer's arrive and the
 * bytes), empty[s] when the consumers that read it (both, or version 12's one) in every block of
 * the cluster are done with it. */
template <int CLUSTER, int STAGES = TGW_STAGES, int READERS = 2>
__device__ __forceinline__ void ring_init(uint64_t *full, uint64_t *empty)
{
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], READERS * CLUSTER);
        }
        mbar_fence_init();
    }
    if (CLUSTER > 1)
        cluster_sync(); /* the peer's barriers exist before anyone signals them */
    else
        __syncthreads();
}
/* consumer c's shared memory for C on its way out (versions 9-11), after the ring */
__device__ __forceinline__ uint8_t *c_buffers(uint8_t *stages, int c)
{
    return stages + TGW_STAGES * TGW_STAGE_BYTES + c * 2 * TGW_C_CHUNK_BYTES;
}

/* Warp-specialised: warpgroup 0 produces, warpgroups 1 and 2 consume. The producer (one
 * thread) fills a ring of TGW_STAGES stages (produce, consume above). setmaxnreg moves
 * registers from the producer, which needs few, to the consumers' 128 accumulators.
 *   PERSISTENT 0: one tile per block; 1: gridDim.x blocks walk all tiles (tile_of's order).
 *   CLUSTER 2: blocks 2i and 2i+1 take the tiles above each other; each loads its own A and
 *   half of the common B, multicast into both, so each B byte leaves L2 once per pair.
 *   INFLIGHT 1: the next k tile's wgmma are issued before waiting for the last one's.
 *   TMA_STORE 1: C leaves through shared memory and mapC (store_tile_tma), else straight from
 *   the registers.
 *   order: the host's list of work items (version 10), or NULL (tile_of's order). */
template <typename In, int PERSISTENT, int CLUSTER, int INFLIGHT, int TMA_STORE>
__device__ __forceinline__ void ws_body(const CUtensorMap *mapA, const CUtensorMap *mapB, const CUtensorMap *mapC,
                                        void *C, int M, int N, int kp, int tiles_m, int tiles_n, float alpha,
                                        const uint32_t *order)
{
    extern __shared__ uint8_t smem_raw[];
    uint8_t *stages = aligned_smem(smem_raw);
    __shared__ uint64_t full[TGW_STAGES], empty[TGW_STAGES];
    const int tile_k = TG_TILE_K_BYTES / sizeof(In), k_tiles = kp / tile_k;
    const uint32_t rank = CLUSTER > 1 ? cluster_rank() : 0;
    ring_init<CLUSTER>(full, empty);

    int items = PERSISTENT ? tiles_m * tiles_n / CLUSTER : 1;
    int first = PERSISTENT ? blockIdx.x / CLUSTER : 0, step = PERSISTENT ? gridDim.x / CLUSTER : 1;
    int wg = threadIdx.x / TG_WG_THREADS, u = 0;
    if (wg == 0) {
        setmaxnreg_dec<40>(); /* the producer gives registers back */
        if (threadIdx.x == 0)
            for (int item = first; item < items; item += step) {
                int m0, n0;
                tile_origin<PERSISTENT, CLUSTER>(item, tiles_m, tiles_n, order, rank, &m0, &n0);
                produce<CLUSTER>(mapA, mapB, stages, full, empty, tile_k, m0, n0, 0, k_tiles, rank, u);
            }
    } else {
        setmaxnreg_inc<232>(); /* the consumers take them */
        int c = wg - 1;        /* rows 64c..64c+63 of the block's tile */
        for (int item = first; item < items; item += step) {
            int m0, n0;
            tile_origin<PERSISTENT, CLUSTER>(item, tiles_m, tiles_n, order, rank, &m0, &n0);
            float d[128] = {};
            consume<In, CLUSTER, INFLIGHT>(d, stages, full, empty, c, 0, k_tiles, u);
            scale_tile(d, alpha);
            if (TMA_STORE)
                store_tile_tma<typename tg_out<In>::type>(mapC, c_buffers(stages, c), c, m0 + c * 64, n0, d);
            else
                store_wgmma_tile((typename tg_out<In>::type *)C, M, N, m0 + c * 64, n0, d);
        }
        if (TMA_STORE && threadIdx.x % TG_WG_THREADS == 0) bulk_wait<0>(); /* C written before the block ends */
    }
    if (CLUSTER > 1) cluster_sync(); /* no block leaves while its peer may still signal or write it */
}

/* ---------------------------------------------------------------- versions 4-10, each a kernel
 * over the body above: PERSISTENT, CLUSTER, INFLIGHT, TMA_STORE (and 10's order) */
#define TGW_PARAMS                                                                                          \
    const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,                     \
        const __grid_constant__ CUtensorMap mapC, void *C, int M, int N, int kp, int tiles_m, int tiles_n, \
        float alpha, const uint32_t *order
#define TGW_ARGS &mapA, &mapB, &mapC, C, M, N, kp, tiles_m, tiles_n, alpha, order

/* version 4: a block per tile */
template <typename In> __global__ void __launch_bounds__(TGW_THREADS, 1) tensor_gemm_kernel4(TGW_PARAMS)
{
    ws_body<In, 0, 1, 0, 0>(TGW_ARGS);
}
/* version 5: persistent */
template <typename In> __global__ void __launch_bounds__(TGW_THREADS, 1) tensor_gemm_kernel5(TGW_PARAMS)
{
    ws_body<In, 1, 1, 0, 0>(TGW_ARGS);
}
/* version 6: persistent, clusters of two blocks sharing B by multicast */
template <typename In> __global__ void __launch_bounds__(TGW_THREADS, 1) tensor_gemm_kernel6(TGW_PARAMS)
{
    ws_body<In, 1, 2, 0, 0>(TGW_ARGS);
}
/* version 7: persistent, the next k tile's wgmma queued before the last one's wait */
template <typename In> __global__ void __launch_bounds__(TGW_THREADS, 1) tensor_gemm_kernel7(TGW_PARAMS)
{
    ws_body<In, 1, 1, 1, 0>(TGW_ARGS);
}
/* version 8: 6 and 7 together */
template <typename In> __global__ void __launch_bounds__(TGW_THREADS, 1) tensor_gemm_kernel8(TGW_PARAMS)
{
    ws_body<In, 1, 2, 1, 0>(TGW_ARGS);
}
/* version 9: persistent, C out through shared memory by TMA stores */
template <typename In> __global__ void __launch_bounds__(TGW_THREADS, 1) tensor_gemm_kernel9(TGW_PARAMS)
{
    ws_body<In, 1, 1, 0, 1>(TGW_ARGS);
}
/* version 10: 6 and 9 together (clusters with B multicast, C out by TMA stores), walking the
 * host's list of work items (a Hilbert curve) */
template <typename In> __global__ void __launch_bounds__(TGW_THREADS, 1) tensor_gemm_kernel10(TGW_PARAMS)
{
    ws_body<In, 1, 2, 0, 1>(TGW_ARGS);
}

/* ---------------------------------------------------------------- version 11: stream-K
 * Version 9's blocks deal whole tiles, a wave of gridDim.x at a time; when the count is not a
 * multiple of the grid the last wave is partly idle (8192^3: 2048 tiles on 132 SMs are 15.5 waves,
 * and the time is that of 16). Version 11 deals the whole waves as 9 does, and (when the last
 * wave is at most three quarters full) splits the tiles of the last wave along K: its (tile, k
 * tile) units are cut into gridDim.x equal runs, one a block. A tile cut in two or more runs is
 * a "part" in every run but the one holding its last
 * k tile, the "last" piece: a part's consumers leave their sums in global memory (partials, a
 * slot a block and consumer) and raise a flag; the last piece's consumers wait for the flags of
 * the runs before theirs, add those sums and store C. Each block walks its run from its end,
 * so its one part (the tile its run ends inside) comes first and its last piece last: the sums
 * it waits for were made at the start of the other runs. A block waits only for blocks with a
 * lower index, which never wait for it: no cycle, and every block of the grid is resident (one
 * a multiprocessor, at most as many as there are). */
struct sk_piece {
    int item, k0, k1;  /* tile item, its k tiles k0..k1-1 */
    long long start;   /* the piece's first unit */
};
/* The last piece of the units [lo, end): the part of end - 1's tile that lies in them */
__device__ __forceinline__ sk_piece last_piece(long long lo, long long end, int k_tiles)
{
    sk_piece p;
    p.item = (int)((end - 1) / k_tiles);
    long long tile0 = (long long)p.item * k_tiles;
    p.start = lo > tile0 ? lo : tile0;
    p.k0 = (int)(p.start - tile0), p.k1 = (int)(end - tile0);
    return p;
}
/* block b's run of the stream-K units: [run_start(b), run_start(b + 1)) */
__device__ __forceinline__ long long run_start(int b, int blocks, long long first, long long units)
{
    return first + (long long)b * units / blocks;
}
/* A consumer's 64 x 256 sums to or from its slot: thread t's accumulators 4i..4i+3 as the float4
 * at i x 128 + t, so that a warp moves 512 contiguous bytes at a time. The slot is read where
 * another multiprocessor wrote it: from L2 (__ldcg), not through this one's L1. */
__device__ __forceinline__ void put_partial(float *slot, const float d[128])
{
    float4 *s = reinterpret_cast<float4 *>(slot) + threadIdx.x % TG_WG_THREADS;
#pragma unroll
    for (int i = 0; i < 32; i++) s[i * TG_WG_THREADS] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
}
__device__ __forceinline__ void add_partial(float d[128], const float *slot)
{
    const float4 *s = reinterpret_cast<const float4 *>(slot) + threadIdx.x % TG_WG_THREADS;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        float4 v = __ldcg(s + i * TG_WG_THREADS);
        d[4 * i] += v.x, d[4 * i + 1] += v.y, d[4 * i + 2] += v.z, d[4 * i + 3] += v.w;
    }
}
/* The part's sums are out: each thread's stores made visible to the whole GPU, then (after all
 * 128 have) one thread raises the flag. */
__device__ __forceinline__ void raise_flag(int *flag, int c)
{
    __threadfence();
    consumer_sync(c);
    if (threadIdx.x % TG_WG_THREADS == 0) atomicExch(flag, 1);
}
/* Wait until the flag is raised, and lower it in the same step (0 again for the next launch);
 * the fence and the consumer's barrier order the 128 threads' reads of the sums after it. */
__device__ __forceinline__ void take_flag(int *flag, int c)
{
    if (threadIdx.x % TG_WG_THREADS == 0) {
        while (atomicCAS(flag, 1, 0) != 1) {
        }
        __threadfence();
    }
    consumer_sync(c);
}

#define SK_SLOT_FLOATS (64 * TGW_BN) /* one consumer's sums */

template <typename In>
__global__ void __launch_bounds__(TGW_THREADS, 1)
    tensor_gemm_kernel11(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
                         const __grid_constant__ CUtensorMap mapC, int kp, int tiles_m, int tiles_n, float alpha,
                         float *partials, int *flags)
{
    extern __shared__ uint8_t smem_raw[];
    uint8_t *stages = aligned_smem(smem_raw);
    __shared__ uint64_t full[TGW_STAGES], empty[TGW_STAGES];
    const int tile_k = TG_TILE_K_BYTES / sizeof(In), k_tiles = kp / tile_k;
    ring_init<1>(full, empty);

    const int b = blockIdx.x, blocks = gridDim.x, tiles = tiles_m * tiles_n;
    /* tiles dealt whole: all, or the full waves when the last is at most three quarters full.
     * Splitting costs each block a part's sums written and read back and an extra epilogue, about
     * a quarter of a tile's time on an H100 (measured: 4096^3, whose last wave is 88% full, lost
     * 3% split; 8192^3, 52% full, gained); a fuller last wave has less to gain than that. */
    const int rest = tiles % blocks, whole = 4 * rest <= 3 * blocks ? tiles - rest : tiles;
    const long long first = (long long)whole * k_tiles, units = (long long)(tiles - whole) * k_tiles;
    const long long lo = run_start(b, blocks, first, units), hi = run_start(b + 1, blocks, first, units);
    int wg = threadIdx.x / TG_WG_THREADS, u = 0, m0, n0;
    if (wg == 0) {
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            for (int item = b; item < whole; item += blocks) {
                tile_of<1>(item, tiles_m, tiles_n, &m0, &n0);
                produce<1>(&mapA, &mapB, stages, full, empty, tile_k, m0, n0, 0, k_tiles, 0, u);
            }
            for (long long end = hi; end > lo;) {
                sk_piece p = last_piece(lo, end, k_tiles);
                tile_of<1>(p.item, tiles_m, tiles_n, &m0, &n0);
                produce<1>(&mapA, &mapB, stages, full, empty, tile_k, m0, n0, p.k0, p.k1, 0, u);
                end = p.start;
            }
        }
    } else {
        setmaxnreg_inc<232>();
        int c = wg - 1;
        typedef typename tg_out<In>::type Out;
        for (int item = b; item < whole; item += blocks) {
            tile_of<1>(item, tiles_m, tiles_n, &m0, &n0);
            float d[128] = {};
            consume<In, 1, 0>(d, stages, full, empty, c, 0, k_tiles, u);
            scale_tile(d, alpha);
            store_tile_tma<Out>(&mapC, c_buffers(stages, c), c, m0 + c * 64, n0, d);
        }
        for (long long end = hi; end > lo;) {
            sk_piece p = last_piece(lo, end, k_tiles);
            tile_of<1>(p.item, tiles_m, tiles_n, &m0, &n0);
            float d[128] = {};
            consume<In, 1, 0>(d, stages, full, empty, c, p.k0, p.k1, u);
            if (p.k1 < k_tiles) { /* a part: its sums for the block that holds the tile's last k tile */
                put_partial(partials + (size_t)(2 * b + c) * SK_SLOT_FLOATS, d);
                raise_flag(&flags[2 * b + c], c);
            } else {
                /* the last piece: add the parts of the runs before this one that reach into the tile */
                long long tile0 = (long long)p.item * k_tiles;
                for (int q = b - 1; q >= 0 && run_start(q + 1, blocks, first, units) > tile0; q--) {
                    long long q_end = run_start(q + 1, blocks, first, units);
                    if (run_start(q, blocks, first, units) == q_end) continue; /* an empty run: no part */
                    take_flag(&flags[2 * q + c], c);
                    add_partial(d, partials + (size_t)(2 * q + c) * SK_SLOT_FLOATS);
                }
                scale_tile(d, alpha);
                store_tile_tma<Out>(&mapC, c_buffers(stages, c), c, m0 + c * 64, n0, d);
            }
            end = p.start;
        }
        if (threadIdx.x % TG_WG_THREADS == 0) bulk_wait<0>(); /* C written before the block ends */
    }
}

/* ---------------------------------------------------------------- version 12: ping-pong
 * In versions 4-11 both consumers work on one tile and finish it together: while they store C
 * (and their next tile's first wgmma wait for them) the tensor cores idle. In version 12 each
 * consumer has tiles of its own, 128 x 128 (two m64n128 wgmma a k step, 128 accumulators a
 * thread as before), the block's tiles taken in turn: consumer 0 the 1st, 3rd, ..., consumer 1
 * the 2nd, 4th, ... The producer loads them in that order into one ring of 32 KiB stages, each
 * stage used by one consumer (its empty barrier counts one arrival). A consumer starts a
 * tile's main loop only once the other has finished the main loop of the tile before it (a
 * named barrier each way), so the main loops take turns, and each consumer's epilogue runs
 * under the other's main loop. The turn also keeps a consumer from waiting on a stage's
 * barrier more than one phase ahead of it (a wait is on the phase's parity: two phases ahead
 * would look done). */
#define TGP_BM 128
#define TGP_BN 128
#define TGP_A_BYTES (TGP_BM * TG_TILE_K_BYTES)
#define TGP_B_BYTES (TGP_BN * TG_TILE_K_BYTES)
#define TGP_STAGE_BYTES (TGP_A_BYTES + TGP_B_BYTES) /* 32 KiB */
#define TGP_STAGES 6
#define TGP_SMEM (TGP_STAGES * TGP_STAGE_BYTES + 1024 + TGW_C_BYTES)

/* d (64 x 128, fp32) += A (64 x k) B (k x 128): bf16 k16, tf32 k8, fp8 e4m3 k32 */
template <typename In> __device__ __forceinline__ void wgmma_128(float d[64], uint64_t da, uint64_t db);
template <> __device__ __forceinline__ void wgmma_128<__nv_bfloat16>(float d[64], uint64_t da, uint64_t db)
{
    wgmma_m64n128k16_bf16_ss(d, da, db, 1);
}
template <> __device__ __forceinline__ void wgmma_128<float>(float d[64], uint64_t da, uint64_t db)
{
    wgmma_m64n128k8_tf32_ss(d, da, db);
}
template <> __device__ __forceinline__ void wgmma_128<uint8_t>(float d[64], uint64_t da, uint64_t db)
{
    wgmma_m64n128k32_e4m3_ss(d, da, db);
}

/* the turn of consumer c's main loop: wait for the other's last one; after its own, let the other go */
__device__ __forceinline__ void wait_turn(int c)
{
    if (c == 0)
        bar_sync<3, 256>();
    else
        bar_sync<4, 256>();
}
__device__ __forceinline__ void give_turn(int c)
{
    if (c == 0)
        bar_arrive<4, 256>();
    else
        bar_arrive<3, 256>();
}

template <typename In>
__global__ void __launch_bounds__(TGW_THREADS, 1)
    tensor_gemm_kernel12(const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
                         const __grid_constant__ CUtensorMap mapC, int kp, int tiles_m, int tiles_n, float alpha)
{
    extern __shared__ uint8_t smem_raw[];
    uint8_t *stages = aligned_smem(smem_raw);
    __shared__ uint64_t full[TGP_STAGES], empty[TGP_STAGES];
    const int tile_k = TG_TILE_K_BYTES / sizeof(In), k_tiles = kp / tile_k;
    ring_init<1, TGP_STAGES, 1>(full, empty); /* a stage's one reader: the consumer of its tile */

    const int tiles = tiles_m * tiles_n, step = gridDim.x;
    int wg = threadIdx.x / TG_WG_THREADS, m0, n0;
    if (wg == 0) {
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            int u = 0; /* stage uses: tile j of this block holds uses j k_tiles .. (j + 1) k_tiles - 1 */
            for (int item = blockIdx.x; item < tiles; item += step) {
                tile_of<1, TGP_BN>(item, tiles_m, tiles_n, &m0, &n0);
                for (int t = 0; t < k_tiles; t++, u++) {
                    int s = u % TGP_STAGES, use = u / TGP_STAGES;
                    if (use > 0) mbar_wait(&empty[s], (use - 1) & 1);
                    uint8_t *sA = stages + s * TGP_STAGE_BYTES, *sB = sA + TGP_A_BYTES;
                    mbar_arrive_expect(&full[s], TGP_STAGE_BYTES);
                    tma_load(sA, &mapA, t * tile_k, m0, &full[s]);
                    tma_load(sB, &mapB, t * tile_k, n0, &full[s]);
                }
            }
        }
    } else {
        setmaxnreg_inc<232>();
        int c = wg - 1;
        typedef typename tg_out<In>::type Out;
        uint8_t *c_buf = stages + TGP_STAGES * TGP_STAGE_BYTES + c * 2 * TGW_C_CHUNK_BYTES; /* after the ring */
        int j = c; /* this block's tile count: consumer c takes j = c, c + 2, ... */
        for (int item = blockIdx.x + c * step; item < tiles; item += 2 * step, j += 2) {
            tile_of<1, TGP_BN>(item, tiles_m, tiles_n, &m0, &n0);
            if (j > 0) wait_turn(c);
            float d[2][64] = {};
            for (int t = 0; t < k_tiles; t++) {
                int u = j * k_tiles + t, s = u % TGP_STAGES;
                mbar_wait(&full[s], (u / TGP_STAGES) & 1);
                const uint8_t *sA = stages + s * TGP_STAGE_BYTES, *sB = sA + TGP_A_BYTES;
                wgmma_fence();
#pragma unroll
                for (int ks = 0; ks < TG_TILE_K_BYTES / 32; ks++) {
                    uint64_t db = wgmma_desc(sB + 32 * ks);
                    wgmma_128<In>(d[0], wgmma_desc(sA + 32 * ks), db);
                    wgmma_128<In>(d[1], wgmma_desc(sA + 64 * TG_TILE_K_BYTES + 32 * ks), db);
                }
                wgmma_commit();
                /* one consumer multiplies at a time: waiting here for this stage's wgmma would
                 * leave the tensor cores idle until the next are issued, so keep them queued and
                 * wait for (and release) the stage before */
                wgmma_wait<1>();
                if (t > 0 && threadIdx.x % TG_WG_THREADS == 0) mbar_arrive(&empty[(u - 1) % TGP_STAGES]);
            }
            wgmma_wait<0>();
            if (k_tiles > 0 && threadIdx.x % TG_WG_THREADS == 0)
                mbar_arrive(&empty[(j * k_tiles + k_tiles - 1) % TGP_STAGES]);
            if (item + step < tiles) give_turn(c); /* the other consumer has the next tile */
#pragma unroll /* d[h] stays in registers only where h is known when compiling */
            for (int h = 0; h < 2; h++) {
                scale_tile64(d[h], alpha);
                store_tile_tma<Out, TGP_BN>(&mapC, c_buf, c, m0 + 64 * h, n0, d[h]);
            }
        }
        if (threadIdx.x % TG_WG_THREADS == 0) bulk_wait<0>();
    }
}

/* ================================================================ launchers */

/* the state bound to the buffers (tensor_gemm_prepare, once) */
typedef struct {
    CUtensorMap a64, a128, b256, b128; /* A in boxes of 64 or 128 rows, B of 256 or 128 */
    CUtensorMap c;                     /* versions 9-12: C in boxes of 64 rows x 128 bytes (make_map_c) */
    uint32_t *order;                   /* version 10: the work items of pairs of tiles in Hilbert order (device) */
    float *partials;                   /* version 11: a slot of 64 x 256 sums for each consumer of its blocks */
    int *flags;                        /* version 11: a slot's flag, 1 while its sums wait to be added */
    int sk_blocks;                     /* version 11: its grid at most (the slots' blocks: one a multiprocessor) */
} tg_maps;
#define TG_MAPS(g) ((const tg_maps *)(g)->prepared)
#define NO_ORDER ((const uint32_t *)NULL) /* versions 4-9: the kernel's own order */
/* launch<In>(g, its maps) for g's inputs: bf16, fp8's codes (bytes) or tf32's floats; each
 * version's entry point below (tensor_gemm_kernels.cu's launchers[]) picks its kernel this way */
#define FOR_TYPE(launch, g)                                                  \
    ((g)->type == TG_BF16  ? launch<__nv_bfloat16>((g), TG_MAPS(g))         \
     : (g)->type == TG_FP8 ? launch<uint8_t>((g), TG_MAPS(g))               \
                           : launch<float>((g), TG_MAPS(g)))

/* A (rows, kp) K-major matrix seen by the copy engine in boxes of box_rows x 128 bytes. */
static cudaError_t make_map(CUtensorMap *map, const void *base, tg_type type, int rows, int kp, int box_rows)
{
    size_t elem = (size_t)tensor_gemm_elem_bytes(type);
    cuuint64_t dims[2] = {(cuuint64_t)kp, (cuuint64_t)rows}; /* innermost (contiguous) first */
    cuuint64_t strides[1] = {(cuuint64_t)kp * elem};         /* bytes from one row to the next */
    cuuint32_t box[2] = {(cuuint32_t)(TG_TILE_K_BYTES / elem), (cuuint32_t)box_rows};
    CUtensorMapDataType t = type == TG_BF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                            : type == TG_FP8 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 /* the copy engine moves bytes */
                                             : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    return lb_tensor_map(map, t, 2, base, dims, strides, box, 1);
}

/* C (m, n) row-major, fp32 or (fp8's) bf16, as versions 9-12's stores see it: boxes of 64 rows x
 * 128 bytes (32 floats or 64 bf16, swizzled). The copy engine needs rows 16-byte aligned: n a
 * multiple of 4 (8 for bf16; else 9-12 are not offered: tensor_gemm_tma_store_unavailable). */
static int tma_store_n_multiple(tg_type type) { return 16 / tensor_gemm_out_bytes(type); }
/* versions 9-12 store C by TMA: N a multiple of tma_store_n_multiple */
static bool tma_store_fits(const tg_gemm *g) { return g->n % tma_store_n_multiple(g->type) == 0; }
static cudaError_t make_map_c(CUtensorMap *map, void *c, tg_type type, int m, int n)
{
    cuuint32_t elem = (cuuint32_t)tensor_gemm_out_bytes(type);
    cuuint64_t dims[2] = {(cuuint64_t)n, (cuuint64_t)m}, strides[1] = {(cuuint64_t)n * elem};
    cuuint32_t box[2] = {128 / elem, 64};
    return lb_tensor_map(map, elem == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, c,
                         dims, strides, box, 0);
}

/* Cell d (0 <= d < side^2) of the Hilbert curve over a side x side square (side a power of two):
 * its column *x and row *y. The curve visits the square's quarters in turn, each a smaller curve
 * turned so that one ends next to where the next begins; reading d two bits at a time from the
 * lowest, each step places the cell within a square of twice the size. */
static void hilbert_cell(int side, int d, int *x, int *y)
{
    *x = *y = 0;
    for (int s = 1; s < side; s *= 2, d /= 4) {
        int rx = 1 & (d / 2), ry = 1 & (d ^ rx);
        if (ry == 0) { /* the lower quarters: turned (and, on the right, mirrored) */
            if (rx == 1) *x = s - 1 - *x, *y = s - 1 - *y;
            int t = *x;
            *x = *y, *y = t;
        }
        *x += s * rx, *y += s * ry;
    }
}
/* Version 10's work items: the rows x cols grid of pairs of tiles (a pair: two 128 x 256 tiles
 * above each other), in the order a Hilbert curve over the smallest power-of-two square that holds
 * the grid visits them, each as row << 16 | col. The clusters take items first + k x clusters, so
 * the items in flight at once are a stretch of the curve: a compact patch of C, whose rows of A
 * and columns of B are read from L2 by several clusters. Made once, on the host. */
static cudaError_t make_order(uint32_t **order, int rows, int cols)
{
    int side = 1;
    while (side < rows || side < cols) side *= 2;
    size_t items = (size_t)rows * cols, n = 0;
    uint32_t *h = (uint32_t *)malloc(items * sizeof *h);
    if (!h) return cudaErrorMemoryAllocation;
    for (long d = 0; d < (long)side * side && n < items; d++) {
        int x, y;
        hilbert_cell(side, (int)d, &x, &y);
        if (y < rows && x < cols) h[n++] = (uint32_t)y << 16 | (uint32_t)x;
    }
    cudaError_t e = cudaMalloc((void **)order, items * sizeof *h);
    if (e == cudaSuccess) e = cudaMemcpy(*order, h, items * sizeof *h, cudaMemcpyHostToDevice);
    free(h);
    return e;
}

/* Version 11's slots for the sums of split tiles: two (one a consumer) for each block of a grid of
 * one block a multiprocessor (16.5 MiB on 132 SMs), and their flags, all lowered. */
static cudaError_t make_stream_k_slots(tg_maps *p)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&p->sk_blocks, cudaDevAttrMultiProcessorCount, dev);
    size_t slots = (size_t)2 * p->sk_blocks;
    if (e == cudaSuccess) e = cudaMalloc((void **)&p->partials, slots * SK_SLOT_FLOATS * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc((void **)&p->flags, slots * sizeof(int));
    if (e == cudaSuccess) e = cudaMemset(p->flags, 0, slots * sizeof(int));
    return e;
}

extern "C" cudaError_t tensor_gemm_hopper_prepare(tg_gemm *g)
{
    tg_maps *p = (tg_maps *)calloc(1, sizeof *p);
    if (!p) return cudaErrorMemoryAllocation;
    g->prepared = p;
    cudaError_t e = make_map(&p->a64, g->a, g->type, g->mp, g->kp, 64);
    if (e == cudaSuccess) e = make_map(&p->a128, g->a, g->type, g->mp, g->kp, 128);
    if (e == cudaSuccess) e = make_map(&p->b256, g->b, g->type, g->np, g->kp, 256);
    if (e == cudaSuccess) e = make_map(&p->b128, g->b, g->type, g->np, g->kp, 128);
    if (e == cudaSuccess && tma_store_fits(g)) e = make_map_c(&p->c, g->c, g->type, g->m, g->n);
    if (e == cudaSuccess) e = make_order(&p->order, g->mp / (2 * TGW_BM), g->np / TGW_BN);
    if (e == cudaSuccess) e = make_stream_k_slots(p);
    return e;
}
extern "C" void tensor_gemm_hopper_release(tg_gemm *g)
{
    tg_maps *p = (tg_maps *)g->prepared;
    if (!p) return;
    cudaFree(p->order); /* the release of what prepare made: its errors are no one's to handle */
    cudaFree(p->partials);
    cudaFree(p->flags);
}

extern "C" const char *tensor_gemm_hopper_unavailable(tg_type, int) { return lb_sm90a_unavailable(1); }
extern "C" const char *tensor_gemm_tma_store_unavailable(tg_type type, int n)
{
    const char *why = tensor_gemm_hopper_unavailable(type, n);
    if (why) return why;
    if (n % tma_store_n_multiple(type) == 0) return NULL;
    return type == TG_FP8 ? "TMA stores need C's rows 16-byte aligned: N a multiple of 8 (C is bf16)"
                          : "TMA stores need C's rows 16-byte aligned: N a multiple of 4";
}

/* a kernel's shared memory past the default 48 KiB: each launcher asks once, at its kernel's
 * first launch (a function's static is initialised once) */
template <typename K> static cudaError_t allow_smem(K kernel, int bytes)
{
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
static int sm_count(void)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return 0;
    return sms;
}
static int tile_k(tg_type type) { return TG_TILE_K_BYTES / tensor_gemm_elem_bytes(type); }

/* ---- version 3: a block per 64 x 256 tile of C */
#define TG3_SMEM ((TG3_BM + TG3_BN) * TG_TILE_K_BYTES + 1024)
template <typename In> static cudaError_t launch3(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel3<In>, TG3_SMEM);
    if (allowed != cudaSuccess) return allowed;
    dim3 grid(g->np / TG3_BN, g->mp / TG3_BM);
    tensor_gemm_kernel3<In><<<grid, TG_WG_THREADS, TG3_SMEM>>>(p->a64, p->b256, g->c, g->m, g->n, g->kp, g->alpha);
    return cudaGetLastError();
}
extern "C" cudaError_t tensor_gemm_launch3(const tg_gemm *g)
{
    if (!g->prepared) return cudaErrorInvalidValue; /* tensor_gemm_prepare was not called */
    return FOR_TYPE(launch3, g);
}
extern "C" tg_shape tensor_gemm_shape3(tg_type type)
{
    return (tg_shape){TG3_BM, TG3_BN, tile_k(type), TG_WG_THREADS, 1, (TG3_BM + TG3_BN) * TG_TILE_K_BYTES};
}

/* ---- version 4: a block per 128 x 256 tile */
template <typename In> static cudaError_t launch4(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel4<In>, TGW_SMEM);
    if (allowed != cudaSuccess) return allowed;
    int tiles_m = g->mp / TGW_BM, tiles_n = g->np / TGW_BN;
    tensor_gemm_kernel4<In><<<dim3(tiles_n, tiles_m), TGW_THREADS, TGW_SMEM>>>(p->a128, p->b256, p->c, g->c, g->m, g->n,
                                                                                g->kp, tiles_m, tiles_n, g->alpha, NO_ORDER);
    return cudaGetLastError();
}
extern "C" cudaError_t tensor_gemm_launch4(const tg_gemm *g)
{
    if (!g->prepared) return cudaErrorInvalidValue;
    return FOR_TYPE(launch4, g);
}
/* versions 4-8's work: a 128 x 256 tile, a producer and two consumers, the ring of stages */
extern "C" tg_shape tensor_gemm_shape_ws(tg_type type)
{
    return (tg_shape){TGW_BM, TGW_BN, tile_k(type), TGW_THREADS, TGW_STAGES, TGW_STAGES * TGW_STAGE_BYTES};
}

/* ---- version 5: one block an SM (or a tile), walking the tiles */
template <typename In> static cudaError_t launch5(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel5<In>, TGW_SMEM);
    static const int sms = sm_count();
    if (allowed != cudaSuccess) return allowed;
    int tiles_m = g->mp / TGW_BM, tiles_n = g->np / TGW_BN;
    tensor_gemm_kernel5<In><<<min(sms, tiles_m * tiles_n), TGW_THREADS, TGW_SMEM>>>(p->a128, p->b256, p->c, g->c, g->m,
                                                                                     g->n, g->kp, tiles_m, tiles_n, g->alpha, NO_ORDER);
    return cudaGetLastError();
}
extern "C" cudaError_t tensor_gemm_launch5(const tg_gemm *g)
{
    if (!g->prepared) return cudaErrorInvalidValue;
    return FOR_TYPE(launch5, g);
}

/* ---- versions 6 and 8: clusters of 2 blocks (2i, 2i+1) along x, as many pairs as can be
 * resident at once. Not simply SMs / 2: a cluster's blocks must sit in one GPC (a group of SMs),
 * and a GPC with an odd number of free SMs leaves one idle; a persistent grid larger than this
 * would run its last clusters after the others, in a second wave. */
static cudaLaunchConfig_t cluster_config(cudaLaunchAttribute *attr, int blocks, int smem)
{
    cudaLaunchConfig_t cfg = {};
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = 2, attr->val.clusterDim.y = 1, attr->val.clusterDim.z = 1;
    cfg.gridDim = dim3(blocks), cfg.blockDim = dim3(TGW_THREADS), cfg.dynamicSmemBytes = smem;
    cfg.attrs = attr, cfg.numAttrs = 1;
    return cfg;
}
template <typename K> static int resident_clusters(K kernel, int smem)
{
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = cluster_config(&attr, 2, smem);
    int clusters = 0;
    return cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) == cudaSuccess ? clusters : 0;
}
/* a pair works on the tiles above each other: tiles_m is even (mp is a multiple of 256) */
template <typename K>
static cudaError_t launch_pairs(K kernel, int clusters, int smem, const uint32_t *order, const tg_gemm *g,
                                const tg_maps *p)
{
    if (clusters < 1) return cudaErrorInvalidConfiguration;
    int tiles_m = g->mp / TGW_BM, tiles_n = g->np / TGW_BN;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = cluster_config(&attr, 2 * min(clusters, tiles_m * tiles_n / 2), smem);
    return cudaLaunchKernelEx(&cfg, kernel, p->a128, p->b128, p->c, g->c, g->m, g->n, g->kp, tiles_m, tiles_n,
                              g->alpha, order);
}
template <typename In> static cudaError_t launch6(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel6<In>, TGW_SMEM);
    static const int clusters = resident_clusters(tensor_gemm_kernel6<In>, TGW_SMEM); /* after the limit is raised */
    if (allowed != cudaSuccess) return allowed;
    return launch_pairs(tensor_gemm_kernel6<In>, clusters, TGW_SMEM, NO_ORDER, g, p);
}
extern "C" cudaError_t tensor_gemm_launch6(const tg_gemm *g)
{
    if (!g->prepared) return cudaErrorInvalidValue;
    return FOR_TYPE(launch6, g);
}

/* ---- version 7: as 5 */
template <typename In> static cudaError_t launch7(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel7<In>, TGW_SMEM);
    static const int sms = sm_count();
    if (allowed != cudaSuccess) return allowed;
    int tiles_m = g->mp / TGW_BM, tiles_n = g->np / TGW_BN;
    tensor_gemm_kernel7<In><<<min(sms, tiles_m * tiles_n), TGW_THREADS, TGW_SMEM>>>(p->a128, p->b256, p->c, g->c, g->m,
                                                                                     g->n, g->kp, tiles_m, tiles_n, g->alpha, NO_ORDER);
    return cudaGetLastError();
}
extern "C" cudaError_t tensor_gemm_launch7(const tg_gemm *g)
{
    if (!g->prepared) return cudaErrorInvalidValue;
    return FOR_TYPE(launch7, g);
}

/* ---- version 8: as 6 */
template <typename In> static cudaError_t launch8(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel8<In>, TGW_SMEM);
    static const int clusters = resident_clusters(tensor_gemm_kernel8<In>, TGW_SMEM);
    if (allowed != cudaSuccess) return allowed;
    return launch_pairs(tensor_gemm_kernel8<In>, clusters, TGW_SMEM, NO_ORDER, g, p);
}
extern "C" cudaError_t tensor_gemm_launch8(const tg_gemm *g)
{
    if (!g->prepared) return cudaErrorInvalidValue;
    return FOR_TYPE(launch8, g);
}

/* ---- version 9: as 5, with C's buffers after the ring (N a multiple of 4: the launcher's table
 * does not offer it otherwise) */
template <typename In> static cudaError_t launch9(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel9<In>, TGW_SMEM_TMA_STORE);
    static const int sms = sm_count();
    if (allowed != cudaSuccess) return allowed;
    int tiles_m = g->mp / TGW_BM, tiles_n = g->np / TGW_BN;
    tensor_gemm_kernel9<In><<<min(sms, tiles_m * tiles_n), TGW_THREADS, TGW_SMEM_TMA_STORE>>>(
        p->a128, p->b256, p->c, g->c, g->m, g->n, g->kp, tiles_m, tiles_n, g->alpha, NO_ORDER);
    return cudaGetLastError();
}
extern "C" cudaError_t tensor_gemm_launch9(const tg_gemm *g)
{
    if (!g->prepared || !tma_store_fits(g)) return cudaErrorInvalidValue;
    return FOR_TYPE(launch9, g);
}
extern "C" tg_shape tensor_gemm_shape9(tg_type type)
{
    tg_shape s = tensor_gemm_shape_ws(type);
    s.smem_bytes += TGW_C_BYTES;
    return s;
}

/* ---- version 10: as 6, with 9's shared memory for C, walking make_order's list (N a multiple
 * of 4, as 9) */
template <typename In> static cudaError_t launch10(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel10<In>, TGW_SMEM_TMA_STORE);
    static const int clusters = resident_clusters(tensor_gemm_kernel10<In>, TGW_SMEM_TMA_STORE);
    if (allowed != cudaSuccess) return allowed;
    return launch_pairs(tensor_gemm_kernel10<In>, clusters, TGW_SMEM_TMA_STORE, p->order, g, p);
}
extern "C" cudaError_t tensor_gemm_launch10(const tg_gemm *g)
{
    if (!g->prepared || !tma_store_fits(g)) return cudaErrorInvalidValue;
    return FOR_TYPE(launch10, g);
}

/* ---- version 11: as 9 (a block a multiprocessor, at most one a tile), the last wave's tiles split
 * along K (N a multiple of 4, as 9) */
template <typename In> static cudaError_t launch11(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel11<In>, TGW_SMEM_TMA_STORE);
    if (allowed != cudaSuccess) return allowed;
    int tiles_m = g->mp / TGW_BM, tiles_n = g->np / TGW_BN;
    tensor_gemm_kernel11<In><<<min(p->sk_blocks, tiles_m * tiles_n), TGW_THREADS, TGW_SMEM_TMA_STORE>>>(
        p->a128, p->b256, p->c, g->kp, tiles_m, tiles_n, g->alpha, p->partials, p->flags);
    return cudaGetLastError();
}
extern "C" cudaError_t tensor_gemm_launch11(const tg_gemm *g)
{
    if (!g->prepared || !tma_store_fits(g)) return cudaErrorInvalidValue;
    return FOR_TYPE(launch11, g);
}

/* ---- version 12: a block a multiprocessor, at most one per two tiles of 128 x 128 (N a multiple
 * of 4, as 9) */
template <typename In> static cudaError_t launch12(const tg_gemm *g, const tg_maps *p)
{
    static const cudaError_t allowed = allow_smem(tensor_gemm_kernel12<In>, TGP_SMEM);
    static const int sms = sm_count();
    if (allowed != cudaSuccess) return allowed;
    int tiles_m = g->mp / TGP_BM, tiles_n = g->np / TGP_BN;
    tensor_gemm_kernel12<In><<<min(sms, (tiles_m * tiles_n + 1) / 2), TGW_THREADS, TGP_SMEM>>>(
        p->a128, p->b128, p->c, g->kp, tiles_m, tiles_n, g->alpha);
    return cudaGetLastError();
}
extern "C" cudaError_t tensor_gemm_launch12(const tg_gemm *g)
{
    if (!g->prepared || !tma_store_fits(g)) return cudaErrorInvalidValue;
    return FOR_TYPE(launch12, g);
}
extern "C" tg_shape tensor_gemm_shape12(tg_type type)
{
    tg_shape s = tensor_gemm_shape_ws(type);
    s.tile_n = TGP_BN, s.stages = TGP_STAGES, s.smem_bytes = TGP_STAGES * TGP_STAGE_BYTES + TGW_C_BYTES;
    return s;
}
