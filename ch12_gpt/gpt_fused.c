/* gpt_fused.c - version 5's forward and backward (gpt_model.h): every product by cuBLASLt, with
 * the work around it moved into the product's epilogue, and the activations the backward reads
 * kept in bf16 from the forward.
 *
 *   forward, a layer:  ln1 = LN(x)                        ch11's LayerNorm, bf16 out (version 5:
 *                                                         fp32, then converted)
 *                      qkv = ln1 Wqkv^T + b               epilogue BIAS, bf16 out
 *                      y = attention(qkv)                 ch11's flash kernels, bf16 heads (version
 *                                                         9: read and written as token rows, in
 *                                                         place: no reshapes around them)
 *                      mid = y Wproj^T + b + x            epilogue BIAS, the residual as C (beta 1)
 *                      ln2 = LN(mid)
 *                      h = GELU(ln2 Wfc^T + b)            epilogue GELU_AUX_BIAS: bf16 out, and
 *                                                         GELU's input kept (aux) for the backward
 *                      out = h Wfcproj^T + b + mid        epilogue BIAS, the residual as C
 *   backward, a layer: dh_pre = (d Wfcproj) GELU'(aux)    epilogue DGELU, bf16 out (version 6
 *                                                         on: a plain product, then our pass)
 *                      dWfcproj = d^T h, dbfcproj         epilogue BGRADB: the bias gradient (the
 *                                                         column sums of d) from the same pass
 *                                                         (version 6 on: from the LayerNorm
 *                                                         backward that wrote d; bias_gradient)
 *                      and so on for fc, proj and qkv.
 *
 * What version 4 did as kernels of their own (bias rows, GELU and its derivative, the column
 * sums, two residual adds, and a bf16 conversion before each product of the operands it had
 * already converted in the forward) happens inside the products. cuBLAS's column-major view of
 * our row-major matrices is gpt_model.c's: out (N, O) = x (N, I) W^T is its O x N = W^T-view x. */
#include "gpt_model.h"
#include "labbook.h" /* after the cuBLAS headers: CUBLAS_CHECK */
#include "gpt_kernels.h"
#include "layernorm_kernels.h" /* ch11's */

#include <stdlib.h>
#include <string.h>

#define BF16 CUDA_R_16BF

/* ---------------------------------------------------------------- one product by cuBLASLt */

/* D (m x n, column-major, ldd) = op(A) op(B) (+ C: the same layout as D, fp32, beta 1), A and
 * B bf16, fp32 accumulation, then the epilogue:
 *   BIAS           D += bias, one element a row of D (m); bias of D's type
 *   GELU_AUX_BIAS  aux = D + bias, D = GELU(aux) (tanh form; aux as D: m x n, aux_ld)
 *   DGELU          D = D GELU'(aux)
 *   BGRADB         bias (n floats) = the sums over k of op(B): a weight gradient's bias gradient */
typedef struct {
    cublasOperation_t ta, tb;
    int m, n, k;
    const unsigned short *A, *B;
    int lda, ldb;
    void *D;
    cudaDataType_t d_type;
    int ldd;
    const float *C;
    cublasLtEpilogue_t epilogue;
    const void *bias;
    void *aux;
    int aux_ld;
} lt_product;

/* the algorithm cuBLASLt's heuristic picks for a product's shape, kept: the heuristic is host
 * work (tens of microseconds) that every step would otherwise repeat ~120 times */
struct gpt_lt_algo {
    int ta, tb, m, n, k, lda, ldb, ldd, d_type, with_c, epilogue;
    cublasLtMatmulAlgo_t algo;
};

static int same_shape(const struct gpt_lt_algo *a, const lt_product *p)
{
    return a->ta == (int)p->ta && a->tb == (int)p->tb && a->m == p->m && a->n == p->n && a->k == p->k &&
           a->lda == p->lda && a->ldb == p->ldb && a->ldd == p->ldd && a->d_type == (int)p->d_type &&
           a->with_c == (p->C != NULL) && a->epilogue == (int)p->epilogue;
}

