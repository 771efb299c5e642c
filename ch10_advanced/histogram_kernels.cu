/* histogram_kernels.cu - a 256-bin histogram of n bytes.
 *
 *   1  global atomics: every byte is one atomicAdd on its bin in device memory; 256 addresses
 *      shared by the whole GPU, so threads wait on each other (worst when all bytes are equal)
 *   2  privatized in shared memory: each block counts into its own 256 bins with shared-memory
 *      atomics (on the SM, much cheaper), then adds its bins to the global ones: 256 global
 *      atomics per block instead of one per byte
 *   3  a sub-histogram per warp, 16-byte loads: each warp has its own 256 bins in shared memory
 *      (8 warps, 8 KB), so only the 32 lanes of one warp contend on a bin; each thread reads 16
 *      bytes at a time (uint4) in a grid-stride loop; a grid that fills the GPU once
 * 0 is cub::DeviceHistogram::HistogramEven (257 levels 0..256, one bin per byte value), in
 * histogram_cub.cu (CUB compiles slowly: apart, an edit here rebuilds in seconds).
 */
#include "histogram_kernels.h"
#include "labbook.h"

#define HISTOGRAM_BLOCK 256

/* Every version zeroes the bins, then runs its kernel over a grid of HISTOGRAM_BLOCK threads
 * that fills the GPU once (common/labbook.c), asked once and kept in *grid: the occupancy
 * query is setup, not part of a histogram's time. Each version's launcher (launchN, after its
 * kernel) calls this with its kernel. */
typedef void (*histogram_kernel)(const unsigned char *, size_t, unsigned int *);
static cudaError_t launch_filling(histogram_kernel kernel, unsigned int *grid, const unsigned char *d_in, size_t n,
                                  unsigned int *d_hist)
{
    if (!*grid) *grid = lb_resident_blocks((const void *)kernel, HISTOGRAM_BLOCK, 0);
    cudaError_t e = cudaMemsetAsync(d_hist, 0, HISTOGRAM_BINS * sizeof(unsigned int), 0);
    if (e) return e;
    kernel<<<*grid, HISTOGRAM_BLOCK>>>(d_in, n, d_hist);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- 1: global atomics */

__global__ void histogram_kernel1(const unsigned char *in, size_t n, unsigned int *hist)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        atomicAdd(&hist[in[i]], 1u);
}

static cudaError_t launch1(const unsigned char *d_in, size_t n, unsigned int *d_hist, void *, size_t)
{
    static unsigned int grid;
    return launch_filling(histogram_kernel1, &grid, d_in, n, d_hist);
}

/* ---------------------------------------------------------------- 2: privatized in shared memory */

__global__ void histogram_kernel2(const unsigned char *in, size_t n, unsigned int *hist)
{
    __shared__ unsigned int local[HISTOGRAM_BINS];
    for (int b = threadIdx.x; b < HISTOGRAM_BINS; b += blockDim.x) local[b] = 0;
    __syncthreads(); /* zeroed before anyone counts */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        atomicAdd(&local[in[i]], 1u);
    __syncthreads(); /* every count is in before the block's bins are added up */
    for (int b = threadIdx.x; b < HISTOGRAM_BINS; b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}

static cudaError_t launch2(const unsigned char *d_in, size_t n, unsigned int *d_hist, void *, size_t)
{
    static unsigned int grid;
    return launch_filling(histogram_kernel2, &grid, d_in, n, d_hist);
}

/* ---------------------------------------------------------------- 3: a sub-histogram per warp, 16-byte loads */

__device__ __forceinline__ void count_word(unsigned int *bins, unsigned int w)
{
    atomicAdd(&bins[w & 0xff], 1u);
    atomicAdd(&bins[(w >> 8) & 0xff], 1u);
    atomicAdd(&bins[(w >> 16) & 0xff], 1u);
    atomicAdd(&bins[w >> 24], 1u);
}

__global__ void __launch_bounds__(HISTOGRAM_BLOCK)
    histogram_kernel3(const unsigned char *in, size_t n, unsigned int *hist)
{
    __shared__ unsigned int warp_bins[HISTOGRAM_BLOCK / 32][HISTOGRAM_BINS];
    unsigned int *bins = warp_bins[threadIdx.x / 32];
    for (int b = threadIdx.x; b < (HISTOGRAM_BLOCK / 32) * HISTOGRAM_BINS; b += HISTOGRAM_BLOCK)
        (&warp_bins[0][0])[b] = 0;
    __syncthreads();
    const uint4 *in16 = (const uint4 *)in;
    size_t n16 = n / 16;
    for (size_t i = (size_t)blockIdx.x * HISTOGRAM_BLOCK + threadIdx.x; i < n16;
         i += (size_t)gridDim.x * HISTOGRAM_BLOCK) {
        uint4 q = in16[i]; /* 16 bytes in one load */
        count_word(bins, q.x);
        count_word(bins, q.y);
        count_word(bins, q.z);
        count_word(bins, q.w);
    }
    /* the last n % 16 bytes, by the first threads of block 0 */
    if (blockIdx.x == 0 && threadIdx.x < (n & 15)) atomicAdd(&bins[in[(n & ~(size_t)15) + threadIdx.x]], 1u);
    __syncthreads();
    /* add the 8 warps' bins, then one global atomic per bin per block */
    for (int b = threadIdx.x; b < HISTOGRAM_BINS; b += HISTOGRAM_BLOCK) {
        unsigned int s = 0;
        for (int w = 0; w < HISTOGRAM_BLOCK / 32; w++) s += warp_bins[w][b];
        if (s) atomicAdd(&hist[b], s);
    }
}

static cudaError_t launch3(const unsigned char *d_in, size_t n, unsigned int *d_hist, void *, size_t)
{
    static unsigned int grid;
    return launch_filling(histogram_kernel3, &grid, d_in, n, d_hist);
}

/* ---------------------------------------------------------------- every version */

/* launchers[v] runs version v (0: CUB, in histogram_cub.cu); scratch[v] says the bytes of device
 * scratch it needs. To add a version: its kernel and launcher above, an entry in each table,
 * HISTOGRAM_VERSIONS, and a row in histogram.c's table. */
typedef cudaError_t (*launcher)(const unsigned char *, size_t, unsigned int *, void *, size_t);
static const launcher launchers[] = {histogram_cub, launch1, launch2, launch3};
static_assert(sizeof launchers / sizeof launchers[0] == HISTOGRAM_VERSIONS,
              "one launcher per version: HISTOGRAM_VERSIONS in histogram_kernels.h");
static size_t no_scratch(size_t) { return 0; }
static size_t (*const scratch[])(size_t) = {histogram_cub_scratch_bytes, no_scratch, no_scratch, no_scratch};
static_assert(sizeof scratch / sizeof scratch[0] == HISTOGRAM_VERSIONS, "one scratch size per version");

extern "C" size_t histogram_scratch_bytes(int version, size_t n)
{
    return version < 0 || version >= HISTOGRAM_VERSIONS ? 0 : scratch[version](n);
}

extern "C" cudaError_t histogram_launch(int version, const unsigned char *d_in, size_t n, unsigned int *d_hist,
                                        void *d_scratch, size_t scratch_bytes)
{
    if (version < 0 || version >= HISTOGRAM_VERSIONS) return cudaErrorInvalidValue;
    return launchers[version](d_in, n, d_hist, d_scratch, scratch_bytes);
}
