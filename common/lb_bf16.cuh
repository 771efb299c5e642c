/* lb_bf16.cuh - bf16 on the device, for kernels that write bf16 next to fp32 work (ch11's row
 * kernels and AdamW, ch12's): a float's bits rounded to nearest even (labbook.h's lb_bf16_bits
 * is the host's twin, for references and inputs), and four of them packed for one 8-byte store. */
#ifndef LB_BF16_CUH
#define LB_BF16_CUH
#include <cuda_bf16.h>
#include <stdint.h>

__device__ __forceinline__ uint16_t lb_bf16_rn(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }

/* a, b, c, d at four consecutive bf16 (a lowest): one uint2 */
__device__ __forceinline__ uint2 lb_bf16_pack4(float a, float b, float c, float d)
{
    return make_uint2((uint32_t)lb_bf16_rn(a) | (uint32_t)lb_bf16_rn(b) << 16,
                      (uint32_t)lb_bf16_rn(c) | (uint32_t)lb_bf16_rn(d) << 16);
}
#endif