static void set_attr(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t what, const void *value, size_t size)
{
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, what, value, size));
}

static void lt_run(gpt_gpu *g, const lt_product *p)
{
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    set_attr(op, CUBLASLT_MATMUL_DESC_TRANSA, &p->ta, sizeof p->ta);
    set_attr(op, CUBLASLT_MATMUL_DESC_TRANSB, &p->tb, sizeof p->tb);
    set_attr(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &p->epilogue, sizeof p->epilogue);
    if (p->bias) set_attr(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p->bias, sizeof p->bias);
    if (p->aux) {
        int64_t ld = p->aux_ld;
        set_attr(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &p->aux, sizeof p->aux);
        set_attr(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
    }
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a, BF16, p->ta == CUBLAS_OP_N ? p->m : p->k,
                                            p->ta == CUBLAS_OP_N ? p->k : p->m, p->lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b, BF16, p->tb == CUBLAS_OP_N ? p->k : p->n,
                                            p->tb == CUBLAS_OP_N ? p->n : p->k, p->ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d, p->d_type, p->m, p->n, p->ldd));

    const cublasLtMatmulAlgo_t *algo = NULL;
    for (int i = 0; i < g->n_lt_algos && !algo; i++)
        if (same_shape(&g->lt_algos[i], p)) algo = &g->lt_algos[i].algo;
    if (!algo) {
        cublasLtMatmulPreference_t pref;
        size_t ws = GPT_LT_WORKSPACE;
        CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
        CUBLAS_CHECK(
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
        cublasLtMatmulHeuristicResult_t found;
        int n_found = 0;
        CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(g->lt, op, a, b, d, d, pref, 1, &found, &n_found));
        CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
        if (n_found < 1)
            lb_die(LB_EXIT_CUDA, "gpt: cuBLASLt has no algorithm for a %d x %d x %d product with epilogue %d", p->m,
                   p->n, p->k, (int)p->epilogue);
        if (!g->lt_algos) g->lt_algos = lb_host_alloc(sizeof *g->lt_algos * GPT_LT_ALGOS, "cuBLASLt's algorithms");
        if (g->n_lt_algos == GPT_LT_ALGOS) g->n_lt_algos = 0; /* full: start over (a run has ~12 shapes) */
        struct gpt_lt_algo *keep = &g->lt_algos[g->n_lt_algos++];
        *keep = (struct gpt_lt_algo){p->ta,  p->tb,  p->m,      p->n,         p->k,        p->lda,
                                     p->ldb, p->ldd, p->d_type, p->C != NULL, p->epilogue, found.algo};
        algo = &keep->algo;
    }
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasLtMatmul(g->lt, op, &one, p->A, a, p->B, b, p->C ? &one : &zero,
                                p->C ? (const void *)p->C : p->D, d, p->D, d, algo, g->lt_workspace, GPT_LT_WORKSPACE,
                                GPT_STREAM));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(a));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(b));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(d));
    CUBLAS_CHECK(cublasLtMatmulDescDestroy(op));
}

/* A linear layer's three products, row-major as the model keeps them (W is (O, I)):
 *   forward:  out (N, O) = x (N, I) W^T               cuBLAS: O x N = (W: I x O)^T (x: I x N)
 *   dx:       dx (N, I) = dout (N, O) W               cuBLAS: I x N = (W: I x O) (dout: O x N)
 *   dW:       dW (O, I) = dout^T x                    cuBLAS: I x O = (x: I x N) (dout: O x N)^T */
