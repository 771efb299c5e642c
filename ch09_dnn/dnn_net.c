/* dnn_net.c - the network of ch09 (see dnn_net.h): parameters, forward and backward passes on
 * cuBLAS and dnn_kernels.cu, and the training step on both paths. Evaluation and the gradient
 * check are in dnn_eval.c, the weights file in dnn_weights.c. */
#define _POSIX_C_SOURCE 200809L
#include "dnn_net.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void layout(network *net)
{
    size_t off = 0;
    for (int l = 0; l < net->n_layers; l++) {
        net->w_off[l] = off;
        off += (size_t)net->size[l] * net->size[l + 1];
        net->b_off[l] = off;
        off += (size_t)net->size[l + 1];
    }
    net->n_params = off;
}

void net_alloc(network *net, int max_rows)
{
    layout(net);
    net->max_rows = max_rows;
    /* the GEMMs' operands (weights, activations, deltas, the data) with NaN after their ends
     * (lb_malloc_guarded): a kernel that reads past one fails the checks instead of reading the
     * allocator's padding */
    CUDA_CHECK(lb_malloc_guarded((void **)&net->d_params, sizeof(float) * net->n_params));
    CUDA_CHECK(lb_malloc_guarded((void **)&net->d_grads, sizeof(float) * net->n_params));
    CUDA_CHECK(cudaMalloc((void **)&net->d_opt1, sizeof(float) * net->n_params));
    CUDA_CHECK(cudaMalloc((void **)&net->d_opt2, sizeof(float) * net->n_params));
    CUDA_CHECK(cudaMemset(net->d_opt1, 0, sizeof(float) * net->n_params));
    CUDA_CHECK(cudaMemset(net->d_opt2, 0, sizeof(float) * net->n_params));
    for (int l = 0; l <= net->n_layers; l++) {
        CUDA_CHECK(lb_malloc_guarded((void **)&net->d_a[l], sizeof(float) * (size_t)max_rows * net->size[l]));
        CUDA_CHECK(lb_malloc_guarded((void **)&net->d_d[l], sizeof(float) * (size_t)max_rows * net->size[l]));
        /* zeros, not garbage: --tune-gemms times the GEMMs on these buffers before any step has
         * written them (compute-sanitizer's initcheck reads every such byte as a bug) */
        CUDA_CHECK(cudaMemset(net->d_a[l], 0, sizeof(float) * (size_t)max_rows * net->size[l]));
        CUDA_CHECK(cudaMemset(net->d_d[l], 0, sizeof(float) * (size_t)max_rows * net->size[l]));
    }
    CUBLAS_CHECK(cublasCreate(&net->h));
    /* a workspace of our own: cuBLAS then allocates nothing while a graph is captured */
    CUDA_CHECK(cudaMalloc(&net->d_workspace, 32u << 20));
    CUBLAS_CHECK(cublasSetWorkspace(net->h, net->d_workspace, 32u << 20));
    /* plain fp32 unless asked for TF32 (10-bit mantissas in the products): gradcheck compares to 1e-3 */
    CUBLAS_CHECK(cublasSetMathMode(net->h, net->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
    CUDA_CHECK(cudaDeviceGetAttribute(&net->sms, cudaDevAttrMultiProcessorCount, 0));
    CUDA_CHECK(cudaMalloc((void **)&net->d_split, sizeof(float) * fused_workspace_floats(net->sms)));
    CUDA_CHECK(cudaMalloc((void **)&net->d_tile_count, sizeof(int) * fused_counter_ints(net->sms)));
    CUDA_CHECK(cudaMemset(net->d_tile_count, 0, sizeof(int) * fused_counter_ints(net->sms)));
    int widest = 0;
    for (int l = 0; l <= net->n_layers; l++) widest = net->size[l] > widest ? net->size[l] : widest;
    dnn_scratch sc = {NULL, NULL, NULL, NULL, max_rows, widest};
    CUDA_CHECK(cudaMalloc((void **)&sc.row_loss, sizeof(float) * max_rows));
    CUDA_CHECK(cudaMalloc((void **)&sc.row_ok, sizeof(int) * max_rows));
    CUDA_CHECK(cudaMalloc((void **)&sc.part, sizeof(float) * dnn_scratch_part_floats(max_rows, widest)));
    CUDA_CHECK(cudaMalloc((void **)&sc.counters, sizeof(unsigned) * dnn_scratch_counters(widest)));
    CUDA_CHECK(cudaMemset(sc.counters, 0, sizeof(unsigned) * dnn_scratch_counters(widest)));
    net->scratch = sc;
    net->lt = net->path == DNN_PATH_LT ? lt_create(net) : NULL;
    CUDA_CHECK(cudaMalloc((void **)&net->d_pred, sizeof(int) * max_rows));
    CUDA_CHECK(cudaMalloc((void **)&net->d_labels, sizeof(int) * max_rows));
    CUDA_CHECK(cudaMalloc((void **)&net->d_prob, sizeof(float) * max_rows));
    CUDA_CHECK(cudaMalloc((void **)&net->d_nll, sizeof(float) * max_rows));
}

void net_free(network *net)
{
    CUBLAS_CHECK(cublasDestroy(net->h));
    CUDA_CHECK(cudaFree(net->d_workspace));
    CUDA_CHECK(cudaFree(net->d_params));
    CUDA_CHECK(cudaFree(net->d_grads));
    CUDA_CHECK(cudaFree(net->d_opt1));
    CUDA_CHECK(cudaFree(net->d_opt2));
    for (int l = 0; l <= net->n_layers; l++) {
        CUDA_CHECK(cudaFree(net->d_a[l]));
        CUDA_CHECK(cudaFree(net->d_d[l]));
    }
    CUDA_CHECK(cudaFree(net->d_split));
    CUDA_CHECK(cudaFree(net->d_tile_count));
    lt_destroy(net->lt);
    CUDA_CHECK(cudaFree(net->scratch.row_loss));
    CUDA_CHECK(cudaFree(net->scratch.row_ok));
    CUDA_CHECK(cudaFree(net->scratch.part));
    CUDA_CHECK(cudaFree(net->scratch.counters));
    CUDA_CHECK(cudaFree(net->d_pred));
    CUDA_CHECK(cudaFree(net->d_labels));
    CUDA_CHECK(cudaFree(net->d_prob));
    CUDA_CHECK(cudaFree(net->d_nll));
}

/* Weights from N(0, 2/in) for ReLU (He) or N(0, 1/in) for sigmoid (Xavier), biases 0. */
void init_params(const network *net, float *h, lb_rng *rng)
{
    memset(h, 0, sizeof(float) * net->n_params);
    for (int l = 0; l < net->n_layers; l++) {
        double sd = sqrt((net->act == ACT_RELU ? 2.0 : 1.0) / net->size[l]);
        float *w = h + net->w_off[l];
        for (size_t i = 0; i < (size_t)net->size[l] * net->size[l + 1]; i++) {
            /* Box-Muller: two uniforms in (0, 1] to one normal */
            double u1 = ((lb_rng_next(rng) >> 11) + 1.0) / 9007199254740992.0,
                   u2 = (lb_rng_next(rng) >> 11) / 9007199254740992.0;
            w[i] = (float)(sd * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        }
    }
}

/* Row-major C (M,N) = op(A) op(B), op(A) (M,K), op(B) (K,N). cuBLAS is column-major and sees
 * each row-major matrix as its transpose, so it computes C^T = op(B)^T op(A)^T: B first, M and N
 * swapped, the transpose flags unchanged, leading dimensions = the stored rows' lengths. */
cublasStatus_t gemm_rm(cublasHandle_t h, int trans_a, int trans_b, int M, int N, int K, const float *A, const float *Bm,
                       float *C)
{
    const float one = 1.0f, zero = 0.0f;
    int lda = trans_a ? M : K, ldb = trans_b ? K : N;
    return cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &one, Bm,
                       ldb, A, lda, &zero, C, N);
}

/* ---------------------------------------------------------------- the fused path */

/* Where the fused products go: launched on s, or, with a list, collected (to time each alone). */
typedef struct {
    fused_gemm *list;
    int n, max;
} gemm_sink;

/* One fused product, planned for its shape (dnn_fused_kernels.cu). */
void fused_gemm_run(network *net, const fused_gemm *p, cudaStream_t s)
{
    CUDA_CHECK(fused_gemm_launch(p, fused_plan_for(p->M, p->N, p->K, net->sms), net->d_split, net->d_tile_count, s));
}

static void emit(network *net, const fused_gemm *p, cudaStream_t s, gemm_sink *sink)
{
    if (!sink)
        fused_gemm_run(net, p, s);
    else if (sink->n < sink->max)
        sink->list[sink->n++] = *p;
}

/* Z = [A, 1] [W; b] and the activation in one kernel per layer. x: the input rows, gathered through
 * perm from the state's cursor when perm is given (training: the first GEMM also keeps the rows
 * it gathered in d_a[0], for the dW GEMM), else d_a[0] itself (evaluation). */
static void forward_fused(network *net, int rows, const float *x, const int *perm, const step_state *state,
                          cudaStream_t s, gemm_sink *sink)
{
    int L = net->n_layers;
    for (int l = 0; l < L; l++) {
        fused_gemm p = {0};
        p.M = rows, p.N = net->size[l + 1], p.K = net->size[l] + 1; /* + 1: the bias row */
        p.A = l ? net->d_a[l] : x, p.lda = net->size[l], p.a_ones = 1, p.a_perm = l ? NULL : perm;
        p.a_copy = l == 0 && perm ? net->d_a[0] : NULL;
        p.B = net_w(net, net->d_params, l), p.ldb = net->size[l + 1]; /* W, and b right after it */
        p.C = net->d_a[l + 1], p.ldc = net->size[l + 1];
        p.epilogue = l < L - 1 ? FUSED_ACT : FUSED_STORE, p.act = net->act, p.state = state, p.tf32 = net->tf32;
        emit(net, &p, s, sink);
    }
}

/* Given dZ of the last layer in d_d[L]: dZ of every hidden layer (dX GEMM and act' in one kernel),
 * then every layer's [dW; db] = [A, 1]^T dZ, into d_grads (update 0) or straight into the
 * optimizer's update of [W; b] (update 1). The dX products read W before any update changes it. */
static void backward_fused(trainer *t, int rows, int update, cudaStream_t s, gemm_sink *sink)
{
    network *net = t->net;
    int L = net->n_layers;
    for (int l = L - 1; l >= 1; l--) {
        fused_gemm p = {0};
        p.M = rows, p.N = net->size[l], p.K = net->size[l + 1];
        p.A = net->d_d[l + 1], p.lda = net->size[l + 1];
        p.B = net_w(net, net->d_params, l), p.ldb = net->size[l + 1], p.b_trans = 1; /* W^T */
        p.C = net->d_d[l], p.ldc = net->size[l];
        p.epilogue = FUSED_ACT_GRAD, p.act = net->act, p.act_out = net->d_a[l], p.tf32 = net->tf32;
        emit(net, &p, s, sink);
    }
    for (int l = L - 1; l >= 0; l--) {
        fused_gemm p = {0};
        p.M = net->size[l] + 1, p.N = net->size[l + 1], p.K = rows;
        p.A = net->d_a[l], p.lda = net->size[l], p.a_trans = 1, p.a_ones = 1; /* [A, 1]^T */
        p.B = net->d_d[l + 1], p.ldb = net->size[l + 1];
        p.C = net_w(net, update ? net->d_params : net->d_grads, l), p.ldc = net->size[l + 1];
        p.epilogue = !update ? FUSED_STORE : t->adam ? FUSED_ADAM : FUSED_SGD;
        p.opt1 = net_w(net, net->d_opt1, l), p.opt2 = net_w(net, net->d_opt2, l);
        p.mu = t->momentum, p.wd = t->weight_decay, p.state = t->d_state, p.tf32 = net->tf32;
        emit(net, &p, s, sink);
    }
}

/* ---------------------------------------------------------------- the cuBLAS path */

/* The step's three GEMMs of layer l, the one place they are written (the benchmark times them
 * too): Z = X W into d_a[l + 1], dW = X^T dZ into the gradients, dX = dZ W^T into d_d[l]. */
void gemm_forward(network *net, int l, int rows)
{
    CUBLAS_CHECK(gemm_rm(net->h, 0, 0, rows, net->size[l + 1], net->size[l], net->d_a[l], net_w(net, net->d_params, l),
                         net->d_a[l + 1]));
}
void gemm_weight_grad(network *net, int l, int rows)
{
    CUBLAS_CHECK(gemm_rm(net->h, 1, 0, net->size[l], net->size[l + 1], rows, net->d_a[l], net->d_d[l + 1],
                         net_w(net, net->d_grads, l)));
}
void gemm_input_grad(network *net, int l, int rows)
{
    CUBLAS_CHECK(gemm_rm(net->h, 0, 1, rows, net->size[l], net->size[l + 1], net->d_d[l + 1],
                         net_w(net, net->d_params, l), net->d_d[l]));
}

/* forward through every layer for `rows` rows in d_a[0]; the last layer's logits stay without
 * bias (the loss and predict kernels add it) */
static void forward_cublas(network *net, int rows, cudaStream_t s)
{
    for (int l = 0; l < net->n_layers; l++) {
        gemm_forward(net, l, rows);
        if (l < net->n_layers - 1)
            CUDA_CHECK(
                bias_act_launch(net->d_a[l + 1], net_b(net, net->d_params, l), rows, net->size[l + 1], net->act, s));
    }
}

const float *forward(network *net, int rows, cudaStream_t s)
{
    if (net->path == DNN_PATH_FUSED) {
        forward_fused(net, rows, net->d_a[0], NULL, NULL, s, NULL);
        return NULL;
    }
    forward_cublas(net, rows, s); /* the cuBLASLt path evaluates this way too: its plans are for the batch */
    return net_b(net, net->d_params, net->n_layers - 1);
}

/* gradients of the mean loss over `rows` rows, given dZ of the last layer in d_d[L] */
void backward(network *net, int rows, cudaStream_t s)
{
    for (int l = net->n_layers - 1; l >= 0; l--) {
        gemm_weight_grad(net, l, rows); /* dW = X^T dZ */
        if (l == 0) break;              /* no gradient for the input itself */
        /* dX = dZ W^T, then through the previous layer's activation (with its bias sums) */
        gemm_input_grad(net, l, rows);
        CUDA_CHECK(act_backward_launch(net->d_d[l], net->d_a[l], rows, net->size[l], net->act,
                                       net_b(net, net->d_grads, l - 1), net->scratch, s));
    }
}

/* ---------------------------------------------------------------- training */

void trainer_create(trainer *t, network *net, int rows, const dataset *train, int adam, float momentum,
                    float weight_decay)
{
    size_t n = (size_t)train->n, F = (size_t)train->features;
    trainer z = {net, rows, NULL, NULL, NULL, NULL, NULL, adam, momentum, weight_decay};
    *t = z;
    CUDA_CHECK(lb_malloc_guarded((void **)&t->d_x, sizeof(float) * n * F)); /* NaN past the end */
    CUDA_CHECK(cudaMalloc((void **)&t->d_y, sizeof(int) * n));
    CUDA_CHECK(cudaMalloc((void **)&t->d_perm, sizeof(int) * n));
    /* the batch's labels for up to max_rows rows: gradcheck takes more rows than a batch */
    CUDA_CHECK(cudaMalloc((void **)&t->d_yb, sizeof(int) * (size_t)net->max_rows));
    CUDA_CHECK(cudaMalloc((void **)&t->d_state, sizeof(step_state)));
    CUDA_CHECK(cudaMemset(t->d_state, 0, sizeof(step_state)));
    CUDA_CHECK(cudaMemcpy(t->d_x, train->x, sizeof(float) * n * F, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(t->d_y, train->y, sizeof(int) * n, cudaMemcpyHostToDevice));
    if (net->lt) lt_prepare(net, rows); /* the batch's plans now: the step may be captured in a graph */
}

void set_lr(trainer *t, float lr, cudaStream_t s)
{
    /* from pageable memory: the call returns once lr has been copied, so a local will do */
    CUDA_CHECK(cudaMemcpyAsync(&t->d_state->lr, &lr, sizeof lr, cudaMemcpyHostToDevice, s));
}

void trainer_free(trainer *t)
{
    CUDA_CHECK(cudaFree(t->d_x));
    CUDA_CHECK(cudaFree(t->d_y));
    CUDA_CHECK(cudaFree(t->d_perm));
    CUDA_CHECK(cudaFree(t->d_yb));
    CUDA_CHECK(cudaFree(t->d_state));
}

/* the optimizer over every parameter, from the gradients in d_grads */
static void apply_optimizer(trainer *t, cudaStream_t s)
{
    network *net = t->net;
    if (t->adam)
        CUDA_CHECK(adam_launch(net->d_params, net->d_grads, net->d_opt1, net->d_opt2, net->n_params, t->weight_decay,
                               t->d_state, s));
    else
        CUDA_CHECK(sgd_momentum_launch(net->d_params, net->d_grads, net->d_opt1, net->n_params, t->momentum,
                                       t->weight_decay, t->d_state, s));
}

/* forward, loss and backward for `rows` rows of the permutation from the state's cursor: the
 * gradients of the mean loss in d_grads, no update (gradcheck stops here; a step goes on) */
static void step_cublas(trainer *t, int rows, int update, cudaStream_t s)
{
    network *net = t->net;
    int L = net->n_layers, C = net->size[L];
    CUDA_CHECK(gather_batch_launch(t->d_x, t->d_y, t->d_perm, t->d_state, rows, net->size[0], net->d_a[0], t->d_yb, s));
    forward_cublas(net, rows, s);
    CUDA_CHECK(softmax_xent_launch(net->d_a[L], net_b(net, net->d_params, L - 1), t->d_yb, NULL, rows, C, net->d_d[L],
                                   net_b(net, net->d_grads, L - 1), net->scratch, t->d_state, 1, s));
    backward(net, rows, s);
    if (update) apply_optimizer(t, s);
}

/* the same on cuBLASLt: the bias and ReLU inside the forward GEMMs (the logits come with their
 * bias), ReLU' and the hidden layers' bias sums inside the dX GEMMs */
static void step_lt(trainer *t, int rows, int update, cudaStream_t s)
{
    network *net = t->net;
    int L = net->n_layers, C = net->size[L];
    CUDA_CHECK(gather_batch_launch(t->d_x, t->d_y, t->d_perm, t->d_state, rows, net->size[0], net->d_a[0], t->d_yb, s));
    lt_forward(net, rows, s);
    CUDA_CHECK(softmax_xent_launch(net->d_a[L], NULL, t->d_yb, NULL, rows, C, net->d_d[L],
                                   net_b(net, net->d_grads, L - 1), net->scratch, t->d_state, 1, s));
    lt_backward(net, rows, s);
    if (update) apply_optimizer(t, s);
}

/* the same on the fused path: the batch read through the permutation by the first GEMM, the
 * bias inside the GEMMs, the update inside the gradient GEMMs (no gather, bias, activation or
 * optimizer kernels); the loss kernel takes the labels through the permutation too, and ends
 * the step's use of the cursor (it moves it on) */
static void step_fused(trainer *t, int rows, int update, cudaStream_t s)
{
    network *net = t->net;
    int L = net->n_layers;
    forward_fused(net, rows, t->d_x, t->d_perm, t->d_state, s, NULL);
    CUDA_CHECK(softmax_xent_launch(net->d_a[L], NULL, t->d_y, t->d_perm, rows, net->size[L], net->d_d[L], NULL,
                                   net->scratch, t->d_state, 1, s));
    backward_fused(t, rows, update, s, NULL);
}

int fused_step_gemms(trainer *t, fused_gemm *list, int max)
{
    gemm_sink sink = {list, 0, max};
    forward_fused(t->net, t->rows, t->d_x, t->d_perm, t->d_state, 0, &sink);
    backward_fused(t, t->rows, 1, 0, &sink);
    return sink.n;
}

static void step(trainer *t, int rows, int update, cudaStream_t s)
{
    if (t->net->path == DNN_PATH_FUSED)
        step_fused(t, rows, update, s);
    else if (t->net->path == DNN_PATH_LT)
        step_lt(t, rows, update, s);
    else
        step_cublas(t, rows, update, s);
}

void loss_and_grads(trainer *t, int rows, cudaStream_t s) { step(t, rows, 0, s); }

void train_step(trainer *t, cudaStream_t s) { step(t, t->rows, 1, s); }

cudaGraphExec_t capture_step(trainer *t, cudaStream_t s)
{
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    train_step(t, s);
    CUDA_CHECK(cudaStreamEndCapture(s, &g));
    CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    return exec;
}
