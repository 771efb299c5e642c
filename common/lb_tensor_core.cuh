/* lb_tensor_core.cuh - the inline-PTX wrappers of the tensor-core kernels (ch10's tensor_gemm,
 * ch11's attention): each is one PTX instruction with its operands spelled out, named after it,
 * and a comment on what it moves where. Include it from a .cu file.
 *
 *   sm_80 and newer: cp.async (global -> shared without the registers), ldmatrix (8x8 tiles of
 *   16-bit elements from shared memory into the per-lane layout of mma.sync), mma.sync m16n8k16
 *   on bf16 with fp32 accumulators
 *   sm_90: mbarrier (arrivals and transaction bytes), TMA (the copy engine: a box of a tensor
 *   map into shared memory), clusters
 *   sm_90a (Hopper's own target): wgmma's descriptors (lb_tensor_core_plain.cuh), fence, commit and
 *   wait, and the wgmma instructions, one function per shape the book uses
 *   any GPU: ex2.approx (2^x on the special function unit)
 *   host: the driver's tensor-map encoder, looked up through the runtime
 * Every inline PTX of the book's kernels (ch04's matmul, ch09's fused GEMM, ch10's tensor_gemm,
 * ch11's attention) is here: tests/emu has a twin of this header, the same declarations with
 * emulated bodies, which its build finds first, so the kernels files compile on CPU threads as
 * they are written. A wrapper with no twin there fails that build.
 * Each is defined for every target and assembled only where a kernel uses it: a kernel compiled
 * for an older GPU than its instructions need fails in ptxas, so such a kernel's body sits under
 * #if LB_SM80 or LB_SM90A (below). The cp.async wrappers stop the kernel below sm_80 instead
 * (__trap), so that matmul's versions built into every target compile there and never run.
 */
#ifndef LB_TENSOR_CORE_CUH
#define LB_TENSOR_CORE_CUH
#include <cuda.h> /* CUtensorMap (a type only: nothing links libcuda) */
#include <stdint.h>

/* device code for sm_80 and newer (cp.async, ldmatrix, mma.sync), and for sm_90a (wgmma,
 * setmaxnreg): the kernels' bodies that need them sit under #if LB_SM80 / #if LB_SM90A */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define LB_SM80 1
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define LB_SM90A 1
#endif
/* the cp.async wrappers' instruction, or a stop below sm_80 (no cp.async there) */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define LB_CP_ASYNC(...) __trap()
#else
#define LB_CP_ASYNC(...) asm volatile(__VA_ARGS__)
#endif

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* ================================================================ any GPU: the special function unit */
/* 2^x, subnormal results flushed to 0 (exp2f would add a scaling around it for them: 2 FMULs and
 * a compare an exponential) */
__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* ================================================================ sm_80: cp.async, ldmatrix, mma.sync */
/* 16 bytes from global to shared memory, asynchronously (cp.async.cg: cached in L2 only) */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    LB_CP_ASYNC("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(gmem));
}
/* The same, or 16 zero bytes when !valid (the source size 0: nothing is read, so gmem may point
 * past the end of the data; it must still be a valid address form) */
