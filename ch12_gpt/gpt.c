/* gpt.c - a GPT trained from scratch on the book's own kernels: GPT-2's architecture
 * (gpt_cpu.h), character-level, on ../datasets/shakespeare.txt; it prints its loss as it learns,
 * the validation loss every --eval-every steps, saves a checkpoint, and writes text.
 *   build: make ch12 (or `make` here)
 *   run:   ./gpt [version] [--data FILE] [--layers L --heads H --channels C --context T --batch B]
 *          ./gpt --check                      one step against the CPU model in double
 *          ./gpt --load ckpt --sample 500     text from a checkpoint
 *
 * versions (the table versions[] below; each one a whole training step):
 *   0  unfused: every layer as its own kernels in fp32, the products by cuBLAS (SGEMM, attention's
 *      scores and P V batched over the heads, the scores in memory), ch11's LayerNorm, softmax,
 *      cross-entropy and AdamW kernels through their launchers, ch12's own for the rest
 *      (gpt_kernels.cu: embeddings, bias, GELU, residual adds, the global norm)
 *
 * A step: the batch's forward (loss), its backward (every parameter's gradient), the gradient
 * clipped by its global norm, and AdamW (decay on the matrices, not on biases and LayerNorms) at
 * the learning rate of a linear warm-up and a cosine decay to a tenth.
 * Checked (--check): at a tiny configuration, the loss and every parameter's gradient of one step
 * against gpt_model_cpu in double.
 */
#include <cublas_v2.h> /* before labbook.h: CUBLAS_CHECK */
#include "labbook.h"
#include "gpt_cpu.h"
#include "gpt_data.h"
#include "gpt_kernels.h"
#include "adamw_kernels.h" /* ch11's */
#include "cross_entropy_kernels.h"
#include "layernorm_kernels.h"
#include "softmax_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the model on the GPU */

/* the parameters, their gradients and AdamW's moments (P floats each, in gpt_tensor_at's order),
 * the activations the backward needs (per layer), and the scratch of one step */
typedef struct {
    gpt_config c;
    int B, T; /* the largest batch and sequence the buffers hold */
    size_t P;
    cublasHandle_t blas;
    float *params, *grads, *m, *v;
    int *tokens, *targets; /* B T each */
    float *res;           /* the residual stream entering each layer, and leaving the last: (L + 1) N C */
    float *mid;           /* after each layer's attention: L N C */
    float *ln1, *ln2;     /* L N C each */
    float *mean1, *rstd1, *mean2, *rstd2; /* L N each */
    float *qkv;           /* L N 3C */
    float *att;           /* the attention's probabilities: L B H T T */
    float *atty;          /* the heads' outputs merged: L N C */
    float *fch, *gelu;    /* L N 4C each */
    float *lnf, *meanf, *rstdf;
    float *logits, *dlogits, *probs; /* N V each (probs: cross-entropy version 1's scratch) */
    float *loss, *row_loss;          /* 1, N */
    /* the backward's scratch */
    float *d, *dmid, *dln, *datty, *dqkv;        /* N C, N C, N C, N C, N 3C */
    float *dfc, *dgelu;                          /* N 4C each */
    float *q, *k, *vh, *yh, *dq, *dk, *dv, *dyh; /* (B, H, T, C/H) each */
    float *scores;                               /* B H T T: S, then dP, then dS */
    float *ln_partial;                           /* LayerNorm backward's column sums */
    float *sumsq;                                /* the gradient's squared norm */
    adamw_state *adam;                           /* two: the decayed tensors and the others */
    adamw_tensor *decayed, *plain;
    int n_decayed, n_plain;
} gpt_gpu;

#define PARAM(g, layer, t) ((g)->params + gpt_offset(&(g)->c, (layer), (t)))
#define GRAD(g, layer, t) ((g)->grads + gpt_offset(&(g)->c, (layer), (t)))

/* device bytes for a model of config c, batches of B x T: what gpt_alloc asks for */
static size_t gpt_bytes(const gpt_config *c, int B, int T)
{
    size_t L = (size_t)c->layers, N = (size_t)B * T, C = (size_t)c->channels, H = (size_t)c->heads;
    size_t V = (size_t)c->vocab, att = (size_t)B * H * T * T;
    size_t floats = 4 * gpt_param_count(c) + (L + 1) * N * C + 4 * L * N * C + 4 * L * N + 3 * L * N * C + L * att +
                    L * N * C + 8 * L * N * C + N * C + 2 * N + 3 * N * V + 1 + N + 7 * N * C + 8 * N * C + 8 * N * C +
                    att + 2 * ((N + LN_ROWS_PER_GROUP - 1) / LN_ROWS_PER_GROUP + 1) * C + 1;
    return 4 * floats + 2 * 4 * N + 4096;
}

static float *dalloc(size_t floats)
{
    float *p;
    CUDA_CHECK(cudaMalloc((void **)&p, sizeof(float) * (floats ? floats : 1)));
    return p;
}

/* AdamW's two groups: the matrices (and the embeddings) decay, vectors do not (GPT-2's practice) */
static void adam_groups(gpt_gpu *g)
{
    size_t n = gpt_tensor_count(&g->c);
    g->decayed = lb_host_alloc(sizeof(adamw_tensor) * n, "AdamW's tensors");
    g->plain = lb_host_alloc(sizeof(adamw_tensor) * n, "AdamW's tensors");
    g->n_decayed = g->n_plain = 0;
    for (size_t i = 0; i < n; i++) {
        gpt_tensor t = gpt_tensor_at(&g->c, i);
        adamw_tensor a = {g->params + t.offset, g->grads + t.offset, g->m + t.offset, g->v + t.offset,
                          (long long)(t.rows * t.cols)};
        if (t.rows > 1)
            g->decayed[g->n_decayed++] = a;
        else
            g->plain[g->n_plain++] = a;
    }
}

