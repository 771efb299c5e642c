/* lb_bf16.cuh - bf16 on the device, for kernels that read and write bf16 next to fp32 work
 * (ch11's attention, row kernels and AdamW, ch12's): a bf16 is the top half of a float, so
 * widening is a shift; narrowing rounds to nearest even (labbook.h's lb_bf16_bits is the host's
 * twin, for references and inputs); two packed for one register (mma's operands), four for one
 * 8-byte store. */
#ifndef LB_BF16_CUH
#define LB_BF16_CUH
#include <cuda_bf16.h>
#include <stdint.h>

__device__ __forceinline__ uint16_t lb_bf16_rn(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }

/* the bf16 in the low 16 bits of `bits` as a float (the high 16 are shifted out) */
__device__ __forceinline__ float lb_bf16_float(uint32_t bits) { return __uint_as_float(bits << 16); }

/* lo and hi as one register of two bf16, lo in the low half (the lower column, for mma) */
__device__ __forceinline__ uint32_t lb_bf16_pack2(float lo, float hi)
{
    return (uint32_t)lb_bf16_rn(lo) | (uint32_t)lb_bf16_rn(hi) << 16;
}

/* a, b, c, d at four consecutive bf16 (a lowest): one uint2 */
__device__ __forceinline__ uint2 lb_bf16_pack4(float a, float b, float c, float d)
{
    return make_uint2(lb_bf16_pack2(a, b), lb_bf16_pack2(c, d));
}
#endif
