/* dnn_fused_kernels.h - the fused training step's GEMM (dnn_fused_kernels.cu), callable from C.
 *
 * One kernel serves every product of a step, C (M,N) = op(A) (M,K) op(B) (K,N), with the work
 * that follows a GEMM done in its epilogue, while the tile is still in registers:
 *   forward   Z = [A, 1] [W; b], then act(Z)         FUSED_ACT (hidden), FUSED_STORE (logits)
 *   backward  dZ = (dZ' W^T) * act'(A)               FUSED_ACT_GRAD
 *   update    [dW; db] = [A, 1]^T dZ, then the optimizer applied to [W; b] at once
 *                                                    FUSED_SGD, FUSED_ADAM (FUSED_STORE: the
 *                                                    gradient itself, for gradcheck)
 * The bias rides along as one more row of W: the parameter buffer holds each layer's b right
 * after its W, so [W; b] is one (in + 1) x out matrix, and a column of ones appended to A
 * (a_ones) multiplies it. No bias kernel and no bias-gradient kernel are needed.
 */
#ifndef DNN_FUSED_KERNELS_H
#define DNN_FUSED_KERNELS_H
#include "dnn_kernels.h"
#ifdef __cplusplus
extern "C" {
#endif

enum { FUSED_STORE = 0, FUSED_ACT = 1, FUSED_ACT_GRAD = 2, FUSED_SGD = 3, FUSED_ADAM = 4 };

typedef struct {
    int M, N, K;
    /* op(A) (M,K): a_trans 0: element (m,k) = A[row(m) lda + k], where row(m) =
     * a_perm[state->cursor + m] when a_perm is given (the batch gathered on the fly from the
     * shuffled training set), else m; a_trans 1: A[k lda + m]. a_ones: the last k (a_trans 0)
     * or the last m (a_trans 1) is a 1 instead of a load: the bias's input. */
    const float *A;
    int lda, a_trans, a_ones;
    const int *a_perm;
    /* op(B) (K,N): b_trans 0: element (k,n) = B[k ldb + n]; 1: B[n ldb + k] */
    const float *B;
    int ldb, b_trans;
    float *C; /* (M,N), row-major with ldc; for the updates: the parameters [W; b] */
    int ldc;
    int epilogue, act;
    int tf32;             /* the products on TF32 tensor cores (sm_80 and newer), sums in fp32 */
    float *a_copy;        /* with a_perm: where to keep the gathered rows of A (M x (K - 1), lda) */
    const float *act_out; /* FUSED_ACT_GRAD: the layer's output (M,N, ldc) whose act' multiplies */
    float *opt1, *opt2;   /* FUSED_SGD: velocity; FUSED_ADAM: the two moments (laid out like C) */
    float mu, wd;         /* momentum, weight decay (the learning rate is state->lr, the step state->t) */
    const step_state *state;
} fused_gemm;

/* The tiling of one product: a tile of tile_m x tile_n outputs per block and K cut into
 * `splits` parts (their sums added in a fixed order by the last part to finish). */
typedef struct {
    int tile_m, tile_n, splits;
} fused_plan;

/* The plan for a product of this shape on this GPU (sms: its multiprocessors). */
fused_plan fused_plan_for(int M, int N, int K, int sms);
/* Floats of split-K workspace and ints of tile counters that are enough for every plan on a GPU
 * of `sms` multiprocessors. */
size_t fused_workspace_floats(int sms);
size_t fused_counter_ints(int sms);

/* Queue p with plan on stream. workspace and counters: from fused_*_floats/ints (counters zeroed
 * once: every use leaves them zero again). */
cudaError_t fused_gemm_launch(const fused_gemm *p, fused_plan plan, float *d_workspace, int *d_counters,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
