/* occupancy_kernels.cu - two kernels with different appetites for registers, for occupancy.c.
 *
 *   1  light: one multiply-add per element, a handful of registers
 *   2  register-heavy: OCCUPANCY_CHAINS independent chains of FMAs per element, each in its own
 *      register, so the compiler needs many registers per thread
 * Both may be given dynamic shared memory they do not use, to show shared memory limiting
 * how many blocks fit on an SM.
 */
#include "occupancy_kernels.h"

/* version 1, light */
__global__ void occupancy_kernel1(const float *x, float *y, size_t n)
{
    extern __shared__ float unused[];
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __fmaf_rn(2.0f, x[i], 1.0f);
}

/* version 2, register-heavy */
__global__ void occupancy_kernel2(const float *x, float *y, size_t n, int work)
{
    extern __shared__ float unused[];
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc[OCCUPANCY_CHAINS];
#pragma unroll
    for (int c = 0; c < OCCUPANCY_CHAINS; c++) acc[c] = v + (float)c;
    for (int r = 0; r < work; r++)
#pragma unroll
        for (int c = 0; c < OCCUPANCY_CHAINS; c++) acc[c] = __fmaf_rn(acc[c], 0.999f, 0.001f * (float)(c + 1));
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < OCCUPANCY_CHAINS; c++) s += acc[c]; /* in order: the CPU adds the same way */
    y[i] = s;
}

extern "C" cudaError_t occupancy_launch(int version, const float *d_x, float *d_y, size_t n, int work, int block,
                                        size_t smem)
{
    unsigned int grid = (unsigned int)((n + block - 1) / block);
    if (version == 1)
        occupancy_kernel1<<<grid, block, smem>>>(d_x, d_y, n);
    else
        occupancy_kernel2<<<grid, block, smem>>>(d_x, d_y, n, work);
    return cudaGetLastError();
}

extern "C" cudaError_t occupancy_query(int version, int block, size_t smem, int *blocks_per_sm, int *regs_per_thread,
                                       size_t *static_smem)
{
    const void *fn = version == 1 ? (const void *)occupancy_kernel1 : (const void *)occupancy_kernel2;
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, fn);
    if (e != cudaSuccess) return e;
    *regs_per_thread = attr.numRegs;
    *static_smem = attr.sharedSizeBytes;
    if (smem > 48 * 1024) { /* beyond 48 KB a kernel must opt in */
        e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, fn, block, smem);
}
