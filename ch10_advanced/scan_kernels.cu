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
 * 0 is cub::DeviceScan::InclusiveSum / ExclusiveSum, in scan_cub.cu (CUB compiles slowly: apart, an
 * edit here rebuilds in seconds).
 * Integers are added as unsigned (wrap-around, no undefined overflow); floats in float.
 */
#include "scan_kernels.h"

#define SCAN_FULL_MASK 0xffffffffu

/* integers wrap: add them as unsigned */
__device__ __forceinline__ int add(int a, int b) { return (int)((unsigned int)a + (unsigned int)b); }
__device__ __forceinline__ float add(float a, float b) { return a + b; }

static size_t tiles_of(size_t n, size_t tile) { return (n + tile - 1) / tile; }

/* ---------------------------------------------------------------- 1: Hillis-Steele */

#define SCAN1_THREADS 1024 /* threads and elements per block */

template <typename T>
__global__ void __launch_bounds__(SCAN1_THREADS) scan_kernel1(const T *in, T *out, size_t n, int exclusive, T *sums)
{
    __shared__ T s[SCAN1_THREADS];
    int tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * SCAN1_THREADS + tid;
    T x = i < n ? in[i] : T(0);
    s[tid] = x;
    __syncthreads();
    for (int offset = 1; offset < SCAN1_THREADS; offset *= 2) {
        T t = tid >= offset ? s[tid - offset] : T(0);
        __syncthreads(); /* everyone has read the old values before anyone writes */
        s[tid] = add(s[tid], t);
        __syncthreads();
    }
    /* s is the inclusive scan; the exclusive one is the value one to the left */
    if (i < n) out[i] = exclusive ? (tid ? s[tid - 1] : T(0)) : s[tid];
    if (tid == SCAN1_THREADS - 1) sums[blockIdx.x] = s[SCAN1_THREADS - 1];
}

/* ---------------------------------------------------------------- 2: Blelloch */

#define SCAN2_THREADS 512              /* threads; each block scans 2 * SCAN2_THREADS = 1024 elements */
#define SCAN_PAD(i) ((i) + ((i) >> 5)) /* one spare word every 32: strided accesses spread over banks */

template <typename T>
__global__ void __launch_bounds__(SCAN2_THREADS) scan_kernel2(const T *in, T *out, size_t n, int exclusive, T *sums)
{
    __shared__ T s[SCAN_PAD(2 * SCAN2_THREADS) + 1];
    int tid = threadIdx.x;
    size_t base = (size_t)blockIdx.x * 2 * SCAN2_THREADS;
    int a = tid, b = tid + SCAN2_THREADS; /* each thread loads two elements, SCAN2_THREADS apart: coalesced */
    T xa = base + a < n ? in[base + a] : T(0), xb = base + b < n ? in[base + b] : T(0);
    s[SCAN_PAD(a)] = xa;
    s[SCAN_PAD(b)] = xb;
    /* up-sweep: build sums in place up the tree */
    int offset = 1;
    for (int d = SCAN2_THREADS; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
            s[SCAN_PAD(bi)] = add(s[SCAN_PAD(bi)], s[SCAN_PAD(ai)]);
        }
        offset *= 2;
    }
    __syncthreads();
    if (tid == 0) {
        sums[blockIdx.x] = s[SCAN_PAD(2 * SCAN2_THREADS - 1)]; /* the block's total */
        s[SCAN_PAD(2 * SCAN2_THREADS - 1)] = T(0);
    }
    /* down-sweep: each node passes its prefix to its left child and prefix + left to its right */
    for (int d = 1; d < 2 * SCAN2_THREADS; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
            T t = s[SCAN_PAD(ai)];
            s[SCAN_PAD(ai)] = s[SCAN_PAD(bi)];
            s[SCAN_PAD(bi)] = add(s[SCAN_PAD(bi)], t);
        }
    }
    __syncthreads();
    /* s is the exclusive scan; inclusive adds the element itself */
    if (base + a < n) out[base + a] = exclusive ? s[SCAN_PAD(a)] : add(s[SCAN_PAD(a)], xa);
    if (base + b < n) out[base + b] = exclusive ? s[SCAN_PAD(b)] : add(s[SCAN_PAD(b)], xb);
}

/* out[i] += offsets[block of i]: the propagation step of versions 1 and 2 */
template <typename T> __global__ void scan_add_offsets(T *out, size_t n, const T *offsets, int tile)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = add(out[i], offsets[i / tile]);
}

