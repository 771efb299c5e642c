/* life_kernels.h - launchers for life_kernels.cu (callable from C).
 * The board is W x H cells on a torus (the left edge touches the right, the top the bottom). */
#ifndef LIFE_KERNELS_H
#define LIFE_KERNELS_H
#include <stdint.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (the CPU, in life.c) .. 3; life.c's version table has one row for each. */
#define LIFE_VERSIONS 4

/* One generation of version 1..LIFE_VERSIONS-1 from d_in to d_out. Versions 1 and 2: one byte
 * per cell (0 dead, 1 alive), row-major. Version 3: bit-packed, 32 cells per word, cell x of a
 * row is bit x % 32 of word x / 32 (least significant bit first); a row is ceil(w / 32) words
 * and the unused high bits of its last word stay 0. Returns the launch error. */
cudaError_t life_launch(int version, const void *d_in, void *d_out, int w, int h);

#ifdef __cplusplus
}
#endif
#endif
