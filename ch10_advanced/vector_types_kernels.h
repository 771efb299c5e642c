/* vector_types_kernels.h - launchers for vector_types_kernels.cu (callable from C). */
#ifndef VECTOR_TYPES_KERNELS_H
#define VECTOR_TYPES_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

enum {
    VT_FLOAT = 0,
    VT_FLOAT2 = 1,
    VT_FLOAT4 = 2,
    VT_INT4 = 3,
    VT_DOUBLE2 = 4,
    VT_FLOAT_X4 = 5,
    VT_FLOAT4_X4 = 6,
    VT_COUNT = 7
};

/* y = a * x for n floats (a = 1: a copy), each thread moving one element of type `vt`
 * (VT_INT4 and VT_DOUBLE2: copy only, a is ignored); the _X4 kinds move four elements per
 * thread per loop trip, their four loads issued before the stores. The n % width elements past the last
 * whole vector are handled one float at a time. Pointers from cudaMalloc (256-byte aligned). */
cudaError_t vt_launch(int vt, const float *d_x, float *d_y, size_t n, float a);

#ifdef __cplusplus
}
#endif
#endif
