/* scan_kernels.cu - prefix sums, from one block to one pass over memory.
 *
 *   1  Hillis-Steele (the book's naive scan) in each block of 1024 elements: log2(1024) = 10
 *      steps, each adding to every element the one `offset` before it: n log n additions.
 *      Then "scan-then-propagate": the blocks' totals are scanned the same way (recursively)
 *      and added back to every element. Memory: read n, write n, then read and write n again.
 *   2  Blelloch's work-efficient scan in each block (the book's, without its host loop per
 *      level): an up-sweep builds partial sums in a tree, a down-sweep pushes prefixes back
 *      down: 2n additions. Shared-memory indices are padded (one extra word every 32) so that
 *      the tree's power-of-two strides do not land in one bank. Same propagation as 1.
 *   3  reduce-then-scan: a first pass only sums each tile of 4096 (read n), one block scans
 *      the tile sums, a second pass scans each tile starting from its prefix (read n, write n):
 *      3n of traffic instead of 4n. Within a tile each thread scans 16 elements in registers
 *      and the 256 threads' totals are scanned with warp shuffles.
 *   4  single pass with decoupled look-back (Merrill and Garland): each tile publishes its
 *      total as soon as it has it, and its inclusive prefix once known; a tile finds its own
 *      prefix by looking back at its predecessors' published words, 32 at a time (one warp),
 *      stopping at the first complete prefix. Read n, write n: the minimum.
 *   5  the same algorithm, tuned: each warp reads its part of the tile as 16-byte vectors into
 *      registers and scans it there (no shared-memory tile, no block barrier until the warps'
 *      totals), tiles of 8192 (fewer look-backs), and a wait before and between polls.
 * 0 is cub::DeviceScan::InclusiveSum / ExclusiveSum.
 * Integers are added as unsigned (wrap-around, no undefined overflow); floats in float.
 */
#include "scan_kernels.h"
#include <cub/cub.cuh>

#define FULL 0xffffffffu

/* integers wrap: add them as unsigned */
__device__ __forceinline__ int add(int a, int b) { return (int)((unsigned int)a + (unsigned int)b); }
__device__ __forceinline__ float add(float a, float b) { return a + b; }

/* ---------------------------------------------------------------- 1: Hillis-Steele */

#define T1 1024   /* threads and elements per block */

template <typename T>
__global__ void __launch_bounds__(T1) scan_hs(const T *in, T *out, size_t n, int exclusive, T *sums)
{
    __shared__ T s[T1];
    int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * T1 + tid;
    T x = i < n ? in[i] : T(0);
    s[tid] = x;
    __syncthreads();
    for (int offset = 1; offset < T1; offset *= 2) {
        T t = tid >= offset ? s[tid - offset] : T(0);
        __syncthreads();   /* everyone has read the old values before anyone writes */
        s[tid] = add(s[tid], t);
        __syncthreads();
    }
    /* s is the inclusive scan; the exclusive one is the value one to the left */
    if (i < n) out[i] = exclusive ? (tid ? s[tid - 1] : T(0)) : s[tid];
    if (tid == T1 - 1) sums[blockIdx.x] = s[T1 - 1];
}

/* ---------------------------------------------------------------- 2: Blelloch */

#define T2 512                       /* threads; each block scans 2 * T2 = 1024 elements */
#define PAD(i) ((i) + ((i) >> 5))     /* one spare word every 32: strided accesses spread over banks */

template <typename T>
__global__ void __launch_bounds__(T2) scan_blelloch(const T *in, T *out, size_t n, int exclusive, T *sums)
{
    __shared__ T s[PAD(2 * T2) + 1];
    int tid = threadIdx.x;
    size_t base = (size_t)blockIdx.x * 2 * T2;
    int a = tid, b = tid + T2;   /* each thread loads two elements, T2 apart: coalesced */
    T xa = base + a < n ? in[base + a] : T(0), xb = base + b < n ? in[base + b] : T(0);
    s[PAD(a)] = xa;
    s[PAD(b)] = xb;
    /* up-sweep: build sums in place up the tree */
    int offset = 1;
    for (int d = T2; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
            s[PAD(bi)] = add(s[PAD(bi)], s[PAD(ai)]);
        }
        offset *= 2;
    }
    __syncthreads();
    if (tid == 0) {
        sums[blockIdx.x] = s[PAD(2 * T2 - 1)];   /* the block's total */
        s[PAD(2 * T2 - 1)] = T(0);
    }
    /* down-sweep: each node passes its prefix to its left child and prefix + left to its right */
    for (int d = 1; d < 2 * T2; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
            T t = s[PAD(ai)];
            s[PAD(ai)] = s[PAD(bi)];
            s[PAD(bi)] = add(s[PAD(bi)], t);
        }
    }
    __syncthreads();
    /* s is the exclusive scan; inclusive adds the element itself */
    if (base + a < n) out[base + a] = exclusive ? s[PAD(a)] : add(s[PAD(a)], xa);
    if (base + b < n) out[base + b] = exclusive ? s[PAD(b)] : add(s[PAD(b)], xb);
}

