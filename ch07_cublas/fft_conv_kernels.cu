/* fft_conv_kernels.cu - the two kernels of fft_conv.c:
 *   pointwise_mul_kernel   the spectrum product of the FFT path (float2 complex multiply)
 *   direct_conv_kernel     2D convolution the direct way: each block stages its output tile plus
 *                          a halo of r pixels in shared memory, then every thread sums
 *                          (2r+1)^2 products from there; the weights are read from global memory
 *                          (all lanes read the same weight at once: one broadcast load)
 */
#include "fft_conv_kernels.h"

__global__ void pointwise_mul_kernel(cufftComplex *spec, const cufftComplex *filter, size_t n, float scale)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    cufftComplex a = spec[i], b = filter[i];
    spec[i] = make_float2((a.x * b.x - a.y * b.y) * scale, (a.x * b.y + a.y * b.x) * scale);
}

extern "C" cudaError_t pointwise_mul_launch(cufftComplex *d_spec, const cufftComplex *d_filter, size_t n, float scale,
                                            cudaStream_t stream)
{
    pointwise_mul_kernel<<<(unsigned int)((n + 255) / 256), 256, 0, stream>>>(d_spec, d_filter, n, scale);
    return cudaGetLastError();
}

__global__ void direct_conv_kernel(const float *img, float *out, int W, int H, const float *w, int r)
{
    extern __shared__ float tile[]; /* (FFT_CONV_TILE + 2r) x (FFT_CONV_TILE + 2r): the output tile and its halo */
    int span = FFT_CONV_TILE + 2 * r;
    int x0 = blockIdx.x * FFT_CONV_TILE - r,
        y0 = blockIdx.y * FFT_CONV_TILE - r; /* the tile's top-left, in the image */
    /* the whole block loads the span x span pixels, zero outside the image */
    for (int i = threadIdx.y * FFT_CONV_TILE + threadIdx.x; i < span * span; i += FFT_CONV_TILE * FFT_CONV_TILE) {
        int ty = i / span, tx = i % span, y = y0 + ty, x = x0 + tx;
        tile[i] = (x >= 0 && x < W && y >= 0 && y < H) ? img[(size_t)y * W + x] : 0.0f;
    }
    __syncthreads(); /* every pixel of the halo is in place before anyone sums */

    int x = blockIdx.x * FFT_CONV_TILE + threadIdx.x, y = blockIdx.y * FFT_CONV_TILE + threadIdx.y;
    if (x >= W || y >= H) return;
    float sum = 0.0f;
    int n = 2 * r + 1;
    for (int dy = 0; dy < n; dy++) {
        const float *row = tile + (threadIdx.y + dy) * span + threadIdx.x;
        const float *wr = w + dy * n;
        for (int dx = 0; dx < n; dx++) sum += row[dx] * __ldg(wr + dx);
    }
    out[(size_t)y * W + x] = sum;
}

extern "C" cudaError_t direct_conv_launch(const float *d_img, float *d_out, int W, int H, const float *d_w, int r,
                                          cudaStream_t stream)
{
    if (r < 0 || r > DIRECT_MAX_R) return cudaErrorInvalidValue;
    size_t smem = sizeof(float) * (size_t)(FFT_CONV_TILE + 2 * r) * (FFT_CONV_TILE + 2 * r);
    /* beyond 48 KB a kernel must opt in to the larger shared memory */
    cudaError_t e = cudaFuncSetAttribute(direct_conv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e) return e;
    dim3 block(FFT_CONV_TILE, FFT_CONV_TILE),
        grid((W + FFT_CONV_TILE - 1) / FFT_CONV_TILE, (H + FFT_CONV_TILE - 1) / FFT_CONV_TILE);
    direct_conv_kernel<<<grid, block, smem, stream>>>(d_img, d_out, W, H, d_w, r);
    return cudaGetLastError();
}
