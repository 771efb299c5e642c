/* gpt_model.h - ch12's GPT on the GPU (gpt_model.c): its buffers and the steps of training, the
 * forward, the backward and the update, as version 0 computes them (fp32; cuBLAS, ch11's kernels
 * and gpt_kernels.cu). Host C; gpt.c trains with it, tests/emu/emu_gpt.cpp runs it on CPU threads
 * against gpt_model_cpu. */
#ifndef GPT_MODEL_H
#define GPT_MODEL_H
#include <cublas_v2.h>
#include <cublasLt.h>
#include "adamw_kernels.h" /* ch11's: adamw_tensor, adamw_state */
#include "gpt_cpu.h"

#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

/* The stream every part of a step runs on: this host thread's own default stream. A CUDA graph
 * (version 7) is recorded by capturing a stream, and the legacy stream 0 cannot be captured; so
 * ch12 compiles its kernels and ch11's with `nvcc --default-stream per-thread` (their launches on
 * "stream 0" go here) and passes GPT_STREAM to cuBLAS, cuBLASLt and its own copies. */
#define GPT_STREAM cudaStreamPerThread

/* What a run does with the batch on the device: a training step, or only its first part (the
 * loss: validation; the loss and the gradient: --check, --grads) */
enum { GPT_STEP, GPT_LOSS, GPT_GRADIENT, GPT_RUN_KINDS };
struct gpt_parts;

/* the parameters, their gradients and AdamW's moments (P floats each, in gpt_tensor_at's order),
 * the activations the backward needs (per layer), and the scratch of one step */
typedef struct {
    gpt_config c;
    int B, T; /* the largest batch and sequence the buffers hold */
    unsigned buffers; /* the groups of GPT_BUFFERS_* allocated (the others' pointers NULL) */
    size_t P;
    cublasHandle_t blas;
    float *params, *grads, *m, *v;
    int *tokens, *targets; /* B T each */
    float *res;           /* the residual stream entering each layer, and leaving the last: (L + 1) N C */
    float *mid;           /* after each layer's attention: L N C */
    float *ln1, *ln2;     /* L N C each (versions 0-4: the fused ones keep theirs in bf16) */
    float *mean1, *rstd1, *mean2, *rstd2; /* L N each */
    float *qkv;           /* L N 3C */
    float *att;           /* the attention's probabilities: L B H T T */
    float *atty;          /* the heads' outputs merged: L N C */
    float *fch, *gelu;    /* L N 4C each */
    float *lnf, *meanf, *rstdf;
    float *logits, *dlogits, *probs; /* N Vp each, rows Vp apart, V used (probs: cross-entropy version 1's scratch) */
    unsigned short *logits16;        /* version 6 on: the logits in bf16 (N Vp), then their gradient over them */
    float *column_part;              /* the bias gradients' slab sums (gpt_column_sum_launch, gpt_bias_grad_bf16_launch) */
    unsigned *column_count;          /* gpt_bias_grad_bf16_launch's counters of finished slabs (zero between launches) */
    float *loss, *row_loss;          /* 1, N */
    /* the backward's scratch */
    float *d, *dmid, *dln, *datty, *dqkv;        /* N C, N C, N C, N C, N 3C */
    float *dfc, *dgelu;                          /* N 4C each */
    float *q, *k, *vh, *yh, *dq, *dk, *dv, *dyh; /* (B, H, T, C/H) each */
    float *scores;                               /* B H T T: S, then dP, then dS */
    float *ln_partial;                           /* LayerNorm backward's column sums */
    float *sumsq;                                /* the gradient's squared norm */
    /* flash attention's (ch11's kernels): each layer's Q, K, V and O heads in bf16, (B, H, T, C/H)
     * each, L of them, and each query row's log-sum-exp (L B H T); the backward's dO, dQ, dK, dV
     * (bf16, N C each), its row sums of dO o O (B H T) and dQ's fp32 sum (N C). Version 9 has no
     * heads of their own (q16 .. o16, dq16 .. dv16 NULL): its dO is do16 as token rows (N, C) */
    unsigned short *q16, *k16, *v16, *o16;
    float *lse;
    unsigned short *do16, *dq16, *dk16, *dv16;
    float *delta, *dq_acc;
    /* version 5's activations in bf16, kept from the forward for the backward's weight gradients:
     * the LayerNorms' outputs and the merged heads (L N C each), the fc product before GELU (the
     * epilogue's aux) and after (L N 4C each), the final LayerNorm's (N C); and scratch: qkv
     * (N 3C; version 9 keeps every layer's, L N 3C, the heads attention reads), the fc gradient
     * (N 4C), the qkv gradient (N 3C) */
    unsigned short *ln1_16, *atty16, *ln2_16, *pre16, *gelu16, *lnf16, *qkv16, *dfc16, *dqkv16;
    cublasLtHandle_t lt;
    void *lt_workspace;     /* GPT_LT_WORKSPACE bytes */
    struct gpt_lt_algo *lt_algos; /* the products' algorithms, chosen once a shape (gpt_fused.c) */
    int n_lt_algos;
    unsigned short *params16;                    /* bf16 copies for the bf16 products: the parameters */
    unsigned short *x16, *d16;                   /* and a product's input and its gradient (scratch) */
    void *owned[96];                             /* every device buffer above, for gpt_gpu_free */
    int n_owned;
    adamw_state *adam;                           /* two: the decayed tensors and the others */
    adamw_tensor *decayed, *plain;               /* each group's tensors, on the host */
    int n_decayed, n_plain;
    adamw_tensor *d_decayed, *d_plain;           /* the same on the device, and their chunks */
    adamw_chunk *chunks_decayed, *chunks_plain;  /* (AdamW in one launch over a group) */
    int n_chunks_decayed, n_chunks_plain;
    adamw_tensor *d_decayed16, *d_plain16;       /* the same with the bf16 copy (params16) to write
                                                  * (version 8; NULL without params16) */
    int params16_stale; /* params16 older than params: set by gpt_params_set, cleared by a conversion */
    /* version 7's CUDA graphs, one for each kind of run (GPT_STEP, GPT_LOSS, GPT_GRADIENT), each
     * recorded for one batch shape, one version's parts, weight decay and clip (gpt_run_graph) */
    struct gpt_graph {
        cudaGraphExec_t exec;
        const struct gpt_parts *parts;
        int B, T;
        float wd, clip;
    } graphs[GPT_RUN_KINDS];
} gpt_gpu;