/* Versions 1 and 2: scan each block of 1024 elements with the version's kernel, scan the block
 * totals (recursively, with the same kernel), add them back */
template <typename T>
static cudaError_t scan_propagate(void (*kernel)(const T *, T *, size_t, int, T *), int threads, const T *in, T *out,
                                  size_t n, int exclusive, T *scratch)
{
    size_t blocks = tiles_of(n, 1024);
    T *sums = scratch;
    kernel<<<(unsigned int)blocks, threads>>>(in, out, n, exclusive, sums);
    cudaError_t e = cudaGetLastError();
    if (e || blocks == 1) return e;
    /* an exclusive scan of the totals gives each block its offset */
    e = scan_propagate<T>(kernel, threads, sums, sums, blocks, 1, scratch + blocks);
    if (e) return e;
    scan_add_offsets<T><<<(unsigned int)tiles_of(n, 256), 256>>>(out, n, sums, 1024);
    return cudaGetLastError();
}
static size_t scratch_propagate(size_t n) { return 4 * (tiles_of(n, 1024) + tiles_of(n, 1024 * 1024) + 64); }

template <typename T> static cudaError_t launch1(int exclusive, const T *in, T *out, size_t n, void *scratch, size_t)
{
    return scan_propagate<T>(scan_kernel1<T>, SCAN1_THREADS, in, out, n, exclusive, (T *)scratch);
}
template <typename T> static cudaError_t launch2(int exclusive, const T *in, T *out, size_t n, void *scratch, size_t)
{
    return scan_propagate<T>(scan_kernel2<T>, SCAN2_THREADS, in, out, n, exclusive, (T *)scratch);
}

/* ---------------------------------------------------------------- tiles of 4096 (3 and 4) */

#define SCAN_TILE_THREADS 256                      /* threads */
#define SCAN_ITEMS 16                              /* elements per thread */
#define SCAN_TILE (SCAN_TILE_THREADS * SCAN_ITEMS) /* 4096 */
#define SCAN_TILE_PAD(j) ((j) + ((j) >> 5))

template <typename T> __device__ __forceinline__ T warp_inclusive(T v)
{
    int lane = threadIdx.x & 31;
    for (int off = 1; off < 32; off *= 2) {
        T u = __shfl_up_sync(SCAN_FULL_MASK, v, off);
        if (lane >= off) v = add(v, u);
    }
    return v;
}

template <typename T> __device__ __forceinline__ T warp_total(T v)
{
    for (int off = 16; off > 0; off >>= 1) v = add(v, __shfl_xor_sync(SCAN_FULL_MASK, v, off));
    return v;
}

/* The exclusive prefix of v over the block's threads, and the block's total. No subtraction:
 * the exclusive value is the inclusive one of the lane before (exact for floats too). */
