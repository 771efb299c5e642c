/* debugging_kernels.h - launcher for debugging_kernels.cu (callable from C). */
#ifndef DEBUGGING_KERNELS_H
#define DEBUGGING_KERNELS_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

#define DEBUG_TILE 16 /* the tile edge: blocks are DEBUG_TILE x DEBUG_TILE threads */
#define DEBUG_BUGS 4  /* --bug 1..DEBUG_BUGS; 0 is the correct kernel */

/* C = A @ B with A (M,K), B (K,N), C (M,N) row-major, by the tiled kernel with bug `bug`
 * planted (0: none). The thread computing C[probe_row][probe_col] prints what it does
 * (device printf); pass -1, -1 for no probe. */
cudaError_t debug_matmul_launch(int bug, const float *d_a, const float *d_b, float *d_c, int M, int N, int K,
                                int probe_row, int probe_col);

#ifdef __cplusplus
}
#endif
#endif
