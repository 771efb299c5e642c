/* emu_cuda.h - CUDA kernels on CPU threads, to check their logic where there is no GPU: the
 * language and the runtime (threads, blocks, barriers, shuffles, atomics, launches).
 *
 * A chapter's kernels file compiles here as it is written, as C++ with this header included
 * first (tests/Makefile: g++ -include emu_cuda.h). The headers it includes that touch the
 * hardware have twins in tests/emu/include, found before the real ones: lb_tensor_core.cuh (every
 * inline PTX of the book: cp.async, ldmatrix, mma.sync, mbarrier, TMA, wgmma), cuda_bf16.h,
 * mma.h (wmma), cuda.h (tensor maps) and labbook.h; a wrapper with no twin fails to compile.
 * emu_transform.py rewrites only the launch syntax (kernel<<<grid, block, smem>>>(args)) and the
 * declaration of dynamic shared memory. Every CUDA thread becomes a std::thread, the blocks of a
 * launch run one after another, and what the GPU does in hardware is written out as plain loops:
 *   - __syncthreads, named barriers (bar.sync / bar.arrive): std::barrier;
 *   - warp-wide instructions (shuffles, ldmatrix, mma.sync) and warpgroup-wide ones (wgmma): each
 *     lane leaves its operands in the block's scratch, the lanes meet at a barrier, and each lane
 *     computes its own results from everyone's operands;
 *   - wmma: every lane keeps the whole fragment (its real layout is undocumented);
 *   - asynchronous results land only at their wait, as late as the GPU may deliver them, and
 *     their destination reads as NaN until then: cp.async copies at the issuing thread's
 *     cp.async.wait_group, TMA loads at the first mbarrier wait on their barrier (the phase
 *     completes only then), wgmma's accumulators at wgmma.wait_group (computed then, from the
 *     shared memory as it is then); a missing wait or a buffer released too early shows as NaN or
 *     wrong data. mbarriers keep their phase, arrivals and transaction bytes as the GPU does, so a
 *     wrong parity or a missing arrival hangs here as it would there (a wait gives up, with a
 *     message);
 *   - wgmma reads its operands through the descriptors' addresses, strides and the 128-byte
 *     swizzle, as the PTX manual describes them (lb_tensor_core_plain.cuh: the book's own builders).
 * The drivers give every input operand a guard of NaN after its end (emu_guarded, as the programs'
 * lb_malloc_guarded), so a read past an operand fails.
 * Shared memory that no thread wrote reads as NaN. Clusters are not emulated. This checks the
 * kernels' index arithmetic, fragment layouts, barrier protocol and masks against that reading of
 * the hardware; it cannot see races that need the GPU's timing, nor the speed. The GPU's own run
 * is the real check.
 */
#pragma once
#include <cuda_runtime_api.h> /* dim3, float4, cudaError_t: the toolkit's host headers */
#include <vector_functions.h> /* make_float4, ... */

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>
using std::max;
using std::min;

/* the CUDA keywords: nothing on the CPU; __shared__ is `static` (one block runs at a time, so a
 * function's statics are its block's shared memory) */
#undef __shared__
#define __shared__ static
#undef __host__
#undef __device__
#undef __global__
#undef __forceinline__
#undef __launch_bounds__
#undef __grid_constant__
#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__

/* ================================================================ threads, blocks, barriers */

struct emu_block {
    uint8_t *smem;                                         /* dynamic shared memory, 1024-aligned */
    std::unique_ptr<std::barrier<>> block;                 /* __syncthreads */
    std::vector<std::unique_ptr<std::barrier<>>> warp, wg; /* 32 and 128 threads */
    std::unique_ptr<std::barrier<>> named[16];             /* bar.sync / bar.arrive ids, made at first use */
    std::mutex named_made;
    uint32_t xch[32][32][8];  /* a warp's lanes' operands */
    const void *rows[32][32]; /* a warp's ldmatrix row addresses */
    uint32_t wg_a[8][128][4]; /* a warpgroup's register A of wgmma */
};
extern emu_block *emu_blk;
extern thread_local uint3 threadIdx, blockIdx;
extern thread_local int emu_tid; /* the thread's place in its block, x fastest (warps are its 32s) */
extern dim3 blockDim, gridDim;

/* A driver's last word: its exit status (1 if anything failed), after a line on what the
 * emulation cannot check: the GPU's timing (races, the order of asynchronous copies beyond their
 * waits) and the speed, which the GPU's make test and make sanitize do. */
int emu_finish(int failed);

/* kernel<<<grid, block, smem>>>(args) becomes
 * emu_launch(grid, block, smem, emu_bind([=](auto... a) { kernel(a...); }, args)): the arguments
 * copied when the launch is asked, as on the GPU, whenever the kernel then runs */
