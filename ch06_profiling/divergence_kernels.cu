/* divergence_kernels.cu - the book's divergence test, made measurable.
 *
 * A warp issues one instruction for all its 32 lanes. When the lanes of one warp disagree at
 * a branch, the warp runs the first path with the other lanes masked off, then the second:
 * both paths' time. Branching on the thread's parity splits every warp; branching on the
 * warp's parity keeps each warp whole. Both kernels do exactly the same arithmetic.
 */
#include <cstdio>
#include "divergence_kernels.h"

__device__ __forceinline__ float path(float v, int which, int work)
{
    if (which == 0)
        for (int r = 0; r < work; r++) v = __fmaf_rn(PATH0_A, v, PATH0_B);
    else
        for (int r = 0; r < work; r++) v = __fmaf_rn(PATH1_A, v, PATH1_B);
    return v;
}

/* version 1: branch on the thread's parity */
__global__ void divergence_kernel1(float *x, size_t n, int work)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = path(x[i], threadIdx.x % 2, work); /* odd/even: divergent */
}

/* version 2: branch on the warp's parity */
__global__ void divergence_kernel2(float *x, size_t n, int work)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = path(x[i], (threadIdx.x / 32) % 2, work); /* whole warps: uniform */
}

__global__ void divergence_print_kernel(void)
{
    int lane = threadIdx.x % 32;
    if (threadIdx.x < 32 && lane % 2 == 0) printf("by thread: lane %2d takes path 0\n", lane);
    if (threadIdx.x < 32 && lane % 2 == 1) printf("by thread: lane %2d takes path 1\n", lane);
    __syncwarp();
    /* the lines above typically come out in two groups, every even lane then every odd one:
     * the warp ran one side of the branch, then the other */
    if ((threadIdx.x / 32) % 2 == 0 && lane == 0)
        printf("by warp: warp %d, all 32 lanes take path 0\n", threadIdx.x / 32);
    if ((threadIdx.x / 32) % 2 == 1 && lane == 0)
        printf("by warp: warp %d, all 32 lanes take path 1\n", threadIdx.x / 32);
}

extern "C" cudaError_t divergence_launch(int version, float *d_x, size_t n, int work, int block)
{
    unsigned int grid = (unsigned int)((n + block - 1) / block);
    switch (version) {
    case 1: divergence_kernel1<<<grid, block>>>(d_x, n, work); break;
    case 2: divergence_kernel2<<<grid, block>>>(d_x, n, work); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t divergence_print_launch(void)
{
    divergence_print_kernel<<<1, 64>>>();
    return cudaGetLastError();
}
