/* dnn_lt.c - the training step's GEMMs on cuBLASLt with epilogues (see dnn_lt.h).
 *
 * Row-major data, column-major library: a row-major (r x c) matrix is a column-major (c x r) one
 * with the same leading dimension, so every product below is written for the transposes, as
 * gemm_rm does for cuBLAS. With in = size[l], out = size[l + 1] and B rows:
 *   forward  Z^T (out x B)  = W (out x in, as stored)  X^T (in x B)       epilogue: bias, ReLU, mask
 *   dW       dW^T (out x in) = dZ^T (out x B)  X (B x in: X^T transposed) no epilogue
 *   dX       dX^T (in x B)   = W^T (in x out)  dZ^T (out x B)             epilogue: ReLU' of the layer
 *                                                                          below (its mask), its db
 * The bias and its gradient run along the column-major rows, the units: one value a unit, as the
 * epilogues expect. cuBLASLt's heuristic picks each GEMM's algorithm once per batch size (its
 * first answer: the same on every run, so a run repeats bit for bit), or with --tune-gemms the
 * fastest of its first 16 as timed then (another run may time another one fastest, and round
 * differently). */
#define _POSIX_C_SOURCE 200809L
#include "dnn_net.h"

#include <cublasLt.h>
#include <string.h>

#define LT_PLANS 4                          /* batch sizes remembered (the batch, gradcheck's rows, ...) */
#define LT_GEMMS (3 * DNN_MAX_LAYERS - 1) /* forward L, dW L, dX L - 1 */
#define LT_WORKSPACE (32u << 20)            /* net->d_workspace, shared with the cuBLAS handle */

typedef struct {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    const float *A, *B;
    float *D;
} lt_gemm;

typedef struct {
    int rows; /* 0: unused */
    lt_gemm forward[DNN_MAX_LAYERS], dw[DNN_MAX_LAYERS], dx[DNN_MAX_LAYERS];
} lt_plan;

struct dnn_lt {
    cublasLtHandle_t h;
    void *d_mask[DNN_MAX_LAYERS + 1]; /* ReLU's mask of layer j's output (j = 1..L-1): a bit an element */
    int64_t mask_ld[DNN_MAX_LAYERS + 1];  /* bits a column of the mask: the units rounded up to 128 */
    lt_plan plan[LT_PLANS];
    int next; /* the plan slot to reuse when all are taken */
};

dnn_lt *lt_create(const network *net)
{
    dnn_lt *lt = lb_host_alloc(sizeof *lt, "cuBLASLt state");
    memset(lt, 0, sizeof *lt);
    CUBLAS_CHECK(cublasLtCreate(&lt->h));
    for (int j = 1; j < net->n_layers; j++) {
        lt->mask_ld[j] = (net->size[j] + 127) / 128 * 128; /* the library asks for a multiple of 128 */
        size_t bytes = (size_t)lt->mask_ld[j] / 8 * (size_t)net->max_rows;
        CUDA_CHECK(cudaMalloc(&lt->d_mask[j], bytes));
        /* the padding bits past the units are never written, but the epilogue reads and writes
         * whole bytes: zeros, so that nothing read is uninitialized */
        CUDA_CHECK(cudaMemset(lt->d_mask[j], 0, bytes));
    }
    return lt;
}

static void destroy_gemm(lt_gemm *g)
{
    if (!g->op) return;
    CUBLAS_CHECK(cublasLtMatmulDescDestroy(g->op));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(g->a));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(g->b));
    CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(g->d));
    memset(g, 0, sizeof *g);
}

static void destroy_plan(lt_plan *p)
{
    for (int l = 0; l < DNN_MAX_LAYERS; l++) destroy_gemm(&p->forward[l]), destroy_gemm(&p->dw[l]), destroy_gemm(&p->dx[l]);
    p->rows = 0;
}

void lt_destroy(dnn_lt *lt)
{
    if (!lt) return;
    for (int i = 0; i < LT_PLANS; i++) destroy_plan(&lt->plan[i]);
    for (int j = 0; j <= DNN_MAX_LAYERS; j++)
        if (lt->d_mask[j]) CUDA_CHECK(cudaFree(lt->d_mask[j]));
    CUBLAS_CHECK(cublasLtDestroy(lt->h));
    free(lt);
}

/* the largest power of two (up to 256) that divides the address: what the algorithm may assume */
static uint32_t alignment_of(const void *p)
{
    uint32_t a = 256;
    while (a > 4 && (uintptr_t)p % a) a /= 2;
    return a;
}

static void set_attr(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t what, const void *value, size_t size)
{
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, what, value, size));
}

/* D (m x n) = op(A) op(B), column-major, fp32 data; transa/transb: A or B stored transposed;
 * lda, ldb, ldd as stored. The epilogue and its pointers are set by the caller before
 * choose_algo. */
static void describe(lt_gemm *g, const network *net, int m, int n, int k, const float *A, int lda, int transa,
                     const float *B, int ldb, int transb, float *D)
{
    cublasComputeType_t compute = net->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&g->op, compute, CUDA_R_32F));
    cublasOperation_t ta = transa ? CUBLAS_OP_T : CUBLAS_OP_N, tb = transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_attr(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    set_attr(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g->a, CUDA_R_32F, transa ? k : m, transa ? m : k, lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g->b, CUDA_R_32F, transb ? n : k, transb ? k : n, ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&g->d, CUDA_R_32F, m, n, m));
    g->A = A, g->B = B, g->D = D;
}

