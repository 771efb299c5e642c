/* streams_kernels.cu - the kernel streams.c overlaps with copies: reps FMAs per element,
 * so that its time can be set to match the copies' time (--reps). */
#include "streams_kernels.h"

__global__ void work_kernel(float *x, size_t n, int reps)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int r = 0; r < reps; r++) v = __fmaf_rn(WORK_A, v, WORK_B);
    x[i] = v;
}

extern "C" cudaError_t work_launch(float *d_x, size_t n, int reps, cudaStream_t stream)
{
    work_kernel<<<(unsigned int)((n + 255) / 256), 256, 0, stream>>>(d_x, n, reps);
    return cudaGetLastError();
}
