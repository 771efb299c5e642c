/* map_reduce_kernels.h - launchers for map_reduce_kernels.cu (callable from C). */
#ifndef MAP_REDUCE_KERNELS_H
#define MAP_REDUCE_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* the scan operators: each is associative and has an identity (0, INT_MIN, INT_MAX) */
typedef enum { SCAN_SUM, SCAN_MAX, SCAN_MIN } scan_op;

/* map: z[i] = a * x[i] + y[i], the elementwise kernel instantiated for "saxpy" */
cudaError_t map_saxpy_launch(const float *d_x, const float *d_y, float *d_z, float a, size_t n);

/* inclusive scan of n ints with op: out[i] = in[0] op in[1] op ... op in[i]. d_tmp holds the
 * block totals of every level: map_scan_tmp_ints(n) ints. */
size_t map_scan_tmp_ints(size_t n);
cudaError_t map_scan_launch(scan_op op, const int *d_in, int *d_out, size_t n, int *d_tmp);

/* map-reduce: *d_result = sum of x[i] * y[i] (the dot product), in two passes: partial sums
 * per block into d_partials (MAP_REDUCE_BLOCKS floats), then one block adds those. */
#define MAP_REDUCE_BLOCKS 1024
cudaError_t map_dot_launch(const float *d_x, const float *d_y, size_t n, float *d_partials, float *d_result);

#ifdef __cplusplus
}
#endif
#endif
