/* life_kernels.h - launchers for life_kernels.cu (callable from C).
 * The board is W x H cells on a torus (the left edge touches the right, the top the bottom). */
#ifndef LIFE_KERNELS_H
#define LIFE_KERNELS_H
#include <stdint.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* One generation, versions 1 and 2: one byte per cell (0 dead, 1 alive), row-major. */
cudaError_t life_step_bytes(int version, const uint8_t *d_in, uint8_t *d_out, int w, int h);

/* One generation, version 3: bit-packed, 32 cells per word, cell x of a row is bit x % 32
 * of word x / 32 (least significant bit first); a row is ceil(w / 32) words and the unused
 * high bits of its last word stay 0. */
cudaError_t life_step_bits(const uint32_t *d_in, uint32_t *d_out, int w, int h);

#ifdef __cplusplus
}
#endif
#endif
