/* histogram_kernels.h - launchers for histogram_kernels.cu (callable from C). */
#ifndef HISTOGRAM_KERNELS_H
#define HISTOGRAM_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

#define HISTOGRAM_VERSIONS 4 /* 0 (CUB) .. 3; histogram.c's version table has a row for each */
#define HISTOGRAM_BINS 256

size_t histogram_scratch_bytes(int version, size_t n);

/* d_hist[b] = how many of the n bytes equal b, by version v (0 = cub::DeviceHistogram::HistogramEven);
 * d_scratch holds scratch_bytes >= histogram_scratch_bytes(v, n) bytes. */
cudaError_t histogram_launch(int version, const unsigned char *d_in, size_t n, unsigned int *d_hist, void *d_scratch,
                             size_t scratch_bytes);

/* version 0, in histogram_cub.cu (CUB's headers compiled apart from our kernels) */
size_t histogram_cub_scratch_bytes(size_t n);
cudaError_t histogram_cub(const unsigned char *d_in, size_t n, unsigned int *d_hist, void *d_scratch,
                          size_t scratch_bytes);

#ifdef __cplusplus
}
#endif
#endif
