/* dnn_net.c - the network of ch09 (see dnn_net.h): parameters, forward and backward passes on
 * cuBLAS and dnn_kernels.cu, the training step, evaluation, the gradient check and the
 * weights file. */
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
    CUDA_CHECK(cudaMalloc((void **)&net->d_params, sizeof(float) * net->n_params));
    CUDA_CHECK(cudaMalloc((void **)&net->d_grads, sizeof(float) * net->n_params));
    CUDA_CHECK(cudaMalloc((void **)&net->d_opt1, sizeof(float) * net->n_params));
    CUDA_CHECK(cudaMalloc((void **)&net->d_opt2, sizeof(float) * net->n_params));
    CUDA_CHECK(cudaMemset(net->d_opt1, 0, sizeof(float) * net->n_params));
    CUDA_CHECK(cudaMemset(net->d_opt2, 0, sizeof(float) * net->n_params));
    for (int l = 0; l <= net->n_layers; l++) {
        CUDA_CHECK(cudaMalloc((void **)&net->d_a[l], sizeof(float) * (size_t)max_rows * net->size[l]));
        CUDA_CHECK(cudaMalloc((void **)&net->d_d[l], sizeof(float) * (size_t)max_rows * net->size[l]));
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

/* forward through every layer for `rows` rows in d_a[0]; the last layer's logits stay without
 * bias (the loss and predict kernels add it) */
static void forward_cublas(network *net, int rows, cudaStream_t s)
{
    for (int l = 0; l < net->n_layers; l++) {
        CUBLAS_CHECK(gemm_rm(net->h, 0, 0, rows, net->size[l + 1], net->size[l], net->d_a[l],
                             net_w(net, net->d_params, l), net->d_a[l + 1]));
        if (l < net->n_layers - 1)
            CUDA_CHECK(
                bias_act_launch(net->d_a[l + 1], net_b(net, net->d_params, l), rows, net->size[l + 1], net->act, s));
    }
}

const float *forward(network *net, int rows, cudaStream_t s)
{
    if (net->fused) {
        forward_fused(net, rows, net->d_a[0], NULL, NULL, s, NULL);
        return NULL;
    }
    forward_cublas(net, rows, s);
    return net_b(net, net->d_params, net->n_layers - 1);
}

/* gradients of the mean loss over `rows` rows, given dZ of the last layer in d_d[L] */
void backward(network *net, int rows, cudaStream_t s)
{
    for (int l = net->n_layers - 1; l >= 0; l--) {
        /* dW = X^T dZ */
        CUBLAS_CHECK(gemm_rm(net->h, 1, 0, net->size[l], net->size[l + 1], rows, net->d_a[l], net->d_d[l + 1],
                             net_w(net, net->d_grads, l)));
        if (l == 0) break; /* no gradient for the input itself */
        /* dX = dZ W^T, then through the previous layer's activation (with its bias sums) */
        CUBLAS_CHECK(gemm_rm(net->h, 0, 1, rows, net->size[l], net->size[l + 1], net->d_d[l + 1],
                             net_w(net, net->d_params, l), net->d_d[l]));
        CUDA_CHECK(act_backward_launch(net->d_d[l], net->d_a[l], rows, net->size[l], net->act,
                                       net_b(net, net->d_grads, l - 1), s));
    }
}

/* ---------------------------------------------------------------- training */

void trainer_create(trainer *t, network *net, int rows, const dataset *train, int adam, float momentum,
                    float weight_decay)
{
    size_t n = (size_t)train->n, F = (size_t)train->features;
    trainer z = {net, rows, NULL, NULL, NULL, NULL, NULL, adam, momentum, weight_decay};
    *t = z;
    CUDA_CHECK(cudaMalloc((void **)&t->d_x, sizeof(float) * n * F));
    CUDA_CHECK(cudaMalloc((void **)&t->d_y, sizeof(int) * n));
    CUDA_CHECK(cudaMalloc((void **)&t->d_perm, sizeof(int) * n));
    CUDA_CHECK(cudaMalloc((void **)&t->d_yb, sizeof(int) * (size_t)rows));
    CUDA_CHECK(cudaMalloc((void **)&t->d_state, sizeof(step_state)));
    CUDA_CHECK(cudaMemset(t->d_state, 0, sizeof(step_state)));
    CUDA_CHECK(cudaMemcpy(t->d_x, train->x, sizeof(float) * n * F, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(t->d_y, train->y, sizeof(int) * n, cudaMemcpyHostToDevice));
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

/* forward, loss and backward for `rows` rows of the permutation from the state's cursor: the
 * gradients of the mean loss in d_grads, no update (gradcheck stops here; a step goes on) */
static void step_cublas(trainer *t, int rows, int update, cudaStream_t s)
{
    network *net = t->net;
    int L = net->n_layers, C = net->size[L];
    CUDA_CHECK(gather_batch_launch(t->d_x, t->d_y, t->d_perm, t->d_state, rows, net->size[0], net->d_a[0], t->d_yb, s));
    forward_cublas(net, rows, s);
    CUDA_CHECK(softmax_xent_launch(net->d_a[L], net_b(net, net->d_params, L - 1), t->d_yb, NULL, rows, C, net->d_d[L],
                                   net_b(net, net->d_grads, L - 1), t->d_state, 1, s));
    backward(net, rows, s);
    if (!update) return;
    if (t->adam)
        CUDA_CHECK(adam_launch(net->d_params, net->d_grads, net->d_opt1, net->d_opt2, net->n_params, t->weight_decay,
                               t->d_state, s));
    else
        CUDA_CHECK(sgd_momentum_launch(net->d_params, net->d_grads, net->d_opt1, net->n_params, t->momentum,
                                       t->weight_decay, t->d_state, s));
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
                                   t->d_state, 1, s));
    backward_fused(t, rows, update, s, NULL);
}

int fused_step_gemms(trainer *t, fused_gemm *list, int max)
{
    gemm_sink sink = {list, 0, max};
    forward_fused(t->net, t->rows, t->d_x, t->d_perm, t->d_state, 0, &sink);
    backward_fused(t, t->rows, 1, 0, &sink);
    return sink.n;
}

void loss_and_grads(trainer *t, int rows, cudaStream_t s)
{
    if (t->net->fused)
        step_fused(t, rows, 0, s);
    else
        step_cublas(t, rows, 0, s);
}

void train_step(trainer *t, cudaStream_t s)
{
    if (t->net->fused)
        step_fused(t, t->rows, 1, s);
    else
        step_cublas(t, t->rows, 1, s);
}

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

/* ================================================================ evaluation */

/* Every row of d (on the host) through the network, in chunks of max_rows: predictions and
 * their probabilities (pred, prob: may be NULL) and, when d has labels, the summed loss. */
static double run_set(network *net, const dataset *d, int *pred, float *prob, cudaStream_t s)
{
    int L = net->n_layers, has_labels = d->n > 0 && d->y[0] >= 0; /* --predict rows may have none */
    float *nll = has_labels ? lb_host_alloc(sizeof(float) * net->max_rows, "losses") : NULL;
    double loss = 0.0;
    for (int r0 = 0; r0 < d->n; r0 += net->max_rows) {
        int rows = d->n - r0 < net->max_rows ? d->n - r0 : net->max_rows;
        CUDA_CHECK(cudaMemcpyAsync(net->d_a[0], d->x + (size_t)r0 * d->features, sizeof(float) * rows * d->features,
                                   cudaMemcpyHostToDevice, s));
        if (has_labels)
            CUDA_CHECK(cudaMemcpyAsync(net->d_labels, d->y + r0, sizeof(int) * rows, cudaMemcpyHostToDevice, s));
        const float *bias = forward(net, rows, s);
        CUDA_CHECK(predict_launch(net->d_a[L], bias, has_labels ? net->d_labels : NULL, rows, net->size[L], net->d_pred,
                                  net->d_prob, net->d_nll, s));
        if (pred) CUDA_CHECK(cudaMemcpyAsync(pred + r0, net->d_pred, sizeof(int) * rows, cudaMemcpyDeviceToHost, s));
        if (prob) CUDA_CHECK(cudaMemcpyAsync(prob + r0, net->d_prob, sizeof(float) * rows, cudaMemcpyDeviceToHost, s));
        if (has_labels) {
            CUDA_CHECK(cudaMemcpyAsync(nll, net->d_nll, sizeof(float) * rows, cudaMemcpyDeviceToHost, s));
            CUDA_CHECK(cudaStreamSynchronize(s));
            for (int i = 0; i < rows; i++) loss += nll[i];
        }
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    free(nll);
    return loss;
}

void predict_set(network *net, const dataset *d, int *pred, float *prob, cudaStream_t s)
{
    run_set(net, d, pred, prob, s);
}

static double accuracy_and_loss(network *net, const dataset *d, int *confusion, double *loss, cudaStream_t s)
{
    if (loss) *loss = 0.0;
    if (d->n == 0) return 0.0;
    int *pred = lb_host_alloc(sizeof(int) * d->n, "predictions");
    double sum = run_set(net, d, pred, NULL, s);
    if (loss) *loss = sum / d->n;
    int ok = 0;
    for (int i = 0; i < d->n; i++) {
        ok += pred[i] == d->y[i];
        if (confusion) confusion[d->y[i] * d->classes + pred[i]]++;
    }
    free(pred);
    return (double)ok / d->n;
}

double accuracy(network *net, const dataset *d, int *confusion, cudaStream_t s)
{
    return accuracy_and_loss(net, d, confusion, NULL, s);
}

void evaluate(network *net, const dataset *d, double *acc, double *loss, cudaStream_t s)
{
    *acc = accuracy_and_loss(net, d, NULL, loss, s);
}

/* ================================================================ gradient check */

/* The mean cross-entropy of the network on rows x (n of them), in double on the CPU: the
 * oracle for the finite differences. */
double loss_cpu(const network *net, const float *params, const float *x, const int *y, int n)
{
    int L = net->n_layers, widest = 0;
    for (int l = 0; l <= L; l++) widest = net->size[l] > widest ? net->size[l] : widest;
    double *cur = malloc(sizeof(double) * widest), *nxt = malloc(sizeof(double) * widest), total = 0.0;
    for (int r = 0; r < n; r++) {
        for (int j = 0; j < net->size[0]; j++) cur[j] = x[(size_t)r * net->size[0] + j];
        for (int l = 0; l < L; l++) {
            const float *w = params + net->w_off[l], *b = params + net->b_off[l];
            int in = net->size[l], out = net->size[l + 1];
            for (int o = 0; o < out; o++) {
                double z = b[o];
                for (int i = 0; i < in; i++) z += cur[i] * w[(size_t)i * out + o];
                nxt[o] = l == L - 1 ? z : net->act == ACT_RELU ? (z > 0 ? z : 0) : 1.0 / (1.0 + exp(-z));
            }
            double *t = cur;
            cur = nxt;
            nxt = t;
        }
        double mx = cur[0], sum = 0.0;
        for (int c = 1; c < net->size[L]; c++) mx = cur[c] > mx ? cur[c] : mx;
        for (int c = 0; c < net->size[L]; c++) sum += exp(cur[c] - mx);
        total += log(sum) - (cur[y[r]] - mx);
    }
    free(cur);
    free(nxt);
    return total / n;
}

/* One parameter's analytic gradient against the central difference (L(p + h) - L(p - h)) / 2h
 * of the CPU's double-precision loss; returns the relative error. */
static double check_one(const network *net, float *params, const float *grads, size_t i, const dataset *train, int rows,
                        int quiet, int *n_reported)
{
    float p = params[i];
    /* h small enough that no ReLU input crosses 0 (h = 1e-3 did, at a few parameters in
     * 400: the difference quotient then straddles the kink), large enough that the double
     * loss's rounding (1e-16) stays far below h times the gradient */
    double h = 1e-5 * (fabs(p) > 1.0 ? fabs(p) : 1.0);
    /* perturb in float, as the network stores it; use the step actually taken */
    params[i] = (float)(p + h);
    double hp = (double)params[i] - p, lp = loss_cpu(net, params, train->x, train->y, rows);
    params[i] = (float)(p - h);
    double hm = p - (double)params[i], lm = loss_cpu(net, params, train->x, train->y, rows);
    params[i] = p;
    double fd = (lp - lm) / (hp + hm), an = grads[i];
    /* relative error, with a floor: a gradient of 1e-9 against 3e-9 is agreement */
    double rel = fabs(an - fd) / fmax(fabs(an) + fabs(fd), 1e-4);
    if (!quiet && !(rel <= 1e-3) && (*n_reported)++ < 5)
        fprintf(stderr, "  parameter %zu: analytic %.6g, finite difference %.6g\n", i, an, fd);
    return rel;
}

/* Compare analytic gradients with finite differences, in every layer's weights and biases
 * separately: all of a block's parameters when it has at most GRADCHECK_PER_BLOCK, else that
 * many chosen at random (a fixed stride could keep to even units, or to one row's columns,
 * and never see a bug in the others). */
#define GRADCHECK_PER_BLOCK 1000
double gradcheck(trainer *t, const dataset *train, int rows, cudaStream_t s, int quiet)
{
    network *net = t->net;
    int *perm = lb_host_alloc(sizeof(int) * rows, "the batch");
    for (int i = 0; i < rows; i++) perm[i] = i;
    CUDA_CHECK(cudaMemcpy(t->d_perm, perm, sizeof(int) * rows, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(t->d_state, 0, sizeof(step_state)));
    loss_and_grads(t, rows, s); /* forward, loss and backward only: no update */
    float *params = lb_host_alloc(sizeof(float) * net->n_params, "parameters");
    float *grads = lb_host_alloc(sizeof(float) * net->n_params, "gradients");
    CUDA_CHECK(cudaMemcpyAsync(params, net->d_params, sizeof(float) * net->n_params, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(grads, net->d_grads, sizeof(float) * net->n_params, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));

    size_t checked = 0;
    double worst = 0.0;
    int reported = 0; /* mismatches printed: the first 5 */
    lb_rng pick;
    lb_rng_seed(&pick, 12345);
    for (int l = 0; l < net->n_layers; l++) {
        for (int part = 0; part < 2; part++) { /* W, then b */
            size_t first = part ? net->b_off[l] : net->w_off[l],
                   count = part ? (size_t)net->size[l + 1] : (size_t)net->size[l] * net->size[l + 1];
            size_t n_checks = count <= GRADCHECK_PER_BLOCK ? count : GRADCHECK_PER_BLOCK;
            for (size_t k = 0; k < n_checks; k++) {
                size_t i = first + (count <= GRADCHECK_PER_BLOCK ? k : (size_t)(lb_rng_next(&pick) % count));
                double rel = check_one(net, params, grads, i, train, rows, quiet, &reported);
                if (!(rel <= worst)) worst = rel; /* NaN sticks */
                checked++;
            }
        }
    }
    if (!quiet)
        printf("gradcheck: %zu of %zu parameters (every layer's W and b: all, or %d at random) on %d samples, max "
               "relative error %.2e (finite differences of the CPU's double-precision loss, h = 1e-5)\n",
               checked, net->n_params, GRADCHECK_PER_BLOCK, rows, worst);
    free(perm);
    free(params);
    free(grads);
    return worst;
}

/* ================================================================ save and load */

/* File layout (little-endian, as written by this host), version 2:
 *   8 bytes   "LBDNN\0\0\2"
 *   uint32    number of sizes (weight layers + 1), then uint32 activation (0 ReLU, 1 sigmoid)
 *   uint32    the sizes, features first, classes last
 *   float32   features means, then features standard deviations (the z-score to apply)
 *   for each class: uint32 length, then that many bytes of its name (no terminating 0)
 *   float32   the parameters: for each layer W (in x out, row-major), then b (out)
 * So the file alone is enough to classify new rows (--load w.bin --predict rows.csv). */
static const char MAGIC[8] = {'L', 'B', 'D', 'N', 'N', 0, 0, 2};
#define DNN_MAX_NAME 255 /* bytes of one class name in the file */

static int write_names(FILE *f, char *const *names, int n)
{
    for (int c = 0; c < n; c++) {
        size_t len = strlen(names[c]);
        uint32_t l = (uint32_t)(len > DNN_MAX_NAME ? DNN_MAX_NAME : len);
        if (fwrite(&l, 4, 1, f) != 1 || fwrite(names[c], 1, l, f) != l) return -1;
    }
    return 0;
}

/* n names into a malloc'd array of malloc'd strings; NULL if the file ends early or a length is bad */
static char **read_names(FILE *f, int n)
{
    char **names = calloc((size_t)n, sizeof(char *));
    for (int c = 0; names && c < n; c++) {
        uint32_t l;
        if (fread(&l, 4, 1, f) != 1 || l < 1 || l > DNN_MAX_NAME || !(names[c] = calloc(l + 1, 1)) ||
            fread(names[c], 1, l, f) != l) {
            free_names(names, n);
            return NULL;
        }
    }
    return names;
}

void free_names(char **names, int n)
{
    if (!names) return;
    for (int c = 0; c < n; c++) free(names[c]);
    free(names);
}

int save_weights(const char *path, const network *net, const float *mean, const float *sd, char *const *class_names,
                 char *err, size_t len)
{
    float *p = lb_host_alloc(sizeof(float) * net->n_params, "parameters");
    CUDA_CHECK(cudaMemcpy(p, net->d_params, sizeof(float) * net->n_params, cudaMemcpyDeviceToHost));
    FILE *f = fopen(path, "wb");
    int ok = f != NULL;
    if (ok) {
        uint32_t hdr[2 + DNN_MAX_LAYERS + 1] = {(uint32_t)net->n_layers + 1, (uint32_t)net->act};
        for (int l = 0; l <= net->n_layers; l++) hdr[2 + l] = (uint32_t)net->size[l];
        ok = fwrite(MAGIC, 1, 8, f) == 8 && fwrite(hdr, 4, (size_t)net->n_layers + 3, f) == (size_t)net->n_layers + 3 &&
             fwrite(mean, 4, (size_t)net->size[0], f) == (size_t)net->size[0] &&
             fwrite(sd, 4, (size_t)net->size[0], f) == (size_t)net->size[0] &&
             write_names(f, class_names, net->size[net->n_layers]) == 0 &&
             fwrite(p, 4, net->n_params, f) == net->n_params;
        ok = (fclose(f) == 0) && ok;
    }
    if (!ok) snprintf(err, len, "%s: cannot write: %s", path, strerror(errno));
    free(p);
    return ok ? 0 : -1;
}

/* Read a weights file: shape into net (sizes, act), normalization, class names, parameters
 * (host, malloc'd). */
float *load_weights(const char *path, network *net, float **mean, float **sd, char ***class_names, char *err,
                    size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, len, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char magic[8];
    uint32_t n_sizes = 0, act = 0, sizes[DNN_MAX_LAYERS + 1];
    int n_classes = 0;
    float *p = NULL;
    *mean = *sd = NULL;
    *class_names = NULL;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, MAGIC, 7)) {
        snprintf(err, len, "%s: not a weights file of this program (bad magic number)", path);
    } else if (magic[7] != MAGIC[7]) {
        snprintf(err, len, "%s: a weights file of version %d; this program reads version %d (train and --save again)",
                 path, magic[7], MAGIC[7]);
    } else if (fread(&n_sizes, 4, 1, f) != 1 || fread(&act, 4, 1, f) != 1 || n_sizes < 2 ||
               n_sizes > DNN_MAX_LAYERS + 1 || act > 1 || fread(sizes, 4, n_sizes, f) != n_sizes) {
        snprintf(err, len, "%s: bad header (layer count or activation out of range, or truncated)", path);
    } else {
        int bad = 0;
        for (uint32_t l = 0; l < n_sizes; l++) bad |= sizes[l] < 1 || sizes[l] > 65536;
        if (bad || sizes[n_sizes - 1] > DNN_MAX_CLASSES) {
            snprintf(err, len, "%s: bad header (a layer size out of range)", path);
        } else {
            net->n_layers = (int)n_sizes - 1;
            net->act = (int)act;
            for (uint32_t l = 0; l < n_sizes; l++) net->size[l] = (int)sizes[l];
            layout(net);
            n_classes = net->size[net->n_layers];
            *mean = malloc(sizeof(float) * sizes[0]);
            *sd = malloc(sizeof(float) * sizes[0]);
            p = malloc(sizeof(float) * net->n_params);
            if (!*mean || !*sd || !p || fread(*mean, 4, sizes[0], f) != sizes[0] ||
                fread(*sd, 4, sizes[0], f) != sizes[0] || !(*class_names = read_names(f, n_classes)) ||
                fread(p, 4, net->n_params, f) != net->n_params || fgetc(f) != EOF) {
                snprintf(err, len, "%s: size does not match its header (truncated or trailing bytes)", path);
                free(p);
                p = NULL;
            }
        }
    }
    fclose(f);
    if (!p) {
        free(*mean);
        free(*sd);
        free_names(*class_names, n_classes);
        *mean = *sd = NULL;
        *class_names = NULL;
    }
    return p;
}

/* ================================================================ shape */

/* "4,16,16,3" into net->size; returns the layer count or -1 */
int parse_layers(const char *s, network *net)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 65536 || n > DNN_MAX_LAYERS) return -1;
        net->size[n++] = (int)v;
        if (*end == ',')
            p = end + 1;
        else if (*end == 0)
            p = end;
        else
            return -1;
    }
    return n >= 2 ? n - 1 : -1;
}