static lt_product forward_product(const unsigned short *x, const unsigned short *W, void *out, cudaDataType_t type,
                                  int N, int I, int O)
{
    return (lt_product){CUBLAS_OP_T, CUBLAS_OP_N, O, N, I, W, x, I, I, out, type, O, NULL, CUBLASLT_EPILOGUE_DEFAULT,
                        NULL,        NULL,        0};
}
static lt_product dx_product(const unsigned short *dout, const unsigned short *W, void *dx, cudaDataType_t type, int N,
                             int I, int O)
{
    return (lt_product){CUBLAS_OP_N, CUBLAS_OP_N, I, N, O, W, dout, I, O, dx, type, I, NULL, CUBLASLT_EPILOGUE_DEFAULT,
                        NULL,        NULL,        0};
}
static lt_product dw_product(const unsigned short *dout, const unsigned short *x, float *dW, int N, int I, int O)
{
    return (lt_product){CUBLAS_OP_N, CUBLAS_OP_T, I,  O,          N, x,    dout,
                        I,           O,           dW, CUDA_R_32F, I, NULL, CUBLASLT_EPILOGUE_DEFAULT,
                        NULL,        NULL,        0};
}

/* ---------------------------------------------------------------- the step */

#define P32(g, l, t) ((g)->params + gpt_offset(&(g)->c, (l), (t)))
#define P16(g, l, t) ((g)->params16 + gpt_offset(&(g)->c, (l), (t)))
#define GRAD(g, l, t) ((g)->grads + gpt_offset(&(g)->c, (l), (t)))

/* a LayerNorm whose output only a bf16 product reads: ch11's one-read LayerNorm (version 6 on)
 * writes it in bf16 itself; version 5's writes fp32 (into g->lnf, scratch here), then converted */
static void layernorm_bf16(gpt_gpu *g, const gpt_parts *parts, const float *x, const float *w, const float *b,
                           unsigned short *y16, float *mean, float *rstd, int N, int C)
{
    if (parts->layernorm_version == 3) {
        CUDA_CHECK(layernorm_forward_bf16_launch(x, w, b, y16, mean, rstd, N, C));
        return;
    }
    CUDA_CHECK(layernorm_forward_launch(parts->layernorm_version, x, w, b, g->lnf, mean, rstd, N, C));
    CUDA_CHECK(gpt_to_bf16_launch(y16, g->lnf, (size_t)N * C));
}

/* Version 6 on (its parts are 7's and 8's too): ch11's one-read row kernels, and our own passes
 * where a library's costs more than the data it reads. */
static int fast_rows(const gpt_parts *parts) { return parts->layernorm_version == 3; }
/* Version 9: attention on token rows (gpt_flash_forward_rows): no reshape passes around it */
static int token_rows(const gpt_parts *parts) { return (parts->buffers & GPT_BUFFERS_QKV_ROWS) != 0; }