static void set_epilogue(lt_gemm *g, cublasLtEpilogue_t epi, const float *bias, const void *mask, int64_t mask_ld)
{
    set_attr(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    if (bias) set_attr(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    if (mask) {
        set_attr(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &mask, sizeof mask);
        set_attr(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &mask_ld, sizeof mask_ld);
    }
}

#define LT_CANDIDATES 16 /* algorithms --tune-gemms times for each GEMM */

static void run_algo(const network *net, const lt_gemm *g, const cublasLtMatmulAlgo_t *algo, cudaStream_t s)
{
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasLtMatmul(net->lt->h, g->op, &one, g->A, g->a, g->B, g->b, &zero, g->D, g->d, g->D, g->d, algo,
                                net->d_workspace, LT_WORKSPACE, s));
}

/* --tune-gemms: the fastest of the heuristic's candidates, each run twice to warm up, then
 * timed over 5 runs (the least of them). It runs the GEMM on the network's own buffers: it
 * writes only activations, gradients and masks, which the step computes again. */
static int fastest(const network *net, const lt_gemm *g, const cublasLtMatmulHeuristicResult_t *res, int found)
{
    cudaStream_t s = 0;
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    int best = 0;
    float best_ms = 0.0f;
    for (int i = 0; i < found; i++) {
        float least = 0.0f;
        for (int rep = 0; rep < 7; rep++) {
            CUDA_CHECK(cudaEventRecord(e0, s));
            run_algo(net, g, &res[i].algo, s);
            CUDA_CHECK(cudaEventRecord(e1, s));
            CUDA_CHECK(cudaEventSynchronize(e1));
            float ms;
            CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
            if (rep >= 2 && (rep == 2 || ms < least)) least = ms;
        }
        if (i == 0 || least < best_ms) best = i, best_ms = least;
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return best;
}

/* the heuristic's first algorithm for this GEMM, for its pointers' alignment and our workspace
 * (with --tune-gemms: the fastest of its first LT_CANDIDATES) */
static void choose_algo(const network *net, lt_gemm *g, const char *what, int layer)
{
    dnn_lt *lt = net->lt;
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = LT_WORKSPACE;
    uint32_t align[4] = {alignment_of(g->A), alignment_of(g->B), alignment_of(g->D), alignment_of(g->D)};
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, which[i], &align[i], sizeof align[i]));
    cublasLtMatmulHeuristicResult_t res[LT_CANDIDATES];
    int found = 0, tune = net->tune_gemms;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt->h, g->op, g->a, g->b, g->d, g->d, pref,
                                                       tune ? LT_CANDIDATES : 1, res, &found);
    CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    if (st != CUBLAS_STATUS_SUCCESS || found < 1)
        lb_die(LB_EXIT_CUDA, "dnn: cuBLASLt has no algorithm for layer %d's %s GEMM with its epilogue (status %d); "
                             "--cublas runs without epilogues", layer, what, (int)st);
    g->algo = res[tune && found > 1 ? fastest(net, g, res, found) : 0].algo;
}

static lt_plan *plan_for(network *net, int rows)
{
    dnn_lt *lt = net->lt;
    for (int i = 0; i < LT_PLANS; i++)
        if (lt->plan[i].rows == rows) return &lt->plan[i];
    lt_plan *p = &lt->plan[lt->next];
    lt->next = (lt->next + 1) % LT_PLANS;
    destroy_plan(p);
    int L = net->n_layers;
    for (int l = 0; l < L; l++) {
        int in = net->size[l], out = net->size[l + 1];
        float *W = net_w(net, net->d_params, l), *b = net_b(net, net->d_params, l);
        /* forward: Z^T = W X^T; hidden layers relu(. + b) keeping the mask, the logits . + b */
        lt_gemm *g = &p->forward[l];
        describe(g, net, out, rows, in, W, out, 0, net->d_a[l], in, 0, net->d_a[l + 1]);
        if (l < L - 1)
            set_epilogue(g, CUBLASLT_EPILOGUE_RELU_AUX_BIAS, b, lt->d_mask[l + 1], lt->mask_ld[l + 1]);
        else
            set_epilogue(g, CUBLASLT_EPILOGUE_BIAS, b, NULL, 0);
        choose_algo(net, g, "forward", l);
        /* dW^T = dZ^T X */
        g = &p->dw[l];
        describe(g, net, out, in, rows, net->d_d[l + 1], out, 0, net->d_a[l], in, 1, net_w(net, net->d_grads, l));
        choose_algo(net, g, "weight gradient", l);
        if (l == 0) continue; /* no gradient for the input itself */
        /* dX^T = W^T dZ^T, then times ReLU' of layer l - 1's output and that layer's db */
        g = &p->dx[l];
        describe(g, net, in, rows, out, W, out, 1, net->d_d[l + 1], out, 0, net->d_d[l]);
        set_epilogue(g, CUBLASLT_EPILOGUE_DRELU_BGRAD, net_b(net, net->d_grads, l - 1), lt->d_mask[l], lt->mask_ld[l]);
        choose_algo(net, g, "input gradient", l);
    }
    p->rows = rows;
    return p;
}

void lt_prepare(network *net, int rows) { (void)plan_for(net, rows); }

static void run(network *net, const lt_gemm *g, cudaStream_t s) { run_algo(net, g, &g->algo, s); }

void lt_forward(network *net, int rows, cudaStream_t s)
{
    lt_plan *p = plan_for(net, rows);
    for (int l = 0; l < net->n_layers; l++) run(net, &p->forward[l], s);
}

void lt_backward(network *net, int rows, cudaStream_t s)
{
    lt_plan *p = plan_for(net, rows);
    for (int l = net->n_layers - 1; l >= 0; l--) {
        run(net, &p->dw[l], s);
        if (l > 0) run(net, &p->dx[l], s);
    }
}
