/* thrust_basics_kernels.cu - Thrust, the CUDA toolkit's C++ template library of parallel
 * algorithms (book ch8), behind the C launchers of thrust_basics_kernels.h; and CUB's radix sort,
 * the baseline for Thrust's sort.
 *
 * The lab book's .cu files are "C with kernels"; this one is the exception the lesson needs:
 * Thrust is templates and functors. There is no kernel here that we wrote: each algorithm
 * (transform, reduce, scan, sort) is a kernel Thrust instantiates for the types and the functor
 * it is given, at compile time. That is where its convenience comes from, and its cost: this
 * file takes far longer to compile than a plain kernels file, and makes a larger binary
 * (the README measures both).
 *
 * thrust::device_ptr wraps a raw device pointer so that Thrust knows the data live on the GPU
 * and runs the algorithm there; thrust::device_vector owns its memory like a std::vector.
 */
#include "thrust_basics_kernels.h"

#include <new>
#include <cub/device/device_radix_sort.cuh>
#include <thrust/device_ptr.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/inner_product.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/system/system_error.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <cuda/std/functional>

/* Thrust throws thrust::system_error for CUDA errors and std::bad_alloc when an allocation
 * fails; a C caller can only see an error code. GUARD(body) runs body and turns either back
 * into the cudaError_t it came from. (A macro of ..., not of one argument: the commas inside
 * body would otherwise split it.) */
#define GUARD(...)                                                                  \
    try {                                                                           \
        __VA_ARGS__;                                                                \
        return cudaGetLastError();                                                  \
    } catch (const thrust::system_error &e) {                                       \
        return e.code().value() ? (cudaError_t)e.code().value() : cudaErrorUnknown; \
    } catch (const std::bad_alloc &) {                                              \
        return cudaErrorMemoryAllocation;                                           \
    }

/* The functor: a struct whose operator() Thrust calls once per element on the GPU. The
 * explicit fmaf is what nvcc would contract a * x + y into anyway; written out, the CPU
 * reference can compute the same single rounding. */
struct saxpy_functor {
    float a;
    __host__ __device__ float operator()(float x, float y) const { return fmaf(a, x, y); }
};

/* For transform_reduce over zipped (x, y) pairs: one product per pair, summed by the reduce
 * in the same pass, so the products never go to memory. */
struct multiply_pair {
    __host__ __device__ float operator()(const thrust::tuple<float, float> &t) const
    {
        return thrust::get<0>(t) * thrust::get<1>(t);
    }
};

extern "C" cudaError_t thrust_saxpy(float a, const float *d_x, float *d_y, size_t n)
{
    GUARD({
        thrust::device_ptr<const float> x(d_x);
        thrust::device_ptr<float> y(d_y);
        thrust::transform(x, x + n, y, y, saxpy_functor{a});
    })
}

extern "C" cudaError_t thrust_saxpy_host(float a, const float *h_x, float *h_y, size_t n)
{
    GUARD({
        thrust::device_vector<float> x(h_x, h_x + n), y(h_y, h_y + n); /* allocate and upload */
        thrust::transform(x.begin(), x.end(), y.begin(), y.begin(), saxpy_functor{a});
        thrust::copy(y.begin(), y.end(), h_y); /* download; the vectors free their memory here */
    })
}

extern "C" cudaError_t thrust_dot(int way, const float *d_x, const float *d_y, float *d_tmp, size_t n, float *result)
{
    GUARD({
        thrust::device_ptr<const float> x(d_x), y(d_y);
        thrust::device_ptr<float> tmp(d_tmp);
        switch (way) {
        case DOT_TRANSFORM_THEN_REDUCE: /* two passes: n products written out, then read back */
            thrust::transform(x, x + n, y, tmp, cuda::std::multiplies<float>());
            *result = thrust::reduce(tmp, tmp + n, 0.0f);
            break;
        case DOT_INNER_PRODUCT: /* the library's name for it */
            *result = thrust::inner_product(x, x + n, y, 0.0f);
            break;
        default: { /* fused by hand: zip the two inputs, multiply inside the reduction */
            auto pairs = thrust::make_zip_iterator(thrust::make_tuple(x, y));
            *result = thrust::transform_reduce(pairs, pairs + n, multiply_pair(), 0.0f, cuda::std::plus<float>());
        }
        }
    })
}

extern "C" cudaError_t thrust_max_scan(const float *d_x, float *d_y, size_t n)
{
    GUARD({
        thrust::device_ptr<const float> x(d_x);
        thrust::device_ptr<float> y(d_y);
        thrust::inclusive_scan(x, x + n, y, cuda::maximum<float>());
    })
}

