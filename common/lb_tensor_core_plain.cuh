/* lb_tensor_core_plain.cuh - the tensor-core helpers written in plain C++, no PTX: wgmma's
 * shared-memory operand descriptors (arithmetic on a tile's address, smem_addr) and the tensor
 * maps the copy engine reads (through lb_tensor_map_encoder). Code under test, so lb_tensor_core.cuh
 * and its emulated twin in tests/emu both include this one. Not included on its own.
 */
#ifndef LB_TENSOR_CORE_PLAIN_CUH
#define LB_TENSOR_CORE_PLAIN_CUH

/* ---- wgmma operands: a 64-bit descriptor of a tile in shared memory with the 128-byte
 * swizzle. Rows are 128 bytes; 8 rows (1024 bytes, one swizzle atom) repeat with stride 1024.
 *   bits  0-13  start address / 16
 *   bits 16-29  leading byte offset / 16
 *   bits 32-45  stride byte offset / 16
 *   bits 62-63  swizzle mode: 1 = 128-byte
 * K-major (K contiguous, the layout of A and of B untransposed): the stride byte offset is 1024,
 * from one 8-row group to the next, and the leading one is unused (1 by convention). Stepping k
 * inside the tile adds 32 bytes to the start: the hardware applies the swizzle to the address
 * it computes, so a tile must start 1024-byte aligned. */
__device__ __forceinline__ uint64_t wgmma_desc(const void *smem)
{
    uint64_t d = (uint64_t)((smem_addr(smem) & 0x3FFFF) >> 4);
    d |= (uint64_t)1 << 16;
    d |= (uint64_t)(1024 >> 4) << 32;
    d |= (uint64_t)1 << 62;
    return d;
}
/* MN-major (N contiguous: a B operand read transposed, as V in attention, rows of 128 bytes =
 * 64 bf16 along N, one row per k): 8 rows of k (1024 bytes) repeat with stride 1024 along K (the
 * stride byte offset), and the next 64 columns of N lie `n_chunk_bytes` further (the leading
 * byte offset). A k16 step is two 8-row groups: 2048 bytes further. */
__device__ __forceinline__ uint64_t wgmma_desc_mn(const void *smem, uint32_t n_chunk_bytes)
{
    uint64_t d = (uint64_t)((smem_addr(smem) & 0x3FFFF) >> 4);
    d |= (uint64_t)((n_chunk_bytes >> 4) & 0x3FFF) << 16;
    d |= (uint64_t)(1024 >> 4) << 32;
    d |= (uint64_t)1 << 62;
    return d;
}

/* ---- a tensor map: a row-major tensor of `rank` (2 to 4) dimensions as the copy engine sees it,
 * innermost first: dims in elements, strides in bytes from one row (plane) to the next, read in
 * boxes of `box` elements with the 128-byte swizzle that wgmma's descriptors expect (a box row is
 * 128 bytes); l2_promote 1 fetches what a load touches into L2 in 256-byte lines (operands read
 * again by other blocks), 0 not (a tensor only written). Box rows past the tensor's end arrive as
 * zeros (loads) or are not written (stores). Host code: once per set of buffers, outside any timing. */
static inline cudaError_t lb_tensor_map(CUtensorMap *map, CUtensorMapDataType type, int rank, const void *base,
                                        const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                        int l2_promote)
{
    lb_encode_tiled_fn encode;
    cudaError_t e = lb_tensor_map_encoder(&encode);
    if (e != cudaSuccess) return e;
    if (rank < 2 || rank > 4) return cudaErrorInvalidValue;
    cuuint32_t one[4] = {1, 1, 1, 1}; /* every element of the box, no stride */
    CUresult r = encode(map, type, (cuuint32_t)rank, (void *)base, dims, strides, box, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B,
                        l2_promote ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

#endif