/* The check of a step against gpt_model_cpu (gpt --check, tests/emu/emu_gpt.cpp): the loss within
 * tol of its value, each gradient element within tol of its tensor's largest |gradient| plus tol
 * of its own, tol derived from the arithmetic (NOTES, "the check's tolerance"), each rounding
 * taken as an independent error spread evenly over half an ulp (a standard deviation of
 * u / sqrt 3, u the unit roundoff): a product's two operands rounded to bf16 (u = 2^-8: together
 * sqrt(2/3) 2^-8; nothing for fp32 operands) and its fp32 sums of up to K terms (u = 2^-24,
 * adding like a random walk: sqrt(K / 3) 2^-24), through the chain of D = 4 L + 2 products
 * between the loss and the first layer's weights (a random walk again: sqrt D), and the worst of
 * the many elements within 4 standard deviations:
 *     tol = 4 sqrt(D) (sqrt(2/3) 2^-8 [bf16] + sqrt(K / 3) 2^-24),   K = max(4 C, B T, Vp)
 * fp32 at --check's shape (L2 C128 T80 B2): 9.8e-6; bf16: 4.0e-2. */
double gpt_check_tolerance(const gpt_config *c, int B, int T, int bf16);

/* The buffers beyond every version's (the parameters, the optimizer, the residual stream, the
 * LayerNorms, the logits), in groups, each allocated only for versions that read it (a version's
 * gpt_parts.buffers; --bench and --check: the union), so that training with one version takes
 * only its own memory: at GPT-2's shape version 0's attention probabilities alone are 4.8 GB. */
enum {
    GPT_BUFFERS_PROBS = 1,         /* cross-entropy version 1's probabilities (N Vp) */
    GPT_BUFFERS_FP32_LAYERS = 2,   /* the LayerNorms, qkv, attention and the MLP in fp32, a layer each */
    GPT_BUFFERS_SCORES = 4,        /* attention the library way: the probabilities (L B H T^2), heads */
    GPT_BUFFERS_BF16_PRODUCTS = 8, /* the bf16 weights and a product's operands */
    GPT_BUFFERS_FLASH = 16,        /* flash attention's log-sum-exps, dO and scratch */
    GPT_BUFFERS_FUSED = 32,        /* version 5's bf16 activations and cuBLASLt's workspace */
    GPT_BUFFERS_FP32_LOGITS = 64,  /* the logits and their gradient in fp32 (N Vp each: 1.6 GB each at GPT-2's shape) */
    GPT_BUFFERS_BF16_LOGITS = 128, /* the logits in bf16, their gradient written over them */
    GPT_BUFFERS_HEADS = 256,       /* flash attention's (B, H, T, C/H) bf16 heads (versions 4-8) */
    GPT_BUFFERS_QKV_ROWS = 512,    /* every layer's qkv product kept, its heads read in place (9) */
};
/* device bytes gpt_gpu_alloc asks for, for the check before it */
size_t gpt_device_bytes(const gpt_config *c, int B, int T, unsigned buffers);
/* every version's buffers and the groups `buffers` names, for batches of up to B sequences of up
 * to T tokens; AdamW's moments and step count zero. Exits on a CUDA or cuBLAS error. */