extern "C" cudaError_t thrust_sum_ints(const int *d_x, size_t n, long long *sum)
{
    GUARD({
        thrust::device_ptr<const int> x(d_x);
        /* the init value's type is the accumulator's: 0LL sums in 64 bits, no overflow */
        *sum = thrust::reduce(x, x + n, 0LL, cuda::std::plus<long long>());
    })
}

/* Thrust's temporary storage from a cache: Thrust asks its allocator for bytes (allocate) and
 * gives them back (deallocate) within each call; this one keeps what it got from cudaMalloc and
 * hands a free block that is large enough to the next request. A sort holds a few blocks at once
 * (its keys' second buffer, CUB's scratch), so the cache holds several. */
struct caching_allocator {
    typedef char value_type;
    enum { MAX_BLOCKS = 16 };
    struct block {
        char *ptr;
        size_t bytes;
        bool used;
    } blocks[MAX_BLOCKS];
    int count;

    char *allocate(std::ptrdiff_t n)
    {
        size_t want = n > 0 ? (size_t)n : 1;
        for (int i = 0; i < count; i++)
            if (!blocks[i].used && blocks[i].bytes >= want) {
                blocks[i].used = true;
                return blocks[i].ptr;
            }
        char *p;
        if (count == MAX_BLOCKS || cudaMalloc(&p, want) != cudaSuccess) throw std::bad_alloc();
        blocks[count++] = {p, want, true};
        return p;
    }
    void deallocate(char *p, size_t)
    {
        for (int i = 0; i < count; i++)
            if (blocks[i].ptr == p) blocks[i].used = false;
    }
    cudaError_t release()
    {
        cudaError_t first = cudaSuccess;
        for (int i = 0; i < count; i++) {
            cudaError_t e = cudaFree(blocks[i].ptr);
            if (first == cudaSuccess) first = e;
        }
        count = 0;
        return first;
    }
};
static caching_allocator thrust_cache;

extern "C" cudaError_t thrust_sort_keys(unsigned *d_keys, size_t n, int cached)
{
    GUARD({
        thrust::device_ptr<unsigned> k(d_keys);
        if (cached)
            thrust::sort(thrust::cuda::par(thrust_cache), k, k + n);
        else
            thrust::sort(k, k + n);
    })
}

extern "C" cudaError_t thrust_sort_pairs(unsigned *d_keys, unsigned *d_vals, size_t n, int cached)
{
    GUARD({
        thrust::device_ptr<unsigned> k(d_keys), v(d_vals);
        if (cached)
            thrust::sort_by_key(thrust::cuda::par(thrust_cache), k, k + n, v);
        else
            thrust::sort_by_key(k, k + n, v);
    })
}

extern "C" cudaError_t thrust_cache_release(void) { return thrust_cache.release(); }

extern "C" cudaError_t thrust_sum_runs(const int *d_keys, const int *d_vals, size_t n, int *d_run_keys, int *d_run_sums,
                                       size_t *runs)
{
    GUARD({
        thrust::device_ptr<const int> k(d_keys), v(d_vals);
        thrust::device_ptr<int> ok(d_run_keys), ov(d_run_sums);
        auto ends = thrust::reduce_by_key(k, k + n, v, ok, ov); /* the ends of both outputs */
        *runs = (size_t)(ends.first - ok);
    })
}

/* CUB is the library under Thrust's CUDA algorithms, one level down: the caller owns the
 * temporary storage (asked for with a first call that passes NULL), and input and output are
 * separate buffers. The key range is the full 32 bits. */
extern "C" cudaError_t cub_sort_temp_bytes(size_t n, int pairs, size_t *bytes)
{
    if (pairs)
        return cub::DeviceRadixSort::SortPairs(NULL, *bytes, (const unsigned *)NULL, (unsigned *)NULL,
                                               (const unsigned *)NULL, (unsigned *)NULL, n);
    return cub::DeviceRadixSort::SortKeys(NULL, *bytes, (const unsigned *)NULL, (unsigned *)NULL, n);
}

extern "C" cudaError_t cub_sort(const unsigned *d_keys_in, unsigned *d_keys_out, const unsigned *d_vals_in,
                                unsigned *d_vals_out, size_t n, void *d_temp, size_t temp_bytes)
{
    if (d_vals_in)
        return cub::DeviceRadixSort::SortPairs(d_temp, temp_bytes, d_keys_in, d_keys_out, d_vals_in, d_vals_out, n);
    return cub::DeviceRadixSort::SortKeys(d_temp, temp_bytes, d_keys_in, d_keys_out, n);
}