static void gpt_alloc(gpt_gpu *g, const gpt_config *c, int B, int T)
{
    memset(g, 0, sizeof *g);
    g->c = *c, g->B = B, g->T = T, g->P = gpt_param_count(c);
    size_t L = (size_t)c->layers, N = (size_t)B * T, C = (size_t)c->channels, H = (size_t)c->heads;
    size_t V = (size_t)c->vocab, att = (size_t)B * H * T * T, P = g->P;
    CUBLAS_CHECK(cublasCreate(&g->blas));
    g->params = dalloc(P), g->grads = dalloc(P), g->m = dalloc(P), g->v = dalloc(P);
    CUDA_CHECK(cudaMalloc((void **)&g->tokens, sizeof(int) * N));
    CUDA_CHECK(cudaMalloc((void **)&g->targets, sizeof(int) * N));
    g->res = dalloc((L + 1) * N * C), g->mid = dalloc(L * N * C), g->ln1 = dalloc(L * N * C), g->ln2 = dalloc(L * N * C);
    g->mean1 = dalloc(L * N), g->rstd1 = dalloc(L * N), g->mean2 = dalloc(L * N), g->rstd2 = dalloc(L * N);
    g->qkv = dalloc(3 * L * N * C), g->att = dalloc(L * att), g->atty = dalloc(L * N * C);
    g->fch = dalloc(4 * L * N * C), g->gelu = dalloc(4 * L * N * C);
    g->lnf = dalloc(N * C), g->meanf = dalloc(N), g->rstdf = dalloc(N);
    g->logits = dalloc(N * V), g->dlogits = dalloc(N * V), g->probs = dalloc(N * V);
    g->loss = dalloc(1), g->row_loss = dalloc(N);
    g->d = dalloc(N * C), g->dmid = dalloc(N * C), g->dln = dalloc(N * C), g->datty = dalloc(N * C);
    g->dqkv = dalloc(3 * N * C), g->dfc = dalloc(4 * N * C), g->dgelu = dalloc(4 * N * C);
    g->q = dalloc(N * C), g->k = dalloc(N * C), g->vh = dalloc(N * C), g->yh = dalloc(N * C);
    g->dq = dalloc(N * C), g->dk = dalloc(N * C), g->dv = dalloc(N * C), g->dyh = dalloc(N * C);
    g->scores = dalloc(att);
    g->ln_partial = dalloc(2 * ((N + LN_ROWS_PER_GROUP - 1) / LN_ROWS_PER_GROUP + 1) * C);
    g->sumsq = dalloc(1);
    CUDA_CHECK(cudaMalloc((void **)&g->adam, 2 * sizeof(adamw_state)));
    CUDA_CHECK(cudaMemset(g->adam, 0, 2 * sizeof(adamw_state)));
    CUDA_CHECK(cudaMemset(g->m, 0, sizeof(float) * P));
    CUDA_CHECK(cudaMemset(g->v, 0, sizeof(float) * P));
    adam_groups(g);
}

static void gpt_free(gpt_gpu *g)
{
    float *all[] = {g->params, g->grads, g->m, g->v, g->res, g->mid, g->ln1, g->ln2, g->mean1, g->rstd1, g->mean2,
                    g->rstd2, g->qkv, g->att, g->atty, g->fch, g->gelu, g->lnf, g->meanf, g->rstdf, g->logits,
                    g->dlogits, g->probs, g->loss, g->row_loss, g->d, g->dmid, g->dln, g->datty, g->dqkv, g->dfc,
                    g->dgelu, g->q, g->k, g->vh, g->yh, g->dq, g->dk, g->dv, g->dyh, g->scores, g->ln_partial,
                    g->sumsq};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) CUDA_CHECK(cudaFree(all[i]));
    CUDA_CHECK(cudaFree(g->tokens));
    CUDA_CHECK(cudaFree(g->targets));
    CUDA_CHECK(cudaFree(g->adam));
    CUBLAS_CHECK(cublasDestroy(g->blas));
    free(g->decayed), free(g->plain);
}

/* ---------------------------------------------------------------- version 0's layers */

/* Row-major out (N, O) = x (N, I) W^T (+ out when accumulate), W (O, I) as nn.Linear keeps it.
 * cuBLAS reads column-major: our row-major out is its O x N, = W^T-of-its-view times x. */
static void linear_fwd(gpt_gpu *g, float *out, const float *x, const float *W, int N, int I, int O)
{
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, O, N, I, &one, W, I, x, I, &zero, out, O));
}
/* dx (N, I) = dout (N, O) W; dW (O, I) += dout^T x */
static void linear_bwd(gpt_gpu *g, float *dx, float *dW, const float *dout, const float *x, const float *W, int N, int I,
                       int O)
{
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, I, N, O, &one, W, I, dout, O, &zero, dx, I));
    CUBLAS_CHECK(cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, I, O, N, &one, x, I, dout, O, &one, dW, I));
}
/* a linear layer with its bias: the product, then the bias row added */
static void linear_bias_fwd(gpt_gpu *g, float *out, const float *x, const float *W, const float *b, int N, int I, int O)
{
    linear_fwd(g, out, x, W, N, I, O);
    CUDA_CHECK(gpt_bias_add_launch(out, b, N, O));
}
static void linear_bias_bwd(gpt_gpu *g, float *dx, float *dW, float *db, const float *dout, const float *x,
                            const float *W, int N, int I, int O)
{
    linear_bwd(g, dx, dW, dout, x, W, N, I, O);
    CUDA_CHECK(gpt_column_sum_launch(db, dout, N, O));
}

