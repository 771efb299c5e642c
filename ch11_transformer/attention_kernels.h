/* attention_kernels.h - launchers for attention_kernels.cu and attention_hopper.cu (callable from C).
 *
 * O = softmax(Q K^T / sqrt(D)) V for every batch and head: Q, K, V and O are bf16 (the bits in
 * uint16), each (B, H, S, D) contiguous, so that head (b, h) is an S x D row-major matrix at
 * offset ((b H) + h) S D (versions 4-7 also read token rows: ld_qkv and ld_o below). Causal: query i
 * sees keys 0..i only. Every version accumulates in fp32. */
#ifndef ATTENTION_KERNELS_H
#define ATTENTION_KERNELS_H
#include <stdint.h>
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* Versions 0 (the library way, in attention.c) .. 6; attention.c's version table has one row
 * for each. */
#define ATTENTION_VERSIONS 8
/* The longest sequence: version 0 holds an S x S matrix of scores per head (and version 2's
 * grid has S / 64 blocks along x); the program refuses more. */
#define ATTENTION_MAX_SEQ 65536

typedef struct {
    const uint16_t *q, *k, *v;  /* bf16 bits, (B, H, S, D) */
    uint16_t *o;                /* bf16 bits, (B, H, S, D) */
    int batch, heads, seq, dim; /* dim: 64 or 128 */
    int causal;
    /* (B H S) floats, or NULL: each query row's log-sum-exp, log sum_j exp(q . k_j / sqrt(D)) over
     * the keys it sees (natural log), what the backward pass needs to recompute P without O's
     * softmax; every version writes it when asked (the forward's timing leaves it NULL) */
    float *lse;
    void *prepared; /* versions 4-7's tensor maps (attention_prepare), NULL before */
    /* 0 and 0: Q, K, V and O as above, (B, H, S, D) contiguous. Else token rows, the layout a
     * product writes (PyTorch's (B, S, H, D) too): row s of head (b, h) at element
     * (b S + s) ld + h D, ld_qkv for Q, K and V, ld_o for O; ch12 reads Q, K and V straight from
     * its (B, S, 3C) qkv product (ld 3C, k = q + C, v = q + 2C) and writes O as the (B, S, C)
     * input of the next (ld C). Versions 4-7 only (attention_launch refuses the others). */
    int ld_qkv, ld_o;
} attention_problem;

/* Where a tensor's rows are: row s of head (b, h) starts at element b batch + h head + s row.
 * ld 0: (B, H, S, D) contiguous; else token rows ld elements apart (attention_problem.ld_qkv). */
typedef struct {
    long long batch, head, row;
    int heads; /* H: (b, h) from the head index b H + h that the kernels' grids count */
} attention_rows;
static inline attention_rows attention_rows_of(int heads, int seq, int dim, int ld)
{
    attention_rows r;
    r.heads = heads;
    if (ld) r.batch = (long long)seq * ld, r.head = dim, r.row = ld;
    else r.batch = (long long)heads * seq * dim, r.head = (long long)seq * dim, r.row = dim;
    return r;
}

/* Launch version v (1..6) on stream 0; returns the launch error (cudaErrorNotSupported: token
 * rows, ld_qkv or ld_o set, for a version before 4). */
cudaError_t attention_launch(int v, const attention_problem *p);

/* Version 0's softmax, between its two cuBLAS products: the rows of scores (rows x seq fp32,
 * row r is query r % seq of its head, already scaled by 1/sqrt(D)), masked above the diagonal
 * when causal, into probabilities as bf16 (the second product's input); and each row's
 * log-sum-exp into lse where it is not NULL. */
cudaError_t attention_softmax_launch(const float *scores, uint16_t *probs, long long rows, int seq, int causal,
                                     float *lse);

/* Versions 4-7 need tensor maps of Q, K and V (made through the driver's cuTensorMapEncodeTiled):
 * once per set of buffers, outside the timing. Where they cannot run it does nothing. */
cudaError_t attention_prepare(attention_problem *p);
void attention_release(attention_problem *p);

/* NULL when version v (0..7) can run on this GPU with this build, else the reason it cannot. Needs the
 * current device (after lb_gpu_init). */
const char *attention_unavailable(int v);

/* attention_hopper.cu: versions 4-7 (sm_90a), for attention_kernels.cu's table of launchers;
 * a program calls attention_launch, attention_prepare and attention_unavailable above */
cudaError_t attention_launch4(const attention_problem *p);
cudaError_t attention_launch5(const attention_problem *p);
cudaError_t attention_launch6(const attention_problem *p);
cudaError_t attention_launch7(const attention_problem *p);
cudaError_t attention_hopper_prepare(attention_problem *p); /* the tensor maps of Q, K and V */
const char *attention_hopper_unavailable(void);             /* lb_sm90a_unavailable's answer */

#ifdef __cplusplus
}
#endif
#endif
