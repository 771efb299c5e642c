/* attention_device.cuh - what attention's two kernels files share (attention_kernels.cu: versions
 * 0-3, attention_hopper.cu: versions 4-6): the causal limit, and the online
 * softmax's step for the accumulator layout of mma.sync and wgmma. */
#ifndef ATTENTION_DEVICE_CUH
#define ATTENTION_DEVICE_CUH
#include "row_reduce.cuh"     /* FULL_MASK */
#include "lb_tensor_core.cuh" /* fast_exp2 */
#include "lb_bf16.cuh"        /* lb_bf16_float, lb_bf16_rn, lb_bf16_pack2 */

#include <cuda_bf16.h>
#include <stdint.h>

#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* The keys a query row may see: all S, or up to itself when causal. A tile's scores past it are
 * set to -inf (exp2 gives 0). */
__device__ __forceinline__ int last_key(int query, int seq, int causal)
{
    return causal ? min(query, seq - 1) : seq - 1;
}

/* The online softmax's step for the two rows a lane holds in versions 3 and 4 (an mma.sync or
 * wgmma accumulator layout: the rest of each row sits in the lane's quad): the tile's max of
 * each row across the quad, the new running max m, the factor alpha = exp2(old m - new m) by
 * which the row's sum l (scaled here) and its partial O (by the caller) shrink, and m_use, the
 * max the tile's weights are taken against (0 while a row has seen no key: -inf - -inf is NaN). */
__device__ __forceinline__ void online_rows(float tile_max[2], float m[2], float l[2], float alpha[2], float m_use[2])
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(FULL_MASK, tile_max[h], 1));
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(FULL_MASK, tile_max[h], 2));
        float m_new = fmaxf(m[h], tile_max[h]);
        m_use[h] = m_new == -INFINITY ? 0.0f : m_new;
        alpha[h] = fast_exp2(m[h] - m_use[h]);
        m[h] = m_new;
        l[h] *= alpha[h];
    }
}

/* At the end: each row's sum across its quad (the lanes kept their own parts), as 1 / sum */
__device__ __forceinline__ void inverse_row_sums(float l[2])
{
#pragma unroll
    for (int h = 0; h < 2; h++) {
        l[h] += __shfl_xor_sync(FULL_MASK, l[h], 1);
        l[h] += __shfl_xor_sync(FULL_MASK, l[h], 2);
        l[h] = 1.0f / l[h];
    }
}

/* The log-sum-exp of a row (natural log) from the online softmax's state in log2 units: its
 * running max m and the sum l of exp2(s - m), or (inverse_row_sums) 1 / l */
__device__ __forceinline__ float lse_of(float m, float l) { return (m + log2f(l)) * LN2; }
__device__ __forceinline__ float lse_of_inverse(float m, float inv_l) { return (m - log2f(inv_l)) * LN2; }

/* Versions 3-6: the two rows a lane holds (row0 and row0 + 8 of its head, whose rows start at
 * head_row), their log-sum-exps written by the quad's first lane where the rows are inside S */
__device__ __forceinline__ void store_lse(float *lse_out, size_t head_row, int seq, int row0, int t4, const float m[2],
                                          const float inv_l[2])
{
    if (!lse_out || t4 != 0) return;
    if (row0 < seq) lse_out[head_row + row0] = lse_of_inverse(m[0], inv_l[0]);
    if (row0 + 8 < seq) lse_out[head_row + row0 + 8] = lse_of_inverse(m[1], inv_l[1]);
}

#endif