/* Attention the library way, per layer: Q, K, V split into heads (B H, T, hs); S = Q K^T / sqrt(hs)
 * by one batched product, the causal mask, P = softmax(S) (ch11's), Y = P V by another, the heads
 * merged. P stays in memory for the backward (att). Column-major views as in linear_fwd:
 * S (T x T, row q) is K Q^T to cuBLAS, Y is V P. */
static void attention_fwd(gpt_gpu *g, float *y, float *att, const float *qkv, int B, int T)
{
    int C = g->c.channels, H = g->c.heads, hs = C / H, heads = B * H;
    long long th = (long long)T * hs, tt = (long long)T * T;
    const float scale = 1.0f / sqrtf((float)hs), one = 1.0f, zero = 0.0f;
    CUDA_CHECK(gpt_split_heads_launch(g->q, g->k, g->vh, qkv, B, T, C, H));
    CUBLAS_CHECK(cublasSgemmStridedBatched(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &scale, g->k, hs, th, g->q, hs,
                                           th, &zero, att, T, tt, heads));
    CUDA_CHECK(gpt_causal_mask_launch(att, (long long)heads * T, T));
    CUDA_CHECK(softmax_launch(3, att, att, heads * T, T));
    CUBLAS_CHECK(cublasSgemmStridedBatched(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, g->vh, hs, th, att, T, tt,
                                           &zero, g->yh, hs, th, heads));
    CUDA_CHECK(gpt_merge_heads_launch(y, g->yh, B, T, C, H));
}
/* dP = dY V^T, dV = P^T dY, dS = P (dP - rowsum(P dP)) / sqrt(hs), dQ = dS K, dK = dS^T Q */
static void attention_bwd(gpt_gpu *g, float *dqkv, const float *dy, const float *att, const float *qkv, int B, int T)
{
    int C = g->c.channels, H = g->c.heads, hs = C / H, heads = B * H;
    long long th = (long long)T * hs, tt = (long long)T * T;
    const float one = 1.0f, zero = 0.0f;
    CUDA_CHECK(gpt_split_heads_launch(g->q, g->k, g->vh, qkv, B, T, C, H));
    CUDA_CHECK(gpt_unmerge_heads_launch(g->dyh, dy, B, T, C, H));
    CUBLAS_CHECK(cublasSgemmStridedBatched(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &one, g->vh, hs, th, g->dyh, hs,
                                           th, &zero, g->scores, T, tt, heads));
    CUBLAS_CHECK(cublasSgemmStridedBatched(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, g->dyh, hs, th, att, T, tt,
                                           &zero, g->dv, hs, th, heads));
    CUDA_CHECK(gpt_softmax_backward_launch(g->scores, att, g->scores, (long long)heads * T, T, 1.0f / sqrtf((float)hs)));
    CUBLAS_CHECK(cublasSgemmStridedBatched(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, g->k, hs, th, g->scores, T,
                                           tt, &zero, g->dq, hs, th, heads));
    CUBLAS_CHECK(cublasSgemmStridedBatched(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, g->q, hs, th, g->scores, T,
                                           tt, &zero, g->dk, hs, th, heads));
    CUDA_CHECK(gpt_join_qkv_launch(dqkv, g->dq, g->dk, g->dv, B, T, C, H));
}

/* the forward of B sequences of T tokens (g->tokens): the activations kept, the logits (N, V);
 * with targets, the cross-entropy's mean loss (g->loss) and its gradient (g->dlogits) too */
static void forward(gpt_gpu *g, int B, int T, int with_loss)
{
    const gpt_config *c = &g->c;
    int N = B * T, C = c->channels;
    size_t NC = (size_t)N * C;
    CUDA_CHECK(gpt_embed_launch(g->res, g->tokens, g->params + gpt_offset_wte(c), g->params + gpt_offset_wpe(c), B, T, C));
    for (int l = 0; l < c->layers; l++) {
        float *x = g->res + l * NC, *ln1 = g->ln1 + l * NC, *qkv = g->qkv + l * 3 * NC, *atty = g->atty + l * NC;
        float *mid = g->mid + l * NC, *ln2 = g->ln2 + l * NC, *fch = g->fch + l * 4 * NC, *gelu = g->gelu + l * 4 * NC;
        float *out = g->res + (l + 1) * NC, *att = g->att + (size_t)l * B * c->heads * T * T;
        CUDA_CHECK(layernorm_forward_launch(1, x, PARAM(g, l, GPT_LN1_W), PARAM(g, l, GPT_LN1_B), ln1,
                                            g->mean1 + (size_t)l * N, g->rstd1 + (size_t)l * N, N, C));
        linear_bias_fwd(g, qkv, ln1, PARAM(g, l, GPT_QKV_W), PARAM(g, l, GPT_QKV_B), N, C, 3 * C);
        attention_fwd(g, atty, att, qkv, B, T);
        linear_bias_fwd(g, mid, atty, PARAM(g, l, GPT_PROJ_W), PARAM(g, l, GPT_PROJ_B), N, C, C);
        CUDA_CHECK(gpt_add_launch(mid, mid, x, NC)); /* the residual */
        CUDA_CHECK(layernorm_forward_launch(1, mid, PARAM(g, l, GPT_LN2_W), PARAM(g, l, GPT_LN2_B), ln2,
                                            g->mean2 + (size_t)l * N, g->rstd2 + (size_t)l * N, N, C));
        linear_bias_fwd(g, fch, ln2, PARAM(g, l, GPT_FC_W), PARAM(g, l, GPT_FC_B), N, C, 4 * C);
        CUDA_CHECK(gpt_gelu_launch(gelu, fch, 4 * NC));
        linear_bias_fwd(g, out, gelu, PARAM(g, l, GPT_FCPROJ_W), PARAM(g, l, GPT_FCPROJ_B), N, 4 * C, C);
        CUDA_CHECK(gpt_add_launch(out, out, mid, NC));
    }
    CUDA_CHECK(layernorm_forward_launch(1, g->res + (size_t)c->layers * NC, g->params + gpt_offset_lnf(c, 0),
                                        g->params + gpt_offset_lnf(c, 1), g->lnf, g->meanf, g->rstdf, N, C));
    linear_fwd(g, g->logits, g->lnf, g->params + gpt_offset_wte(c), N, C, c->vocab); /* tied: wte's first V rows */
    if (with_loss)
        CUDA_CHECK(ce_launch(1, g->logits, g->targets, g->dlogits, g->loss, g->row_loss, g->probs, N, c->vocab));
}

