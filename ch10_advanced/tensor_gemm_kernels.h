/* tensor_gemm_kernels.h - launchers for tensor_gemm_kernels.cu and tensor_gemm_hopper.cu (callable
 * from C).
 *
 * C = alpha A B on the tensor cores: A is (M,K) row-major, B is (K,N) column-major (stored as N
 * rows of K), C is (M,N) row-major fp32 (bf16 for fp8 inputs: tensor_gemm_out_bytes). A and B
 * are bf16 (or fp32 read as tf32, or fp8 e4m3 codes) in zero-padded buffers: A is (mp, kp), B is (np, kp), mp and np multiples of
 * TENSOR_GEMM_PAD_MN, kp of tensor_gemm_pad_k(type), so every kernel works on whole tiles and
 * checks only its stores. alpha is 1 for bf16 and tf32; fp8's is the product of A's and B's
 * per-tensor scales (each code stands for code x scale). */
#ifndef TENSOR_GEMM_KERNELS_H
#define TENSOR_GEMM_KERNELS_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (cuBLAS, in tensor_gemm.c) .. 12; tensor_gemm.c's version table has one row for each. */
#define TENSOR_GEMM_VERSIONS 13
#define TENSOR_GEMM_PAD_MN 256 /* two 128-row tiles (version 6 works on pairs), one 256-column tile */
#define TENSOR_GEMM_PAD_K 64   /* one k tile of bf16: 64 x 2 bytes = one 128-byte swizzle row */

typedef enum { TG_BF16 = 0, TG_TF32 = 1, TG_FP8 = 2 } tg_type;
/* an input element's bytes, and K's padding: one k tile is 128 bytes of K (64 bf16, 32 tf32, 128
 * fp8), and kp a whole number of them (tf32's 32 divide bf16's 64) */
static inline int tensor_gemm_elem_bytes(tg_type type) { return type == TG_FP8 ? 1 : type == TG_BF16 ? 2 : 4; }
static inline int tensor_gemm_pad_k(tg_type type) { return type == TG_FP8 ? 128 : TENSOR_GEMM_PAD_K; }
/* an element of C: fp32, or bf16 for fp8 inputs (fp8 products go on into bf16 layers, and half
 * the bytes out matter when the tensor cores run twice as fast) */
static inline int tensor_gemm_out_bytes(tg_type type) { return type == TG_FP8 ? 2 : 4; }

/* One product: device buffers, sizes, and what tensor_gemm_prepare made for it. */
typedef struct {
    tg_type type;
    const void *a, *b; /* bf16 (uint16 bits), fp32 or e4m3 codes (uint8), padded as above */
    void *c;           /* (m, n), row-major, not padded: fp32, or bf16 for fp8 (tensor_gemm_out_bytes) */
    int m, n, k;
    int mp, np, kp;
    void *prepared; /* versions 3-12's tensor maps, 10's tile order and 11's slots (tensor_gemm_prepare), NULL before */
    float alpha;    /* C = alpha A B: fp8's scales, 1 for bf16 and tf32 (versions 1 and 2 take 1 only) */
} tg_gemm;

/* Make the TMA tensor maps for versions 3-12 (through the driver's cuTensorMapEncodeTiled) and
 * version 10's list of tiles and 11's slots: once per set of buffers, outside any timing. Where they cannot run
 * it does nothing. tensor_gemm_release frees what it made. */
cudaError_t tensor_gemm_prepare(tg_gemm *g);
void tensor_gemm_release(tg_gemm *g);

/* Launch version 1..TENSOR_GEMM_VERSIONS-1 on stream 0; returns the launch error. */
cudaError_t tensor_gemm_launch(int version, const tg_gemm *g);

/* NULL when `version` can run here with this input type and N, else the reason it cannot ("bf16
 * only", "wgmma is Hopper's alone ...", version 9's "N a multiple of 4"). Needs the current device
 * (after lb_gpu_init). */
const char *tensor_gemm_unavailable(int version, tg_type type, int n);

/* The shape of a version's work: the block tile (rows x columns), threads per block, pipeline
 * stages and dynamic shared memory bytes, for the table and the README. */
typedef struct {
    int tile_m, tile_n, tile_k, threads, stages, smem_bytes;
} tg_shape;
tg_shape tensor_gemm_shape(int version, tg_type type);

/* tensor_gemm_hopper.cu: versions 3-12 (sm_90a), for tensor_gemm_kernels.cu's table of
 * launchers; a program calls tensor_gemm_launch, _prepare, _unavailable and _shape above */
cudaError_t tensor_gemm_launch3(const tg_gemm *g);
cudaError_t tensor_gemm_launch4(const tg_gemm *g);
cudaError_t tensor_gemm_launch5(const tg_gemm *g);
cudaError_t tensor_gemm_launch6(const tg_gemm *g);
cudaError_t tensor_gemm_launch7(const tg_gemm *g);
cudaError_t tensor_gemm_launch8(const tg_gemm *g);
cudaError_t tensor_gemm_launch9(const tg_gemm *g);
cudaError_t tensor_gemm_launch10(const tg_gemm *g);
cudaError_t tensor_gemm_launch11(const tg_gemm *g);
cudaError_t tensor_gemm_launch12(const tg_gemm *g);
tg_shape tensor_gemm_shape3(tg_type type);
tg_shape tensor_gemm_shape_ws(tg_type type); /* versions 4-8 */
tg_shape tensor_gemm_shape9(tg_type type); /* versions 9, 10 and 11 */
tg_shape tensor_gemm_shape12(tg_type type);
cudaError_t tensor_gemm_hopper_prepare(tg_gemm *g);                 /* the tensor maps of A, B and C */
void tensor_gemm_hopper_release(tg_gemm *g);                        /* frees version 10's list, 11's slots */
const char *tensor_gemm_hopper_unavailable(tg_type type, int n);    /* lb_sm90a_unavailable's answer */
const char *tensor_gemm_tma_store_unavailable(tg_type type, int n); /* and versions 9-12's N */

#ifdef __cplusplus
}
#endif
#endif
