/* gpt_model.c - ch12's GPT on the GPU (gpt_model.h): the buffers, the forward, backward and
 * update, and at the end the parts the versions choose between (gpt_parts). Every layer is its
 * own kernels, in fp32: the products by cuBLAS (SGEMM; attention the library way, the scores in
 * memory), ch11's LayerNorm, softmax, cross-entropy and AdamW kernels through their launchers,
 * gpt_kernels.cu for the rest. Each function mirrors its twin in gpt_cpu.c, layer by layer. */
#include "gpt_model.h"
#include "labbook.h" /* after cublas_v2.h (gpt_model.h): CUBLAS_CHECK */
#include "gpt_kernels.h"
#include "attention_backward_kernels.h" /* ch11's */
#include "attention_kernels.h"
#include "cross_entropy_kernels.h"
#include "layernorm_kernels.h"
#include "softmax_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PARAM(g, layer, t) ((g)->params + gpt_offset(&(g)->c, (layer), (t)))
#define GRAD(g, layer, t) ((g)->grads + gpt_offset(&(g)->c, (layer), (t)))

/* One device buffer of gpt_gpu: with count non-NULL only its bytes are counted (gpt_device_bytes),
 * else it is allocated with a guard of NaN after its end (lb_malloc_guarded: a kernel that reads
 * past an operand reads NaN and fails the check) and kept in g->owned for gpt_gpu_free */
static void *take(gpt_gpu *g, size_t bytes, size_t *count)
{
    bytes = bytes ? bytes : 4;
    if (count) {
        *count += bytes + LB_GUARD_BYTES;
        return NULL;
    }
    void *p;
    if (g->n_owned == (int)(sizeof g->owned / sizeof g->owned[0]))
        lb_die(LB_EXIT_CUDA, "gpt: more device buffers than gpt_gpu.owned holds");
    CUDA_CHECK(lb_malloc_guarded(&p, bytes));
    /* every buffer starts as NaN: a value the step reads before anything wrote it turns the loss
     * and the checks NaN (a failure) instead of reading what the last program left. It also lets
     * compute-sanitizer's initcheck see the buffers set: it does not see the stores of cuBLAS's
     * sm_90 kernels (ch11's NOTES), and reported their outputs as uninitialized reads */
    lb_poison_device(p, bytes);
    g->owned[g->n_owned++] = p;
    return p;
}
#define TAKE_FLOATS(n) ((float *)take(g, sizeof(float) * (n), count))
#define TAKE_BF16(n) ((unsigned short *)take(g, 2 * (n), count))

/* Every device buffer of a model of config c and batches of up to B x T, in one place: allocated
 * by gpt_gpu_alloc, counted by gpt_device_bytes. The groups of GPT_BUFFERS_* only where `wanted`
 * asks for them (a version's parts say which it reads: gpt_parts.buffers); the others NULL. */
