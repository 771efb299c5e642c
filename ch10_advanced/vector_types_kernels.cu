/* vector_types_kernels.cu - the same copy (or scale) with 4-, 8- and 16-byte accesses.
 *
 * A float load is a 32-bit LDG; float2 a 64-bit one; float4, int4 and double2 are all one
 * 128-bit LDG.E.128 (cuobjdump --dump-sass shows the width). Fewer, wider instructions move
 * the same bytes with a quarter of the instructions and of the memory transactions in flight
 * per byte. What a memory-bound kernel needs most is enough bytes in flight: the _x4 versions
 * keep four loads in flight per thread (float x4: 16 bytes, like one float4). A vector access must be aligned to its
 * size (16 bytes for float4): cudaMalloc's pointers are; an offset pointer would not be.
 */
#include "vector_types_kernels.h"

#define VECTOR_TYPES_BLOCK 256

template <typename V> __device__ __forceinline__ V scale(V v, float a);
template <> __device__ __forceinline__ float scale(float v, float a) { return a * v; }
template <> __device__ __forceinline__ float2 scale(float2 v, float a) { return make_float2(a * v.x, a * v.y); }
template <> __device__ __forceinline__ float4 scale(float4 v, float a)
{
    return make_float4(a * v.x, a * v.y, a * v.z, a * v.w);
}
template <> __device__ __forceinline__ int4 scale(int4 v, float) { return v; }       /* copy only */
template <> __device__ __forceinline__ double2 scale(double2 v, float) { return v; } /* copy only */

/* WIDTH floats per element of V; the tail (n % WIDTH floats) one float at a time. Each thread
 * handles UNROLL elements per trip round the grid-stride loop, all loads before any store:
 * UNROLL loads in flight per thread instead of one. */
template <typename V, int WIDTH, int UNROLL> __global__ void vt_kernel(const float *x, float *y, size_t n, float a)
{
    const V *xv = (const V *)x;
    V *yv = (V *)y;
    size_t nv = n / WIDTH, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += stride * UNROLL) {
        V v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (i + u * stride < nv) v[u] = xv[i + u * stride];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (i + u * stride < nv) yv[i + u * stride] = scale(v[u], a);
    }
    size_t t = nv * WIDTH + (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) y[t] = a * x[t]; /* a = 1 (a copy): 1 * x is x, bit for bit */
}

template <typename V, int WIDTH, int UNROLL = 1> static cudaError_t launch(const float *x, float *y, size_t n, float a)
{
    size_t nv = n / WIDTH;
    size_t blocks = (nv + VECTOR_TYPES_BLOCK * UNROLL - 1) / (VECTOR_TYPES_BLOCK * UNROLL);
    if (blocks > 132 * 16) blocks = 132 * 16; /* grid-stride: a few waves on the largest GPU */
    if (blocks == 0) blocks = 1;              /* the tail alone */
    vt_kernel<V, WIDTH, UNROLL><<<(unsigned int)blocks, VECTOR_TYPES_BLOCK>>>(x, y, n, a);
    return cudaGetLastError();
}

extern "C" cudaError_t vt_launch(int vt, const float *d_x, float *d_y, size_t n, float a)
{
    switch (vt) {
    case VT_FLOAT: return launch<float, 1>(d_x, d_y, n, a);
    case VT_FLOAT2: return launch<float2, 2>(d_x, d_y, n, a);
    case VT_FLOAT4: return launch<float4, 4>(d_x, d_y, n, a);
    case VT_INT4: return launch<int4, 4>(d_x, d_y, n, 1.0f);
    case VT_DOUBLE2: return launch<double2, 4>(d_x, d_y, n, 1.0f);
    case VT_FLOAT_X4: return launch<float, 1, 4>(d_x, d_y, n, a);
    case VT_FLOAT4_X4: return launch<float4, 4, 4>(d_x, d_y, n, a);
    default: return cudaErrorInvalidValue;
    }
}
