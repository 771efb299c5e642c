/* scan_cub.cu - scan's version 0, the library baseline: cub::DeviceScan's inclusive and
 * exclusive sums behind C launchers (scan_kernels.h). A file of its own so that CUB's headers
 * (13 of the 15 s the kernels took to compile with them) are compiled once: an edit to
 * scan_kernels.cu, a mutant or a tunable (SCAN_THREADS=...) rebuilds our kernels alone, in 2 s. */
#include "scan_kernels.h"

#include <cub/cub.cuh>

extern "C" size_t scan_cub_scratch_bytes(size_t n)
{
    /* the most any of the four forms asks: one scratch area serves every run */
    size_t a = 0, b = 0, c = 0, d = 0;
    cub::DeviceScan::InclusiveSum(NULL, a, (const int *)NULL, (int *)NULL, (int64_t)n);
    cub::DeviceScan::ExclusiveSum(NULL, b, (const int *)NULL, (int *)NULL, (int64_t)n);
    cub::DeviceScan::InclusiveSum(NULL, c, (const float *)NULL, (float *)NULL, (int64_t)n);
    cub::DeviceScan::ExclusiveSum(NULL, d, (const float *)NULL, (float *)NULL, (int64_t)n);
    size_t m = a > b ? a : b;
    m = m > c ? m : c;
    return m > d ? m : d;
}

template <typename T>
static cudaError_t scan_cub_t(int exclusive, const T *in, T *out, size_t n, void *scratch, size_t bytes)
{
    return exclusive ? cub::DeviceScan::ExclusiveSum(scratch, bytes, in, out, (int64_t)n)
                     : cub::DeviceScan::InclusiveSum(scratch, bytes, in, out, (int64_t)n);
}

extern "C" cudaError_t scan_cub(int type, int exclusive, const void *d_in, void *d_out, size_t n, void *d_scratch,
                                size_t scratch_bytes)
{
    if (type == SCAN_INT)
        return scan_cub_t<int>(exclusive, (const int *)d_in, (int *)d_out, n, d_scratch, scratch_bytes);
    return scan_cub_t<float>(exclusive, (const float *)d_in, (float *)d_out, n, d_scratch, scratch_bytes);
}