/* out[i] += offsets[block of i]: the propagation step of versions 1 and 2 */
template <typename T>
__global__ void add_offsets(T *out, size_t n, const T *offsets, int tile)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = add(out[i], offsets[i / tile]);
}

/* ---------------------------------------------------------------- tiles of 4096 (3 and 4) */

#define TB 256                     /* threads */
#define ITEMS 16                   /* elements per thread */
#define TILE (TB * ITEMS)          /* 4096 */
#define TPAD(j) ((j) + ((j) >> 5))

template <typename T>
__device__ __forceinline__ T warp_inclusive(T v)
{
    int lane = threadIdx.x & 31;
    for (int off = 1; off < 32; off *= 2) {
        T u = __shfl_up_sync(FULL, v, off);
        if (lane >= off) v = add(v, u);
    }
    return v;
}

template <typename T>
__device__ __forceinline__ T warp_total(T v)
{
    for (int off = 16; off > 0; off >>= 1) v = add(v, __shfl_xor_sync(FULL, v, off));
    return v;
}

/* The exclusive prefix of v over the block's threads, and the block's total. No subtraction:
 * the exclusive value is the inclusive one of the lane before (exact for floats too). */
template <typename T>
__device__ __forceinline__ T block_exclusive(T v, T *total)
{
    __shared__ T warp_incl[TB / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    T inc = warp_inclusive(v);
    if (lane == 31) warp_incl[warp] = inc;   /* each warp's total */
    __syncthreads();
    if (warp == 0) {
        T w = lane < TB / 32 ? warp_incl[lane] : T(0);
        w = warp_inclusive(w);
        if (lane < TB / 32) warp_incl[lane] = w;   /* now the warps' inclusive prefixes */
    }
    __syncthreads();
    *total = warp_incl[TB / 32 - 1];
    T within = __shfl_up_sync(FULL, inc, 1);
    if (lane == 0) within = T(0);
    return add(warp == 0 ? T(0) : warp_incl[warp - 1], within);
}

/* Load a tile coalesced (thread t reads elements t, t + 256, ...) into shared memory; each
 * thread then owns the 16 consecutive elements tid*16 .. tid*16+15. */
template <typename T>
__device__ __forceinline__ void load_tile(const T *in, size_t base, size_t n, T *s)
{
    for (int k = 0; k < ITEMS; k++) {
        int j = k * TB + threadIdx.x;
        s[TPAD(j)] = base + j < n ? in[base + j] : T(0);
    }
    __syncthreads();
}

/* Scan the thread's 16 elements from `carry` (its exclusive prefix) back into shared memory,
 * then store the tile coalesced. */
template <typename T>
__device__ __forceinline__ void scan_store_tile(T *out, size_t base, size_t n, T *s, T carry, int exclusive)
{
    T run = carry;
    for (int k = 0; k < ITEMS; k++) {
        int j = threadIdx.x * ITEMS + k;
        T x = s[TPAD(j)];
        T next = add(run, x);
        s[TPAD(j)] = exclusive ? run : next;
        run = next;
    }
    __syncthreads();
    for (int k = 0; k < ITEMS; k++) {
        int j = k * TB + threadIdx.x;
        if (base + j < n) out[base + j] = s[TPAD(j)];
    }
}

template <typename T>
__device__ __forceinline__ T thread_total(const T *s)
{
    T acc = T(0);
    for (int k = 0; k < ITEMS; k++) acc = add(acc, s[TPAD(threadIdx.x * ITEMS + k)]);
    return acc;
}

/* ---------------------------------------------------------------- 3: reduce-then-scan */

template <typename T>
__global__ void __launch_bounds__(TB) tile_sums(const T *in, size_t n, T *sums)
{
    size_t base = (size_t)blockIdx.x * TILE;
    T acc = T(0);
    for (int k = 0; k < ITEMS; k++) {
        size_t i = base + k * TB + threadIdx.x;
        if (i < n) acc = add(acc, in[i]);
    }
    acc = warp_total(acc);
    __shared__ T w[TB / 32];
    if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        T s = T(0);
        for (int k = 0; k < TB / 32; k++) s = add(s, w[k]);
        sums[blockIdx.x] = s;
    }
}