/* every parameter's gradient into g->grads, from the forward's activations and dlogits */
static void backward(gpt_gpu *g, int B, int T)
{
    const gpt_config *c = &g->c;
    int N = B * T, C = c->channels;
    size_t NC = (size_t)N * C;
    CUDA_CHECK(cudaMemsetAsync(g->grads, 0, sizeof(float) * g->P, 0));
    linear_bwd(g, g->dln, g->grads + gpt_offset_wte(c), g->dlogits, g->lnf, g->params + gpt_offset_wte(c), N, C, c->vocab);
    CUDA_CHECK(layernorm_backward_launch(g->dln, g->res + (size_t)c->layers * NC, g->meanf, g->rstdf,
                                         g->params + gpt_offset_lnf(c, 0), g->d, g->grads + gpt_offset_lnf(c, 0),
                                         g->grads + gpt_offset_lnf(c, 1), g->ln_partial, N, C));
    for (int l = c->layers - 1; l >= 0; l--) {
        const float *x = g->res + l * NC, *mid = g->mid + l * NC, *att = g->att + (size_t)l * B * c->heads * T * T;
        /* the MLP: out = mid + fcproj(gelu(fc(ln2(mid)))); d is out's gradient */
        linear_bias_bwd(g, g->dgelu, GRAD(g, l, GPT_FCPROJ_W), GRAD(g, l, GPT_FCPROJ_B), g->d, g->gelu + l * 4 * NC,
                        PARAM(g, l, GPT_FCPROJ_W), N, 4 * C, C);
        CUDA_CHECK(gpt_gelu_backward_launch(g->dfc, g->dgelu, g->fch + l * 4 * NC, 4 * NC));
        linear_bias_bwd(g, g->dln, GRAD(g, l, GPT_FC_W), GRAD(g, l, GPT_FC_B), g->dfc, g->ln2 + l * NC,
                        PARAM(g, l, GPT_FC_W), N, C, 4 * C);
        CUDA_CHECK(layernorm_backward_launch(g->dln, mid, g->mean2 + (size_t)l * N, g->rstd2 + (size_t)l * N,
                                             PARAM(g, l, GPT_LN2_W), g->dmid, GRAD(g, l, GPT_LN2_W),
                                             GRAD(g, l, GPT_LN2_B), g->ln_partial, N, C));
        CUDA_CHECK(gpt_add_launch(g->dmid, g->dmid, g->d, NC)); /* and the residual's share */
        /* attention: mid = x + proj(attention(qkv(ln1(x)))) */
        linear_bias_bwd(g, g->datty, GRAD(g, l, GPT_PROJ_W), GRAD(g, l, GPT_PROJ_B), g->dmid, g->atty + l * NC,
                        PARAM(g, l, GPT_PROJ_W), N, C, C);
        attention_bwd(g, g->dqkv, g->datty, att, g->qkv + l * 3 * NC, B, T);
        linear_bias_bwd(g, g->dln, GRAD(g, l, GPT_QKV_W), GRAD(g, l, GPT_QKV_B), g->dqkv, g->ln1 + l * NC,
                        PARAM(g, l, GPT_QKV_W), N, C, 3 * C);
        CUDA_CHECK(layernorm_backward_launch(g->dln, x, g->mean1 + (size_t)l * N, g->rstd1 + (size_t)l * N,
                                             PARAM(g, l, GPT_LN1_W), g->d, GRAD(g, l, GPT_LN1_W), GRAD(g, l, GPT_LN1_B),
                                             g->ln_partial, N, C));
        CUDA_CHECK(gpt_add_launch(g->d, g->d, g->dmid, NC));
    }
    CUDA_CHECK(gpt_embed_backward_launch(g->grads + gpt_offset_wte(c), g->grads + gpt_offset_wpe(c), g->d, g->tokens, B,
                                         T, C));
}

/* the gradient clipped to a global norm of at most `clip`, then AdamW at the schedule's rate */
static void update(gpt_gpu *g, float lr, float wd, float clip)
{
    CUDA_CHECK(cudaMemsetAsync(g->sumsq, 0, sizeof(float), 0));
    CUDA_CHECK(gpt_sum_squares_launch(g->sumsq, g->grads, g->P));
    CUDA_CHECK(gpt_clip_launch(g->grads, g->P, g->sumsq, clip));
    for (int s = 0; s < 2; s++) CUDA_CHECK(cudaMemcpyAsync(&g->adam[s].lr, &lr, sizeof lr, cudaMemcpyHostToDevice, 0));
    /* version 1 of ch11's AdamW: a launch per tensor from the host's list (the chunk table of the
     * one-launch versions unused: its count 1 only satisfies the launcher's check) */
    CUDA_CHECK(adamw_launch(1, g->decayed, NULL, NULL, g->n_decayed, 1, wd, &g->adam[0]));
    CUDA_CHECK(adamw_launch(1, g->plain, NULL, NULL, g->n_plain, 1, 0.0f, &g->adam[1]));
}

/* ---------------------------------------------------------------- the versions */

/* A training step's work for the version table: the batch is already on the device */
typedef struct {
    gpt_gpu *g;
    int B, T;
    float lr, wd, clip;
} gpt_step_job;