void gpt_forward_fused(gpt_gpu *g, const gpt_parts *parts, int B, int T, int with_loss)
{
    const gpt_config *c = &g->c;
    int N = B * T, C = c->channels, H = c->heads;
    size_t NC = (size_t)N * C;
    parts->begin(g); /* the weights (and biases) in bf16 */
    CUDA_CHECK(
        gpt_embed_launch(g->res, g->tokens, g->params + gpt_offset_wte(c), g->params + gpt_offset_wpe(c), B, T, C));
    for (int l = 0; l < c->layers; l++) {
        float *x = g->res + l * NC, *mid = g->mid + l * NC, *out = g->res + (l + 1) * NC;
        unsigned short *ln1 = g->ln1_16 + l * NC, *atty = g->atty16 + l * NC, *ln2 = g->ln2_16 + l * NC;
        unsigned short *pre = g->pre16 + l * 4 * NC, *h = g->gelu16 + l * 4 * NC;
        size_t heads = (size_t)l * NC; /* layer l's bf16 heads */
        /* attention */
        layernorm_bf16(g, parts, x, P32(g, l, GPT_LN1_W), P32(g, l, GPT_LN1_B), ln1, g->mean1 + (size_t)l * N,
                       g->rstd1 + (size_t)l * N, N, C);
        unsigned short *qkv = token_rows(parts) ? g->qkv16 + l * 3 * NC : g->qkv16; /* version 9 keeps each layer's */
        lt_product p = forward_product(ln1, P16(g, l, GPT_QKV_W), qkv, BF16, N, C, 3 * C);
        p.epilogue = CUBLASLT_EPILOGUE_BIAS, p.bias = P16(g, l, GPT_QKV_B);
        lt_run(g, &p);
        if (token_rows(parts)) { /* Q, K, V read inside qkv's rows, O written into atty's */
            gpt_flash_forward_rows(g, l, B, T);
        } else {
            CUDA_CHECK(gpt_split_heads_bf16_bf16_launch(g->q16 + heads, g->k16 + heads, g->v16 + heads, qkv, B, T, C, H));
            gpt_flash_forward(g, l, B, T);
            CUDA_CHECK(gpt_merge_heads_bf16_bf16_launch(atty, g->o16 + heads, B, T, C, H));
        }
        p = forward_product(atty, P16(g, l, GPT_PROJ_W), mid, CUDA_R_32F, N, C, C);
        p.epilogue = CUBLASLT_EPILOGUE_BIAS, p.bias = P32(g, l, GPT_PROJ_B), p.C = x; /* mid = x + proj(y) */
        lt_run(g, &p);
        /* the MLP */
        layernorm_bf16(g, parts, mid, P32(g, l, GPT_LN2_W), P32(g, l, GPT_LN2_B), ln2, g->mean2 + (size_t)l * N,
                       g->rstd2 + (size_t)l * N, N, C);
        p = forward_product(ln2, P16(g, l, GPT_FC_W), h, BF16, N, C, 4 * C);
        p.epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS, p.bias = P16(g, l, GPT_FC_B), p.aux = pre, p.aux_ld = 4 * C;
        lt_run(g, &p);
        p = forward_product(h, P16(g, l, GPT_FCPROJ_W), out, CUDA_R_32F, N, 4 * C, C);
        p.epilogue = CUBLASLT_EPILOGUE_BIAS, p.bias = P32(g, l, GPT_FCPROJ_B), p.C = mid; /* out = mid + mlp */
        lt_run(g, &p);
    }
    layernorm_bf16(g, parts, g->res + (size_t)c->layers * NC, g->params + gpt_offset_lnf(c, 0),
                   g->params + gpt_offset_lnf(c, 1), g->lnf16, g->meanf, g->rstdf, N, C);
    /* the classifier, tied to wte: all Vp rows; the logits fp32 for version 5's loss, bf16 for
     * version 6's */
    int bf16_logits = (parts->buffers & GPT_BUFFERS_BF16_LOGITS) != 0;
    lt_product p = forward_product(g->lnf16, g->params16 + gpt_offset_wte(c),
                                   bf16_logits ? (void *)g->logits16 : (void *)g->logits, bf16_logits ? BF16 : CUDA_R_32F,
                                   N, C, c->vocab_padded);
    lt_run(g, &p);
    if (with_loss) parts->loss(g, N);
}

/* Where the bias gradients come from. Version 5: cuBLASLt's epilogues, BGRADB on the weight
 * gradient's product (a kernel of its own after it) and GELU's derivative (DGELU) on fcproj's dx
 * product. Version 6 on, our passes over what is written anyway: the two products that write
 * into the residual stream (proj and fcproj) have the residual's gradient as their output's, and
 * ch11's one-read LayerNorm backward sums the columns of the rows it writes; fc's and qkv's by
 * gpt_bias_grad_bf16_launch over their bf16 gradient (fc's with GELU's derivative in the same
 * pass), after plain products, which cuBLASLt runs on faster kernels than those epilogues. */
static void bias_gradient(lt_product *p, const gpt_parts *parts, float *bias)
{
    if (!fast_rows(parts)) p->epilogue = CUBLASLT_EPILOGUE_BGRADB, p->bias = bias;
}

/* A LayerNorm's backward whose dX is added to what dx holds (the residual's gradient), g->d16
 * then the sum in bf16 (the next products' operand), and dsum (when not NULL) the sum's column
 * sums: ch11's one-read backward does all three itself (version 6 on); version 5 runs ch11's
 * backward into scratch (dmid), then adds and converts, and leaves dsum to the products */