static void device_buffers(gpt_gpu *g, const gpt_config *c, int B, int T, unsigned wanted, size_t *count)
{
    size_t L = (size_t)c->layers, N = (size_t)B * T, C = (size_t)c->channels, H = (size_t)c->heads;
    size_t att = (size_t)B * H * T * T, P = gpt_param_count(c);
    size_t Vp = (size_t)c->vocab_padded; /* the logits' rows: V used, padded to Vp so that products stay aligned */
    size_t widest = 4 * C > Vp ? 4 * C : Vp; /* a product's widest input or output: 4C, or the logits' Vp */
    /* every version's: the parameters and the optimizer, the residual stream, the LayerNorms, the
     * logits, the backward's row-sized scratch */
    g->params = TAKE_FLOATS(P), g->grads = TAKE_FLOATS(P), g->m = TAKE_FLOATS(P), g->v = TAKE_FLOATS(P);
    g->tokens = (int *)take(g, sizeof(int) * N, count), g->targets = (int *)take(g, sizeof(int) * N, count);
    g->res = TAKE_FLOATS((L + 1) * N * C), g->mid = TAKE_FLOATS(L * N * C);
    g->mean1 = TAKE_FLOATS(L * N), g->rstd1 = TAKE_FLOATS(L * N), g->mean2 = TAKE_FLOATS(L * N), g->rstd2 = TAKE_FLOATS(L * N);
    g->lnf = TAKE_FLOATS(N * C), g->meanf = TAKE_FLOATS(N), g->rstdf = TAKE_FLOATS(N);
    /* the bias gradients' slab sums (a bias has at most 4C columns): room for the smaller slabs */
    g->column_part = TAKE_FLOATS((N + GPT_BF16_SLAB - 1) / GPT_BF16_SLAB * 4 * C);
    g->column_count = (unsigned *)take(g, sizeof(unsigned) * GPT_BF16_STRIPS, count); /* zeroed by gpt_gpu_alloc */
    _Static_assert(GPT_BF16_SLAB <= GPT_COLUMN_SLAB, "column_part is sized for the smaller slabs");
    g->loss = TAKE_FLOATS(1), g->row_loss = TAKE_FLOATS(N);
    g->d = TAKE_FLOATS(N * C), g->dmid = TAKE_FLOATS(N * C), g->dln = TAKE_FLOATS(N * C), g->datty = TAKE_FLOATS(N * C);
    /* the LayerNorm backward's column sums: partial sums of LN_ROWS_PER_GROUP rows, or of
     * LN_BWD_ROWS (fewer) in the one-read backward, three sets of them with the residual's sums:
     * room for the most */
    g->ln_partial = TAKE_FLOATS(3 * ((N + LN_BWD_ROWS - 1) / LN_BWD_ROWS + 1) * C);
    g->sumsq = TAKE_FLOATS(1);
    g->adam = (adamw_state *)take(g, 2 * sizeof(adamw_state), count);
    if (wanted & GPT_BUFFERS_FP32_LOGITS) g->logits = TAKE_FLOATS(N * Vp), g->dlogits = TAKE_FLOATS(N * Vp);
    if (wanted & GPT_BUFFERS_BF16_LOGITS) g->logits16 = TAKE_BF16(N * Vp);
    if (wanted & GPT_BUFFERS_PROBS) g->probs = TAKE_FLOATS(N * Vp);
    if (wanted & GPT_BUFFERS_FP32_LAYERS) {
        g->ln1 = TAKE_FLOATS(L * N * C), g->ln2 = TAKE_FLOATS(L * N * C);
        g->qkv = TAKE_FLOATS(3 * L * N * C), g->atty = TAKE_FLOATS(L * N * C);
        g->fch = TAKE_FLOATS(4 * L * N * C), g->gelu = TAKE_FLOATS(4 * L * N * C);
        g->dqkv = TAKE_FLOATS(3 * N * C), g->dfc = TAKE_FLOATS(4 * N * C), g->dgelu = TAKE_FLOATS(4 * N * C);
    }
    if (wanted & GPT_BUFFERS_SCORES) {
        g->att = TAKE_FLOATS(L * att), g->scores = TAKE_FLOATS(att);
        g->q = TAKE_FLOATS(N * C), g->k = TAKE_FLOATS(N * C), g->vh = TAKE_FLOATS(N * C), g->yh = TAKE_FLOATS(N * C);
        g->dq = TAKE_FLOATS(N * C), g->dk = TAKE_FLOATS(N * C), g->dv = TAKE_FLOATS(N * C), g->dyh = TAKE_FLOATS(N * C);
    }
    if (wanted & GPT_BUFFERS_BF16_PRODUCTS) {
        g->params16 = TAKE_BF16(P);
        g->x16 = TAKE_BF16(N * 4 * C), g->d16 = TAKE_BF16(N * widest);
    }
    if (wanted & GPT_BUFFERS_FLASH) {
        g->lse = TAKE_FLOATS(L * B * H * T), g->do16 = TAKE_BF16(N * C);
        g->delta = TAKE_FLOATS(B * H * T), g->dq_acc = TAKE_FLOATS(N * C);
    }
    if (wanted & GPT_BUFFERS_HEADS) {
        g->q16 = TAKE_BF16(L * N * C), g->k16 = TAKE_BF16(L * N * C), g->v16 = TAKE_BF16(L * N * C);
        g->o16 = TAKE_BF16(L * N * C);
        g->dq16 = TAKE_BF16(N * C), g->dk16 = TAKE_BF16(N * C), g->dv16 = TAKE_BF16(N * C);
    }
    if (wanted & GPT_BUFFERS_FUSED) {
        size_t qkv_layers = wanted & GPT_BUFFERS_QKV_ROWS ? L : 1; /* version 9 keeps every layer's */
        g->ln1_16 = TAKE_BF16(L * N * C), g->atty16 = TAKE_BF16(L * N * C), g->ln2_16 = TAKE_BF16(L * N * C);
        g->pre16 = TAKE_BF16(4 * L * N * C), g->gelu16 = TAKE_BF16(4 * L * N * C), g->lnf16 = TAKE_BF16(N * C);
        g->qkv16 = TAKE_BF16(3 * qkv_layers * N * C), g->dfc16 = TAKE_BF16(4 * N * C), g->dqkv16 = TAKE_BF16(3 * N * C);
        g->lt_workspace = take(g, GPT_LT_WORKSPACE, count);
    }
    /* AdamW's tensor lists and chunk tables (adam_groups): a chunk at least every ADAMW_CHUNK elements
     * of each tensor, at most one more a tensor */
    size_t tensors = gpt_tensor_count(c), chunks = P / (size_t)adamw_chunk_size() + tensors;
    for (int k = 0; k < 2 && count; k++) take(g, sizeof(adamw_tensor) * tensors, count), take(g, sizeof(adamw_chunk) * chunks, count);
    for (int k = 0; k < 2 && count && (wanted & GPT_BUFFERS_BF16_PRODUCTS); k++) take(g, sizeof(adamw_tensor) * tensors, count);
}
#undef TAKE_FLOATS
#undef TAKE_BF16

