/* dynamic_parallelism_kernels.cu - kernels that launch kernels (CUDA dynamic parallelism).
 *
 *   hello_kernel       the book's recursive hello: each level's thread 0 launches the next level
 *   quicksort_kernel   quicksort where each partition step is a one-thread kernel that launches
 *                      one child grid per half; a depth limit and a heapsort fallback bound it
 *                      (the book's version has no limit: enough levels exhaust the launch queue)
 *   mariani_kernel     Mariani-Silver Mandelbrot: a block that finds one dwell all around its
 *                      square's border fills the square without computing it; otherwise it
 *                      launches a child grid, one block per quarter
 * Since CUDA 12 a parent cannot wait for its children inside a kernel (no device-side
 * cudaDeviceSynchronize): children go into the cudaStreamFireAndForget stream, and the launch
 * that the host waits for completes only once all its descendants have.
 */
#include "dynamic_parallelism_kernels.h"
#include <stdio.h>

/* ---------------------------------------------------------------- recursive hello */

__global__ void hello_kernel(int depth, int max_depth, int print, unsigned int *count)
{
    atomicAdd(count, 1u);
    if (print) printf("hello from thread %d at depth %d\n", threadIdx.x, depth);
    if (threadIdx.x == 0 && depth < max_depth)
        hello_kernel<<<1, HELLO_THREADS, 0, cudaStreamFireAndForget>>>(depth + 1, max_depth, print, count);
}