/* one block: exclusive scan of m tile sums in place (m = n / 4096, up to 2^20) */
template <typename T>
__global__ void __launch_bounds__(TB) scan_sums(T *sums, size_t m)
{
    size_t per = (m + TB - 1) / TB, lo = threadIdx.x * per, hi = lo + per < m ? lo + per : m;
    T acc = T(0);
    for (size_t i = lo; i < hi; i++) acc = add(acc, sums[i]);
    T total;
    T run = block_exclusive(acc, &total);
    for (size_t i = lo; i < hi; i++) {
        T x = sums[i];
        sums[i] = run;
        run = add(run, x);
    }
}

template <typename T>
__global__ void __launch_bounds__(TB) scan_from_prefix(const T *in, T *out, size_t n, const T *prefix, int exclusive)
{
    __shared__ T s[TPAD(TILE)];
    size_t base = (size_t)blockIdx.x * TILE;
    load_tile(in, base, n, s);
    T total, mine = block_exclusive(thread_total(s), &total);
    scan_store_tile(out, base, n, s, add(prefix[blockIdx.x], mine), exclusive);
}

/* ---------------------------------------------------------------- 4: decoupled look-back */

/* A tile's published word: the flag in the high 32 bits, the value's bits in the low 32. One
 * 64-bit store publishes both at once, so a reader never sees a flag with a stale value. */
enum { FLAG_NONE = 0, FLAG_AGGREGATE = 1, FLAG_PREFIX = 2 };

__device__ __forceinline__ unsigned int bits_of(int v) { return (unsigned int)v; }
__device__ __forceinline__ unsigned int bits_of(float v) { return __float_as_uint(v); }
template <typename T> __device__ __forceinline__ T from_bits(unsigned int b);
template <> __device__ __forceinline__ int from_bits<int>(unsigned int b) { return (int)b; }
template <> __device__ __forceinline__ float from_bits<float>(unsigned int b) { return __uint_as_float(b); }

template <typename T>
__device__ __forceinline__ void publish(unsigned long long *status, unsigned int tile, unsigned int flag, T v)
{
    *(volatile unsigned long long *)&status[tile] = ((unsigned long long)flag << 32) | bits_of(v);
}

/* Warp 0: the sum of all tiles before `tile`, from their published words. */
template <typename T>
__device__ T look_back(const unsigned long long *status, unsigned int tile)
{
    int lane = threadIdx.x & 31;
    T prefix = T(0);
    long long end = (long long)tile - 1;   /* the window is tiles end, end - 1, ..., end - 31 */
    for (;;) {
        long long idx = end - lane;
        unsigned int flag;
        T v;
        do {   /* wait until every tile in the window has published at least its total */
            unsigned long long w = idx >= 0 ? *(volatile const unsigned long long *)&status[idx]
                                            : ((unsigned long long)FLAG_PREFIX << 32);
            flag = (unsigned int)(w >> 32);
            v = from_bits<T>((unsigned int)w);
        } while (__any_sync(FULL, flag == FLAG_NONE));
        unsigned int prefixes = __ballot_sync(FULL, flag == FLAG_PREFIX);
        int stop = prefixes ? __ffs(prefixes) - 1 : 32;   /* the nearest tile with a full prefix */
        prefix = add(prefix, warp_total(lane <= stop ? v : T(0)));
        if (prefixes) return prefix;
        end -= 32;
    }
}

template <typename T>
__global__ void __launch_bounds__(TB) scan_lookback(const T *in, T *out, size_t n, int exclusive,
                                                    unsigned long long *status, unsigned int *counter)
{
    __shared__ T s[TPAD(TILE)];
    __shared__ unsigned int s_tile;
    __shared__ T s_prefix;
    /* tiles are numbered in the order blocks start, not by blockIdx: a tile only ever waits
     * for tiles that started before it, so the wait always ends */
    if (threadIdx.x == 0) s_tile = atomicAdd(counter, 1u);
    __syncthreads();
    unsigned int tile = s_tile;
    size_t base = (size_t)tile * TILE;
    load_tile(in, base, n, s);
    T total, mine = block_exclusive(thread_total(s), &total);
    if (threadIdx.x < 32) {
        if (threadIdx.x == 0) publish(status, tile, tile == 0 ? FLAG_PREFIX : FLAG_AGGREGATE, total);
        T prefix = tile == 0 ? T(0) : look_back<T>(status, tile);
        if (threadIdx.x == 0) {
            if (tile) publish(status, tile, FLAG_PREFIX, add(prefix, total));
            s_prefix = prefix;
        }
    }
    __syncthreads();
    scan_store_tile(out, base, n, s, add(s_prefix, mine), exclusive);
}

