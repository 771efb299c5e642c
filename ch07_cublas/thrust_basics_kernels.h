/* thrust_basics_kernels.h - C launchers for thrust_basics_kernels.cu, where Thrust (and CUB, the
 * baseline for sorting) live. Thrust is C++ templates; these functions hide them behind plain C
 * so that the host program stays C. Each returns a cudaError_t and never throws: Thrust reports
 * CUDA errors as C++ exceptions, which the launchers catch and turn back into error codes. */
#ifndef THRUST_BASICS_KERNELS_H
#define THRUST_BASICS_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* The dot product's ways, thrust_basics.c's version table (0, cublasSdot, is on the host side). */
#define THRUST_BASICS_VERSIONS 4
enum { DOT_CUBLAS, DOT_TRANSFORM_THEN_REDUCE, DOT_INNER_PRODUCT, DOT_TRANSFORM_REDUCE };

/* y = a x + y on device arrays (thrust::transform with a saxpy functor) */
cudaError_t thrust_saxpy(float a, const float *d_x, float *d_y, size_t n);
/* The same the book's way, from host arrays: thrust::device_vector uploads x and y, transform,
 * thrust::copy brings y back. Allocation and copies are the vectors' own. */
cudaError_t thrust_saxpy_host(float a, const float *h_x, float *h_y, size_t n);

/* *result = sum x[i] y[i] by one of the Thrust ways (DOT_...): transform into d_tmp (n floats)
 * then reduce; inner_product; transform_reduce over zipped x and y. Returns to the host: the
 * call waits for the GPU, as cublasSdot does in host pointer mode. */
cudaError_t thrust_dot(int way, const float *d_x, const float *d_y, float *d_tmp, size_t n, float *result);

/* y[i] = max(x[0..i]) (thrust::inclusive_scan with thrust::maximum: the book's max-scan) */
cudaError_t thrust_max_scan(const float *d_x, float *d_y, size_t n);
/* *sum = x[0] + ... + x[n-1], accumulated in 64 bits (thrust::reduce with an init of long long) */
cudaError_t thrust_sum_ints(const int *d_x, size_t n, long long *sum);

/* keys sorted in place, ascending (thrust::sort; radix sort for 32-bit keys). With cached = 0
 * Thrust allocates its temporary storage in each call (cudaMalloc, cudaFree: what a plain call
 * costs); with cached = 1 it takes it from a cache that keeps the blocks of earlier calls
 * (thrust_cache_release frees them), as CUB's caller does by hand. */
cudaError_t thrust_sort_keys(unsigned *d_keys, size_t n, int cached);
/* keys sorted in place, vals moved with them (thrust::sort_by_key); cached as above */
cudaError_t thrust_sort_pairs(unsigned *d_keys, unsigned *d_vals, size_t n, int cached);
/* the cache's blocks freed */
cudaError_t thrust_cache_release(void);
/* For each run of equal consecutive keys: its key and the sum of its values
 * (thrust::reduce_by_key); *runs = how many runs were written. */
cudaError_t thrust_sum_runs(const int *d_keys, const int *d_vals, size_t n, int *d_run_keys, int *d_run_sums,
                            size_t *runs);

/* The baseline: CUB's radix sort from keys_in to keys_out (vals_in to vals_out when not NULL),
 * with temporary storage the caller allocated once: cub_sort_temp_bytes tells how much. */
cudaError_t cub_sort_temp_bytes(size_t n, int pairs, size_t *bytes);
cudaError_t cub_sort(const unsigned *d_keys_in, unsigned *d_keys_out, const unsigned *d_vals_in, unsigned *d_vals_out,
                     size_t n, void *d_temp, size_t temp_bytes);

#ifdef __cplusplus
}
#endif
#endif
