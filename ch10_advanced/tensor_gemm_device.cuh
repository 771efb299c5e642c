/* tensor_gemm_device.cuh - what tensor_gemm's two kernels files share (tensor_gemm_kernels.cu:
 * versions 1-2, tensor_gemm_hopper.cu: versions 3-10): the store of an accumulator pair into C. */
#ifndef TENSOR_GEMM_DEVICE_CUH
#define TENSOR_GEMM_DEVICE_CUH
#include <cuda_bf16.h>
#include <stdint.h> /* (nvcc includes cuda_runtime.h itself) */

/* Store two neighbouring accumulators (row r, columns c and c+1) where they fall inside C;
 * one 8-byte store when N is even (then r N + c is even and the address 8-byte aligned). */
__device__ __forceinline__ void store_pair(float *C, int M, int N, int r, int c, float v0, float v1)
{
    if (r >= M) return;
    float *p = C + (size_t)r * N + c;
    if ((N & 1) == 0 && c + 1 < N) {
        *reinterpret_cast<float2 *>(p) = make_float2(v0, v1);
    } else {
        if (c < N) p[0] = v0;
        if (c + 1 < N) p[1] = v1;
    }
}
/* The same into a bf16 C (fp8's): the pair rounded to nearest, one 4-byte store when N is even */
__device__ __forceinline__ void store_pair(__nv_bfloat16 *C, int M, int N, int r, int c, float v0, float v1)
{
    if (r >= M) return;
    __nv_bfloat16 *p = C + (size_t)r * N + c;
    if ((N & 1) == 0 && c + 1 < N) {
        *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(v0, v1);
    } else {
        if (c < N) p[0] = __float2bfloat16_rn(v0);
        if (c + 1 < N) p[1] = __float2bfloat16_rn(v1);
    }
}

#endif
