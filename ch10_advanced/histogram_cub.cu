/* histogram_cub.cu - histogram's version 0, the library baseline: cub::DeviceHistogram's
 * HistogramEven behind C launchers (histogram_kernels.h). A file of its own so that CUB's
 * headers, which take most of a build's time, are compiled once: an edit to
 * histogram_kernels.cu or a mutant rebuilds our kernels alone. */
#include "histogram_kernels.h"

#include <cub/cub.cuh>

/* levels 0, 1, ..., 256: bin b holds the samples in [b, b + 1) */
extern "C" size_t histogram_cub_scratch_bytes(size_t n)
{
    size_t bytes = 0;
    cub::DeviceHistogram::HistogramEven(NULL, bytes, (const unsigned char *)NULL, (unsigned int *)NULL,
                                        HISTOGRAM_BINS + 1, 0, HISTOGRAM_BINS, (int64_t)n);
    return bytes;
}

extern "C" cudaError_t histogram_cub(const unsigned char *d_in, size_t n, unsigned int *d_hist, void *d_scratch,
                                     size_t scratch_bytes)
{
    return cub::DeviceHistogram::HistogramEven(d_scratch, scratch_bytes, d_in, d_hist, HISTOGRAM_BINS + 1, 0,
                                               HISTOGRAM_BINS, (int64_t)n);
}
