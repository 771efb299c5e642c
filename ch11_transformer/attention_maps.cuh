/* attention_maps.cuh - the copy engine's view of a tensor of heads, for the tensor-map versions
 * of attention's forward (attention_hopper.cu) and backward (attention_backward_hopper.cu): host
 * code, after lb_tensor_core.cuh. */
#ifndef ATTENTION_MAPS_CUH
#define ATTENTION_MAPS_CUH
#include "attention_kernels.h" /* attention_rows_of */

/* A bf16 tensor of heads (its rows where attention_rows_of(H, S, D, ld) says: (B, H, S, D)
 * contiguous, or token rows ld apart) as (d, s, h, b), each dimension with its own stride, read in
 * boxes of `rows` x 64 (128 bytes, swizzled) at (d, s, h, b). The box lands in shared memory as a
 * rows x 64 tile whichever layout it came from; rows past S arrive as zeros (the s dimension ends
 * at S), whatever memory holds after them (on token rows, the next sequence's tokens). */
static inline cudaError_t attention_heads_map(CUtensorMap *map, const void *base, int batch, int heads, int seq, int dim,
                                              int ld, int rows)
{
    attention_rows r = attention_rows_of(heads, seq, dim, ld);
    cuuint64_t dims[4] = {(cuuint64_t)dim, (cuuint64_t)seq, (cuuint64_t)heads, (cuuint64_t)batch};
    cuuint64_t strides[3] = {(cuuint64_t)r.row * 2, (cuuint64_t)r.head * 2, (cuuint64_t)r.batch * 2}; /* bytes */
    cuuint32_t box[4] = {64, (cuuint32_t)rows, 1, 1};
    return lb_tensor_map(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, base, dims, strides, box, 1);
}
#endif
