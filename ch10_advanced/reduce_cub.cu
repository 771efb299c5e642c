/* reduce_cub.cu - reduce's version 0, the library baseline: cub::DeviceReduce::Sum behind C
 * launchers (reduce_kernels.h). A file of its own so that CUB's headers, which take most of a
 * build's time (13 of scan's 15 s), are compiled once: an edit to reduce_kernels.cu, a mutant
 * or a tunable rebuilds our kernels alone, in a couple of seconds. */
#include "reduce_kernels.h"

#include <cub/cub.cuh>

extern "C" size_t reduce_cub_scratch_bytes(size_t n)
{
    size_t bytes = 0;
    cub::DeviceReduce::Sum(NULL, bytes, (const float *)NULL, (float *)NULL, (int64_t)n);
    return bytes;
}

extern "C" cudaError_t reduce_cub(const float *d_in, size_t n, float *d_out, void *d_scratch, size_t scratch_bytes)
{
    return cub::DeviceReduce::Sum(d_scratch, scratch_bytes, d_in, d_out, (int64_t)n);
}