/* ---------------------------------------------------------------- 5: look-back, tuned */

/* Version 4 spends its time waiting, not moving bytes: every block loads a tile through
 * shared memory with block-wide barriers, then one warp polls its predecessors as fast as it
 * can while the other seven wait. Version 5 keeps the algorithm and changes how a block works:
 *   - no shared-memory tile: each warp owns 32 * 4 * V5 consecutive elements and reads them
 *     as 16-byte vectors, row r (128 elements) at a time, lane l holding elements 4l..4l+3 of
 *     the row; a row is scanned with 4 additions in the thread and 5 shuffles across the warp;
 *   - larger tiles (T5 x 4 V5 elements), so fewer tiles wait in a look-back;
 *   - the look-back waits before its first poll and pauses between polls (look_back_patient).
 * Each can be changed at build time: make ch10 SCAN_THREADS=128 SCAN_VECS=6 SCAN_SLEEP_NS=0
 * (NOTES.md has what each setting measured). */
#ifndef SCAN_THREADS
#define SCAN_THREADS 256
#endif
#ifndef SCAN_VECS
#define SCAN_VECS 8
#endif
#ifndef SCAN_SLEEP_NS
#define SCAN_SLEEP_NS 600
#endif
#ifndef SCAN_FIRST_SLEEP_NS
#define SCAN_FIRST_SLEEP_NS 1200
#endif
#ifndef SCAN_BY_BLOCKIDX
#define SCAN_BY_BLOCKIDX 0           /* 1: tile = blockIdx.x, as CUB does (see the kernel) */
#endif
#ifndef SCAN_MIN_BLOCKS
#define SCAN_MIN_BLOCKS 1            /* blocks per SM the compiler must fit (caps registers) */
#endif
#define T5 SCAN_THREADS
#define V5 SCAN_VECS                 /* 16-byte vectors per thread: 4 * V5 elements */
#define WARP5 (32 * 4 * V5)          /* elements per warp */
#define TILE5 (T5 * 4 * V5)          /* elements per tile (8192 by default) */

template <typename T> struct vec4;
template <> struct vec4<int> { typedef int4 type; };
template <> struct vec4<float> { typedef float4 type; };

/* Warp 0 of version 5: version 4's look-back, patient. A tile's predecessors are rarely all
 * done when it starts looking, so it first waits SCAN_FIRST_SLEEP_NS, then polls with a pause
 * of SCAN_SLEEP_NS between reads: fewer reads of the few status words that every waiting tile
 * polls, and those words live in one or two L2 slices (CUB's tuning waits too). */
template <typename T>
__device__ T look_back_patient(const unsigned long long *status, unsigned int tile)
{
    int lane = threadIdx.x & 31;
    T prefix = T(0);
    long long end = (long long)tile - 1;
    if (SCAN_FIRST_SLEEP_NS > 0) __nanosleep(SCAN_FIRST_SLEEP_NS);
    for (;;) {
        long long idx = end - lane;
        unsigned int flag;
        T v;
        for (;;) {
            unsigned long long w = idx >= 0 ? *(volatile const unsigned long long *)&status[idx]
                                            : ((unsigned long long)FLAG_PREFIX << 32);
            flag = (unsigned int)(w >> 32);
            v = from_bits<T>((unsigned int)w);
            if (!__any_sync(FULL, flag == FLAG_NONE)) break;
            if (SCAN_SLEEP_NS > 0) __nanosleep(SCAN_SLEEP_NS);
        }
        unsigned int prefixes = __ballot_sync(FULL, flag == FLAG_PREFIX);
        int stop = prefixes ? __ffs(prefixes) - 1 : 32;
        prefix = add(prefix, warp_total(lane <= stop ? v : T(0)));
        if (prefixes) return prefix;
        end -= 32;
    }
}

