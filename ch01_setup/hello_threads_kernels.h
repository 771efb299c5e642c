/* hello_threads_kernels.h - launcher for hello_threads_kernels.cu (callable from C). */
#ifndef HELLO_THREADS_KERNELS_H
#define HELLO_THREADS_KERNELS_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Launch grid (gx, gy) of blocks (bx, by). Every thread writes who it is to
 * who[global index] = block number * threads per block + thread number in block,
 * and, when print is set, says hello with printf. Returns the launch error. */
cudaError_t hello_launch(int gx, int gy, int bx, int by, int *d_who, int print);

#ifdef __cplusplus
}
#endif
#endif
