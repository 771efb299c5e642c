/* shuffle_kernels.cu - warp-level exchanges, each written twice: with the _sync shuffle
 * intrinsics (registers to registers, no memory) and with the shared-memory equivalent.
 *   swap       the book's neighbour swap: lane i takes lane i ^ 1's value (__shfl_xor_sync)
 *   sum        every lane gets the warp's sum: the xor butterfly, 5 steps (__shfl_xor_sync)
 *   scan       inclusive prefix sum over the lanes: Hillis-Steele with __shfl_up_sync
 *   broadcast  every lane gets lane 0's value (__shfl_sync)
 * The shared-memory versions need __syncwarp() between writing and reading: the lanes of a
 * warp are not guaranteed to run in lockstep (Volta and later), and __syncwarp also makes
 * each lane's shared-memory writes visible to the others.
 */
#include "shuffle_kernels.h"

#define SHUFFLE_FULL_MASK 0xffffffffu
#define SHUFFLE_BLOCK 256

template <int OP> __device__ __forceinline__ unsigned int shfl_op(unsigned int v, int lane)
{
    if (OP == OP_SWAP) return __shfl_xor_sync(SHUFFLE_FULL_MASK, v, 1);
    if (OP == OP_SUM) {
        for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(SHUFFLE_FULL_MASK, v, m);
        return v;
    }
    if (OP == OP_SCAN) {
        for (int d = 1; d < 32; d *= 2) {
            unsigned int u = __shfl_up_sync(SHUFFLE_FULL_MASK, v, d);
            if (lane >= d) v += u;
        }
        return v;
    }
    return __shfl_sync(SHUFFLE_FULL_MASK, v, 0);
}

/* the same through the warp's 32 words of shared memory */
template <int OP> __device__ __forceinline__ unsigned int shared_op(unsigned int v, int lane, volatile unsigned int *s)
{
    if (OP == OP_SWAP || OP == OP_BROADCAST) {
        s[lane] = v;
        __syncwarp();
        v = s[OP == OP_SWAP ? lane ^ 1 : 0];
        __syncwarp(); /* read before the next round overwrites */
        return v;
    }
    if (OP == OP_SUM) {
        s[lane] = v;
        __syncwarp();
        for (int m = 16; m > 0; m >>= 1) {
            unsigned int u = s[lane ^ m];
            __syncwarp();
            v += u;
            s[lane] = v;
            __syncwarp();
        }
        return v;
    }
    s[lane] = v; /* scan */
    __syncwarp();
    for (int d = 1; d < 32; d *= 2) {
        unsigned int u = lane >= d ? s[lane - d] : 0u;
        __syncwarp();
        v += u;
        s[lane] = v;
        __syncwarp();
    }
    return v;
}

template <int OP, int SHARED>
__global__ void warp_op_kernel(const unsigned int *in, unsigned int *out, size_t n, int reps)
{
    __shared__ unsigned int s[SHUFFLE_BLOCK];
    size_t i = (size_t)blockIdx.x * SHUFFLE_BLOCK + threadIdx.x;
    int lane = threadIdx.x & 31;
    /* n is a multiple of 32 and blocks of 256: a warp is either all inside or all outside */
    if (i >= n) return;
    unsigned int v = in[i];
    for (int r = 0; r < reps; r++) {
        v = SHARED ? shared_op<OP>(v, lane, s + (threadIdx.x & ~31)) : shfl_op<OP>(v, lane);
        v = v * 2654435761u + (unsigned int)r; /* keep the rounds dependent and the values moving */
    }
    out[i] = v;
}

extern "C" cudaError_t warp_op_launch(int op, int use_shared, const unsigned int *d_in, unsigned int *d_out, size_t n,
                                      int reps)
{
    if (n % 32) return cudaErrorInvalidValue;
    unsigned int blocks = (unsigned int)((n + SHUFFLE_BLOCK - 1) / SHUFFLE_BLOCK);
#define LAUNCH(O)                                                                       \
    (use_shared ? warp_op_kernel<O, 1><<<blocks, SHUFFLE_BLOCK>>>(d_in, d_out, n, reps) \
                : warp_op_kernel<O, 0><<<blocks, SHUFFLE_BLOCK>>>(d_in, d_out, n, reps))
    switch (op) {
    case OP_SWAP: LAUNCH(OP_SWAP); break;
    case OP_SUM: LAUNCH(OP_SUM); break;
    case OP_SCAN: LAUNCH(OP_SCAN); break;
    case OP_BROADCAST: LAUNCH(OP_BROADCAST); break;
    default: return cudaErrorInvalidValue;
    }
#undef LAUNCH
    return cudaGetLastError();
}
