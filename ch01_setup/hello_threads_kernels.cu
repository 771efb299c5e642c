/* hello_threads_kernels.cu - every thread of a 2D grid says who it is.
 *
 * A launch kernel<<<grid, block>>> runs grid.x * grid.y blocks of block.x * block.y threads.
 * Each thread knows blockIdx (its block in the grid), threadIdx (its place in the block),
 * blockDim and gridDim, and from them computes the element it owns:
 *
 *   x = blockIdx.x * blockDim.x + threadIdx.x          column over the whole grid
 *   y = blockIdx.y * blockDim.y + threadIdx.y          row over the whole grid
 *   index = y * (gridDim.x * blockDim.x) + x            row-major position
 *
 * The hardware runs a block as warps of 32 threads numbered by t = threadIdx.y * blockDim.x
 * + threadIdx.x: warp t / 32, lane t % 32. A warp executes one instruction at a time for all
 * its lanes.
 */
#include <cstdio>
#include "hello_threads_kernels.h"

__global__ void hello_kernel(int *who, int print)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int index = y * (gridDim.x * blockDim.x) + x;
    int t = threadIdx.y * blockDim.x + threadIdx.x; /* thread number inside the block */
    int b = blockIdx.y * gridDim.x + blockIdx.x;    /* block number inside the grid */
    who[index] = b * (blockDim.x * blockDim.y) + t;
    if (print)
        printf("block (%d,%d) thread (%d,%d): x = %d*%d+%d = %d, y = %d*%d+%d = %d, "
               "index = %d*%d+%d = %d, warp %d lane %d\n",
               blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y, blockIdx.x, blockDim.x, threadIdx.x, x, blockIdx.y,
               blockDim.y, threadIdx.y, y, y, gridDim.x * blockDim.x, x, index, t / 32, t % 32);
}

extern "C" cudaError_t hello_launch(int gx, int gy, int bx, int by, int *d_who, int print)
{
    hello_kernel<<<dim3(gx, gy), dim3(bx, by)>>>(d_who, print);
    return cudaGetLastError();
}
