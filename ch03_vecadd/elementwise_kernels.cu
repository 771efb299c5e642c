/* elementwise_kernels.cu - the two elementwise kernels of elementwise.c, one thread per element.
 *
 *   scale  y = a * x        (the book's gpuarray `x_gpu * 2`)   8 bytes moved per element
 *   saxpy  y = a * x + y    (BLAS level 1)                     12 bytes moved per element
 *
 * Both do one or two flops per 8-12 bytes: memory decides their speed, not arithmetic.
 */
#include "elementwise_kernels.h"

__global__ void scale_kernel(float a, const float *x, float *y, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

__global__ void saxpy_kernel(float a, const float *x, float *y, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    /* nvcc fuses a * x + y into one FMA instruction (one rounding); the CPU reference
     * rounds twice, hence the 1e-6 tolerance in elementwise.c */
    if (i < n) y[i] = a * x[i] + y[i];
}

static unsigned int blocks_for(size_t n, int block) { return (unsigned int)((n + (size_t)block - 1) / (size_t)block); }

extern "C" cudaError_t scale_launch(float a, const float *d_x, float *d_y, size_t n, int block)
{
    scale_kernel<<<blocks_for(n, block), block>>>(a, d_x, d_y, n);
    return cudaGetLastError();
}

extern "C" cudaError_t saxpy_launch(float a, const float *d_x, float *d_y, size_t n, int block)
{
    saxpy_kernel<<<blocks_for(n, block), block>>>(a, d_x, d_y, n);
    return cudaGetLastError();
}