void emu_launch(dim3 grid, dim3 block, size_t smem, std::function<void()> body);
template <class F, class... A> inline std::function<void()> emu_bind(F kernel, A... args)
{
    return [=] { kernel(args...); };
}
/* A launch, an asynchronous copy or a library call's work: done at once, or, while a stream is
 * being captured (cudaStreamBeginCapture), kept in the graph and done at each cudaGraphLaunch,
 * with its arguments as they were when it was asked (emu_runtime.cpp) */
void emu_enqueue(std::function<void()> work);

inline uint8_t *emu_dynamic_smem() { return emu_blk->smem; }
inline void __syncthreads() { emu_blk->block->arrive_and_wait(); }
inline int emu_warp() { return emu_tid / 32; }
inline int emu_lane() { return emu_tid % 32; }
inline void emu_warp_sync() { emu_blk->warp[emu_warp()]->arrive_and_wait(); }
inline void emu_wg_sync() { emu_blk->wg[emu_tid / 128]->arrive_and_wait(); }

/* ================================================================ arithmetic and conversions */

inline float __uint_as_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
inline uint32_t __float_as_uint(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float atomicAdd(float *p, float v) { return std::atomic_ref<float>(*p).fetch_add(v); }
inline int atomicAdd(int *p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline unsigned atomicAdd(unsigned *p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_add(v); }
inline int atomicExch(int *p, int v) { return std::atomic_ref<int>(*p).exchange(v); }
/* the old value: compare_exchange leaves it in `compare` when it differs, and it is `compare` when not */
inline int atomicCAS(int *p, int compare, int v)
{
    std::atomic_ref<int>(*p).compare_exchange_strong(compare, v);
    return compare;
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <typename T> inline T __ldcg(const T *p) { return *p; }

inline float emu_bf16(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }
/* the low (half 0) or high bf16 of a register */
inline float emu_half(uint32_t reg, int half) { return emu_bf16((uint16_t)(half ? reg >> 16 : reg & 0xFFFF)); }

/* An input operand of n elements followed by a guard of EMU_GUARD_BYTES of 0xFF bytes (NaN as
 * float and bf16), as the programs allocate theirs (lb_malloc_guarded, LB_GUARD_BYTES): a kernel
 * that reads past the end reads NaN, and fails, whatever the host heap holds there. */
#define EMU_GUARD_BYTES (64 * 1024)
template <class T> inline std::vector<T> emu_guarded(size_t n)
{
    std::vector<T> v(n + EMU_GUARD_BYTES / sizeof(T));
    memset((void *)(v.data() + n), 0xFF, EMU_GUARD_BYTES);
    return v;
}

/* an fp8 e4m3 code's value (bias 7, 3 mantissa bits, no infinities, S.1111.111 NaN), written out
 * here rather than taken from labbook.c's lb_e4m3_value, so that the two readings are independent */
inline float emu_e4m3(uint8_t b)
{
    int e = (b >> 3) & 15, m = b & 7;
    float v = e == 15 && m == 7 ? NAN : e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
    return b & 0x80 ? -v : v;
}
/* an fp8 e5m2 code's value (bias 15, 2 mantissa bits, S.11111.00 infinity, S.11111.xx NaN) */
inline float emu_e5m2(uint8_t b)
{
    int e = (b >> 2) & 31, m = b & 3;
    float v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexpf((float)m, -16) : ldexpf((float)(4 + m), e - 17);
    return b & 0x80 ? -v : v;
}
/* ================================================================ warp-wide: shuffles, ldmatrix, mma.sync */

template <typename T> inline T __shfl_xor_sync(unsigned, T v, int lane_mask)
{
    static_assert(sizeof(T) == 4, "32-bit shuffles only");
    int w = emu_warp(), l = emu_lane();
    memcpy(&emu_blk->xch[w][l][0], &v, 4);
    emu_warp_sync();
    T r;
    memcpy(&r, &emu_blk->xch[w][l ^ lane_mask][0], 4);
    emu_warp_sync();
    return r;
}

inline void __syncwarp() { emu_warp_sync(); }

/* clusters are not emulated (a cluster's blocks would have to run at once) */
[[noreturn]] inline void emu_no_clusters()
{
    fprintf(stderr, "emulation: clusters are not emulated (versions that use them cannot run here)\n");
    abort();
}

/* ================================================================ the runtime the launchers call */

template <class T> inline cudaError_t cudaFuncSetAttribute(T *, cudaFuncAttribute, int) { return cudaSuccess; }
/* launches in clusters cannot run here; the count of resident clusters is an H100's (66 pairs) */
template <class K, class... A> inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *, K, A...)
{
    emu_no_clusters();
}
template <class K> inline cudaError_t cudaOccupancyMaxActiveClusters(int *clusters, K, const cudaLaunchConfig_t *)
{
    *clusters = 66;
    return cudaSuccess;
}