void gpt_gpu_alloc(gpt_gpu *g, const gpt_config *c, int B, int T, unsigned buffers);
void gpt_gpu_free(gpt_gpu *g);

/* What the versions change in a step, part by part: each part a function of gpt_model.c, a
 * version a row of them (gpt.c's table). Parts not listed are version 0's in every version. */
typedef struct gpt_parts gpt_parts;
struct gpt_parts {
    /* the forward and the backward: versions 0-4 share theirs, made of the parts below; version
     * 5 has its own (gpt_fused.c), with the loss, AdamW and begin below */
    void (*forward)(gpt_gpu *g, const gpt_parts *parts, int B, int T, int with_loss);
    void (*backward)(gpt_gpu *g, const gpt_parts *parts, int B, int T);
    void (*loss)(gpt_gpu *g, int N);               /* the logits (N, V) -> g->loss, g->dlogits */
    void (*adamw)(gpt_gpu *g, float wd, float clip); /* the gradient clipped to `clip` (its squared
                                                      * norm in g->sumsq) -> the parameters */
    void (*begin)(gpt_gpu *g);                     /* before a forward: what the products read */
    /* versions 0-4's layer parts (NULL in version 5 on, whose forward and backward do their own): */
    /* a linear layer's products: out (N, O) = x (N, I) W^T; dx = dout W, dW += dout^T x */
    void (*linear)(gpt_gpu *g, float *out, const float *x, const float *W, int N, int I, int O);
    void (*linear_backward)(gpt_gpu *g, float *dx, float *dW, const float *dout, const float *x, const float *W, int N,
                            int I, int O);
    /* attention in layer l: y (N, C) from qkv (N, 3C), keeping what the backward needs; and the
     * backward: dqkv (N, 3C) from dy, the forward's qkv and what it kept */
    void (*attention)(gpt_gpu *g, int l, float *y, const float *qkv, int B, int T);
    void (*attention_backward)(gpt_gpu *g, int l, float *dqkv, const float *dy, const float *qkv, int B, int T);
    int bf16;                      /* products on bf16 operands: the check's tolerance is bf16's */
    unsigned buffers;              /* the groups of GPT_BUFFERS_* it reads and writes */
    int layernorm_version;         /* ch11's LayerNorm forward: 1 (three reads of a row) or 3 (one) */
};
/* NULL when the parts can run a model of config c on a GPU whose blocks may have shared_optin
 * bytes of shared memory, else why not (flash attention: heads of 64 or 128 channels, ch11's
 * kernels' two sizes; the one-read loss: a row of logits in shared memory) */
const char *gpt_parts_unavailable(const gpt_parts *parts, const gpt_config *c, size_t shared_optin);
/* version 0: the loss as softmax, then loss and gradient (ch11's cross-entropy version 1, three
 * kernels); AdamW a launch per tensor (ch11's version 1) */
extern const gpt_parts gpt_parts_unfused;
/* version 1: the loss, its softmax and its gradient in one pass (cross-entropy version 3) */
extern const gpt_parts gpt_parts_fused_loss;
/* version 2: and AdamW in one launch over each group's tensors (AdamW version 4) */
extern const gpt_parts gpt_parts_adamw_one_launch;
/* version 3: and the linear layers' products in bf16 on the tensor cores (cublasGemmEx: bf16
 * operands rounded from the fp32 ones, fp32 accumulation and results) */
extern const gpt_parts gpt_parts_bf16_products;
/* version 4: and attention by ch11's flash kernels, forward and backward (bf16 Q, K, V, O and
 * gradients, fp32 arithmetic; wgmma and TMA on sm_90a, mma.sync elsewhere): no T x T matrix in
 * memory */
extern const gpt_parts gpt_parts_flash_attention;
/* version 5: and the products by cuBLASLt with their epilogues (bias; GELU, keeping its input;
 * GELU's derivative; the bias gradients; the residual added as C), the activations the backward
 * reads kept in bf16 from the forward (gpt_fused.c) */
extern const gpt_parts gpt_parts_fused_epilogues;
/* version 8: version 6's parts with the clip and the bf16 weights inside AdamW: the clip's factor
 * written into AdamW's state (grad_scale) instead of a pass over the gradient, and the weights'
 * bf16 copy written by the step (adamw_tensor.p16) instead of converted before each forward
 * (converted only when stale: after gpt_params_set) */
