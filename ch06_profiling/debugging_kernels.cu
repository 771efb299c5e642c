/* debugging_kernels.cu - one shared-memory tiled matmul with four bugs that can be planted in it.
 *
 *   A is (M,K), B is (K,N), C is (M,N), row-major. Each 16x16 block computes a 16x16 tile of C,
 *   walking along K one 16-wide tile of A and of B at a time through shared memory.
 *
 * The bugs (`BUG` is a template parameter, so each variant compiles to exactly its own code):
 *   1  out-of-bounds write: C is stored without the bounds check; the blocks on the bottom and
 *      right edges write outside C                                   -> memcheck
 *   2  race: the second __syncthreads is missing; a fast thread loads the next tile over the
 *      one a slow thread is still reading                             -> racecheck
 *   3  uninitialized shared memory: the first __syncthreads is missing; a thread reads the
 *      tile's slots before the threads that own them have written them: on the first tile
 *      they hold whatever shared memory held before the kernel   -> racecheck
 *   4  wrong index mapping: C[row * M + col], the index of a square matrix; the right one
 *      is row * N + col (N values per row)                            -> memcheck when M > N
 * Every bug also shows in the result check (at sizes that are not multiples of 16), though
 * 2 and 3 only sometimes: that is why the tools exist. (And one bug no tool sees: README,
 * exercise 7.)
 */
#include "debugging_kernels.h"
#include <stdio.h>

template <int BUG>
__global__ void matmul_kernel(const float *A, const float *B, float *C, int M, int N, int K, int probe_row,
                              int probe_col)
{
    __shared__ float As[DEBUG_TILE][DEBUG_TILE], Bs[DEBUG_TILE][DEBUG_TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * DEBUG_TILE + ty, col = blockIdx.x * DEBUG_TILE + tx;
    bool inside = row < M && col < N;
    bool probe = row == probe_row && col == probe_col;

    float sum = 0.0f;
    for (int t = 0; t < K; t += DEBUG_TILE) {
        /* Each thread loads one element of each tile; outside the matrices it loads 0, so
         * that the partial tiles at the edges add nothing. */
        As[ty][tx] = (row < M && t + tx < K) ? A[(size_t)row * K + t + tx] : 0.0f;
        Bs[ty][tx] = (t + ty < K && col < N) ? B[(size_t)(t + ty) * N + col] : 0.0f;
        /* BUG 3: without this barrier a thread may read a slot of As or Bs before the thread
         * that owns it has written it */
        if (BUG != 3) __syncthreads(); /* the whole tile is loaded before anyone reads it */

        float part = 0.0f;
        for (int k = 0; k < DEBUG_TILE; k++) part += As[ty][k] * Bs[k][tx];
        sum += part;
        if (probe)
            printf("probe C[%d][%d] tile %2d (k %d..%d): adds %12.6f, sum %12.6f\n", row, col, t / DEBUG_TILE, t,
                   t + DEBUG_TILE - 1, part, sum);

        /* BUG 2: without this barrier the next iteration's loads overwrite As and Bs while
         * slower threads of the block are still reading them */
        if (BUG != 2) __syncthreads();
    }

    /* BUG 1: the store's bounds check is gone. BUG 4: the row stride is M, not N. */
    size_t index = BUG == 4 ? (size_t)row * M + col : (size_t)row * N + col;
    if (probe)
        printf("probe C[%d][%d]: thread (%d,%d) of block (%d,%d), %s C, stores %.6f at index %llu "
               "(row * N + col = %llu, C has %llu elements)\n",
               row, col, tx, ty, blockIdx.x, blockIdx.y, inside ? "inside" : "outside", sum, (unsigned long long)index,
               (unsigned long long)((size_t)row * N + col), (unsigned long long)((size_t)M * N));
    if (BUG == 1 || inside) C[index] = sum;
}

extern "C" cudaError_t debug_matmul_launch(int bug, const float *d_a, const float *d_b, float *d_c, int M, int N, int K,
                                           int probe_row, int probe_col)
{
    dim3 block(DEBUG_TILE, DEBUG_TILE), grid((N + DEBUG_TILE - 1) / DEBUG_TILE, (M + DEBUG_TILE - 1) / DEBUG_TILE);
    switch (bug) {
    case 0: matmul_kernel<0><<<grid, block>>>(d_a, d_b, d_c, M, N, K, probe_row, probe_col); break;
    case 1: matmul_kernel<1><<<grid, block>>>(d_a, d_b, d_c, M, N, K, probe_row, probe_col); break;
    case 2: matmul_kernel<2><<<grid, block>>>(d_a, d_b, d_c, M, N, K, probe_row, probe_col); break;
    case 3: matmul_kernel<3><<<grid, block>>>(d_a, d_b, d_c, M, N, K, probe_row, probe_col); break;
    case 4: matmul_kernel<4><<<grid, block>>>(d_a, d_b, d_c, M, N, K, probe_row, probe_col); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
