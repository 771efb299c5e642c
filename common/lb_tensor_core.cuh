/* lb_tensor_core.cuh - the inline-PTX wrappers of the tensor-core kernels (ch10's tensor_gemm,
 * ch11's attention): each is one PTX instruction with its operands spelled out, named after it,
 * and a comment on what it moves where. Include it from a .cu file.
 *
 *   sm_80 and newer: cp.async (global -> shared without the registers), ldmatrix (8x8 tiles of
 *   16-bit elements from shared memory into the per-lane layout of mma.sync), mma.sync m16n8k16
 *   on bf16 with fp32 accumulators
 *   sm_90: mbarrier (arrivals and transaction bytes), TMA (the copy engine: a box of a tensor
 *   map into shared memory), clusters
 *   sm_90a (Hopper's own target): wgmma's descriptors, fence, commit and wait; the wgmma
 *   instructions themselves stay with the kernels, whose shapes they name
 *   host: the driver's tensor-map encoder, looked up through the runtime
 * Each is defined for every target and assembled only where a kernel uses it: a kernel compiled
 * for an older GPU than its instructions need fails in ptxas, so such a kernel's body sits under
 * an #if on __CUDA_ARCH__ (or __CUDA_ARCH_FEAT_SM90_ALL for sm_90a).
 */
#ifndef LB_TENSOR_CORE_CUH
#define LB_TENSOR_CORE_CUH
#include <cuda.h> /* CUtensorMap (a type only: nothing links libcuda) */
#include <stdint.h>

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* ================================================================ sm_80: cp.async, ldmatrix, mma.sync */
/* 16 bytes from global to shared memory, asynchronously (cp.async.cg: cached in L2 only) */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
/* The same, or 16 zero bytes when !valid (the source size 0: nothing is read, so gmem may point
 * past the end of the data; it must still be a valid address form) */
__device__ __forceinline__ void cp_async16_or_zero(void *smem, const void *gmem, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
                 "r"(valid ? 16 : 0));
}
/* close the group of this thread's cp.async issued since the last commit */
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
/* wait until at most `pending` of this thread's groups are still in flight */
template <int pending> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

/* Four 8x8 bf16 matrices from shared memory, one per group of 8 lanes' row addresses: lane t
 * receives row t/4, columns 2(t%4) and 2(t%4)+1 of each, which is exactly the per-lane layout
 * of mma.sync's A and B fragments. */
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *smem)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(smem)));
}
/* The same, each matrix transposed on the way: lane t receives column t/4, rows 2(t%4) and
 * 2(t%4)+1 of each. For a B operand stored with N contiguous (V in attention: keys x d). */
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *smem)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(smem)));
}

/* d += a b for one 16x8 tile, k = 16: a is 4 registers (8 bf16), b 2 (4 bf16), d 4 floats.
 * Lane t holds d for row t/4 (d0, d1) and row t/4 + 8 (d2, d3), columns 2(t%4) and +1; a0 is
 * row t/4, columns 2(t%4), +1; a1 row t/4 + 8; a2 and a3 the same rows 8 columns further. */
__device__ __forceinline__ void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* ================================================================ sm_90: mbarrier, TMA, clusters */
/* ---- mbarrier: a 64-bit shared-memory object counting arrivals and transaction bytes. A phase
 * completes when the expected arrivals have arrived and the expected bytes have landed; waiting
 * names the parity of the phase that must complete (0, 1, 0, ... for the 1st, 2nd, 3rd use). */
__device__ __forceinline__ void mbar_init(uint64_t *bar, int arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(arrivals));
}
/* after initialising barriers: make them visible to the copy engine (and the cluster) */
__device__ __forceinline__ void mbar_fence_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/* One arrival that also announces `bytes` still to come (the TMA copies it starts next). */
__device__ __forceinline__ void mbar_arrive_expect(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
/* Arrive on the barrier at the same place in block `rank` of this cluster (mapa translates
 * the address into that block's shared memory). The arrival only says "my wgmma are done
 * reading this stage" and publishes no data, so it keeps the default ordering: the first
 * version asked for .release.cluster, a fence that waits for all of the thread's earlier
 * stores (the last tile's C, too) before every arrival, and ran at 0.6x of version 5. */
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t *bar, uint32_t rank)
{
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem_addr(bar)),
                 "r"(rank)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, int parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}

/* ---- TMA: one thread asks the copy engine for a whole box of the tensor map (box rows x 128
 * bytes at column k, row `row`); it lands swizzled in shared memory and counts its bytes on bar. */
__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, int k, int row, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_addr(dst)),
                 "l"(map), "r"(k), "r"(row), "r"(smem_addr(bar))
                 : "memory");
}
/* A box of a three-dimensional map, at coordinates (x, y, z), innermost first. Rows of the box
 * past the tensor's end arrive as zeros (and count their bytes all the same). */
__device__ __forceinline__ void tma_load_3d(void *dst, const CUtensorMap *map, int x, int y, int z, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(smem_addr(dst)),
                 "l"(map), "r"(x), "r"(y), "r"(z), "r"(smem_addr(bar))
                 : "memory");
}
/* The same box written into every block of the cluster named in mask (bit i: rank i), at the
 * same shared-memory offset, each completing on its own barrier at bar's offset. */
