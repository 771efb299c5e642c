/* life_kernels.h - launchers for life_kernels.cu (callable from C).
 * The board is W x H cells on a torus (the left edge touches the right, the top the bottom). */
#ifndef LIFE_KERNELS_H
#define LIFE_KERNELS_H
#include <stdint.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (the CPU, in life.c) .. 8; life.c's version table has one row for each. */
#define LIFE_VERSIONS 9
/* the versions that run every generation in one launch: 4 .. 6 */
#define LIFE_ONE_LAUNCH 4
#define LIFE_ONE_LAUNCH_LAST 6
/* version 4 (one block, global memory): beyond this many cells one block is hopelessly slow */
#define LIFE_ONE_BLOCK_MAX_CELLS 65536

/* One generation of version 1..LIFE_VERSIONS-1 from d_in to d_out. Versions 1 and 2: one byte
 * per cell (0 dead, 1 alive), row-major. Versions 3, 7 and 8: bit-packed, 32 cells per word, cell
 * x of a row is bit x % 32 of word x / 32 (least significant bit first); a row is ceil(w / 32)
 * words and the unused high bits of its last word stay 0 (version 8 reads two words as one
 * 64-bit word when a row has an even number of them). Returns the launch error. */
cudaError_t life_launch(int version, const void *d_in, void *d_out, int w, int h);
/* The same, queued on `stream` (life --boards runs one board per stream). */
cudaError_t life_launch_stream(int version, const void *d_in, void *d_out, int w, int h, cudaStream_t stream);

/* Versions 4-6 (byte boards): all `gens` generations in one launch, ping-ponging between d_a
 * (the start) and d_b; the result is in d_a when gens is even, else in d_b, as with a launch
 * per generation. */
cudaError_t life_launch_gens(int version, void *d_a, void *d_b, int w, int h, int gens);
/* The largest board in cells that version 4, 5 or 6 takes on the current GPU; 0 for the other
 * versions (any board); -1 when the GPU cannot run it (version 6 without cooperative launch). */
long long life_max_cells(int version);

#ifdef __cplusplus
}
#endif
#endif
