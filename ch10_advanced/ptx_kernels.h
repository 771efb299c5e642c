/* ptx_kernels.h - launcher for ptx_kernels.cu (callable from C). */
#ifndef PTX_KERNELS_H
#define PTX_KERNELS_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* What each thread i of the test kernel computes with inline PTX, from inputs a[i], b[i], c[i]. */
typedef struct {
    unsigned int lane, warp, sm;  /* %laneid, %warpid, %smid */
    uint64_t sum_lo, sum_hi;      /* (a,b as 64-bit halves) + (c,a): 128-bit add.cc / addc */
    float fma;                    /* fma.rn.f32 of the float inputs */
    unsigned int bfe, prmt, lop3; /* bfe.u32, prmt.b32, lop3.b32 (majority) */
    double shuffled;              /* the next lane's double, moved as two 32-bit halves */
    double shuffled_ref;          /* the same with __shfl_sync(double) */
} ptx_out;

/* n threads; the inputs are n each (u32 a, b, c; floats x, y, z; doubles d) */
cudaError_t ptx_launch(const unsigned int *d_a, const unsigned int *d_b, const unsigned int *d_c, const float *d_x,
                       const float *d_y, const float *d_z, const double *d_d, ptx_out *d_out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