__device__ __forceinline__ void tma_load_multicast(void *dst, const CUtensorMap *map, int k, int row, uint64_t *bar,
                                                   uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_addr(dst)),
                 "l"(map), "r"(k), "r"(row), "r"(smem_addr(bar)), "h"(mask)
                 : "memory");
}

/* ---- TMA stores: a box of shared memory (written in the map's swizzle) to the tensor at (x, y);
 * the parts outside the tensor are not written. The stores a thread starts since its last
 * commit form a bulk group; it waits for its groups by count, as cp.async's. */
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, const void *src, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(map), "r"(x),
                 "r"(y), "r"(smem_addr(src))
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/* until at most `pending` of this thread's groups still read their shared memory (it may be
 * written again) */
template <int pending> __device__ __forceinline__ void bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(pending) : "memory");
}
/* until at most `pending` of them are still writing global memory */
template <int pending> __device__ __forceinline__ void bulk_wait()
{
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(pending) : "memory");
}
/* the threads' ordinary writes to shared memory made visible to the copy engine (the "async
 * proxy"), before a TMA store reads them */
__device__ __forceinline__ void fence_proxy_async_shared()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* ---- named barriers (0 is __syncthreads'): `threads` threads (whole warps) meet at barrier
 * `id`; bar_arrive counts the warp in without waiting. The numbers are immediates: a barrier
 * number in a register makes ptxas reserve all 16. */
template <int id, int threads> __device__ __forceinline__ void bar_sync()
{
    asm volatile("bar.sync %0, %1;\n" ::"n"(id), "n"(threads) : "memory");
}
template <int id, int threads> __device__ __forceinline__ void bar_arrive()
{
    asm volatile("bar.arrive %0, %1;\n" ::"n"(id), "n"(threads) : "memory");
}

/* Dynamic shared memory, rounded up to the 1024-byte alignment the 128-byte swizzle needs (the
 * launch asks for 1 KiB more than the tiles take). */
__device__ __forceinline__ uint8_t *aligned_smem(uint8_t *smem)
{
    uint32_t a = smem_addr(smem);
    return smem + (((a + 1023) & ~1023u) - a);
}

__device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/* ================================================================ sm_90a: wgmma's operands and groups */
/* ---- wgmma operands: a 64-bit descriptor of a tile in shared memory with the 128-byte
 * swizzle. Rows are 128 bytes; 8 rows (1024 bytes, one swizzle atom) repeat with stride 1024.
 *   bits  0-13  start address / 16
 *   bits 16-29  leading byte offset / 16
 *   bits 32-45  stride byte offset / 16
 *   bits 62-63  swizzle mode: 1 = 128-byte
 * K-major (K contiguous, the layout of A and of B untransposed): the stride byte offset is 1024,
 * from one 8-row group to the next, and the leading one is unused (1 by convention). Stepping k
 * inside the tile adds 32 bytes to the start: the hardware applies the swizzle to the address
 * it computes, so a tile must start 1024-byte aligned. */
__device__ __forceinline__ uint64_t wgmma_desc(const void *smem)
{
    uint64_t d = (uint64_t)((smem_addr(smem) & 0x3FFFF) >> 4);
    d |= (uint64_t)1 << 16;
    d |= (uint64_t)(1024 >> 4) << 32;
    d |= (uint64_t)1 << 62;
    return d;
}
/* MN-major (N contiguous: a B operand read transposed, as V in attention, rows of 128 bytes =
 * 64 bf16 along N, one row per k): 8 rows of k (1024 bytes) repeat with stride 1024 along K (the
 * stride byte offset), and the next 64 columns of N lie `n_chunk_bytes` further (the leading
 * byte offset). A k16 step is two 8-row groups: 2048 bytes further. */
__device__ __forceinline__ uint64_t wgmma_desc_mn(const void *smem, uint32_t n_chunk_bytes)
{
    uint64_t d = (uint64_t)((smem_addr(smem) & 0x3FFFF) >> 4);
    d |= (uint64_t)((n_chunk_bytes >> 4) & 0x3FFF) << 16;
    d |= (uint64_t)(1024 >> 4) << 32;
    d |= (uint64_t)1 << 62;
    return d;
}

/* setmaxnreg (sm_90a): a warpgroup gives back registers it does not need (a producer) or takes
 * them (consumers with large accumulators); every thread of the warpgroup executes it */
template <int regs> __device__ __forceinline__ void setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(regs));
}
template <int regs> __device__ __forceinline__ void setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(regs));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/* Wait until at most `pending` groups still run: the others' tiles are no longer read. */
template <int pending> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}

/* ================================================================ host: the tensor maps' encoder */

/* cuTensorMapEncodeTiled is a driver function: reached through the runtime's entry-point lookup,
 * so a program needs no -lcuda and starts (and says "no GPU") without libcuda. */
typedef CUresult (*lb_encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                       const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                       CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                       CUtensorMapFloatOOBfill);
static inline cudaError_t lb_tensor_map_encoder(lb_encode_tiled_fn *encode)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult found;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    if (e == cudaSuccess && found != cudaDriverEntryPointSuccess) e = cudaErrorSymbolNotFound;
    *encode = (lb_encode_tiled_fn)fn;
    return e;
}

#endif