template <typename T>
__global__ void __launch_bounds__(T5, SCAN_MIN_BLOCKS) scan_lookback_vec(const T *in, T *out, size_t n, int exclusive,
                                                        unsigned long long *status, unsigned int *counter)
{
    typedef typename vec4<T>::type V;
    __shared__ unsigned int s_tile;
    __shared__ T s_warp[T5 / 32];
    __shared__ T s_prefix;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    /* SCAN_BY_BLOCKIDX=1 skips the counter's round trip to L2 before the loads can start; it
     * relies on blocks starting in blockIdx order, which the hardware does but CUDA does not
     * promise (a tile waiting for a block that never started would wait forever). */
    if (!SCAN_BY_BLOCKIDX && threadIdx.x == 0) s_tile = atomicAdd(counter, 1u);
    if (!SCAN_BY_BLOCKIDX) __syncthreads();
    unsigned int tile = SCAN_BY_BLOCKIDX ? blockIdx.x : s_tile;
    size_t wbase = (size_t)tile * TILE5 + (size_t)warp * WARP5;   /* this warp's first element */
    bool full = wbase + WARP5 <= n;                               /* no edge inside the warp's part */

    /* load: row r of the warp's part is elements wbase + 128 r .. + 127; lane l takes 4l..4l+3 */
    T x[V5][4];
    if (full) {
        const V *p = (const V *)(in + wbase);   /* 16-byte aligned: wbase is a multiple of 128 */
#pragma unroll
        for (int r = 0; r < V5; r++) {
            V q = p[r * 32 + lane];
            x[r][0] = q.x; x[r][1] = q.y; x[r][2] = q.z; x[r][3] = q.w;
        }
    } else {
#pragma unroll
        for (int r = 0; r < V5; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                size_t i = wbase + r * 128 + lane * 4 + c;
                x[r][c] = i < n ? in[i] : T(0);
            }
    }

    /* scan each row: within the thread (x becomes the thread's inclusive sums), then across
     * the warp; lane_off[r] is what comes before the thread's 4 elements inside the warp's part */
    T lane_off[V5], carry = T(0);
#pragma unroll
    for (int r = 0; r < V5; r++) {
        x[r][1] = add(x[r][0], x[r][1]);
        x[r][2] = add(x[r][1], x[r][2]);
        x[r][3] = add(x[r][2], x[r][3]);
        T inc = warp_inclusive(x[r][3]);
        T before = __shfl_up_sync(FULL, inc, 1);
        lane_off[r] = add(carry, lane == 0 ? T(0) : before);
        carry = add(carry, __shfl_sync(FULL, inc, 31));   /* the row's total */
    }

    /* the block: each warp's total, then what comes before each warp and the tile's total */
    if (lane == 0) s_warp[warp] = carry;
    __syncthreads();
    T warp_before = T(0), total = T(0);
#pragma unroll
    for (int w = 0; w < T5 / 32; w++) {
        if (w < warp) warp_before = add(warp_before, s_warp[w]);
        total = add(total, s_warp[w]);
    }

    /* the look-back, as in version 4 */
    if (warp == 0) {
        if (lane == 0) publish(status, tile, tile == 0 ? FLAG_PREFIX : FLAG_AGGREGATE, total);
        T prefix = tile == 0 ? T(0) : look_back_patient<T>(status, tile);
        if (lane == 0) {
            if (tile) publish(status, tile, FLAG_PREFIX, add(prefix, total));
            s_prefix = prefix;
        }
    }
    __syncthreads();
    T start = add(s_prefix, warp_before);

    /* store: inclusive element c is start + lane_off + x[c]; exclusive, the one before it */
#pragma unroll
    for (int r = 0; r < V5; r++) {
        T off = add(start, lane_off[r]);
        T o[4];
#pragma unroll
        for (int c = 0; c < 4; c++) o[c] = exclusive ? (c ? add(off, x[r][c - 1]) : off) : add(off, x[r][c]);
        if (full) {
            V q;
            q.x = o[0]; q.y = o[1]; q.z = o[2]; q.w = o[3];
            ((V *)(out + wbase))[r * 32 + lane] = q;
        } else {
#pragma unroll
            for (int c = 0; c < 4; c++) {
                size_t i = wbase + r * 128 + lane * 4 + c;
                if (i < n) out[i] = o[c];
            }
        }
    }
}

/* ---------------------------------------------------------------- launchers */

static size_t tiles_of(size_t n, size_t tile) { return (n + tile - 1) / tile; }