template <typename T> __device__ __forceinline__ T block_exclusive(T v, T *total)
{
    __shared__ T warp_incl[SCAN_TILE_THREADS / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    T inc = warp_inclusive(v);
    if (lane == 31) warp_incl[warp] = inc; /* each warp's total */
    __syncthreads();
    if (warp == 0) {
        T w = lane < SCAN_TILE_THREADS / 32 ? warp_incl[lane] : T(0);
        w = warp_inclusive(w);
        if (lane < SCAN_TILE_THREADS / 32) warp_incl[lane] = w; /* now the warps' inclusive prefixes */
    }
    __syncthreads();
    *total = warp_incl[SCAN_TILE_THREADS / 32 - 1];
    T within = __shfl_up_sync(SCAN_FULL_MASK, inc, 1);
    if (lane == 0) within = T(0);
    return add(warp == 0 ? T(0) : warp_incl[warp - 1], within);
}

/* Load a tile coalesced (thread t reads elements t, t + 256, ...) into shared memory; each
 * thread then owns the 16 consecutive elements tid*16 .. tid*16+15. */
template <typename T> __device__ __forceinline__ void load_tile(const T *in, size_t base, size_t n, T *s)
{
    for (int k = 0; k < SCAN_ITEMS; k++) {
        int j = k * SCAN_TILE_THREADS + threadIdx.x;
        s[SCAN_TILE_PAD(j)] = base + j < n ? in[base + j] : T(0);
    }
    __syncthreads();
}

/* Scan the thread's 16 elements from `carry` (its exclusive prefix) back into shared memory,
 * then store the tile coalesced. */
template <typename T>
__device__ __forceinline__ void scan_store_tile(T *out, size_t base, size_t n, T *s, T carry, int exclusive)
{
    T run = carry;
    for (int k = 0; k < SCAN_ITEMS; k++) {
        int j = threadIdx.x * SCAN_ITEMS + k;
        T x = s[SCAN_TILE_PAD(j)];
        T next = add(run, x);
        s[SCAN_TILE_PAD(j)] = exclusive ? run : next;
        run = next;
    }
    __syncthreads();
    for (int k = 0; k < SCAN_ITEMS; k++) {
        int j = k * SCAN_TILE_THREADS + threadIdx.x;
        if (base + j < n) out[base + j] = s[SCAN_TILE_PAD(j)];
    }
}

template <typename T> __device__ __forceinline__ T thread_total(const T *s)
{
    T acc = T(0);
    for (int k = 0; k < SCAN_ITEMS; k++) acc = add(acc, s[SCAN_TILE_PAD(threadIdx.x * SCAN_ITEMS + k)]);
    return acc;
}

/* ---------------------------------------------------------------- 3: reduce-then-scan */

template <typename T>
__global__ void __launch_bounds__(SCAN_TILE_THREADS) scan_kernel3_tile_sums(const T *in, size_t n, T *sums)
{
    size_t base = (size_t)blockIdx.x * SCAN_TILE;
    T acc = T(0);
    for (int k = 0; k < SCAN_ITEMS; k++) {
        size_t i = base + k * SCAN_TILE_THREADS + threadIdx.x;
        if (i < n) acc = add(acc, in[i]);
    }
    acc = warp_total(acc);
    __shared__ T w[SCAN_TILE_THREADS / 32];
    if ((threadIdx.x & 31) == 0) w[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        T s = T(0);
        for (int k = 0; k < SCAN_TILE_THREADS / 32; k++) s = add(s, w[k]);
        sums[blockIdx.x] = s;
    }
}

/* one block: exclusive scan of m tile sums in place (m = n / 4096, up to 2^20) */
template <typename T> __global__ void __launch_bounds__(SCAN_TILE_THREADS) scan_kernel3_scan_sums(T *sums, size_t m)
{
    size_t per = (m + SCAN_TILE_THREADS - 1) / SCAN_TILE_THREADS, lo = threadIdx.x * per,
           hi = lo + per < m ? lo + per : m;
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
__global__ void __launch_bounds__(SCAN_TILE_THREADS)
    scan_kernel3(const T *in, T *out, size_t n, const T *prefix, int exclusive)
{
    __shared__ T s[SCAN_TILE_PAD(SCAN_TILE)];
    size_t base = (size_t)blockIdx.x * SCAN_TILE;
    load_tile(in, base, n, s);
    T total, mine = block_exclusive(thread_total(s), &total);
    scan_store_tile(out, base, n, s, add(prefix[blockIdx.x], mine), exclusive);
}

/* the tile sums, their scan, the tiles: three launches */
template <typename T> static cudaError_t launch3(int exclusive, const T *in, T *out, size_t n, void *scratch, size_t)
{
    size_t tiles = tiles_of(n, SCAN_TILE);
    T *sums = (T *)scratch;
    scan_kernel3_tile_sums<T><<<(unsigned int)tiles, SCAN_TILE_THREADS>>>(in, n, sums);
    scan_kernel3_scan_sums<T><<<1, SCAN_TILE_THREADS>>>(sums, tiles);
    scan_kernel3<T><<<(unsigned int)tiles, SCAN_TILE_THREADS>>>(in, out, n, sums, exclusive);
    return cudaGetLastError();
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

/* Warp 0: the sum of all tiles before `tile`, from their published words. FIRST_NS and
 * PAUSE_NS are how patient it is: a wait before the first read and a pause between reads while
 * a tile in the window has not published (version 4: none; version 5: see there). */
template <typename T, int FIRST_NS, int PAUSE_NS>
__device__ T look_back(const unsigned long long *status, unsigned int tile)
{
    int lane = threadIdx.x & 31;
    T prefix = T(0);
    long long end = (long long)tile - 1; /* the window is tiles end, end - 1, ..., end - 31 */
    if (FIRST_NS > 0) __nanosleep(FIRST_NS);
    for (;;) {
        long long idx = end - lane;
        unsigned int flag;
        T v;
        for (;;) { /* wait until every tile in the window has published at least its total */
            unsigned long long w =
                idx >= 0 ? *(volatile const unsigned long long *)&status[idx] : ((unsigned long long)FLAG_PREFIX << 32);
            flag = (unsigned int)(w >> 32);
            v = from_bits<T>((unsigned int)w);
            if (!__any_sync(SCAN_FULL_MASK, flag == FLAG_NONE)) break;
            if (PAUSE_NS > 0) __nanosleep(PAUSE_NS);
        }
        unsigned int prefixes = __ballot_sync(SCAN_FULL_MASK, flag == FLAG_PREFIX);
        int stop = prefixes ? __ffs(prefixes) - 1 : 32; /* the nearest tile with a full prefix */
        prefix = add(prefix, warp_total(lane <= stop ? v : T(0)));
        if (prefixes) return prefix;
        end -= 32;
    }
}

/* Warp 0 of a tile: publish the tile's total, look back for what comes before it, publish the
 * tile's inclusive prefix; returns the exclusive prefix (tile 0 has none: 0, published at once). */
template <typename T, int FIRST_NS, int PAUSE_NS>
__device__ T tile_prefix(unsigned long long *status, unsigned int tile, T total)
{
    if (threadIdx.x == 0) publish(status, tile, tile == 0 ? FLAG_PREFIX : FLAG_AGGREGATE, total);
    T prefix = tile == 0 ? T(0) : look_back<T, FIRST_NS, PAUSE_NS>(status, tile);
    if (threadIdx.x == 0 && tile) publish(status, tile, FLAG_PREFIX, add(prefix, total));
    return prefix;
}

template <typename T>
__global__ void __launch_bounds__(SCAN_TILE_THREADS)
    scan_kernel4(const T *in, T *out, size_t n, int exclusive, unsigned long long *status, unsigned int *counter)
{
    __shared__ T s[SCAN_TILE_PAD(SCAN_TILE)];
    __shared__ unsigned int s_tile;
    __shared__ T s_prefix;
    /* tiles are numbered in the order blocks start, not by blockIdx: a tile only ever waits
     * for tiles that started before it, so the wait always ends */
    if (threadIdx.x == 0) s_tile = atomicAdd(counter, 1u);
    __syncthreads();
    unsigned int tile = s_tile;
    size_t base = (size_t)tile * SCAN_TILE;
    load_tile(in, base, n, s);
    T total, mine = block_exclusive(thread_total(s), &total);
    if (threadIdx.x < 32) {
        T prefix = tile_prefix<T, 0, 0>(status, tile, total);
        if (threadIdx.x == 0) s_prefix = prefix;
    }
    __syncthreads();
    scan_store_tile(out, base, n, s, add(s_prefix, mine), exclusive);
}

/* The launcher of the look-back versions (4 and 5): the tiles' status words and the tile
 * counter zeroed in the scratch area, then one launch of the version's kernel, a block a tile */
template <typename T>
static cudaError_t scan_lookback(void (*kernel)(const T *, T *, size_t, int, unsigned long long *, unsigned int *),
                                 size_t tile, int threads, int exclusive, const T *in, T *out, size_t n, void *scratch)
{
    size_t tiles = tiles_of(n, tile);
    unsigned long long *status = (unsigned long long *)scratch;
    unsigned int *counter = (unsigned int *)(status + tiles);
    cudaError_t e = cudaMemsetAsync(scratch, 0, tiles * sizeof(unsigned long long) + sizeof(unsigned int), 0);
    if (e) return e;
    kernel<<<(unsigned int)tiles, threads>>>(in, out, n, exclusive, status, counter);
    return cudaGetLastError();
}
/* its scratch: a status word a tile, and the counter */
static size_t lookback_scratch(size_t n, size_t tile) { return tiles_of(n, tile) * sizeof(unsigned long long) + 64; }

template <typename T> static cudaError_t launch4(int exclusive, const T *in, T *out, size_t n, void *scratch, size_t)
{
    return scan_lookback<T>(scan_kernel4<T>, SCAN_TILE, SCAN_TILE_THREADS, exclusive, in, out, n, scratch);
}

/* ---------------------------------------------------------------- 5: look-back, tuned */

/* Version 4 spends its time waiting, not moving bytes: every block loads a tile through
 * shared memory with block-wide barriers, then one warp polls its predecessors as fast as it
 * can while the other seven wait. Version 5 keeps the algorithm and changes how a block works:
 *   - no shared-memory tile: each warp owns 32 * 4 * SCAN5_VECS consecutive elements and reads them
 *     as 16-byte vectors, row r (128 elements) at a time, lane l holding elements 4l..4l+3 of
 *     the row; a row is scanned with 4 additions in the thread and 5 shuffles across the warp;
 *   - larger tiles (SCAN5_THREADS x 4 SCAN5_VECS elements), so fewer tiles wait in a look-back;
 *   - the look-back waits before its first poll and pauses between polls (look_back, patient).
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
#define SCAN_BY_BLOCKIDX 0 /* 1: tile = blockIdx.x, as CUB does (see the kernel) */
#endif
#ifndef SCAN_MIN_BLOCKS
#define SCAN_MIN_BLOCKS 1 /* blocks per SM the compiler must fit (caps registers) */
#endif
#define SCAN5_THREADS SCAN_THREADS
#define SCAN5_VECS SCAN_VECS                        /* 16-byte vectors per thread: 4 * SCAN5_VECS elements */
#define SCAN5_WARP_ITEMS (32 * 4 * SCAN5_VECS)      /* elements per warp */
#define SCAN5_TILE (SCAN5_THREADS * 4 * SCAN5_VECS) /* elements per tile (8192 by default) */

template <typename T> struct vec4;
template <> struct vec4<int> {
    typedef int4 type;
};
template <> struct vec4<float> {
    typedef float4 type;
};

template <typename T>
__global__ void __launch_bounds__(SCAN5_THREADS, SCAN_MIN_BLOCKS)
    scan_kernel5(const T *in, T *out, size_t n, int exclusive, unsigned long long *status, unsigned int *counter)
{
    typedef typename vec4<T>::type V;
    __shared__ unsigned int s_tile;
    __shared__ T s_warp[SCAN5_THREADS / 32];
    __shared__ T s_prefix;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    /* SCAN_BY_BLOCKIDX=1 skips the counter's round trip to L2 before the loads can start; it
     * relies on blocks starting in blockIdx order, which the hardware does but CUDA does not
     * promise (a tile waiting for a block that never started would wait forever). */
    if (!SCAN_BY_BLOCKIDX && threadIdx.x == 0) s_tile = atomicAdd(counter, 1u);
    if (!SCAN_BY_BLOCKIDX) __syncthreads();
    unsigned int tile = SCAN_BY_BLOCKIDX ? blockIdx.x : s_tile;
    size_t wbase = (size_t)tile * SCAN5_TILE + (size_t)warp * SCAN5_WARP_ITEMS; /* this warp's first element */
    bool full = wbase + SCAN5_WARP_ITEMS <= n;                                  /* no edge inside the warp's part */

    /* load: row r of the warp's part is elements wbase + 128 r .. + 127; lane l takes 4l..4l+3 */
    T x[SCAN5_VECS][4];
    if (full) {
        const V *p = (const V *)(in + wbase); /* 16-byte aligned: wbase is a multiple of 128 */
#pragma unroll
        for (int r = 0; r < SCAN5_VECS; r++) {
            V q = p[r * 32 + lane];
            x[r][0] = q.x;
            x[r][1] = q.y;
            x[r][2] = q.z;
            x[r][3] = q.w;
        }
    } else {
#pragma unroll
        for (int r = 0; r < SCAN5_VECS; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                size_t i = wbase + r * 128 + lane * 4 + c;
                x[r][c] = i < n ? in[i] : T(0);
            }
    }

    /* scan each row: within the thread (x becomes the thread's inclusive sums), then across
     * the warp; lane_off[r] is what comes before the thread's 4 elements inside the warp's part */
    T lane_off[SCAN5_VECS], carry = T(0);
#pragma unroll
    for (int r = 0; r < SCAN5_VECS; r++) {
        x[r][1] = add(x[r][0], x[r][1]);
        x[r][2] = add(x[r][1], x[r][2]);
        x[r][3] = add(x[r][2], x[r][3]);
        T inc = warp_inclusive(x[r][3]);
        T before = __shfl_up_sync(SCAN_FULL_MASK, inc, 1);
        lane_off[r] = add(carry, lane == 0 ? T(0) : before);
        carry = add(carry, __shfl_sync(SCAN_FULL_MASK, inc, 31)); /* the row's total */
    }

    /* the block: each warp's total, then what comes before each warp and the tile's total */
    if (lane == 0) s_warp[warp] = carry;
    __syncthreads();
    T warp_before = T(0), total = T(0);
#pragma unroll
    for (int w = 0; w < SCAN5_THREADS / 32; w++) {
        if (w < warp) warp_before = add(warp_before, s_warp[w]);
        total = add(total, s_warp[w]);
    }

    /* the look-back, as in version 4, but patient: it waits SCAN_FIRST_SLEEP_NS before its first
     * read and SCAN_SLEEP_NS between reads, so the status words that every waiting tile polls
     * (they live in one or two L2 slices) are read far less often (CUB's tuning waits too) */
    if (warp == 0) {
        T prefix = tile_prefix<T, SCAN_FIRST_SLEEP_NS, SCAN_SLEEP_NS>(status, tile, total);
        if (lane == 0) s_prefix = prefix;
    }
    __syncthreads();
    T start = add(s_prefix, warp_before);

    /* store: inclusive element c is start + lane_off + x[c]; exclusive, the one before it */
#pragma unroll
    for (int r = 0; r < SCAN5_VECS; r++) {
        T off = add(start, lane_off[r]);
        T o[4];
#pragma unroll
        for (int c = 0; c < 4; c++) o[c] = exclusive ? (c ? add(off, x[r][c - 1]) : off) : add(off, x[r][c]);
        if (full) {
            V q;
            q.x = o[0];
            q.y = o[1];
            q.z = o[2];
            q.w = o[3];
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

template <typename T> static cudaError_t launch5(int exclusive, const T *in, T *out, size_t n, void *scratch, size_t)
{
    return scan_lookback<T>(scan_kernel5<T>, SCAN5_TILE, SCAN5_THREADS, exclusive, in, out, n, scratch);
}
/* versions 3 and 4: a word per tile of SCAN_TILE (3's sums, 4's status); 5: per tile of its own */
static size_t scratch_tiles(size_t n) { return lookback_scratch(n, SCAN_TILE); }
static size_t scratch_tiles5(size_t n) { return lookback_scratch(n, SCAN5_TILE); }

/* ---------------------------------------------------------------- every version */

/* version 0: CUB, in scan_cub.cu, which takes the element type as SCAN_INT or SCAN_FLOAT */
static int scan_type_of(const int *) { return SCAN_INT; }
static int scan_type_of(const float *) { return SCAN_FLOAT; }
template <typename T>
static cudaError_t launch0(int exclusive, const T *in, T *out, size_t n, void *scratch, size_t bytes)
{
    return scan_cub(scan_type_of(in), exclusive, in, out, n, scratch, bytes);
}

/* scan_versions<T>::run[v] runs version v on elements of type T; scratch[v] gives the bytes of
 * device scratch it needs for n elements. To add a version: its kernel and launcher above, an
 * entry in each table, SCAN_VERSIONS, and a row in scan.c's table. */
template <typename T> struct scan_versions {
    typedef cudaError_t (*launcher)(int, const T *, T *, size_t, void *, size_t);
    static constexpr launcher run[] = {launch0<T>, launch1<T>, launch2<T>, launch3<T>, launch4<T>, launch5<T>};
};
static_assert(sizeof scan_versions<int>::run / sizeof scan_versions<int>::run[0] == SCAN_VERSIONS,
              "one launcher per version: SCAN_VERSIONS in scan_kernels.h");
static size_t (*const scratch[])(size_t) = {scan_cub_scratch_bytes, scratch_propagate, scratch_propagate,
                                            scratch_tiles,          scratch_tiles,     scratch_tiles5};
static_assert(sizeof scratch / sizeof scratch[0] == SCAN_VERSIONS, "one scratch size per version");

extern "C" size_t scan_scratch_bytes(int version, size_t n)
{
    return version < 0 || version >= SCAN_VERSIONS ? 0 : scratch[version](n);
}

extern "C" cudaError_t scan_launch(int version, int type, int exclusive, const void *d_in, void *d_out, size_t n,
                                   void *d_scratch, size_t scratch_bytes)
{
    if (version < 0 || version >= SCAN_VERSIONS) return cudaErrorInvalidValue;
    if (type == SCAN_INT)
        return scan_versions<int>::run[version](exclusive, (const int *)d_in, (int *)d_out, n, d_scratch, scratch_bytes);
    return scan_versions<float>::run[version](exclusive, (const float *)d_in, (float *)d_out, n, d_scratch,
                                              scratch_bytes);
}