__device__ __forceinline__ void cp_async16_or_zero(void *smem, const void *gmem, bool valid)
{
    LB_CP_ASYNC("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
                "r"(valid ? 16 : 0));
}
/* 16 bytes of which the first src_bytes are read and the rest are zeros (out-of-range elements
 * become 0 without a branch); and 4 bytes the same way (cp.async.ca: cached in L1 too) */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, int src_bytes)
{
    LB_CP_ASYNC("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
                "r"(src_bytes));
}
__device__ __forceinline__ void cp_async4(void *smem, const void *gmem, int src_bytes)
{
    LB_CP_ASYNC("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
                "r"(src_bytes));
}
/* close the group of this thread's cp.async issued since the last commit */
__device__ __forceinline__ void cp_async_commit() { LB_CP_ASYNC("cp.async.commit_group;\n"); }
/* wait until at most `pending` of this thread's groups are still in flight */
template <int pending> __device__ __forceinline__ void cp_async_wait()
{
    LB_CP_ASYNC("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
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

/* TF32 (sm_80 and newer): a float rounded to 10 bits of fraction (to nearest, ties away), in a
 * register as mma.sync's tf32 operands want it */
__device__ __forceinline__ uint32_t to_tf32(float x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}
/* d += a b for one 16x8 tile, k = 8, tf32: a is 4 registers, b 2, d 4 floats (c0..c3). Lane t
 * (g = t/4, q = t%4) holds a at (g, q), (g + 8, q), (g, q + 4), (g + 8, q + 4); b at (q, g),
 * (q + 4, g); d at (g, 2q), (g, 2q + 1), (g + 8, 2q), (g + 8, 2q + 1). */
__device__ __forceinline__ void mma_tf32(float *c0, float *c1, float *c2, float *c3, const uint32_t *a,
                                         const uint32_t *b)
{
#if LB_SM80
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(*c0), "+f"(*c1), "+f"(*c2), "+f"(*c3)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap(); /* not built for this GPU: the launcher refuses TF32 below sm_80 */
#endif
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
/* A box of a four-dimensional map at (x, y, z, w): a head's rows where the heads are not planes of
 * their own (ch11's attention on token rows: (d, s, h, b) with each dimension's own stride). */
__device__ __forceinline__ void tma_load_4d(void *dst, const CUtensorMap *map, int x, int y, int z, int w, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(smem_addr(dst)),
                 "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(smem_addr(bar))
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
/* The same from a box of fp32 in shared memory, added into the tensor at (x, y, z) (the copy
 * engine's reduction in L2: many blocks may add into one place, as atomics would) */
__device__ __forceinline__ void tma_reduce_add_3d(const CUtensorMap *map, const void *src, int x, int y, int z)
{
    asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(map),
                 "r"(x), "r"(y), "r"(z), "r"(smem_addr(src))
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

/* ---- the wgmma instructions, one per shape the book uses: d (64 x N, fp32, in the 128 threads of
 * a warpgroup, N/2 registers each) = or += A (64 x k) B (k x N). Each thread holds d[4j + e] at
 * row 16w + g (+ 8 when e >= 2), column 8j + 2q + (e & 1), for warp w of the group and lane 4g + q.
 *   _ss: A and B from shared-memory descriptors, both K-major (K contiguous);
 *   _ss_tt: both from descriptors, both MN-major (read transposed);
 *   _rs_bt: A from registers (four a thread, the layout of mma.sync's A), B from a descriptor
 *   read transposed (MN-major: N contiguous, as V in attention).
 * accumulate 0 overwrites d (a tile's first k step); the forms without it always add. */
#define LB_WG_R32                                                                                               \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
    "%23, %24, %25, %26, %27, %28, %29, %30, %31"
#define LB_WG_R64                                                                                               \
    LB_WG_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, "   \
              "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define LB_WG_R128                                                                                      \
    LB_WG_R64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "      \
              "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "        \
              "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, "   \
              "%111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, " \
              "%126, %127"
#define LB_WG_D8(i)                                                                                             \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
#define LB_WG_D32 LB_WG_D8(0), LB_WG_D8(8), LB_WG_D8(16), LB_WG_D8(24)
#define LB_WG_D64 LB_WG_D32, LB_WG_D8(32), LB_WG_D8(40), LB_WG_D8(48), LB_WG_D8(56)
#define LB_WG_D128 \
    LB_WG_D64, LB_WG_D8(64), LB_WG_D8(72), LB_WG_D8(80), LB_WG_D8(88), LB_WG_D8(96), LB_WG_D8(104), LB_WG_D8(112), LB_WG_D8(120)

/* bf16, 64 x 128 x 16 (attention's S = Q K^T) */
__device__ __forceinline__ void wgmma_m64n128k16_bf16_ss(float d[64], uint64_t da, uint64_t db, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" LB_WG_R64 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : LB_WG_D64
                 : "l"(da), "l"(db), "r"(accumulate));
}
/* bf16, 64 x 64 x 16 (attention's backward: S^T = K Q^T and dP^T = V dO^T on a tile of 64 queries) */
__device__ __forceinline__ void wgmma_m64n64k16_bf16_ss(float d[32], uint64_t da, uint64_t db, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" LB_WG_R32 "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : LB_WG_D32
                 : "l"(da), "l"(db), "r"(accumulate));
}
/* bf16, 64 x N x 16 with both operands read transposed (MN-major: A's M and B's N contiguous),
 * N = 64 and 128 (attention's backward: dQ = dS K from dS^T and K as stored) */
__device__ __forceinline__ void wgmma_m64n64k16_bf16_ss_tt(float d[32], uint64_t da, uint64_t db, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" LB_WG_R32 "}, %32, %33, p, 1, 1, 1, 1;\n}\n"
                 : LB_WG_D32
                 : "l"(da), "l"(db), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_m64n128k16_bf16_ss_tt(float d[64], uint64_t da, uint64_t db, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" LB_WG_R64 "}, %64, %65, p, 1, 1, 1, 1;\n}\n"
                 : LB_WG_D64
                 : "l"(da), "l"(db), "r"(accumulate));
}
/* bf16, 64 x 256 x 16 (tensor_gemm's tile) */
__device__ __forceinline__ void wgmma_m64n256k16_bf16_ss(float d[128], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" LB_WG_R128 "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : LB_WG_D128
                 : "l"(da), "l"(db), "r"(1));
}
/* tf32, 64 x 256 x 8 (tensor_gemm's tile on floats; tf32 has no transpose flags: K-major only) */
__device__ __forceinline__ void wgmma_m64n256k8_tf32_ss(float d[128], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {" LB_WG_R128 "}, %128, %129, p, 1, 1;\n}\n"
                 : LB_WG_D128
                 : "l"(da), "l"(db), "r"(1));
}
/* fp8 e4m3, 64 x 256 x 32 (tensor_gemm's tile on 1-byte inputs: 32 bytes of K, as the two above;
 * 8-bit inputs have no transpose flags: K-major only) */