/* versions 1 and 2: scan each block, scan the block totals (recursively), add them back */
template <typename T>
static cudaError_t scan_propagate(int version, const T *in, T *out, size_t n, int exclusive, T *scratch)
{
    size_t blocks = tiles_of(n, 1024);
    T *sums = scratch;
    if (version == 1) scan_hs<T><<<(unsigned int)blocks, T1>>>(in, out, n, exclusive, sums);
    else scan_blelloch<T><<<(unsigned int)blocks, T2>>>(in, out, n, exclusive, sums);
    cudaError_t e = cudaGetLastError();
    if (e || blocks == 1) return e;
    /* an exclusive scan of the totals gives each block its offset */
    e = scan_propagate<T>(version, sums, sums, blocks, 1, scratch + blocks);
    if (e) return e;
    add_offsets<T><<<(unsigned int)tiles_of(n, 256), 256>>>(out, n, sums, 1024);
    return cudaGetLastError();
}

template <typename T>
static cudaError_t scan_t(int version, int exclusive, const T *in, T *out, size_t n, void *scratch)
{
    size_t tiles = tiles_of(n, TILE);
    switch (version) {
    case 0: {
        size_t bytes = scan_scratch_bytes(0, n);
        return exclusive ? cub::DeviceScan::ExclusiveSum(scratch, bytes, in, out, (int64_t)n)
                         : cub::DeviceScan::InclusiveSum(scratch, bytes, in, out, (int64_t)n);
    }
    case 1:
    case 2: return scan_propagate<T>(version, in, out, n, exclusive, (T *)scratch);
    case 3: {
        T *sums = (T *)scratch;
        tile_sums<T><<<(unsigned int)tiles, TB>>>(in, n, sums);
        scan_sums<T><<<1, TB>>>(sums, tiles);
        scan_from_prefix<T><<<(unsigned int)tiles, TB>>>(in, out, n, sums, exclusive);
        return cudaGetLastError();
    }
    case 4: {
        unsigned long long *status = (unsigned long long *)scratch;
        unsigned int *counter = (unsigned int *)(status + tiles);
        cudaError_t e = cudaMemsetAsync(scratch, 0, tiles * sizeof(unsigned long long) + sizeof(unsigned int), 0);
        if (e) return e;
        scan_lookback<T><<<(unsigned int)tiles, TB>>>(in, out, n, exclusive, status, counter);
        return cudaGetLastError();
    }
    case 5: {
        size_t tiles5 = tiles_of(n, TILE5);
        unsigned long long *status = (unsigned long long *)scratch;
        unsigned int *counter = (unsigned int *)(status + tiles5);
        cudaError_t e = cudaMemsetAsync(scratch, 0, tiles5 * sizeof(unsigned long long) + sizeof(unsigned int), 0);
        if (e) return e;
        scan_lookback_vec<T><<<(unsigned int)tiles5, T5>>>(in, out, n, exclusive, status, counter);
        return cudaGetLastError();
    }
    default: return cudaErrorInvalidValue;
    }
}

extern "C" size_t scan_scratch_bytes(int version, size_t n)
{
    if (version == 0) {
        size_t a = 0, b = 0, c = 0, d = 0;
        cub::DeviceScan::InclusiveSum(NULL, a, (const int *)NULL, (int *)NULL, (int64_t)n);
        cub::DeviceScan::ExclusiveSum(NULL, b, (const int *)NULL, (int *)NULL, (int64_t)n);
        cub::DeviceScan::InclusiveSum(NULL, c, (const float *)NULL, (float *)NULL, (int64_t)n);
        cub::DeviceScan::ExclusiveSum(NULL, d, (const float *)NULL, (float *)NULL, (int64_t)n);
        size_t m = a > b ? a : b;
        m = m > c ? m : c;
        return m > d ? m : d;
    }
    if (version <= 2) return 4 * (tiles_of(n, 1024) + tiles_of(n, 1024 * 1024) + 64);
    if (version <= 4) return tiles_of(n, TILE) * sizeof(unsigned long long) + 64;
    return tiles_of(n, TILE5) * sizeof(unsigned long long) + 64;
}

extern "C" cudaError_t scan_launch(int version, int type, int exclusive, const void *d_in, void *d_out, size_t n,
                                   void *d_scratch)
{
    if (type == SCAN_INT) return scan_t<int>(version, exclusive, (const int *)d_in, (int *)d_out, n, d_scratch);
    return scan_t<float>(version, exclusive, (const float *)d_in, (float *)d_out, n, d_scratch);
}