size_t gpt_device_bytes(const gpt_config *c, int B, int T, unsigned buffers)
{
    gpt_gpu counting;
    size_t bytes = 0;
    memset(&counting, 0, sizeof counting);
    device_buffers(&counting, c, B, T, buffers, &bytes);
    return bytes;
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
                          (long long)(t.rows * t.cols), NULL};
        if (t.rows > 1)
            g->decayed[g->n_decayed++] = a;
        else
            g->plain[g->n_plain++] = a;
    }
    /* the one-launch AdamW reads the lists and the chunk tables on the device */
    struct {
        const adamw_tensor *h;
        int n;
        adamw_tensor **d;
        adamw_chunk **chunks;
        int *n_chunks;
    } groups[2] = {{g->decayed, g->n_decayed, &g->d_decayed, &g->chunks_decayed, &g->n_chunks_decayed},
                   {g->plain, g->n_plain, &g->d_plain, &g->chunks_plain, &g->n_chunks_plain}};
    for (int k = 0; k < 2; k++) {
        int chunks = adamw_chunks(groups[k].h, groups[k].n, NULL);
        adamw_chunk *h_chunks = lb_host_alloc(sizeof(adamw_chunk) * (size_t)chunks, "AdamW's chunks");
        adamw_chunks(groups[k].h, groups[k].n, h_chunks);
        *groups[k].d = (adamw_tensor *)take(g, sizeof(adamw_tensor) * (size_t)groups[k].n, NULL);
        *groups[k].chunks = (adamw_chunk *)take(g, sizeof(adamw_chunk) * (size_t)chunks, NULL);
        CUDA_CHECK(cudaMemcpy(*groups[k].d, groups[k].h, sizeof(adamw_tensor) * (size_t)groups[k].n,
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(*groups[k].chunks, h_chunks, sizeof(adamw_chunk) * (size_t)chunks, cudaMemcpyHostToDevice));
        *groups[k].n_chunks = chunks;
        free(h_chunks);
    }
    if (!g->params16) return;
    /* version 8's: the same tensors, each with its place in the bf16 copy (the chunks the same) */
    adamw_tensor **with16[2] = {&g->d_decayed16, &g->d_plain16};
    for (int k = 0; k < 2; k++) {
        adamw_tensor *h = lb_host_alloc(sizeof(adamw_tensor) * (size_t)groups[k].n, "AdamW's tensors");
        for (int i = 0; i < groups[k].n; i++) h[i] = groups[k].h[i], h[i].p16 = g->params16 + (h[i].p - g->params);
        *with16[k] = (adamw_tensor *)take(g, sizeof(adamw_tensor) * (size_t)groups[k].n, NULL);
        CUDA_CHECK(cudaMemcpy(*with16[k], h, sizeof(adamw_tensor) * (size_t)groups[k].n, cudaMemcpyHostToDevice));
        free(h);
    }
}

void gpt_gpu_alloc(gpt_gpu *g, const gpt_config *c, int B, int T, unsigned buffers)
{
    memset(g, 0, sizeof *g);
    g->c = *c, g->B = B, g->T = T, g->P = gpt_param_count(c), g->buffers = buffers;
    g->params16_stale = 1;
    CUBLAS_CHECK(cublasCreate(&g->blas));
    CUBLAS_CHECK(cublasSetStream(g->blas, GPT_STREAM));
    CUBLAS_CHECK(cublasLtCreate(&g->lt));
    device_buffers(g, c, B, T, buffers, NULL);
    CUDA_CHECK(cudaMemset(g->adam, 0, 2 * sizeof(adamw_state)));
    CUDA_CHECK(cudaMemset(g->column_count, 0, sizeof(unsigned) * GPT_BF16_STRIPS));
    CUDA_CHECK(cudaMemset(g->m, 0, sizeof(float) * g->P));
    CUDA_CHECK(cudaMemset(g->v, 0, sizeof(float) * g->P));
    /* the logits' gradient in the padded columns (past V) stays zero: the loss never writes them,
     * so the classifier's products add nothing from them */
    if (g->dlogits) CUDA_CHECK(cudaMemset(g->dlogits, 0, sizeof(float) * (size_t)B * T * c->vocab_padded));
    adam_groups(g);
}

