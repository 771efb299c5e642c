/* mma.h's twin for tests/emu: nvcuda::wmma as the kernels use it. Needs emu_cuda.h first. */
#pragma once
#include <cuda_bf16.h>

/* wmma: every lane of the warp keeps the whole fragment (the GPU spreads it over the lanes in a
 * layout it does not document; nothing but these calls may look inside, except elementwise) */
namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
} // namespace precision
enum layout_t { mem_row_major, mem_col_major };
template <typename T> struct element {
    typedef T type;
};
template <> struct element<precision::tf32> {
    typedef float type;
};
inline float emu_value(float x) { return x; }
inline float emu_value(__nv_bfloat16 x) { return emu_bf16(x.x); }
template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    static const int rows = std::is_same<Use, matrix_b>::value ? K : M;
    static const int cols = std::is_same<Use, matrix_a>::value ? K : N;
    static const int num_elements = rows * cols; /* element (r, c) at x[r cols + c] */
    typename element<T>::type x[rows * cols];
};
template <typename F, typename V> inline void fill_fragment(F &f, V v)
{
    for (int i = 0; i < f.num_elements; i++) f.x[i] = v;
}
/* A (M x K) row-major, or B (K x N) col-major: element (k, n) at p[n ld + k] */
template <typename Use, int M, int N, int K, typename T, typename L, typename P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const P *p, unsigned ld)
{
    typedef fragment<Use, M, N, K, T, L> F;
    for (int r = 0; r < F::rows; r++)
        for (int c = 0; c < F::cols; c++) {
            bool col = std::is_same<L, col_major>::value;
            f.x[r * F::cols + c] = p[col ? (size_t)c * ld + r : (size_t)r * ld + c];
        }
}
template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB>
inline void mma_sync(fragment<accumulator, M, N, K, float> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
                     const fragment<matrix_b, M, N, K, TB, LB> &b, const fragment<accumulator, M, N, K, float> &c)
{
    float out[M * N];
    for (int r = 0; r < M; r++)
        for (int n = 0; n < N; n++) {
            float s = c.x[r * N + n];
            for (int k = 0; k < K; k++) s += emu_value(a.x[r * K + k]) * emu_value(b.x[k * N + n]);
            out[r * N + n] = s;
        }
    for (int i = 0; i < M * N; i++) d.x[i] = out[i];
}
/* lane 0 writes (all lanes hold the same values); the kernel's __syncwarp() orders the rest */
template <int M, int N, int K>
inline void store_matrix_sync(float *p, const fragment<accumulator, M, N, K, float> &f, unsigned ld, layout_t layout)
{
    if (emu_lane() != 0) return;
    for (int r = 0; r < M; r++)
        for (int n = 0; n < N; n++)
            p[layout == mem_row_major ? (size_t)r * ld + n : (size_t)n * ld + r] = f.x[r * N + n];
}
inline float __float_to_tf32(float x) /* to nearest, ties away: keep 10 bits of fraction */
{
    uint32_t u = __float_as_uint(x);
    if ((u & 0x7F800000u) != 0x7F800000u) u = (u + 0x1000u) & 0xFFFFE000u;
    return __uint_as_float(u);
}
} // namespace wmma
} // namespace nvcuda
