/* matmul_kernels.h - launchers for matmul_kernels.cu (callable from C).
 * A is (M,K), B is (K,N), C is (M,N), all row-major fp32: C = A @ B. */
#ifndef MATMUL_KERNELS_H
#define MATMUL_KERNELS_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (cuBLAS, in matmul.c) .. 11; matmul.c's version table has one row for each. */
#define MATMUL_VERSIONS 12

/* Version 10's plan for one product: a bm x bn tile per block, and K cut into `splits`
 * parts (one block each, added into C by atomics when splits > 1). */
typedef struct {
    int bm, bn, splits;
} matmul_tiling;

/* The plan version 10 picks for an m x n x k product on this GPU (its SM count). */
matmul_tiling matmul_choose_tiling(int m, int n, int k);

/* 1 when version 10's kernel has this tile (128x256, 128x128 or 64x128) and splits >= 1. */
int matmul_tiling_supported(matmul_tiling t);

/* What a launch may need beyond the operands: version 1's block edge (threads per side, 16 ->
 * 16x16: --block), version 2's tile edge (0: the build's TILE; 8, 16 or 32 for --sweep),
 * version 10's plan (bm 0: its own choice, matmul_choose_tiling; else --tiling's). The other
 * versions have fixed shapes. */
typedef struct {
    int block, tile;
    matmul_tiling plan;
} matmul_opts;

/* Launch kernel `version` (1..MATMUL_VERSIONS-1): matmul_kernels.cu has one launcher per
 * version, after its kernel. Returns the launch error. */
cudaError_t matmul_launch(int version, const float *d_a, const float *d_b, float *d_c, int m, int n, int k,
                          const matmul_opts *o);

/* The compile-time TILE of version 2 (make TILE=32). */
int matmul_tile(void);

#ifdef __cplusplus
}
#endif
#endif