static void layernorm_backward(gpt_gpu *g, const gpt_parts *parts, const float *dy, const float *x, const float *mean,
                               const float *rstd, const float *w, float *dx, float *dw, float *db, float *dsum, int N,
                               int C)
{
    if (fast_rows(parts)) {
        CUDA_CHECK(layernorm_backward_add_launch(dy, x, mean, rstd, w, dx, g->d16, dw, db, dsum, g->ln_partial, N, C));
        return;
    }
    size_t NC = (size_t)N * C;
    CUDA_CHECK(layernorm_backward_launch(dy, x, mean, rstd, w, g->dmid, dw, db, g->ln_partial, N, C));
    CUDA_CHECK(gpt_add_launch(dx, dx, g->dmid, NC));
    CUDA_CHECK(gpt_to_bf16_launch(g->d16, dx, NC));
}

void gpt_backward_fused(gpt_gpu *g, const gpt_parts *parts, int B, int T)
{
    const gpt_config *c = &g->c;
    int N = B * T, C = c->channels, H = c->heads, Vp = c->vocab_padded;
    size_t NC = (size_t)N * C;
    CUDA_CHECK(cudaMemsetAsync(g->grads, 0, sizeof(float) * g->P, GPT_STREAM));
    /* the classifier: dlogits in bf16 (version 6's loss wrote them so; version 5's in fp32,
     * converted here), then d(lnf) and wte's first gradient */
    const unsigned short *dlogits16 = g->logits16;
    if (!(parts->buffers & GPT_BUFFERS_BF16_LOGITS)) {
        CUDA_CHECK(gpt_to_bf16_launch(g->d16, g->dlogits, (size_t)N * Vp));
        dlogits16 = g->d16;
    }
    lt_product p = dx_product(dlogits16, g->params16 + gpt_offset_wte(c), g->dln, CUDA_R_32F, N, C, Vp);
    lt_run(g, &p);
    p = dw_product(dlogits16, g->lnf16, g->grads + gpt_offset_wte(c), N, C, Vp);
    lt_run(g, &p);
    /* d: the residual stream's gradient, each LayerNorm's backward adding its share (d16 the same
     * in bf16); the final LayerNorm's is all there is at the top */
    CUDA_CHECK(cudaMemsetAsync(g->d, 0, sizeof(float) * NC, GPT_STREAM));
    layernorm_backward(g, parts, g->dln, g->res + (size_t)c->layers * NC, g->meanf, g->rstdf,
                       g->params + gpt_offset_lnf(c, 0), g->d, g->grads + gpt_offset_lnf(c, 0),
                       g->grads + gpt_offset_lnf(c, 1), GRAD(g, c->layers - 1, GPT_FCPROJ_B), N, C);
    for (int l = c->layers - 1; l >= 0; l--) {
        const float *x = g->res + l * NC, *mid = g->mid + l * NC;
        const unsigned short *ln1 = g->ln1_16 + l * NC, *atty = g->atty16 + l * NC, *ln2 = g->ln2_16 + l * NC;
        unsigned short *pre = g->pre16 + l * 4 * NC, *h = g->gelu16 + l * 4 * NC;
        /* the MLP: d is the gradient of out = mid + fcproj(GELU(fc(ln2))) */
        p = dx_product(g->d16, P16(g, l, GPT_FCPROJ_W), g->dfc16, BF16, N, 4 * C, C);
        if (fast_rows(parts)) { /* through GELU's derivative, and fc's bias gradient */
            lt_run(g, &p);
            CUDA_CHECK(gpt_bias_grad_bf16_launch(GRAD(g, l, GPT_FC_B), g->dfc16, pre, N, 4 * C, g->column_part, g->column_count));
        } else {
            p.epilogue = CUBLASLT_EPILOGUE_DGELU, p.aux = pre, p.aux_ld = 4 * C;
            lt_run(g, &p);
        }
        p = dw_product(g->d16, h, GRAD(g, l, GPT_FCPROJ_W), N, 4 * C, C);
        bias_gradient(&p, parts, GRAD(g, l, GPT_FCPROJ_B));
        lt_run(g, &p);
        p = dx_product(g->dfc16, P16(g, l, GPT_FC_W), g->dln, CUDA_R_32F, N, C, 4 * C);
        lt_run(g, &p);
        p = dw_product(g->dfc16, ln2, GRAD(g, l, GPT_FC_W), N, C, 4 * C);
        bias_gradient(&p, parts, GRAD(g, l, GPT_FC_B));
        lt_run(g, &p);
        /* mid's gradient: the residual's share (d) and LN2's, added to it */
        layernorm_backward(g, parts, g->dln, mid, g->mean2 + (size_t)l * N, g->rstd2 + (size_t)l * N,
                           P32(g, l, GPT_LN2_W), g->d, GRAD(g, l, GPT_LN2_W), GRAD(g, l, GPT_LN2_B),
                           GRAD(g, l, GPT_PROJ_B), N, C);
        /* attention: mid = x + proj(attention(qkv(ln1(x)))) */
        if (token_rows(parts)) /* dO in bf16 token rows, as the flash backward reads it */
            p = dx_product(g->d16, P16(g, l, GPT_PROJ_W), g->do16, BF16, N, C, C);
        else
            p = dx_product(g->d16, P16(g, l, GPT_PROJ_W), g->datty, CUDA_R_32F, N, C, C);
        lt_run(g, &p);
        p = dw_product(g->d16, atty, GRAD(g, l, GPT_PROJ_W), N, C, C);
        bias_gradient(&p, parts, GRAD(g, l, GPT_PROJ_B));
        lt_run(g, &p);
        if (token_rows(parts)) { /* dO read, dQ, dK, dV written where the products have them */
            gpt_flash_backward_rows(g, l, B, T);
        } else {
            CUDA_CHECK(gpt_unmerge_heads_bf16_launch(g->do16, g->datty, B, T, C, H));
            if (fast_rows(parts)) { /* dQ joined from its fp32 sum: no pass to bf16 between */
                gpt_flash_backward(g, l, B, T, 1);
                CUDA_CHECK(gpt_join_qkv_acc_bf16_launch(g->dqkv16, g->dq_acc, g->dk16, g->dv16, B, T, C, H));
            } else {
                gpt_flash_backward(g, l, B, T, 0);
                CUDA_CHECK(gpt_join_qkv_bf16_bf16_launch(g->dqkv16, g->dq16, g->dk16, g->dv16, B, T, C, H));
            }
        }
        if (fast_rows(parts)) /* qkv's bias gradient: the columns of dqkv (version 5: BGRADB below) */
            CUDA_CHECK(gpt_bias_grad_bf16_launch(GRAD(g, l, GPT_QKV_B), g->dqkv16, NULL, N, 3 * C, g->column_part,
                                                 g->column_count));
        p = dx_product(g->dqkv16, P16(g, l, GPT_QKV_W), g->dln, CUDA_R_32F, N, C, 3 * C);
        lt_run(g, &p);
        p = dw_product(g->dqkv16, ln1, GRAD(g, l, GPT_QKV_W), N, C, 3 * C);
        bias_gradient(&p, parts, GRAD(g, l, GPT_QKV_B));
        lt_run(g, &p);
        /* x's gradient: the residual's share (mid's) and LN1's */
        layernorm_backward(g, parts, g->dln, x, g->mean1 + (size_t)l * N, g->rstd1 + (size_t)l * N,
                           P32(g, l, GPT_LN1_W), g->d, GRAD(g, l, GPT_LN1_W), GRAD(g, l, GPT_LN1_B),
                           l > 0 ? GRAD(g, l - 1, GPT_FCPROJ_B) : NULL, N, C); /* the layer below's */
    }
    CUDA_CHECK(gpt_embed_backward_launch(g->grads + gpt_offset_wte(c), g->grads + gpt_offset_wpe(c), g->d, g->tokens, B,
                                         T, C));
}
