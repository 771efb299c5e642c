/* mandelbrot_kernels.cu - escape-time Mandelbrot on the GPU, one thread per pixel.
 *
 *   1  1D grid over the flattened image (the book's ElementwiseKernel): a warp is 32 pixels of a row
 *   2  2D blocks of 8x4-pixel warps: neighbouring pixels escape at similar times, so a square
 *      warp wastes fewer lanes waiting for its slowest pixel than a 32x1 strip does
 *   3  as 2, testing for escape only every 8 iterations (4 FP operations per iteration instead
 *      of 6), stepping back to the last test when the orbit escaped inside the 8
 *
 * Every version performs the same floating-point operations as mandelbrot_cpu in
 * mandelbrot.c, through explicit fused multiply-adds (__fmaf_rn, fmaf in C), so the GPU and
 * CPU images are equal pixel for pixel: no compiler contraction may change a rounding.
 */
#include "mandelbrot_kernels.h"

/* ---------------------------------------------------------------- one pixel */

__device__ __forceinline__ float point_re(const mandel_view &v, int x)
{
    return __fmaf_rn((float)x + 0.5f, v.dx, v.x0);
}
__device__ __forceinline__ float point_im(const mandel_view &v, int y)
{
    return __fmaf_rn((float)y + 0.5f, -v.dy, v.y0);
}

/* One iteration z <- z*z + c, in the same operations as mandelbrot.c:
 *   re(z*z + c) = zr*zr - zi*zi + cr  = fma(zr, zr, fma(-zi, zi, cr))
 *   im(z*z + c) = 2*zr*zi + ci        = fma(zr + zr, zi, ci)           (zr + zr is exact) */
__device__ __forceinline__ void step(float &zr, float &zi, float cr, float ci)
{
    float t = __fmaf_rn(-zi, zi, cr);
    zi = __fmaf_rn(zr + zr, zi, ci);
    zr = __fmaf_rn(zr, zr, t);
}

/* |z|^2 > 4, written so that NaN or Inf (an orbit that overflowed) also counts as escaped */
__device__ __forceinline__ bool escaped(float zr, float zi) { return !(__fmaf_rn(zr, zr, __fmul_rn(zi, zi)) <= 4.0f); }

__device__ int escape_count(float cr, float ci, int max_iter)
{
    float zr = 0.0f, zi = 0.0f;
    int n = 0;
    while (n < max_iter && !escaped(zr, zi)) {
        step(zr, zi, cr, ci);
        n++;
    }
    return n;
}

/* The same count, testing only every CHECK_EVERY (8) steps. This is exact because an orbit that has left
 * the disc |z| <= 2 never comes back: |z*z + c| >= |z|^2 - |c|, which is > |z| when |z| > 2
 * and |c| <= 2; and when |c| > 2 the orbit starts at z = c and every |z| >= |c| > 2 grows the
 * same way. So if z is inside after CHECK_EVERY unchecked steps, it was inside after each of them.
 * When it is outside, go back to the state saved before them and redo them one at a time
 * to find the exact step. (Rounding could break this only for an orbit within an ulp of
 * |z| = 2 growing by less than an ulp; the test compares every pixel with the CPU.) */
#ifndef CHECK_EVERY
#define CHECK_EVERY 8 /* tunable: make CHECK_EVERY=16 */
#endif
__device__ int escape_count_batched(float cr, float ci, int max_iter)
{
    float zr = 0.0f, zi = 0.0f;
    int n = 0;
    if (escaped(zr, zi)) return 0;
    while (n + CHECK_EVERY <= max_iter) {
        float sr = zr, si = zi;
#pragma unroll
        for (int k = 0; k < CHECK_EVERY; k++) step(zr, zi, cr, ci);
        if (escaped(zr, zi)) { /* left somewhere in these 8: replay them checked */
            zr = sr;
            zi = si;
            break;
        }
        n += CHECK_EVERY;
    }
    while (n < max_iter && !escaped(zr, zi)) {
        step(zr, zi, cr, ci);
        n++;
    }
    return n;
}

/* ---------------------------------------------------------------- kernels */

__global__ void mandelbrot_kernel1(mandel_view v, int *counts)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)v.width * v.height) return;
    int x = (int)(i % v.width), y = (int)(i / v.width);
    counts[i] = escape_count(point_re(v, x), point_im(v, y), v.max_iter);
}

/* Block of 32 x 8 threads: warp w of the block is rows 4w'..4w'+3 of an 8-wide column, so
 * each warp covers an 8x4 square of pixels. Thread (lane) -> pixel: lane % 8, lane / 8. */
#define MANDELBROT_BLOCK_W 32
#define MANDELBROT_BLOCK_H 8
__device__ __forceinline__ void square_warp_pixel(int &x, int &y)
{
    int t = threadIdx.y * MANDELBROT_BLOCK_W + threadIdx.x; /* 0..255 */
    int warp = t / 32, lane = t % 32;
    int wx = warp % (MANDELBROT_BLOCK_W / 8), wy = warp / (MANDELBROT_BLOCK_W / 8); /* 4 x 2 warps per block */
    x = blockIdx.x * MANDELBROT_BLOCK_W + wx * 8 + lane % 8;
    y = blockIdx.y * MANDELBROT_BLOCK_H + wy * 4 + lane / 8;
}

__global__ void mandelbrot_kernel2(mandel_view v, int *counts)
{
    int x, y;
    square_warp_pixel(x, y);
    if (x >= v.width || y >= v.height) return;
    counts[(long long)y * v.width + x] = escape_count(point_re(v, x), point_im(v, y), v.max_iter);
}

__global__ void mandelbrot_kernel3(mandel_view v, int *counts)
{
    int x, y;
    square_warp_pixel(x, y);
    if (x >= v.width || y >= v.height) return;
    counts[(long long)y * v.width + x] = escape_count_batched(point_re(v, x), point_im(v, y), v.max_iter);
}

/* ---------------------------------------------------------------- launchers */

extern "C" cudaError_t mandelbrot_launch(int version, mandel_view v, int *d_counts)
{
    dim3 block2d(MANDELBROT_BLOCK_W, MANDELBROT_BLOCK_H);
    dim3 grid2d((v.width + MANDELBROT_BLOCK_W - 1) / MANDELBROT_BLOCK_W,
                (v.height + MANDELBROT_BLOCK_H - 1) / MANDELBROT_BLOCK_H);
    long long pixels = (long long)v.width * v.height;
    switch (version) {
    case 1: mandelbrot_kernel1<<<(unsigned)((pixels + 255) / 256), 256>>>(v, d_counts); break;
    case 2: mandelbrot_kernel2<<<grid2d, block2d>>>(v, d_counts); break;
    case 3: mandelbrot_kernel3<<<grid2d, block2d>>>(v, d_counts); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