static cudaError_t run_unfused(void *ctx)
{
    gpt_step_job *j = (gpt_step_job *)ctx;
    forward(j->g, j->B, j->T, 1);
    backward(j->g, j->B, j->T);
    update(j->g, j->lr, j->wd, j->clip);
    return cudaGetLastError();
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. To add one: its step (its
 * forward, backward and update) and a row here; GPT_VERSIONS follows the table. */
static const lb_version versions[] = {
    {0, "unfused", "separate kernels, fp32, cuBLAS", LB_OLDEST_SM, run_unfused},
};
#define GPT_VERSIONS ((int)(sizeof versions / sizeof versions[0]))

/* ---------------------------------------------------------------- parameters, schedule, sampling */

/* GPT-2's initialisation: weights normal(0, 0.02), the two projections into the residual stream
 * scaled by 1 / sqrt(2 L), biases 0, LayerNorm weights 1 */
static void init_params(float *p, const gpt_config *c, lb_rng *rng)
{
    for (size_t i = 0; i < gpt_tensor_count(c); i++) {
        gpt_tensor t = gpt_tensor_at(c, i);
        size_t n = t.rows * t.cols;
        int is_ln_weight = strstr(t.name, "ln") && strstr(t.name, "_w");
        float std = 0.02f;
        if (!strcmp(t.name, "proj_w") || !strcmp(t.name, "fcproj_w")) std /= sqrtf(2.0f * c->layers);
        for (size_t e = 0; e < n; e++) {
            float value = 0.0f;
            if (is_ln_weight) {
                value = 1.0f;
            } else if (t.rows > 1) { /* Box-Muller */
                float u1 = lb_rng_uniform(rng, 1e-7f, 1.0f), u2 = lb_rng_uniform(rng, 0.0f, 1.0f);
                value = std * sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
            }
            p[t.offset + e] = value;
        }
    }
}

/* the learning rate at step s of `steps`: linear warm-up over `warmup`, then a cosine to lr / 10 */
static float schedule(float lr, int s, int warmup, int steps)
{
    if (s < warmup) return lr * (float)(s + 1) / (float)warmup;
    float progress = steps > warmup ? (float)(s - warmup) / (float)(steps - warmup) : 1.0f;
    return 0.1f * lr + 0.45f * lr * (1.0f + cosf(3.14159265f * progress));
}

/* `n` characters from the model (a string the caller frees): each the next of the last (at most
 * T) tokens, drawn from the softmax of the last position's logits / temperature */
static char *sample_text(gpt_gpu *g, const unsigned char *chars, int n, float temperature, lb_rng *rng)
{
    int V = g->c.vocab, T = g->T, len = 0;
    int *ctx = lb_host_alloc(sizeof(int) * (size_t)(n + 1), "the sample");
    char *text = lb_host_alloc((size_t)n + 1, "the sample");
    float *logits = lb_host_alloc(sizeof(float) * (size_t)V, "the logits");
    double *p = lb_host_alloc(sizeof(double) * (size_t)V, "the probabilities");
    ctx[len++] = 0; /* the vocabulary's first character: the newline in any text that has one */
    for (int i = 0; i < n; i++) {
        int t = len < T ? len : T, *window = ctx + len - t;
        CUDA_CHECK(cudaMemcpy(g->tokens, window, sizeof(int) * t, cudaMemcpyHostToDevice));
        forward(g, 1, t, 0);
        CUDA_CHECK(cudaMemcpy(logits, g->logits + (size_t)(t - 1) * V, sizeof(float) * V, cudaMemcpyDeviceToHost));
        double m = -INFINITY, sum = 0.0;
        for (int v = 0; v < V; v++) m = fmax(m, logits[v] / temperature);
        for (int v = 0; v < V; v++) sum += (p[v] = exp(logits[v] / temperature - m));
        double u = (double)(lb_rng_next(rng) >> 11) * 0x1.0p-53 * sum;
        int next = V - 1;
        for (int v = 0; v < V; v++)
            if ((u -= p[v]) < 0) {
                next = v;
                break;
            }
        ctx[len++] = next;
        text[i] = (char)chars[next];
    }
    text[n] = 0;
    free(ctx), free(logits), free(p);
    return text;
}

/* ---------------------------------------------------------------- --check: one step against the CPU */

/* The loss and every tensor's gradient of one step, GPU against gpt_model_cpu in double, at a
 * tiny configuration: random parameters and tokens from the seed. fp32 against double: each
 * tensor within 1e-3 of its largest gradient, and 1e-3 relative (sums of a few hundred fp32 terms) */
static int check_step(const gpt_config *c, int B, int T, unsigned long long seed, int quiet)
{
    size_t P = gpt_param_count(c), N = (size_t)B * T;
    float *h_p = lb_host_alloc(sizeof(float) * P, "parameters"), *h_g = lb_host_alloc(sizeof(float) * P, "gradients");
    double *dp = lb_host_alloc(sizeof(double) * P, "parameters"), *dg = lb_host_alloc(sizeof(double) * P, "gradients");
    int *tok = lb_host_alloc(sizeof(int) * N, "tokens"), *tgt = lb_host_alloc(sizeof(int) * N, "targets");
    lb_rng rng;
    lb_rng_seed(&rng, seed);
    for (size_t i = 0; i < P; i++) h_p[i] = lb_rng_uniform(&rng, -0.3f, 0.3f), dp[i] = h_p[i];
    for (size_t i = 0; i < N; i++)
        tok[i] = (int)(lb_rng_next(&rng) % (uint64_t)c->vocab), tgt[i] = (int)(lb_rng_next(&rng) % (uint64_t)c->vocab);
    const char *err = NULL;
    double want_loss = gpt_model_cpu(c, dp, tok, tgt, B, T, dg, &err);
    if (isnan(want_loss)) lb_die(LB_EXIT_USAGE, "gpt: %s", err);

    gpt_gpu g;
    gpt_alloc(&g, c, B, T);
    CUDA_CHECK(cudaMemcpy(g.params, h_p, sizeof(float) * P, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g.tokens, tok, sizeof(int) * N, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g.targets, tgt, sizeof(int) * N, cudaMemcpyHostToDevice));
    lb_poison_device(g.grads, sizeof(float) * P); /* a gradient never written fails */
    forward(&g, B, T, 1);
    backward(&g, B, T);
    float loss;
    CUDA_CHECK(cudaMemcpy(&loss, g.loss, sizeof loss, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_g, g.grads, sizeof(float) * P, cudaMemcpyDeviceToHost));
    gpt_free(&g);

    int bad = !(fabs(loss - want_loss) <= 1e-4 * fabs(want_loss));
    printf("check: loss %.7f, the CPU's %.7f%s\n", loss, want_loss, bad ? " FAIL" : "");
    float *want = lb_host_alloc(sizeof(float) * P, "gradients");
    for (size_t i = 0; i < P; i++) want[i] = (float)dg[i];
    for (size_t i = 0; i < gpt_tensor_count(c); i++) {
        gpt_tensor t = gpt_tensor_at(c, i);
        size_t n = t.rows * t.cols;
        double largest = 0.0;
        for (size_t e = 0; e < n; e++) largest = fmax(largest, fabs(dg[t.offset + e]));
        char what[64];
        if (t.layer >= 0)
            snprintf(what, sizeof what, "d%s of layer %d", t.name, t.layer);
        else
            snprintf(what, sizeof what, "d%s", t.name);
        lb_check r = lb_check_f32(what, h_g + t.offset, want + t.offset, n, 1e-3 * largest + 1e-12, 1e-3, quiet);
        if (r.n_bad) {
            bad = 1;
            printf("check: %s: %zu of %zu outside the tolerance, worst %.3g\n", what, r.n_bad, n, r.max_abs_err);
        }
    }
    printf("check: one step of %d x %d tokens, L%d H%d C%d V%d: loss and %zu gradients %s\n", B, T, c->layers, c->heads,
           c->channels, c->vocab, P, bad ? "FAIL" : "PASS");
    free(h_p), free(h_g), free(dp), free(dg), free(tok), free(tgt), free(want);
    return bad ? LB_EXIT_FAIL : LB_EXIT_PASS;
}

/* ---------------------------------------------------------------- main */

typedef struct {
    const char *data, *save, *load;
    long long layers, heads, channels, context, batch, steps, warmup, eval_every, eval_batches, sample;
    double lr, wd, clip, temperature;
    int check;
} gpt_options;

static const lb_program program_template = {
    .name = "gpt",
    .synopsis = "a GPT trained from scratch on a text file, one token a character: GPT-2's architecture on the "
                "book's kernels",
    .details = "The vocabulary is the characters of --data (ASCII: printable, newlines, tabs); 90% of it trains, 10%\n"
               "validates. --check runs one step of a tiny model (L2 H2 C32, 16 x 2 tokens) against the CPU model in\n"
               "double. --load continues from a checkpoint (its configuration and vocabulary win; --steps more steps).\n"
               "--sample writes text after training, or from --load alone with --steps 0. A model flag given with --load\n"
               "must match the checkpoint's.\n",
    .uses = LB_USE_SEED | LB_USE_QUIET,
    .versions = versions,
    .n_versions = GPT_VERSIONS,
};

/* whether a flag was on the command line (a checkpoint's configuration is checked against those) */
static int flag_given(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], flag)) return 1;
    return 0;
}

