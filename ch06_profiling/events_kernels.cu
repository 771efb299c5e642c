/* events_kernels.cu - the kernel that events.c times: reps fused multiply-adds per element.
 * One thread per element; the loop makes its run time long enough to see, and scales with reps. */
#include "events_kernels.h"

__global__ void busy_kernel(float *x, size_t n, int reps, float a, float b)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int r = 0; r < reps; r++) v = __fmaf_rn(a, v, b); /* explicit FMA: the CPU does the same */
    x[i] = v;
}

extern "C" cudaError_t busy_launch(float *d_x, size_t n, int reps, float a, float b, int block)
{
    busy_kernel<<<(unsigned int)((n + block - 1) / block), block>>>(d_x, n, reps, a, b);
    return cudaGetLastError();
}