extern "C" cudaError_t hello_launch(int max_depth, int print, unsigned int *d_count)
{
    hello_kernel<<<1, HELLO_THREADS>>>(1, max_depth, print, d_count);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- quicksort */

__device__ void insertion_sort(int *a, int lo, int hi)
{
    for (int i = lo + 1; i < hi; i++) {
        int v = a[i], j = i - 1;
        while (j >= lo && a[j] > v) a[j + 1] = a[j], j--;
        a[j + 1] = v;
    }
}

/* heapsort of a[lo..hi): O(m log m) with no recursion, the fallback when no more launches */
__device__ void sift_down(int *a, int lo, int root, int end)
{
    for (;;) {
        int child = 2 * root + 1;
        if (child >= end) return;
        if (child + 1 < end && a[lo + child + 1] > a[lo + child]) child++;
        if (a[lo + root] >= a[lo + child]) return;
        int t = a[lo + root];
        a[lo + root] = a[lo + child];
        a[lo + child] = t;
        root = child;
    }
}

__device__ void heap_sort(int *a, int lo, int hi)
{
    int m = hi - lo;
    for (int r = m / 2 - 1; r >= 0; r--) sift_down(a, lo, r, m);
    for (int end = m - 1; end > 0; end--) {
        int t = a[lo];
        a[lo] = a[lo + end];
        a[lo + end] = t;
        sift_down(a, lo, 0, end);
    }
}

__global__ void quicksort_kernel(int *a, int lo, int hi, int depth, int max_depth, int *error)
{
    if (hi - lo <= QS_SMALL) {
        insertion_sort(a, lo, hi);
        return;
    }
    if (depth >= max_depth) {
        heap_sort(a, lo, hi);
        return;
    }
    /* median of three as the pivot: sorted, reversed and random inputs all split evenly */
    int mid = lo + (hi - lo) / 2, x = a[lo], y = a[mid], z = a[hi - 1];
    int pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    /* Hoare's partition: equal keys are spread over both sides, so all-equal inputs split evenly too */
    int i = lo - 1, j = hi;
    for (;;) {
        do i++;
        while (a[i] < pivot);
        do j--;
        while (a[j] > pivot);
        if (i >= j) break;
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
    /* [lo, j] <= pivot <= [j+1, hi): sort the halves in two child grids */
    quicksort_kernel<<<1, 1, 0, cudaStreamFireAndForget>>>(a, lo, j + 1, depth + 1, max_depth, error);
    if (cudaGetLastError() != cudaSuccess) {
        *error = 1;
        heap_sort(a, lo, j + 1);
    }
    quicksort_kernel<<<1, 1, 0, cudaStreamFireAndForget>>>(a, j + 1, hi, depth + 1, max_depth, error);
    if (cudaGetLastError() != cudaSuccess) {
        *error = 1;
        heap_sort(a, j + 1, hi);
    }
}

extern "C" cudaError_t quicksort_launch(int *d_data, int n, int max_depth, int *d_error)
{
    quicksort_kernel<<<1, 1>>>(d_data, 0, n, 0, max_depth, d_error);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- Mandelbrot */

/* The dwell of a pixel, and the plain kernel (one thread per pixel), are compiled_code's:
 * mandel_dwell and mandelbrot_kernel, with one rounding per operation and no FMA. */
#include "mandelbrot_kernel.cu"

#define DP_MARIANI_BLOCK 16 /* threads per side of a block: 256 threads */
#define DP_MARIANI_MIN 16   /* squares this small are computed pixel by pixel */
#define DP_DIFFERENT -1

/* Block (bx, by) of this grid owns the square of side d at (x0 + bx d, y0 + by d), cut to the
 * image: an ex x ey rectangle. Its border is what must agree: for a square that sticks out of
 * the image, the image's edge is part of that border. */
__global__ void mariani_kernel(int *dwell, int w, int h, float x_min, float y_min, float step, int max_iter, int x0,
                               int y0, int d, int depth, int max_depth)
{
    x0 += blockIdx.x * d;
    y0 += blockIdx.y * d;
    if (x0 >= w || y0 >= h) return; /* a quarter entirely outside the image */
    int ex = w - x0 < d ? w - x0 : d, ey = h - y0 < d ? h - y0 : d;
    int tid = threadIdx.y * blockDim.x + threadIdx.x, nt = blockDim.x * blockDim.y;
    __shared__ int common;
    if (tid == 0) common = -2; /* no border pixel seen yet */
    __syncthreads();
    /* the rectangle's border: the top row, the bottom row, then the two sides between them */
    int rows = ey > 1 ? 2 : 1, cols = ex > 1 ? 2 : 1;
    int border = rows * ex + (ey > 2 ? (ey - 2) * cols : 0);
    for (int k = tid; k < border; k += nt) {
        int px, py;
        if (k < rows * ex)
            px = x0 + k % ex, py = k < ex ? y0 : y0 + ey - 1;
        else {
            int m = k - rows * ex;
            px = (m % cols) ? x0 + ex - 1 : x0;
            py = y0 + 1 + m / cols;
        }
        int v = mandel_dwell(px, py, x_min, y_min, step, max_iter);
        /* agree on one value: the first writer sets it, anyone different marks DP_DIFFERENT */
        int old = atomicCAS(&common, -2, v);
        if (old != -2 && old != v) atomicExch(&common, DP_DIFFERENT);
    }
    __syncthreads();
    int c = common;
    if (c >= 0) { /* one dwell all around: fill the rectangle */
        for (int k = tid; k < ex * ey; k += nt) dwell[(size_t)(y0 + k / ex) * w + x0 + k % ex] = c;
    } else if (depth + 1 < max_depth && d / 2 > DP_MARIANI_MIN && d % 2 == 0) {
        if (tid == 0) /* four quarters, one block each */
            mariani_kernel<<<dim3(2, 2), dim3(DP_MARIANI_BLOCK, DP_MARIANI_BLOCK), 0, cudaStreamFireAndForget>>>(
                dwell, w, h, x_min, y_min, step, max_iter, x0, y0, d / 2, depth + 1, max_depth);
    } else { /* small enough: every pixel */
        for (int k = tid; k < ex * ey; k += nt) {
            int px = x0 + k % ex, py = y0 + k / ex;
            dwell[(size_t)py * w + px] = mandel_dwell(px, py, x_min, y_min, step, max_iter);
        }
    }
}

extern "C" cudaError_t mandel_dp_launch(int mariani, int *d_dwell, int w, int h, float x_min, float y_min, float step,
                                        int max_iter, int max_depth)
{
    if (!mariani) {
        dim3 block(16, 16), grid((w + 15) / 16, (h + 15) / 16);
        mandelbrot_kernel<<<grid, block>>>(d_dwell, w, h, x_min, y_min, step, max_iter);
        return cudaGetLastError();
    }
    /* the top level: squares of side d = 256 (a power of two, so quarters divide evenly) */
    int d = 256;
    dim3 grid((w + d - 1) / d, (h + d - 1) / d);
    mariani_kernel<<<grid, dim3(DP_MARIANI_BLOCK, DP_MARIANI_BLOCK)>>>(d_dwell, w, h, x_min, y_min, step, max_iter, 0,
                                                                       0, d, 0, max_depth);
    return cudaGetLastError();
}