__device__ __forceinline__ void wgmma_m64n256k32_e4m3_ss(float d[128], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {" LB_WG_R128 "}, %128, %129, p, 1, 1;\n}\n"
                 : LB_WG_D128
                 : "l"(da), "l"(db), "r"(1));
}
/* tf32, 64 x 128 x 8, and fp8 e4m3, 64 x 128 x 32 (tensor_gemm's ping-pong tile of 128 columns;
 * K-major only, as the 256-column forms) */
__device__ __forceinline__ void wgmma_m64n128k8_tf32_ss(float d[64], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {" LB_WG_R64 "}, %64, %65, p, 1, 1;\n}\n"
                 : LB_WG_D64
                 : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_m64n128k32_e4m3_ss(float d[64], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" LB_WG_R64 "}, %64, %65, p, 1, 1;\n}\n"
                 : LB_WG_D64
                 : "l"(da), "l"(db), "r"(1));
}
/* fp8 e5m2 (5 exponent bits, 2 of mantissa: more range, less precision, the format gradients
 * use), the same shape; the codes of one format read as the other are wrong values, which is what
 * tensor_gemm's mutant "reads the e4m3 codes as e5m2" plants */
__device__ __forceinline__ void wgmma_m64n256k32_e5m2_ss(float d[128], uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2 {" LB_WG_R128 "}, %128, %129, p, 1, 1;\n}\n"
                 : LB_WG_D128
                 : "l"(da), "l"(db), "r"(1));
}
/* bf16, 64 x 128 x 16 and 64 x 64 x 16, A from registers, B transposed (attention's O += P V) */
__device__ __forceinline__ void wgmma_m64n128k16_bf16_rs_bt(float d[64], const uint32_t a[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" LB_WG_R64
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : LB_WG_D64
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_m64n64k16_bf16_rs_bt(float d[32], const uint32_t a[4], uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" LB_WG_R32
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : LB_WG_D32
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
/* After a wgmma wait: the compiler may not move reads or writes of these N registers across this
 * point (an empty asm that "changes" each), so nothing touches them while the tensor cores may */
template <int N> __device__ __forceinline__ void wgmma_settle(float *r)
{
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(r[i])::"memory");
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

/* wgmma_desc, wgmma_desc_mn, lb_tensor_map: plain C++ over smem_addr and the encoder above */
#include "lb_tensor_core_plain.cuh"

#endif
