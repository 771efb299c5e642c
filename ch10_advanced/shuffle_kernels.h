/* shuffle_kernels.h - launchers for shuffle_kernels.cu (callable from C). */
#ifndef SHUFFLE_KERNELS_H
#define SHUFFLE_KERNELS_H
#include <stddef.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

enum { OP_SWAP = 0, OP_SUM = 1, OP_SCAN = 2, OP_BROADCAST = 3, N_OPS = 4 };

/* out[i] = `op` applied `reps` times to in[] within each warp of 32 consecutive elements
 * (n a multiple of 32), with shuffles (use_shared = 0) or through shared memory (1). All
 * arithmetic is on unsigned ints (wrap-around). */
cudaError_t warp_op_launch(int op, int use_shared, const unsigned int *d_in, unsigned int *d_out, size_t n, int reps);

#ifdef __cplusplus
}
#endif
#endif