extern const gpt_parts gpt_parts_fused_adamw;
/* version 6: and ch11's one-read row kernels in bf16: LayerNorm version 3 (the row in registers,
 * its output written in bf16 for the next product) and the cross-entropy version 4 on bf16 logits
 * (the row in shared memory), its gradient in bf16 over them, as the classifier's backward reads it */
extern const gpt_parts gpt_parts_fast_rows;

/* version 9: version 8's parts with attention on token rows: ch11's flash kernels read Q, K and V
 * where the qkv product wrote them and write O where the projection reads it (forward), read dO
 * where the projection's backward wrote it and write dQ, dK, dV into the qkv product's gradient
 * (backward): the passes that split, merged, unmerged and joined heads are gone (sm_90a: ch11's
 * attention version 4, through four-dimensional tensor maps) */
extern const gpt_parts gpt_parts_token_rows;

/* gpt_fused.c: version 5's forward and backward */
void gpt_forward_fused(gpt_gpu *g, const gpt_parts *parts, int B, int T, int with_loss);
void gpt_backward_fused(gpt_gpu *g, const gpt_parts *parts, int B, int T);
/* cuBLASLt's workspace, and the most product shapes whose algorithm is kept */
#define GPT_LT_WORKSPACE ((size_t)32 << 20)
#define GPT_LT_ALGOS 64
/* ch11's flash attention on layer l's bf16 heads (q16, k16, v16 -> o16 and the log-sum-exps;
 * do16 -> dq16, dk16, dv16): version 4 on; dq_fp32: dQ left in its fp32 sum (dq_acc) instead */
void gpt_flash_forward(gpt_gpu *g, int l, int B, int T);
void gpt_flash_backward(gpt_gpu *g, int l, int B, int T, int dq_fp32);
/* the same on token rows (version 9): layer l's qkv16 rows -> its atty16 rows and log-sum-exps;
 * do16 rows -> dqkv16 rows */
void gpt_flash_forward_rows(gpt_gpu *g, int l, int B, int T);
void gpt_flash_backward_rows(gpt_gpu *g, int l, int B, int T);

/* The forward of B sequences of T tokens (g->tokens, B <= g->B, T <= g->T): the activations kept
 * for the backward, the logits (B T, V); with_loss: the mean cross-entropy against g->targets
 * (g->loss) and its gradient (g->dlogits) too */
void gpt_forward(gpt_gpu *g, const gpt_parts *parts, int B, int T, int with_loss);
/* every parameter's gradient into g->grads, from the last forward's activations and dlogits */
void gpt_backward(gpt_gpu *g, const gpt_parts *parts, int B, int T);
/* the gradient clipped to a global norm of at most `clip` (its squared norm left in g->sumsq),
 * then AdamW at rate lr, weight decay wd on the matrices: gpt_set_lr, then gpt_clip_adamw */
void gpt_update(gpt_gpu *g, const gpt_parts *parts, float lr, float wd, float clip);
void gpt_set_lr(gpt_gpu *g, float lr); /* the rate AdamW reads, copied to the device */
/* the parameters copied from host memory (P floats): the bf16 copy marked stale and the recorded
 * graphs dropped (version 8's record no conversion: its AdamW keeps the copy as it goes) */
void gpt_params_set(gpt_gpu *g, const float *h_params);
void gpt_clip_adamw(gpt_gpu *g, const gpt_parts *parts, float wd, float clip);

/* A run (what: GPT_STEP, GPT_LOSS or GPT_GRADIENT) of B sequences of T tokens already on the
 * device: the forward with the loss, then the backward unless GPT_LOSS, then the update if
 * GPT_STEP. gpt_run launches each part's kernels in turn (versions 0-6); gpt_run_graph (version 7)
 * runs as gpt_run the first time it meets a kind of run, batch shape, parts, wd and clip, records
 * the same launches as a CUDA graph the second time, and from then on launches the graph: one
 * launch a step instead of hundreds. lr is not in the graph (the schedule changes it every
 * step): gpt_set_lr before each launch. */
void gpt_run(gpt_gpu *g, const gpt_parts *parts, int what, int B, int T, float lr, float wd, float clip);
void gpt_run_graph(gpt_gpu *g, const gpt_parts *parts, int what, int B, int T, float lr, float wd, float clip);
/* the first V logits of row `row` of the last forward, as floats, into host memory (the sampler) */
void gpt_logits_row(gpt_gpu *g, const gpt_parts *parts, int row, float *out);

#ifdef __cplusplus
}
#endif
#endif
