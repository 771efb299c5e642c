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

__global__ void histogram_kernel1(const unsigned char *in, size_t n, unsigned int *hist)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        atomicAdd(&hist[in[i]], 1u);
}

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

/* blocks that fill the GPU once (common/labbook.c) */
static unsigned int full_grid(const void *kernel) { return lb_resident_blocks(kernel, HISTOGRAM_BLOCK, 0); }

extern "C" size_t histogram_scratch_bytes(int version, size_t n)
{
    return version == 0 ? histogram_cub_scratch_bytes(n) : 0; /* histogram_cub.cu */
}

extern "C" cudaError_t histogram_launch(int version, const unsigned char *d_in, size_t n, unsigned int *d_hist,
                                        void *d_scratch, size_t scratch_bytes)
{
    if (version == 0) return histogram_cub(d_in, n, d_hist, d_scratch, scratch_bytes); /* histogram_cub.cu */
    static const void *const kernels[HISTOGRAM_VERSIONS] = {
        NULL, (const void *)histogram_kernel1, (const void *)histogram_kernel2, (const void *)histogram_kernel3};
    if (version < 1 || version >= HISTOGRAM_VERSIONS) return cudaErrorInvalidValue;
    /* each version's grid, asked once and kept: the occupancy query is setup, not part of the
     * time of a histogram */
    static unsigned int grids[HISTOGRAM_VERSIONS];
    if (!grids[version]) grids[version] = full_grid(kernels[version]);
    cudaError_t e = cudaMemsetAsync(d_hist, 0, HISTOGRAM_BINS * sizeof(unsigned int), 0);
    if (e) return e;
    switch (version) {
    case 1: histogram_kernel1<<<grids[1], HISTOGRAM_BLOCK>>>(d_in, n, d_hist); break;
    case 2: histogram_kernel2<<<grids[2], HISTOGRAM_BLOCK>>>(d_in, n, d_hist); break;
    case 3: histogram_kernel3<<<grids[3], HISTOGRAM_BLOCK>>>(d_in, n, d_hist); break;
    }
    return cudaGetLastError();
}