/* the validation loss: the mean over `batches` batches of the validation part, the same ones
 * every time (drawn from the seed + 2), so that the losses of a run compare */
static float validation_loss(gpt_gpu *g, const gpt_text *text, int B, int T, int batches, unsigned long long seed,
                             int *tok, int *tgt)
{
    double sum = 0.0;
    lb_rng rng;
    lb_rng_seed(&rng, seed + 2);
    for (int i = 0; i < batches; i++) {
        gpt_batch(text, 1, B, T, &rng, tok, tgt);
        CUDA_CHECK(cudaMemcpy(g->tokens, tok, sizeof(int) * B * T, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(g->targets, tgt, sizeof(int) * B * T, cudaMemcpyHostToDevice));
        forward(g, B, T, 1);
        float loss;
        CUDA_CHECK(cudaMemcpy(&loss, g->loss, sizeof loss, cudaMemcpyDeviceToHost));
        sum += loss;
    }
    return (float)(sum / batches);
}

int main(int argc, char **argv)
{
    gpt_options o = {.data = "../datasets/shakespeare.txt", .save = "", .load = "", .layers = 6, .heads = 6,
                     .channels = 384, .context = 256, .batch = 32, .steps = 2000, .warmup = 100, .eval_every = 250,
                     .eval_batches = 20, .sample = 0, .lr = 1e-3, .wd = 0.1, .clip = 1.0, .temperature = 0.8};
    const lb_opt opts[] = {
        {"--data", LB_OPT_STRING, &o.data, "the text to train on"},
        {"--layers", LB_OPT_I64, &o.layers, "L, transformer blocks"},
        {"--heads", LB_OPT_I64, &o.heads, "H, attention heads (dividing C)"},
        {"--channels", LB_OPT_I64, &o.channels, "C, the width of the residual stream"},
        {"--context", LB_OPT_I64, &o.context, "T, tokens a sequence"},
        {"--batch", LB_OPT_I64, &o.batch, "B, sequences a step"},
        {"--steps", LB_OPT_I64, &o.steps, "training steps"},
        {"--lr", LB_OPT_DOUBLE, &o.lr, "the peak learning rate"},
        {"--warmup", LB_OPT_I64, &o.warmup, "steps of linear warm-up"},
        {"--wd", LB_OPT_DOUBLE, &o.wd, "AdamW's weight decay (matrices only)"},
        {"--clip", LB_OPT_DOUBLE, &o.clip, "the gradient's largest global norm"},
        {"--eval-every", LB_OPT_I64, &o.eval_every, "steps between validation losses (0: at the end only)"},
        {"--eval-batches", LB_OPT_I64, &o.eval_batches, "batches a validation loss averages"},
        {"--save", LB_OPT_STRING, &o.save, "write a checkpoint there after training"},
        {"--load", LB_OPT_STRING, &o.load, "start from this checkpoint"},
        {"--sample", LB_OPT_I64, &o.sample, "characters of text to write at the end"},
        {"--temperature", LB_OPT_DOUBLE, &o.temperature, "the sampling temperature"},
        {"--check", LB_OPT_FLAG, &o.check, "one step of a tiny model against the CPU model"},
    };
    lb_program program = program_template;
    program.opts = opts, program.n_opts = sizeof opts / sizeof opts[0];
    lb_args args = {.seed = 1};
    lb_parse_args(&program, &args, argc, argv);

    if (o.check) {
        gpt_config tiny = {2, 2, 32, 16, 37, 40};
        lb_gpu gpu;
        lb_gpu_init(&gpu);
        return check_step(&tiny, 2, 16, args.seed, args.quiet);
    }

    /* ---- everything that can be wrong with the input, before the GPU */
    char why[512];
    gpt_checkpoint ck = {0};
    int from_checkpoint = o.load[0] != 0;
    if (from_checkpoint && !gpt_checkpoint_load(o.load, &ck, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s", why);
    gpt_text text = {0};
    int need_text = o.steps > 0;
    if (need_text && !gpt_text_load(o.data, &text, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s", why);
    gpt_config c = {(int)o.layers, (int)o.heads, (int)o.channels, (int)o.context, text.vocab, text.vocab};
    if (from_checkpoint) { /* the checkpoint's configuration, where the command line says nothing else */
        gpt_config here = ck.config;
        if (flag_given(argc, argv, "--layers")) here.layers = c.layers;
        if (flag_given(argc, argv, "--heads")) here.heads = c.heads;
        if (flag_given(argc, argv, "--channels")) here.channels = c.channels;
        if (flag_given(argc, argv, "--context")) here.context = c.context;
        if (!gpt_config_same(&here, &ck.config, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s: %s", o.load, why);
        c = ck.config;
        if (need_text && (text.vocab != c.vocab || memcmp(text.chars, ck.chars, (size_t)c.vocab)))
            lb_die(LB_EXIT_USAGE, "gpt: %s has another vocabulary (%d characters) than %s (%d)", o.data, text.vocab,
                   o.load, c.vocab);
    }
    if (o.layers < 1 || o.heads < 1 || o.channels < 1 || o.context < 1 || o.layers > 1024 || o.channels > 65536 ||
        o.context > 65536)
        lb_usage_error(&program, "--layers, --heads, --channels and --context must be positive (at most 1024, 65536)");
    const char *bad = gpt_config_error(&c);
    if (bad && need_text) lb_usage_error(&program, "%s (L %d, H %d, C %d, T %d)", bad, c.layers, c.heads, c.channels, c.context);
    if (c.context > SOFTMAX_MAX_COLS) /* version 0's softmax over a row of T scores */
        lb_usage_error(&program, "--context: at most %d tokens (got %d)", SOFTMAX_MAX_COLS, c.context);
    if (o.batch < 1 || o.batch * c.context > (1LL << 24)) lb_usage_error(&program, "--batch: B x T must be 1..2^24");
    if (o.steps < 0 || o.warmup < 0 || o.eval_every < 0 || o.eval_batches < 1 || o.sample < 0)
        lb_usage_error(&program, "--steps, --warmup, --eval-every and --sample must be >= 0, --eval-batches >= 1");
    if (!(o.lr > 0 && o.lr < 1) || !(o.wd >= 0 && o.wd < 1) || !(o.clip > 0) || !(o.temperature > 0))
        lb_usage_error(&program, "--lr in (0, 1), --wd in [0, 1), --clip and --temperature positive");
    if (!need_text && !from_checkpoint) lb_usage_error(&program, "--steps 0 needs --load (a model to sample from)");
    if (need_text && !gpt_text_fits(&text, c.context, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s", why);
    lb_check_output_path(&program, "--save", o.save);
    int B = (int)o.batch, T = c.context;
    int ver = args.version >= 0 ? args.version : GPT_VERSIONS - 1; /* the one asked for, else the fastest */

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(gpt_bytes(&c, B, T), "the model, its gradients, AdamW's moments and the activations");
    gpt_gpu g;
    gpt_alloc(&g, &c, B, T);
    size_t P = g.P;
    float *h_params = lb_host_alloc(sizeof(float) * P, "the parameters");
    /* three streams from the seed: the initial parameters and the samples (seed), the training
     * batches (seed + 1), the validation batches (seed + 2) */
    lb_rng rng, batches;
    lb_rng_seed(&rng, args.seed);
    lb_rng_seed(&batches, args.seed + 1);
    long long step0 = 0;
    if (from_checkpoint) {
        CUDA_CHECK(cudaMemcpy(g.params, ck.params, sizeof(float) * P, cudaMemcpyHostToDevice));
        if (ck.m) CUDA_CHECK(cudaMemcpy(g.m, ck.m, sizeof(float) * P, cudaMemcpyHostToDevice));
        if (ck.v) CUDA_CHECK(cudaMemcpy(g.v, ck.v, sizeof(float) * P, cudaMemcpyHostToDevice));
        adamw_state st[2] = {{(int)ck.step, 0.0f, 0}, {(int)ck.step, 0.0f, 0}};
        CUDA_CHECK(cudaMemcpy(g.adam, st, sizeof st, cudaMemcpyHostToDevice));
        step0 = ck.step;
    } else {
        init_params(h_params, &c, &rng);
        CUDA_CHECK(cudaMemcpy(g.params, h_params, sizeof(float) * P, cudaMemcpyHostToDevice));
        memcpy(ck.chars, text.chars, sizeof ck.chars);
    }
    if (!args.quiet)
        printf("gpt: L%d H%d C%d T%d, vocabulary %d, %.2f M parameters; batch %d x %d; %s (%s), seed %llu\n", c.layers,
               c.heads, c.channels, c.context, c.vocab, P / 1e6, B, T, gpu.prop.name, gpu.sm, args.seed);

    /* ---- training */
    int *tok = lb_host_alloc(sizeof(int) * (size_t)B * T, "a batch"), *tgt = lb_host_alloc(sizeof(int) * (size_t)B * T, "");
    gpt_step_job job = {&g, B, T, 0.0f, (float)o.wd, (float)o.clip};
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    float val = NAN, last_loss = NAN;
    double total_ms = 0.0;
    for (long long s = 0; s < o.steps; s++) {
        gpt_batch(&text, 0, B, T, &batches, tok, tgt);
        CUDA_CHECK(cudaMemcpy(g.tokens, tok, sizeof(int) * B * T, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(g.targets, tgt, sizeof(int) * B * T, cudaMemcpyHostToDevice));
        job.lr = schedule((float)o.lr, (int)s, (int)o.warmup, (int)o.steps);
        CUDA_CHECK(cudaEventRecord(start, 0));
        CUDA_CHECK(versions[ver].run(&job));
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms, sumsq;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        CUDA_CHECK(cudaMemcpy(&last_loss, g.loss, sizeof last_loss, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&sumsq, g.sumsq, sizeof sumsq, cudaMemcpyDeviceToHost));
        if (!isfinite(last_loss)) lb_die(LB_EXIT_FAIL, "gpt: the loss is %g at step %lld", last_loss, step0 + s + 1);
        if (s > 0) total_ms += ms; /* the first step pays cuBLAS's start-up */
        int last = s == o.steps - 1;
        if (!args.quiet && (s % 10 == 0 || last))
            printf("step %5lld: loss %.4f  lr %.2e  norm %.2f  %.1f ms  %.0f tokens/s\n", step0 + s + 1, last_loss,
                   job.lr, sqrt(sumsq), ms, B * T / (ms * 1e-3));
        if ((o.eval_every && (s + 1) % o.eval_every == 0) || last) {
            val = validation_loss(&g, &text, B, T, (int)o.eval_batches, args.seed, tok, tgt);
            if (!args.quiet) printf("step %5lld: validation loss %.4f\n", step0 + s + 1, val);
        }
    }
    if (o.steps > 1 && !args.quiet) {
        double tps = (double)B * T * (o.steps - 1) / (total_ms * 1e-3);
        printf("RESULT prog=gpt ver=%d name=%s size=L%d_H%d_C%d_T%d_B%d ms=%.4f tokens_s=%.0f check=none\n", ver,
               versions[ver].name, c.layers, c.heads, c.channels, c.context, B, total_ms / (o.steps - 1), tps);
        printf("RESULT prog=gpt ver=%d name=%s size=L%d_H%d_C%d_T%d_B%d val_loss=%.4f steps=%lld\n", ver,
               versions[ver].name, c.layers, c.heads, c.channels, c.context, B, val, step0 + o.steps);
    }

    /* ---- the checkpoint and the text */
    if (o.save[0]) {
        ck.config = c, ck.step = step0 + o.steps;
        if (!ck.params) ck.params = h_params;
        float *m = lb_host_alloc(sizeof(float) * P, "AdamW's m"), *v = lb_host_alloc(sizeof(float) * P, "AdamW's v");
        CUDA_CHECK(cudaMemcpy(ck.params, g.params, sizeof(float) * P, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(m, g.m, sizeof(float) * P, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(v, g.v, sizeof(float) * P, cudaMemcpyDeviceToHost));
        float *keep_m = ck.m, *keep_v = ck.v;
        ck.m = m, ck.v = v;
        if (!gpt_checkpoint_save(o.save, &ck, why, sizeof why)) lb_die(LB_EXIT_USAGE, "gpt: %s", why);
        ck.m = keep_m, ck.v = keep_v;
        free(m), free(v);
        if (!args.quiet) printf("gpt: saved %s (step %lld)\n", o.save, (long long)ck.step);
    }
    char *sample = o.sample > 0 ? sample_text(&g, ck.chars, (int)o.sample, (float)o.temperature, &rng) : NULL;
    if (sample && !args.quiet) printf("%s\n", sample);
    if (args.quiet) { /* one line: the run, and the sample's start with its newlines shown as | */
        printf("gpt: %lld steps, loss %.4f, validation loss %.4f, %.0f tokens/s", o.steps, last_loss, val,
               o.steps > 1 ? (double)B * T * (o.steps - 1) / (total_ms * 1e-3) : 0.0);
        if (sample) {
            printf(", sample \"");
            for (int i = 0; sample[i] && i < 60; i++) putchar(sample[i] == '\n' ? '|' : sample[i]);
            printf("\"");
        }
        printf("\n");
    }
    free(sample);

    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    gpt_free(&g);
    if (ck.params == h_params) ck.params = NULL;
    gpt_checkpoint_free(&ck);
    gpt_text_free(&text);
    free(h_params), free(tok), free(tgt);
    return LB_EXIT_PASS;
}