void gpt_gpu_free(gpt_gpu *g)
{
    for (int k = 0; k < GPT_RUN_KINDS; k++)
        if (g->graphs[k].exec) CUDA_CHECK(cudaGraphExecDestroy(g->graphs[k].exec));
    for (int i = 0; i < g->n_owned; i++) CUDA_CHECK(cudaFree(g->owned[i]));
    CUBLAS_CHECK(cublasDestroy(g->blas));
    CUBLAS_CHECK(cublasLtDestroy(g->lt));
    free(g->lt_algos);
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
/* the same products with bf16 operands (rounded from fp32 just before: the weights once a
 * forward, by begin_bf16; x and dout here), fp32 accumulation and fp32 results (cublasGemmEx) */
static void linear_fwd_bf16(gpt_gpu *g, float *out, const float *x, const float *W, int N, int I, int O)
{
    const float one = 1.0f, zero = 0.0f;
    const unsigned short *W16 = g->params16 + (W - g->params);
    CUDA_CHECK(gpt_to_bf16_launch(g->x16, x, (size_t)N * I));
    CUBLAS_CHECK(cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, O, N, I, &one, W16, CUDA_R_16BF, I, g->x16, CUDA_R_16BF,
                              I, &zero, out, CUDA_R_32F, O, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
static void linear_bwd_bf16(gpt_gpu *g, float *dx, float *dW, const float *dout, const float *x, const float *W, int N,
                            int I, int O)
{
    const float one = 1.0f, zero = 0.0f;
    const unsigned short *W16 = g->params16 + (W - g->params);
    CUDA_CHECK(gpt_to_bf16_launch(g->d16, dout, (size_t)N * O));
    CUDA_CHECK(gpt_to_bf16_launch(g->x16, x, (size_t)N * I));
    CUBLAS_CHECK(cublasGemmEx(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, I, N, O, &one, W16, CUDA_R_16BF, I, g->d16, CUDA_R_16BF,
                              O, &zero, dx, CUDA_R_32F, I, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CUBLAS_CHECK(cublasGemmEx(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, I, O, N, &one, g->x16, CUDA_R_16BF, I, g->d16,
                              CUDA_R_16BF, O, &one, dW, CUDA_R_32F, I, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* a linear layer with its bias: the version's product, then the bias row added */
static void linear_bias_fwd(gpt_gpu *g, const gpt_parts *parts, float *out, const float *x, const float *W,
                            const float *b, int N, int I, int O)
{
    parts->linear(g, out, x, W, N, I, O);
    CUDA_CHECK(gpt_bias_add_launch(out, b, N, O));
}
static void linear_bias_bwd(gpt_gpu *g, const gpt_parts *parts, float *dx, float *dW, float *db, const float *dout,
                            const float *x, const float *W, int N, int I, int O)
{
    parts->linear_backward(g, dx, dW, dout, x, W, N, I, O);
    CUDA_CHECK(gpt_column_sum_launch(db, dout, N, O, g->column_part));
}

/* Attention the library way, per layer: Q, K, V split into heads (B H, T, hs); S = Q K^T / sqrt(hs)
 * by one batched product, the causal mask, P = softmax(S) (ch11's), Y = P V by another, the heads
 * merged. P stays in memory for the backward (att). Column-major views as in linear_fwd:
 * S (T x T, row q) is K Q^T to cuBLAS, Y is V P. */
static void attention_fwd(gpt_gpu *g, int l, float *y, const float *qkv, int B, int T)
{
    int C = g->c.channels, H = g->c.heads, hs = C / H, heads = B * H;
    long long th = (long long)T * hs, tt = (long long)T * T;
    float *att = g->att + (size_t)l * heads * tt;
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
static void attention_bwd(gpt_gpu *g, int l, float *dqkv, const float *dy, const float *qkv, int B, int T)
{
    int C = g->c.channels, H = g->c.heads, hs = C / H, heads = B * H;
    long long th = (long long)T * hs, tt = (long long)T * T;
    const float *att = g->att + (size_t)l * heads * tt;
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

/* Version 4's attention: ch11's flash kernels through their launchers, the fastest this GPU runs
 * (wgmma with TMA on sm_90a: forward version 4, backward version 4; else mma.sync: 3 and 2). Q,
 * K, V leave the qkv product as bf16 heads, O comes back as bf16 and each query row's
 * log-sum-exp is kept for the backward, which recomputes P from it: no T x T matrix in memory.
 * The copy engine's tensor maps describe this call's B and T (the sampler's forward runs at
 * other sizes than training): made before each launch, freed after (host work, microseconds). */
static int flash_forward_version(void) { return attention_unavailable(4) ? 3 : 4; }
static int flash_backward_version(void) { return attention_bwd_unavailable(4) ? 2 : 4; }

void gpt_flash_forward(gpt_gpu *g, int l, int B, int T)
{
    int C = g->c.channels, H = g->c.heads;
    size_t at = (size_t)l * B * T * C;
    attention_problem p = {g->q16 + at, g->k16 + at, g->v16 + at, g->o16 + at, B, H, T, C / H, 1,
                           g->lse + (size_t)l * B * H * T, NULL, 0, 0};
    CUDA_CHECK(attention_prepare(&p));
    CUDA_CHECK(attention_launch(flash_forward_version(), &p));
    attention_release(&p);
}
void gpt_flash_backward(gpt_gpu *g, int l, int B, int T, int dq_fp32)
{
    int C = g->c.channels, H = g->c.heads;
    size_t at = (size_t)l * B * T * C;
    attention_bwd_problem p = {g->q16 + at, g->k16 + at, g->v16 + at, g->o16 + at, g->do16,
                               g->lse + (size_t)l * B * H * T, dq_fp32 ? NULL : g->dq16, g->dk16, g->dv16,
                               g->delta, g->dq_acc, B, H, T, C / H, 1, NULL, 0, 0};
    CUDA_CHECK(attention_bwd_prepare(&p));
    CUDA_CHECK(attention_bwd_launch(flash_backward_version(), &p));
    attention_bwd_release(&p);
}
/* Version 9's: ch11's flash kernels on token rows (attention_problem.ld_qkv, ld_o): Q, K and V
 * read inside layer l's (N, 3C) qkv product, O written into its (N, C) attention output (the
 * projection's input), the log-sum-exps kept; backward, dO read from g->do16 (N, C), dQ, dK and
 * dV written into g->dqkv16 (N, 3C): no split, merge, unmerge or join between. */
void gpt_flash_forward_rows(gpt_gpu *g, int l, int B, int T)
{
    int C = g->c.channels, H = g->c.heads;
    const unsigned short *qkv = g->qkv16 + (size_t)l * B * T * 3 * C;
    attention_problem p = {qkv, qkv + C, qkv + 2 * C, g->atty16 + (size_t)l * B * T * C, B, H, T, C / H, 1,
                           g->lse + (size_t)l * B * H * T, NULL, 3 * C, C};
    CUDA_CHECK(attention_prepare(&p));
    CUDA_CHECK(attention_launch(4, &p));
    attention_release(&p);
}
void gpt_flash_backward_rows(gpt_gpu *g, int l, int B, int T)
{
    int C = g->c.channels, H = g->c.heads;
    const unsigned short *qkv = g->qkv16 + (size_t)l * B * T * 3 * C;
    attention_bwd_problem p = {qkv, qkv + C, qkv + 2 * C, g->atty16 + (size_t)l * B * T * C, g->do16,
                               g->lse + (size_t)l * B * H * T, g->dqkv16, g->dqkv16 + C, g->dqkv16 + 2 * C,
                               g->delta, g->dq_acc, B, H, T, C / H, 1, NULL, 3 * C, C};
    CUDA_CHECK(attention_bwd_prepare(&p));
    CUDA_CHECK(attention_bwd_launch(4, &p));
    attention_bwd_release(&p);
}
/* version 4's attention parts: the fp32 qkv split into bf16 heads, the result merged back to fp32 */
static void attention_fwd_flash(gpt_gpu *g, int l, float *y, const float *qkv, int B, int T)
{
    int C = g->c.channels, H = g->c.heads;
    size_t at = (size_t)l * B * T * C;
    CUDA_CHECK(gpt_split_heads_bf16_launch(g->q16 + at, g->k16 + at, g->v16 + at, qkv, B, T, C, H));
    gpt_flash_forward(g, l, B, T);
    CUDA_CHECK(gpt_merge_heads_bf16_launch(y, g->o16 + at, B, T, C, H));
}
static void attention_bwd_flash(gpt_gpu *g, int l, float *dqkv, const float *dy, const float *qkv, int B, int T)
{
    int C = g->c.channels, H = g->c.heads;
    (void)qkv; /* read as the forward's bf16 heads */
    CUDA_CHECK(gpt_unmerge_heads_bf16_launch(g->do16, dy, B, T, C, H));
    gpt_flash_backward(g, l, B, T, 0);
    CUDA_CHECK(gpt_join_qkv_bf16_launch(dqkv, g->dq16, g->dk16, g->dv16, B, T, C, H));
}

void gpt_forward(gpt_gpu *g, const gpt_parts *parts, int B, int T, int with_loss)
{
    if (parts->buffers & ~g->buffers) lb_die(LB_EXIT_USAGE, "gpt: a version's buffers were not allocated (gpt_gpu_alloc)");
    parts->forward(g, parts, B, T, with_loss);
}
void gpt_backward(gpt_gpu *g, const gpt_parts *parts, int B, int T) { parts->backward(g, parts, B, T); }

/* Versions 0-4's forward of B sequences of T tokens (g->tokens): the activations kept, the logits
 * (N, Vp); with targets, the cross-entropy's mean loss (g->loss) and its gradient (g->dlogits) too */
static void forward_layers(gpt_gpu *g, const gpt_parts *parts, int B, int T, int with_loss)
{
    const gpt_config *c = &g->c;
    int N = B * T, C = c->channels;
    size_t NC = (size_t)N * C;
    parts->begin(g);
    CUDA_CHECK(gpt_embed_launch(g->res, g->tokens, g->params + gpt_offset_wte(c), g->params + gpt_offset_wpe(c), B, T, C));
    for (int l = 0; l < c->layers; l++) {
        float *x = g->res + l * NC, *ln1 = g->ln1 + l * NC, *qkv = g->qkv + l * 3 * NC, *atty = g->atty + l * NC;
        float *mid = g->mid + l * NC, *ln2 = g->ln2 + l * NC, *fch = g->fch + l * 4 * NC, *gelu = g->gelu + l * 4 * NC;
        float *out = g->res + (l + 1) * NC;
        CUDA_CHECK(layernorm_forward_launch(parts->layernorm_version, x, PARAM(g, l, GPT_LN1_W), PARAM(g, l, GPT_LN1_B), ln1,
                                            g->mean1 + (size_t)l * N, g->rstd1 + (size_t)l * N, N, C));
        linear_bias_fwd(g, parts, qkv, ln1, PARAM(g, l, GPT_QKV_W), PARAM(g, l, GPT_QKV_B), N, C, 3 * C);
        parts->attention(g, l, atty, qkv, B, T);
        linear_bias_fwd(g, parts, mid, atty, PARAM(g, l, GPT_PROJ_W), PARAM(g, l, GPT_PROJ_B), N, C, C);
        CUDA_CHECK(gpt_add_launch(mid, mid, x, NC)); /* the residual */
        CUDA_CHECK(layernorm_forward_launch(parts->layernorm_version, mid, PARAM(g, l, GPT_LN2_W), PARAM(g, l, GPT_LN2_B), ln2,
                                            g->mean2 + (size_t)l * N, g->rstd2 + (size_t)l * N, N, C));
        linear_bias_fwd(g, parts, fch, ln2, PARAM(g, l, GPT_FC_W), PARAM(g, l, GPT_FC_B), N, C, 4 * C);
        CUDA_CHECK(gpt_gelu_launch(gelu, fch, 4 * NC));
        linear_bias_fwd(g, parts, out, gelu, PARAM(g, l, GPT_FCPROJ_W), PARAM(g, l, GPT_FCPROJ_B), N, 4 * C, C);
        CUDA_CHECK(gpt_add_launch(out, out, mid, NC));
    }
    CUDA_CHECK(layernorm_forward_launch(parts->layernorm_version, g->res + (size_t)c->layers * NC, g->params + gpt_offset_lnf(c, 0),
                                        g->params + gpt_offset_lnf(c, 1), g->lnf, g->meanf, g->rstdf, N, C));
    /* tied to wte: all its Vp rows, so that the logits' rows are Vp apart (aligned for the
     * products); the loss reads the first V of each */
    parts->linear(g, g->logits, g->lnf, g->params + gpt_offset_wte(c), N, C, c->vocab_padded);
    if (with_loss) parts->loss(g, N);
}

/* versions 0-4's backward: every parameter's gradient into g->grads, from the forward's
 * activations and dlogits */
static void backward_layers(gpt_gpu *g, const gpt_parts *parts, int B, int T)
{
    const gpt_config *c = &g->c;
    int N = B * T, C = c->channels;
    size_t NC = (size_t)N * C;
    CUDA_CHECK(cudaMemsetAsync(g->grads, 0, sizeof(float) * g->P, GPT_STREAM));
    parts->linear_backward(g, g->dln, g->grads + gpt_offset_wte(c), g->dlogits, g->lnf, g->params + gpt_offset_wte(c), N,
                           C, c->vocab_padded);
    CUDA_CHECK(layernorm_backward_launch(g->dln, g->res + (size_t)c->layers * NC, g->meanf, g->rstdf,
                                         g->params + gpt_offset_lnf(c, 0), g->d, g->grads + gpt_offset_lnf(c, 0),
                                         g->grads + gpt_offset_lnf(c, 1), g->ln_partial, N, C));
    for (int l = c->layers - 1; l >= 0; l--) {
        const float *x = g->res + l * NC, *mid = g->mid + l * NC;
        /* the MLP: out = mid + fcproj(gelu(fc(ln2(mid)))); d is out's gradient */
        linear_bias_bwd(g, parts, g->dgelu, GRAD(g, l, GPT_FCPROJ_W), GRAD(g, l, GPT_FCPROJ_B), g->d, g->gelu + l * 4 * NC,
                        PARAM(g, l, GPT_FCPROJ_W), N, 4 * C, C);
        CUDA_CHECK(gpt_gelu_backward_launch(g->dfc, g->dgelu, g->fch + l * 4 * NC, 4 * NC));
        linear_bias_bwd(g, parts, g->dln, GRAD(g, l, GPT_FC_W), GRAD(g, l, GPT_FC_B), g->dfc, g->ln2 + l * NC,
                        PARAM(g, l, GPT_FC_W), N, C, 4 * C);
        CUDA_CHECK(layernorm_backward_launch(g->dln, mid, g->mean2 + (size_t)l * N, g->rstd2 + (size_t)l * N,
                                             PARAM(g, l, GPT_LN2_W), g->dmid, GRAD(g, l, GPT_LN2_W),
                                             GRAD(g, l, GPT_LN2_B), g->ln_partial, N, C));
        CUDA_CHECK(gpt_add_launch(g->dmid, g->dmid, g->d, NC)); /* and the residual's share */
        /* attention: mid = x + proj(attention(qkv(ln1(x)))) */
        linear_bias_bwd(g, parts, g->datty, GRAD(g, l, GPT_PROJ_W), GRAD(g, l, GPT_PROJ_B), g->dmid, g->atty + l * NC,
                        PARAM(g, l, GPT_PROJ_W), N, C, C);
        parts->attention_backward(g, l, g->dqkv, g->datty, g->qkv + l * 3 * NC, B, T);
        linear_bias_bwd(g, parts, g->dln, GRAD(g, l, GPT_QKV_W), GRAD(g, l, GPT_QKV_B), g->dqkv, g->ln1 + l * NC,
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
void gpt_update(gpt_gpu *g, const gpt_parts *parts, float lr, float wd, float clip)
{
    gpt_set_lr(g, lr);
    gpt_clip_adamw(g, parts, wd, clip);
}
void gpt_set_lr(gpt_gpu *g, float lr)
{
    for (int s = 0; s < 2; s++)
        CUDA_CHECK(cudaMemcpyAsync(&g->adam[s].lr, &lr, sizeof lr, cudaMemcpyHostToDevice, GPT_STREAM));
}
void gpt_clip_adamw(gpt_gpu *g, const gpt_parts *parts, float wd, float clip)
{
    CUDA_CHECK(cudaMemsetAsync(g->sumsq, 0, sizeof(float), GPT_STREAM));
    CUDA_CHECK(gpt_sum_squares_launch(g->sumsq, g->grads, g->P));
    parts->adamw(g, wd, clip);
}
void gpt_params_set(gpt_gpu *g, const float *h_params)
{
    CUDA_CHECK(cudaMemcpy(g->params, h_params, sizeof(float) * g->P, cudaMemcpyHostToDevice));
    g->params16_stale = 1;
    for (int k = 0; k < GPT_RUN_KINDS; k++) {
        if (g->graphs[k].exec) CUDA_CHECK(cudaGraphExecDestroy(g->graphs[k].exec));
        memset(&g->graphs[k], 0, sizeof g->graphs[k]);
    }
}

/* the parts' launches of one run, the rate already on the device */
static void run_launches(gpt_gpu *g, const gpt_parts *parts, int what, int B, int T, float wd, float clip)
{
    gpt_forward(g, parts, B, T, 1);
    if (what != GPT_LOSS) gpt_backward(g, parts, B, T);
    if (what == GPT_STEP) gpt_clip_adamw(g, parts, wd, clip);
}
void gpt_run(gpt_gpu *g, const gpt_parts *parts, int what, int B, int T, float lr, float wd, float clip)
{
    if (what == GPT_STEP) gpt_set_lr(g, lr);
    run_launches(g, parts, what, B, T, wd, clip);
}
/* While GPT_STREAM is captured nothing runs: each launch, copy and library call is recorded as a
 * node of the graph, in order, with its arguments as they are now (pointers, sizes, wd and clip:
 * hence the key below). Nothing in the launches may wait for the GPU or copy from host memory,
 * which a capture refuses; the rate, which changes, is copied before each launch instead. */
void gpt_run_graph(gpt_gpu *g, const gpt_parts *parts, int what, int B, int T, float lr, float wd, float clip)
{
    struct gpt_graph *r = &g->graphs[what];
    int same = r->parts == parts && r->B == B && r->T == T && r->wd == wd && r->clip == clip;
    if (!same) { /* the first run of this kind and shape: launched as usual, which loads the kernels
                  * and picks cuBLASLt's algorithms before anything is recorded */
        if (r->exec) CUDA_CHECK(cudaGraphExecDestroy(r->exec));
        r->exec = NULL, r->parts = parts, r->B = B, r->T = T, r->wd = wd, r->clip = clip;
        gpt_run(g, parts, what, B, T, lr, wd, clip);
        return;
    }
    if (!r->exec) { /* the second: recorded */
        cudaGraph_t graph;
        CUDA_CHECK(cudaStreamBeginCapture(GPT_STREAM, cudaStreamCaptureModeThreadLocal));
        run_launches(g, parts, what, B, T, wd, clip);
        CUDA_CHECK(cudaStreamEndCapture(GPT_STREAM, &graph));
        CUDA_CHECK(cudaGraphInstantiate(&r->exec, graph, 0));
        CUDA_CHECK(cudaGraphDestroy(graph));
    }
    if (what == GPT_STEP) gpt_set_lr(g, lr);
    CUDA_CHECK(cudaGraphLaunch(r->exec, GPT_STREAM));
}

void gpt_logits_row(gpt_gpu *g, const gpt_parts *parts, int row, float *out)
{
    int V = g->c.vocab;
    size_t at = (size_t)row * g->c.vocab_padded;
    if (!(parts->buffers & GPT_BUFFERS_BF16_LOGITS)) {
        CUDA_CHECK(cudaMemcpy(out, g->logits + at, sizeof(float) * V, cudaMemcpyDeviceToHost));
        return;
    }
    unsigned short *bits = lb_host_alloc(2 * (size_t)V, "the logits");
    CUDA_CHECK(cudaMemcpy(bits, g->logits16 + at, 2 * (size_t)V, cudaMemcpyDeviceToHost));
    for (int v = 0; v < V; v++) {
        uint32_t u = (uint32_t)bits[v] << 16; /* bf16 is the top half of a float */
        memcpy(&out[v], &u, 4);
    }
    free(bits);
}

/* ---------------------------------------------------------------- the parts of the versions */

/* ch11's cross-entropy version 1: the softmax into probs, then the loss and the gradient */
static void loss_unfused(gpt_gpu *g, int N)
{
    CUDA_CHECK(ce_launch_strided(1, g->logits, g->targets, g->dlogits, g->loss, g->row_loss, g->probs, N, g->c.vocab,
                                 g->c.vocab_padded));
}
/* version 3: the row's max and sum online, then the loss and the gradient: two reads of the logits */
static void loss_fused(gpt_gpu *g, int N)
{
    CUDA_CHECK(ce_launch_strided(3, g->logits, g->targets, g->dlogits, g->loss, g->row_loss, NULL, N, g->c.vocab,
                                 g->c.vocab_padded));
}
/* ch11's version 4 on bf16 logits: the row in shared memory, read once, and the gradient
 * written in bf16 over the logits (the padded columns 0), as the classifier's backward reads it */
static void loss_bf16(gpt_gpu *g, int N)
{
    CUDA_CHECK(ce_launch_bf16(g->logits16, g->targets, g->logits16, g->loss, g->row_loss, N, g->c.vocab,
                              g->c.vocab_padded));
}
/* ch11's AdamW version 1, a launch per tensor from the host's lists, two groups (their own step
 * counts): the matrices decayed, the vectors not (the chunk count 1 only satisfies the launcher) */
static void adamw_per_tensor(gpt_gpu *g, float wd, float clip)
{ /* the rate is on the device already (g->adam[].lr: gpt_set_lr); the gradient clipped in place first */
    CUDA_CHECK(gpt_clip_launch(g->grads, g->P, g->sumsq, clip));
    CUDA_CHECK(adamw_launch(1, g->decayed, NULL, NULL, g->n_decayed, 1, wd, &g->adam[0]));
    CUDA_CHECK(adamw_launch(1, g->plain, NULL, NULL, g->n_plain, 1, 0.0f, &g->adam[1]));
}
/* version 4: one kernel a group over its chunk table, the step count moved inside it */
static void adamw_one_launch(gpt_gpu *g, float wd, float clip)
{
    CUDA_CHECK(gpt_clip_launch(g->grads, g->P, g->sumsq, clip));
    CUDA_CHECK(adamw_launch(4, g->decayed, g->d_decayed, g->chunks_decayed, g->n_decayed, g->n_chunks_decayed, wd,
                            &g->adam[0]));
    CUDA_CHECK(adamw_launch(4, g->plain, g->d_plain, g->chunks_plain, g->n_plain, g->n_chunks_plain, 0.0f, &g->adam[1]));
}
/* version 8: the clip's factor into both groups' state (the gradient read once, by AdamW, instead
 * of scaled in place first), and the bf16 copy of the weights written by the step */
static void adamw_scaled(gpt_gpu *g, float wd, float clip)
{
    CUDA_CHECK(gpt_grad_scale_launch(&g->adam[0].grad_scale, &g->adam[1].grad_scale, g->sumsq, clip));
    CUDA_CHECK(adamw_launch(4, g->decayed, g->d_decayed16, g->chunks_decayed, g->n_decayed, g->n_chunks_decayed, wd,
                            &g->adam[0]));
    CUDA_CHECK(adamw_launch(4, g->plain, g->d_plain16, g->chunks_plain, g->n_plain, g->n_chunks_plain, 0.0f,
                            &g->adam[1]));
}

/* nothing to prepare for the fp32 products; the bf16 ones read the parameters rounded, once a
 * forward (they change at every update) */
static void begin_fp32(gpt_gpu *g) { (void)g; }
static void begin_bf16(gpt_gpu *g)
{
    CUDA_CHECK(gpt_to_bf16_launch(g->params16, g->params, g->P));
    g->params16_stale = 0;
}
/* version 8: AdamW keeps the copy up to date; converted only after gpt_params_set */
static void begin_bf16_if_stale(gpt_gpu *g)
{
    if (g->params16_stale) begin_bf16(g);
}

const gpt_parts gpt_parts_unfused = {forward_layers, backward_layers, loss_unfused,   adamw_per_tensor,
                                     begin_fp32,     linear_fwd,      linear_bwd,     attention_fwd,
                                     attention_bwd,  0,
                                     GPT_BUFFERS_PROBS | GPT_BUFFERS_FP32_LAYERS | GPT_BUFFERS_SCORES |
                                         GPT_BUFFERS_FP32_LOGITS, 1};
const gpt_parts gpt_parts_fused_loss = {forward_layers, backward_layers, loss_fused,     adamw_per_tensor,
                                        begin_fp32,     linear_fwd,      linear_bwd,     attention_fwd,
                                        attention_bwd,  0,
                                        GPT_BUFFERS_FP32_LAYERS | GPT_BUFFERS_SCORES | GPT_BUFFERS_FP32_LOGITS, 1};
const gpt_parts gpt_parts_adamw_one_launch = {forward_layers, backward_layers, loss_fused,     adamw_one_launch,
                                              begin_fp32,     linear_fwd,      linear_bwd,     attention_fwd,
                                              attention_bwd,  0,
                                              GPT_BUFFERS_FP32_LAYERS | GPT_BUFFERS_SCORES | GPT_BUFFERS_FP32_LOGITS, 1};
const gpt_parts gpt_parts_bf16_products = {forward_layers, backward_layers,     loss_fused,          adamw_one_launch,
                                           begin_bf16,     linear_fwd_bf16,     linear_bwd_bf16,     attention_fwd,
                                           attention_bwd,  1,
                                           GPT_BUFFERS_FP32_LAYERS | GPT_BUFFERS_SCORES | GPT_BUFFERS_BF16_PRODUCTS |
                                               GPT_BUFFERS_FP32_LOGITS, 1};
const gpt_parts gpt_parts_flash_attention = {forward_layers,      backward_layers,     loss_fused,
                                             adamw_one_launch,    begin_bf16,          linear_fwd_bf16,
                                             linear_bwd_bf16,     attention_fwd_flash, attention_bwd_flash,
                                             1,
                                             GPT_BUFFERS_FP32_LAYERS | GPT_BUFFERS_BF16_PRODUCTS | GPT_BUFFERS_FLASH | GPT_BUFFERS_HEADS |
                                                 GPT_BUFFERS_FP32_LOGITS, 1};
/* version 5: its own forward and backward (gpt_fused.c), with version 4's loss, AdamW and weights;
 * the per-layer parts (products, attention) are its forward's own, so NULL here */
const gpt_parts gpt_parts_fused_epilogues = {gpt_forward_fused,   gpt_backward_fused,  loss_fused,
                                             adamw_one_launch,    begin_bf16,          NULL,
                                             NULL,                NULL,                NULL,
                                             1,
                                             GPT_BUFFERS_BF16_PRODUCTS | GPT_BUFFERS_FLASH | GPT_BUFFERS_HEADS | GPT_BUFFERS_FUSED |
                                                 GPT_BUFFERS_FP32_LOGITS, 1};

/* version 6: version 5 with ch11's one-read LayerNorm and loss */
const gpt_parts gpt_parts_fast_rows = {gpt_forward_fused,   gpt_backward_fused,  loss_bf16,
                                       adamw_one_launch,    begin_bf16,          NULL,
                                       NULL,                NULL,                NULL,
                                       1,
                                       GPT_BUFFERS_BF16_PRODUCTS | GPT_BUFFERS_FLASH | GPT_BUFFERS_HEADS | GPT_BUFFERS_FUSED |
                                           GPT_BUFFERS_BF16_LOGITS, 3};

double gpt_check_tolerance(const gpt_config *c, int B, int T, int bf16)
{
    double K = fmax(fmax(4.0 * c->channels, (double)B * T), (double)c->vocab_padded), D = 4.0 * c->layers + 2.0;
    return 4.0 * sqrt(D) * ((bf16 ? sqrt(2.0 / 3.0) * 0x1p-8 : 0.0) + 0x1p-24 * sqrt(K / 3.0));
}

const gpt_parts gpt_parts_fused_adamw = {gpt_forward_fused,   gpt_backward_fused,  loss_bf16,
                                         adamw_scaled,        begin_bf16_if_stale, NULL,
                                         NULL,                NULL,                NULL,
                                         1,
                                         GPT_BUFFERS_BF16_PRODUCTS | GPT_BUFFERS_FLASH | GPT_BUFFERS_HEADS | GPT_BUFFERS_FUSED |
                                             GPT_BUFFERS_BF16_LOGITS, 3};

/* version 9: version 8's parts with attention on token rows (ch11's attention versions 4 on sm_90a):
 * Q, K and V read where the qkv product wrote them, O written where the projection reads it, dO
 * where the projection's backward writes it, dQ, dK and dV into the qkv product's gradient */
const gpt_parts gpt_parts_token_rows = {gpt_forward_fused,   gpt_backward_fused,  loss_bf16,
                                        adamw_scaled,        begin_bf16_if_stale, NULL,
                                        NULL,                NULL,                NULL,
                                        1,
                                        GPT_BUFFERS_BF16_PRODUCTS | GPT_BUFFERS_FLASH | GPT_BUFFERS_FUSED |
                                            GPT_BUFFERS_BF16_LOGITS | GPT_BUFFERS_QKV_ROWS, 3};

const char *gpt_parts_unavailable(const gpt_parts *parts, const gpt_config *c, size_t shared_optin)
{
    if ((parts->buffers & GPT_BUFFERS_QKV_ROWS) && (attention_unavailable(4) || attention_bwd_unavailable(4)))
        return "attention on token rows is ch11's tensor-map version 4, forward and backward: sm_90a only";
    if (parts->loss == loss_bf16 && ce_shared_bytes_bf16(c->vocab) > shared_optin) /* versions 6-8 */
        return "the one-read loss holds a row of logits in shared memory: too many for this GPU's blocks";
    int hs = c->heads > 0 ? c->channels / c->heads : 0;
    if ((parts->buffers & GPT_BUFFERS_FLASH) && hs != 64 && hs != 128)
        return "flash attention takes heads of 64 or 128 channels (C / H)";
    return NULL;
}
