/* ptx_kernels.cu - inline PTX: asm("instruction %0, %1;" : outputs : inputs).
 *
 * Constraint letters say what kind of register each operand lives in: "r" a 32-bit integer
 * register, "l" a 64-bit one, "f" a 32-bit float, "d" a 64-bit double, "n" an immediate
 * (a compile-time constant). "=" marks an output, "+" an operand read and written. `volatile`
 * stops the compiler from moving or merging an asm whose result may change between two
 * executions although its inputs do not (%smid, %warpid, clock registers).
 *
 *   lane_id     mov.u32 %laneid               the lane, 0..31 (what threadIdx.x % 32 is in a 1D block)
 *   warp_id     mov.u32 %warpid               the warp's slot on its SM: NOT threadIdx.x / 32, and it may
 *                                              change while the warp runs (hence volatile)
 *   sm_id       mov.u32 %smid                 the SM running the thread
 *   add128      add.cc.u64 / addc.u64         128-bit addition: the carry of the low halves feeds the high
 *   fma_rn      fma.rn.f32                    a*b + c with one rounding, to nearest even
 *   bfe         bfe.u32                       extract len bits from position pos
 *   prmt        prmt.b32                      pick 4 of the 8 bytes of (b:a) by the selector's nibbles
 *   majority    lop3.b32 0xE8                 any 3-input bitwise function in one instruction: the
 *                                              immediate is the function's truth table
 *   split/join  mov.b64 {lo, hi}, d           a double as two 32-bit halves and back: the book's way
 *                                              to shuffle a double with 32-bit shuffles
 */
#include "ptx_kernels.h"

__device__ __forceinline__ unsigned int lane_id()
{
    unsigned int r;
    asm("mov.u32 %0, %%laneid;" : "=r"(r));
    return r;
}

__device__ __forceinline__ unsigned int warp_id()
{
    unsigned int r;
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(r));
    return r;
}

__device__ __forceinline__ unsigned int sm_id()
{
    unsigned int r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}

/* (hi:lo) = (a_hi:a_lo) + (b_hi:b_lo); add.cc sets the carry flag, addc adds it in */
__device__ __forceinline__ void add128(uint64_t a_lo, uint64_t a_hi, uint64_t b_lo, uint64_t b_hi, uint64_t *lo,
                                       uint64_t *hi)
{
    uint64_t l, h;
    asm("add.cc.u64 %0, %2, %4;\n\t"
        "addc.u64 %1, %3, %5;"
        : "=l"(l), "=l"(h)
        : "l"(a_lo), "l"(a_hi), "l"(b_lo), "l"(b_hi));
    *lo = l;
    *hi = h;
}

__device__ __forceinline__ float fma_rn(float a, float b, float c)
{
    float d;
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c));
    return d;
}

__device__ __forceinline__ unsigned int bfe(unsigned int x, unsigned int pos, unsigned int len)
{
    unsigned int d;
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(pos), "r"(len));
    return d;
}

__device__ __forceinline__ unsigned int prmt(unsigned int a, unsigned int b, unsigned int sel)
{
    unsigned int d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
    return d;
}

/* majority(a, b, c) bit by bit. The immediate: evaluate the function on a = 0xF0, b = 0xCC,
 * c = 0xAA: (a&b)|(a&c)|(b&c) = 0xE8. */
__device__ __forceinline__ unsigned int majority(unsigned int a, unsigned int b, unsigned int c)
{
    unsigned int d;
    asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

__device__ __forceinline__ void split(double v, unsigned int *lo, unsigned int *hi)
{
    asm("mov.b64 {%0, %1}, %2;" : "=r"(*lo), "=r"(*hi) : "d"(v));
}

__device__ __forceinline__ double join(unsigned int lo, unsigned int hi)
{
    double v;
    asm("mov.b64 %0, {%1, %2};" : "=d"(v) : "r"(lo), "r"(hi));
    return v;
}

__global__ void ptx_kernel(const unsigned int *a, const unsigned int *b, const unsigned int *c, const float *x,
                           const float *y, const float *z, const double *dv, ptx_out *out, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    /* every lane of a warp takes part in the shuffles: the inputs past n read as 0 */
    bool in = i < n;
    double d = in ? dv[i] : 0.0;
    unsigned int lo, hi;
    split(d, &lo, &hi);
    int src = (lane_id() + 1) & 31;
    double moved = join(__shfl_sync(0xffffffffu, lo, src), __shfl_sync(0xffffffffu, hi, src));
    double moved_ref = __shfl_sync(0xffffffffu, d, src);
    if (!in) return;
    ptx_out o;
    o.lane = lane_id();
    o.warp = warp_id();
    o.sm = sm_id();
    add128(((uint64_t)a[i] << 32) | b[i], ((uint64_t)c[i] << 32) | a[i], ((uint64_t)c[i] << 32) | c[i],
           ((uint64_t)b[i] << 32) | c[i], &o.sum_lo, &o.sum_hi);
    o.fma = fma_rn(x[i], y[i], z[i]);
    o.bfe = bfe(a[i], b[i] % 40, c[i] % 40); /* positions and lengths past 32 on purpose */
    o.prmt = prmt(a[i], b[i], c[i] & 0xffff);
    o.lop3 = majority(a[i], b[i], c[i]);
    o.shuffled = moved;
    o.shuffled_ref = moved_ref;
    out[i] = o;
}

extern "C" cudaError_t ptx_launch(const unsigned int *d_a, const unsigned int *d_b, const unsigned int *d_c,
                                  const float *d_x, const float *d_y, const float *d_z, const double *d_d,
                                  ptx_out *d_out, size_t n)
{
    ptx_kernel<<<(unsigned int)((n + 255) / 256), 256>>>(d_a, d_b, d_c, d_x, d_y, d_z, d_d, d_out, n);
    return cudaGetLastError();
}
