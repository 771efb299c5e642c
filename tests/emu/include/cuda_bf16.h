/* cuda_bf16.h's twin for tests/emu: the bf16 type and the conversions the kernels use (bf16 is the
 * top half of a float; narrowing rounds to nearest even). Needs emu_cuda.h first. */
#pragma once

struct __nv_bfloat16 {
    uint16_t x;
};
inline __nv_bfloat16 __float2bfloat16_rn(float f) /* round to nearest, ties to even */
{
    uint32_t u = __float_as_uint(f);
    __nv_bfloat16 b;
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
        b.x = 0x7FC0;
        return b;
    }
    u += 0x7FFF + ((u >> 16) & 1);
    b.x = (uint16_t)(u >> 16);
    return b;
}
inline uint16_t __bfloat16_as_ushort(__nv_bfloat16 b) { return b.x; }
/* a pair (low element first in memory, as on the GPU) and its rounding from two floats */
struct __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)}; }
