/* contexts_kernels.cu - the book's multiply kernel for contexts.c: each element gets reps
 * fused multiply-adds, by a grid too small to fill the GPU, so that the kernels of several host
 * threads can run side by side (or not: that is the experiment).
 *
 * Reached two ways: linked into the program (mult_launch, the runtime API) and, for the threads
 * that make their own context, loaded by the driver from contexts_kernels.fatbin, which make
 * builds from this same file. So the kernel is extern "C": cuModuleGetFunction finds it as
 * "mult_kernel", its name unmangled.
 */
#include "contexts_kernels.h"

extern "C" __global__ void mult_kernel(float *x, int n, int reps)
{
    /* grid-stride: each thread walks the array with a stride of the whole grid */
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float v = x[i];
        for (int r = 0; r < reps; r++) v = __fmaf_rn(MULT_A, v, MULT_B); /* one rounding, as fmaf on the CPU */
        x[i] = v;
    }
}

extern "C" cudaError_t mult_launch(float *d_x, int n, int reps, int blocks, int threads, cudaStream_t stream)
{
    mult_kernel<<<blocks, threads, 0, stream>>>(d_x, n, reps);
    return cudaGetLastError();
}
