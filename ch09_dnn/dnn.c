/* dnn.c - a small dense neural network built on cuBLAS, trained with backpropagation.
 *
 *   data: a CSV in the datasets/ layout (default ../datasets/iris.csv); a seeded shuffle splits
 *         it 2/3 : 1/3 into training and test sets, z-scored with the training set's statistics
 *   net:  --layers F,H1,...,C (default per data set: F,16,16,C for few features, else F,2F,C),
 *         dense layers (X W + b) with ReLU (--act sigmoid for the book's), and a softmax
 *         cross-entropy loss; row-major: X is (batch, in), W is (in, out), b is (out)
 *   step: gather the batch, forward (GEMM, bias+activation), loss, backward (GEMMs, fused
 *         activation gradient and bias sums), one optimizer update over every parameter:
 *         SGD with momentum (default) or Adam (--adam); captured once as a CUDA graph and
 *         replayed every step
 *   build: make ch09      run: ./dnn [--data FILE] [--layers ...] [--epochs E] [--batch B] [--lr R]
 *          ./dnn --gradcheck           analytic gradients against finite differences (the book's method)
 *          ./dnn --synthetic 784,1024,10 --batch 128    time a training step (benchmark)
 *          ./dnn --save w.bin, ./dnn --load w.bin --predict rows.csv
 *
 * The backward pass, for a layer Z = X W + b, A = act(Z), given dA = dLoss/dA:
 *   dZ = dA * act'(Z)        (act_backward_kernel; ReLU: 1 where A > 0; sigmoid: A (1 - A))
 *   dW = X^T dZ              (GEMM, transposed first operand)
 *   db = column sums of dZ   (same kernel as dZ)
 *   dX = dZ W^T              (GEMM, transposed second operand): the previous layer's dA
 * and for the loss, mean cross-entropy of softmax(Z): dZ = (softmax(Z) - onehot(y)) / batch.
 */
#define _POSIX_C_SOURCE 200809L
#include <cublas_v2.h>
#include "labbook.h"
#include "dnn_kernels.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define MAX_LAYERS 8            /* weight layers */
#define MAX_CLASSES 1024
#define EVAL_ROWS 4096          /* rows per forward pass when evaluating a whole set */

/* ================================================================ data */

typedef struct {
    int n, features, classes;
    float *x;            /* n x features */
    int *y;              /* n labels, -1 when the file has none (--predict) */
    char **class_names;  /* classes names from the header */
} dataset;

static void free_dataset(dataset *d)
{
    if (d->class_names)
        for (int c = 0; c < d->classes; c++) free(d->class_names[c]);
    free(d->class_names);
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof *d);
}

/* Split a line at commas in place; returns the number of fields (at most max). */
static int split_fields(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n < max) fields[n] = p;
        n++;
        char *comma = strchr(p, ',');
        if (!comma) break;
        *comma = 0;
        p = comma + 1;
    }
    return n;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r' || s[len - 1] == '\n')) s[--len] = 0;
    return s;
}

static int parse_float(const char *s, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) return -1;
    *out = (float)v;
    return 0;
}

/* Read "n_samples,n_features,class names..." then n_samples rows of n_features numbers and an
 * integer label in 0..classes-1. labels_optional: rows may also end without the label (y = -1).
 * Returns 0, or -1 with "file:line: reason" in err. */
static int load_csv(const char *path, dataset *d, int labels_optional, char *err, size_t err_len)
{
    memset(d, 0, sizeof *d);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL, **fields = NULL;
    size_t cap = 0;
    int lineno = 1, rc = -1;
    if (getline(&line, &cap, f) < 0) {
        snprintf(err, err_len, "%s: empty file (expected a header n_samples,n_features,class names...)", path);
        goto done;
    }
    {
        char *hdr[MAX_CLASSES + 2];
        int nh = split_fields(line, hdr, MAX_CLASSES + 2);
        float n_f, feat_f;
        if (nh < 3 || nh > MAX_CLASSES + 2 || parse_float(trim(hdr[0]), &n_f) || parse_float(trim(hdr[1]), &feat_f) ||
            n_f != floorf(n_f) || feat_f != floorf(feat_f) || n_f < 1 || feat_f < 1 || n_f > 1e8 || feat_f > 1e6) {
            snprintf(err, err_len, "%s:1: bad header (expected n_samples,n_features,class names..., with at least 1 sample, "
                     "1 feature and 1 class)", path);
            goto done;
        }
        d->n = (int)n_f, d->features = (int)feat_f, d->classes = nh - 2;
        d->class_names = calloc((size_t)d->classes, sizeof(char *));
        for (int c = 0; c < d->classes; c++) {
            char *name = trim(hdr[c + 2]);
            if (!*name) {
                snprintf(err, err_len, "%s:1: bad header: class name %d is empty", path, c + 1);
                goto done;
            }
            d->class_names[c] = strdup(name);
        }
    }
    d->x = malloc(sizeof(float) * (size_t)d->n * d->features);
    d->y = malloc(sizeof(int) * (size_t)d->n);
    fields = malloc(sizeof(char *) * ((size_t)d->features + 2));
    if (!d->x || !d->y || !fields) {
        snprintf(err, err_len, "%s: out of memory for %d x %d values", path, d->n, d->features);
        goto done;
    }
    for (int r = 0; r < d->n; r++) {
        lineno++;
        if (getline(&line, &cap, f) < 0) {
            snprintf(err, err_len, "%s:%d: the header promises %d samples, the file ends after %d", path, lineno, d->n, r);
            goto done;
        }
        int nf = split_fields(line, fields, d->features + 2);
        int labelled = nf == d->features + 1;
        if (!labelled && !(labels_optional && nf == d->features)) {
            snprintf(err, err_len, "%s:%d: %d fields, expected %d features and a label", path, lineno, nf, d->features);
            goto done;
        }
        for (int j = 0; j < d->features; j++)
            if (parse_float(trim(fields[j]), &d->x[(size_t)r * d->features + j])) {
                snprintf(err, err_len, "%s:%d: field %d ('%s') is not a number", path, lineno, j + 1, trim(fields[j]));
                goto done;
            }
        d->y[r] = -1;
        if (labelled) {
            float lab;
            char *s = trim(fields[d->features]);
            if (parse_float(s, &lab) || lab != floorf(lab) || lab < 0 || lab >= d->classes) {
                snprintf(err, err_len, "%s:%d: label '%s' is not a class number 0..%d", path, lineno, s, d->classes - 1);
                goto done;
            }
            d->y[r] = (int)lab;
        }
    }
    /* nothing but blank lines may follow */
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        if (*trim(line)) {
            snprintf(err, err_len, "%s:%d: more rows than the header's %d samples", path, lineno, d->n);
            goto done;
        }
    }
    rc = 0;
done:
    free(line);
    free(fields);
    fclose(f);
    if (rc) free_dataset(d);
    return rc;
}

/* A seeded Fisher-Yates shuffle of 0..n-1. */
static void shuffle(int *idx, int n, lb_rng *rng)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(lb_rng_next(rng) % (uint64_t)(i + 1));
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* rows idx[0..n) of src into a new set */
static dataset subset(const dataset *src, const int *idx, int n)
{
    dataset d = {n, src->features, src->classes, malloc(sizeof(float) * (size_t)(n ? n : 1) * src->features),
                 malloc(sizeof(int) * (size_t)(n ? n : 1)), NULL};
    if (!d.x || !d.y) lb_die(LB_EXIT_USAGE, "out of host memory");
    for (int i = 0; i < n; i++) {
        memcpy(d.x + (size_t)i * src->features, src->x + (size_t)idx[i] * src->features, sizeof(float) * src->features);
        d.y[i] = src->y[idx[i]];
    }
    return d;
}

/* z-score: mean and standard deviation of each feature over the training set (sd 0 -> 1) */
static void feature_stats(const dataset *d, float *mean, float *sd)
{
    for (int j = 0; j < d->features; j++) {
        double s = 0.0, s2 = 0.0;
        for (int i = 0; i < d->n; i++) {
            double v = d->x[(size_t)i * d->features + j];
            s += v;
            s2 += v * v;
        }
        double m = s / d->n, var = s2 / d->n - m * m;
        mean[j] = (float)m;
        sd[j] = var > 1e-12 ? (float)sqrt(var) : 1.0f;
    }
}

static void normalize(dataset *d, const float *mean, const float *sd)
{
    for (int i = 0; i < d->n; i++)
        for (int j = 0; j < d->features; j++) {
            float *v = &d->x[(size_t)i * d->features + j];
            *v = (*v - mean[j]) / sd[j];
        }
}

/* ================================================================ the network */

typedef struct {
    int n_layers;               /* weight layers */
    int size[MAX_LAYERS + 1];   /* size[0] features .. size[n_layers] classes */
    int act;
    size_t w_off[MAX_LAYERS], b_off[MAX_LAYERS], n_params;   /* offsets into one parameter buffer */
    float *d_params, *d_grads, *d_opt1, *d_opt2;             /* parameters, gradients, optimizer state */
    int max_rows;               /* rows the activation buffers hold */
    float *d_a[MAX_LAYERS + 1]; /* d_a[0] the input batch, d_a[l] layer l's output (logits for the last) */
    float *d_d[MAX_LAYERS + 1]; /* d_d[l]: dLoss/d(layer l's output), then dZ in place */
    cublasHandle_t h;
    void *d_workspace;
} network;

static void layout(network *net)
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

static float *W(const network *n, float *base, int l) { return base + n->w_off[l]; }
static float *B(const network *n, float *base, int l) { return base + n->b_off[l]; }

static void net_alloc(network *net, int max_rows)
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
    CUBLAS_CHECK(cublasSetMathMode(net->h, CUBLAS_PEDANTIC_MATH));   /* plain fp32: gradcheck compares to 1e-3 */
}

static void net_free(network *net)
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
}

/* Weights from N(0, 2/in) for ReLU (He) or N(0, 1/in) for sigmoid (Xavier), biases 0. */
static void init_params(const network *net, float *h, lb_rng *rng)
{
    memset(h, 0, sizeof(float) * net->n_params);
    for (int l = 0; l < net->n_layers; l++) {
        double sd = sqrt((net->act == ACT_RELU ? 2.0 : 1.0) / net->size[l]);
        float *w = h + net->w_off[l];
        for (size_t i = 0; i < (size_t)net->size[l] * net->size[l + 1]; i++) {
            /* Box-Muller: two uniforms in (0, 1] to one normal */
            double u1 = ((lb_rng_next(rng) >> 11) + 1.0) / 9007199254740992.0, u2 = (lb_rng_next(rng) >> 11) / 9007199254740992.0;
            w[i] = (float)(sd * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        }
    }
}

/* Row-major C (M,N) = op(A) op(B), op(A) (M,K), op(B) (K,N). cuBLAS is column-major and sees
 * each row-major matrix as its transpose, so it computes C^T = op(B)^T op(A)^T: B first, M and N
 * swapped, the transpose flags unchanged, leading dimensions = the stored rows' lengths. */
static cublasStatus_t gemm_rm(cublasHandle_t h, int trans_a, int trans_b, int M, int N, int K, const float *A,
                              const float *Bm, float *C)
{
    const float one = 1.0f, zero = 0.0f;
    int lda = trans_a ? M : K, ldb = trans_b ? K : N;
    return cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &one, Bm,
                       ldb, A, lda, &zero, C, N);
}

/* forward through every layer for `rows` rows in d_a[0]; the last layer's logits stay without
 * bias (the loss and predict kernels add it) */
static void forward(network *net, int rows, cudaStream_t s)
{
    for (int l = 0; l < net->n_layers; l++) {
        CUBLAS_CHECK(gemm_rm(net->h, 0, 0, rows, net->size[l + 1], net->size[l], net->d_a[l], W(net, net->d_params, l),
                             net->d_a[l + 1]));
        if (l < net->n_layers - 1)
            CUDA_CHECK(bias_act_launch(net->d_a[l + 1], B(net, net->d_params, l), rows, net->size[l + 1], net->act, s));
    }
}

/* gradients of the mean loss over `rows` rows, given dZ of the last layer in d_d[L] */
static void backward(network *net, int rows, cudaStream_t s)
{
    for (int l = net->n_layers - 1; l >= 0; l--) {
        /* dW = X^T dZ */
        CUBLAS_CHECK(gemm_rm(net->h, 1, 0, net->size[l], net->size[l + 1], rows, net->d_a[l], net->d_d[l + 1],
                             W(net, net->d_grads, l)));
        if (l == 0) break;   /* no gradient for the input itself */
        /* dX = dZ W^T, then through the previous layer's activation (with its bias sums) */
        CUBLAS_CHECK(gemm_rm(net->h, 0, 1, rows, net->size[l], net->size[l + 1], net->d_d[l + 1], W(net, net->d_params, l),
                             net->d_d[l]));
        CUDA_CHECK(act_backward_launch(net->d_d[l], net->d_a[l], rows, net->size[l], net->act, B(net, net->d_grads, l - 1), s));
    }
}

typedef struct {
    network *net;
    int rows;                    /* the batch */
    const float *d_x;            /* training set, on the device */
    const int *d_y, *d_perm;
    int *d_yb;                   /* the batch's labels */
    step_state *d_state;
    int adam;
    float lr, momentum;
} trainer;

/* One training step, queued on stream s (the graph captures exactly this). */
static void train_step(trainer *t, cudaStream_t s)
{
    network *net = t->net;
    int L = net->n_layers, C = net->size[L];
    CUDA_CHECK(gather_batch_launch(t->d_x, t->d_y, t->d_perm, t->d_state, t->rows, net->size[0], net->d_a[0], t->d_yb, s));
    forward(net, t->rows, s);
    CUDA_CHECK(softmax_xent_launch(net->d_a[L], B(net, net->d_params, L - 1), t->d_yb, t->rows, C, net->d_d[L],
                                   B(net, net->d_grads, L - 1), t->d_state, s));
    backward(net, t->rows, s);
    if (t->adam) CUDA_CHECK(adam_launch(net->d_params, net->d_grads, net->d_opt1, net->d_opt2, net->n_params, t->lr, t->d_state, s));
    else CUDA_CHECK(sgd_momentum_launch(net->d_params, net->d_grads, net->d_opt1, net->n_params, t->lr, t->momentum, s));
}

static cudaGraphExec_t capture_step(trainer *t, cudaStream_t s)
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

/* predictions (and their probabilities) for every row of a set already on the host */
static void predict_set(network *net, const dataset *d, int *pred, float *prob, cudaStream_t s)
{
    int L = net->n_layers;
    int *d_pred;
    float *d_prob;
    CUDA_CHECK(cudaMalloc((void **)&d_pred, sizeof(int) * net->max_rows));
    CUDA_CHECK(cudaMalloc((void **)&d_prob, sizeof(float) * net->max_rows));
    for (int r0 = 0; r0 < d->n; r0 += net->max_rows) {
        int rows = d->n - r0 < net->max_rows ? d->n - r0 : net->max_rows;
        CUDA_CHECK(cudaMemcpyAsync(net->d_a[0], d->x + (size_t)r0 * d->features, sizeof(float) * rows * d->features,
                                   cudaMemcpyHostToDevice, s));
        forward(net, rows, s);
        CUDA_CHECK(predict_launch(net->d_a[L], B(net, net->d_params, L - 1), rows, net->size[L], d_pred, d_prob, s));
        CUDA_CHECK(cudaMemcpyAsync(pred + r0, d_pred, sizeof(int) * rows, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaMemcpyAsync(prob + r0, d_prob, sizeof(float) * rows, cudaMemcpyDeviceToHost, s));
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaFree(d_pred));
    CUDA_CHECK(cudaFree(d_prob));
}

static double accuracy(network *net, const dataset *d, int *confusion, cudaStream_t s)
{
    if (d->n == 0) return 0.0;
    int *pred = lb_host_alloc(sizeof(int) * d->n, "predictions");
    float *prob = lb_host_alloc(sizeof(float) * d->n, "probabilities");
    predict_set(net, d, pred, prob, s);
    int ok = 0;
    for (int i = 0; i < d->n; i++) {
        ok += pred[i] == d->y[i];
        if (confusion) confusion[d->y[i] * d->classes + pred[i]]++;
    }
    free(pred);
    free(prob);
    return (double)ok / d->n;
}

/* ================================================================ gradient check */

/* The mean cross-entropy of the network on rows x (n of them), in double on the CPU: the
 * oracle for the finite differences. */
static double loss_cpu(const network *net, const float *params, const float *x, const int *y, int n)
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
            double *t = cur; cur = nxt; nxt = t;
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

/* Compare every analytic gradient (up to 4000 of them, evenly spaced) with the central
 * difference (L(p + h) - L(p - h)) / 2h of the CPU's double-precision loss. */
static double gradcheck(trainer *t, const dataset *train, int rows, cudaStream_t s, int quiet)
{
    network *net = t->net;
    int L = net->n_layers;
    int *perm = lb_host_alloc(sizeof(int) * rows, "the batch");
    for (int i = 0; i < rows; i++) perm[i] = i;
    CUDA_CHECK(cudaMemcpy((void *)t->d_perm, perm, sizeof(int) * rows, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(t->d_state, 0, sizeof(step_state)));
    /* forward, loss and backward only: no update */
    CUDA_CHECK(gather_batch_launch(t->d_x, t->d_y, t->d_perm, t->d_state, rows, net->size[0], net->d_a[0], t->d_yb, s));
    forward(net, rows, s);
    CUDA_CHECK(softmax_xent_launch(net->d_a[L], B(net, net->d_params, L - 1), t->d_yb, rows, net->size[L], net->d_d[L],
                                   B(net, net->d_grads, L - 1), t->d_state, s));
    backward(net, rows, s);
    float *params = lb_host_alloc(sizeof(float) * net->n_params, "parameters");
    float *grads = lb_host_alloc(sizeof(float) * net->n_params, "gradients");
    CUDA_CHECK(cudaMemcpyAsync(params, net->d_params, sizeof(float) * net->n_params, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(grads, net->d_grads, sizeof(float) * net->n_params, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));

    size_t step = net->n_params > 4000 ? net->n_params / 4000 : 1, checked = 0;
    double worst = 0.0;
    for (size_t i = 0; i < net->n_params; i += step) {
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
        if (!(rel <= worst)) worst = rel;   /* NaN sticks */
        if (!quiet && rel > 1e-3) fprintf(stderr, "  parameter %zu: analytic %.6g, finite difference %.6g\n", i, an, fd);
        checked++;
    }
    if (!quiet)
        printf("gradcheck: %zu of %zu parameters on %d samples, max relative error %.2e (finite differences of the CPU's "
               "double-precision loss, h = 1e-5)\n", checked, net->n_params, rows, worst);
    free(perm);
    free(params);
    free(grads);
    return worst;
}

/* ================================================================ save and load */

/* File layout (little-endian, as written by this host):
 *   8 bytes   "LBDNN\0\0\1"
 *   uint32    number of sizes (weight layers + 1), then uint32 activation (0 ReLU, 1 sigmoid)
 *   uint32    the sizes, features first, classes last
 *   float32   features means, then features standard deviations (the z-score to apply)
 *   float32   the parameters: for each layer W (in x out, row-major), then b (out)        */
static const char MAGIC[8] = {'L', 'B', 'D', 'N', 'N', 0, 0, 1};

static int save_weights(const char *path, const network *net, const float *mean, const float *sd, char *err, size_t len)
{
    float *p = lb_host_alloc(sizeof(float) * net->n_params, "parameters");
    CUDA_CHECK(cudaMemcpy(p, net->d_params, sizeof(float) * net->n_params, cudaMemcpyDeviceToHost));
    FILE *f = fopen(path, "wb");
    int ok = f != NULL;
    if (ok) {
        uint32_t hdr[2 + MAX_LAYERS + 1] = {(uint32_t)net->n_layers + 1, (uint32_t)net->act};
        for (int l = 0; l <= net->n_layers; l++) hdr[2 + l] = (uint32_t)net->size[l];
        ok = fwrite(MAGIC, 1, 8, f) == 8 && fwrite(hdr, 4, (size_t)net->n_layers + 3, f) == (size_t)net->n_layers + 3 &&
             fwrite(mean, 4, (size_t)net->size[0], f) == (size_t)net->size[0] &&
             fwrite(sd, 4, (size_t)net->size[0], f) == (size_t)net->size[0] &&
             fwrite(p, 4, net->n_params, f) == net->n_params;
        ok = (fclose(f) == 0) && ok;
    }
    if (!ok) snprintf(err, len, "%s: cannot write: %s", path, strerror(errno));
    free(p);
    return ok ? 0 : -1;
}

/* Read a weights file: shape into net (sizes, act), normalization, parameters (host, malloc'd). */
static float *load_weights(const char *path, network *net, float **mean, float **sd, char *err, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, len, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char magic[8];
    uint32_t n_sizes = 0, act = 0, sizes[MAX_LAYERS + 1];
    float *p = NULL;
    *mean = *sd = NULL;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, MAGIC, 8)) {
        snprintf(err, len, "%s: not a weights file of this program (bad magic number)", path);
    } else if (fread(&n_sizes, 4, 1, f) != 1 || fread(&act, 4, 1, f) != 1 || n_sizes < 2 || n_sizes > MAX_LAYERS + 1 || act > 1 ||
               fread(sizes, 4, n_sizes, f) != n_sizes) {
        snprintf(err, len, "%s: bad header (layer count or activation out of range, or truncated)", path);
    } else {
        int bad = 0;
        for (uint32_t l = 0; l < n_sizes; l++) bad |= sizes[l] < 1 || sizes[l] > 65536;
        if (bad || sizes[n_sizes - 1] > MAX_CLASSES) {
            snprintf(err, len, "%s: bad header (a layer size out of range)", path);
        } else {
            net->n_layers = (int)n_sizes - 1;
            net->act = (int)act;
            for (uint32_t l = 0; l < n_sizes; l++) net->size[l] = (int)sizes[l];
            layout(net);
            *mean = malloc(sizeof(float) * sizes[0]);
            *sd = malloc(sizeof(float) * sizes[0]);
            p = malloc(sizeof(float) * net->n_params);
            if (!*mean || !*sd || !p || fread(*mean, 4, sizes[0], f) != sizes[0] || fread(*sd, 4, sizes[0], f) != sizes[0] ||
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
        *mean = *sd = NULL;
    }
    return p;
}

/* ================================================================ command line */

static const char *data_path = "../datasets/iris.csv", *layers_arg = NULL, *act_arg = "relu", *save_path = NULL,
                  *load_path = NULL, *predict_path = NULL, *synthetic = NULL;
static int epochs = -1, batch = -1, adam = 0, do_gradcheck = 0, no_graph = 0;
static double lr = -1.0, momentum = 0.9, test_frac = 1.0 / 3.0, min_accuracy = -1.0;
static const lb_opt options[] = {
    {"--data", LB_OPT_STRING, &data_path, "the data set (CSV, datasets/ layout)"},
    {"--layers", LB_OPT_STRING, &layers_arg, "sizes F,H1,...,C (default: F,16,16,C for few features, else F,2F,C)"},
    {"--act", LB_OPT_STRING, &act_arg, "hidden activation: relu or sigmoid"},
    {"--epochs", LB_OPT_INT, &epochs, "passes over the training set (default 200 for small sets, 30 else; 0 with --load)"},
    {"--batch", LB_OPT_INT, &batch, "samples per step (default 16 for small sets, 32 else)"},
    {"--lr", LB_OPT_DOUBLE, &lr, "learning rate (default 0.05 SGD, 0.001 Adam)"},
    {"--momentum", LB_OPT_DOUBLE, &momentum, "SGD momentum"},
    {"--adam", LB_OPT_FLAG, &adam, "Adam instead of SGD with momentum"},
    {"--test-frac", LB_OPT_DOUBLE, &test_frac, "share of the samples held out for testing"},
    {"--save", LB_OPT_STRING, &save_path, "write the trained weights to this file"},
    {"--load", LB_OPT_STRING, &load_path, "start from these weights (and their normalization)"},
    {"--predict", LB_OPT_STRING, &predict_path, "classify the rows of this CSV (labels optional)"},
    {"--gradcheck", LB_OPT_FLAG, &do_gradcheck, "compare analytic gradients with finite differences, then stop"},
    {"--synthetic", LB_OPT_STRING, &synthetic, "F,H,...,C: random data of that shape; time a training step"},
    {"--no-graph", LB_OPT_FLAG, &no_graph, "launch each step's kernels one by one instead of replaying a CUDA graph"},
    {"--min-accuracy", LB_OPT_DOUBLE, &min_accuracy, "P: fail (exit 1) if the test accuracy ends below P percent"},
};
static const lb_program program = {
    .name = "dnn",
    .synopsis = "a dense neural network on cuBLAS: training with backpropagation, gradcheck, save/load, benchmark",
    .details = "Data sets: ../datasets/iris.csv (default), ../datasets/digits.csv, or any CSV with the header\n"
    "n_samples,n_features,class names... and rows of features plus an integer label.\n",
    .uses = LB_USE_SEED | LB_USE_QUIET | LB_USE_ITERS,
    .opts = options,
    .n_opts = 16};

/* "4,16,16,3" into net->size; returns the layer count or -1 */
static int parse_layers(const char *s, network *net)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 65536 || n > MAX_LAYERS) return -1;
        net->size[n++] = (int)v;
        if (*end == ',') p = end + 1;
        else if (*end == 0) p = end;
        else return -1;
    }
    return n >= 2 ? n - 1 : -1;
}

/* ================================================================ benchmark mode */

typedef struct { network *net; int which, rows, reps; } gemm_job;

/* GEMM number `which` of a training step (forward 0..L-1, then dW L-1..0, then dX L-1..1), reps times */
static cudaError_t run_one_gemm(void *ctx)
{
    gemm_job *j = (gemm_job *)ctx;
    network *net = j->net;
    int L = net->n_layers, w = j->which;
    for (int r = 0; r < j->reps; r++) {
        if (w < L)
            CUBLAS_CHECK(gemm_rm(net->h, 0, 0, j->rows, net->size[w + 1], net->size[w], net->d_a[w], W(net, net->d_params, w), net->d_a[w + 1]));
        else if (w < 2 * L) {
            int l = 2 * L - 1 - w;
            CUBLAS_CHECK(gemm_rm(net->h, 1, 0, net->size[l], net->size[l + 1], j->rows, net->d_a[l], net->d_d[l + 1], W(net, net->d_grads, l)));
        } else {
            int l = 3 * L - 1 - w;
            CUBLAS_CHECK(gemm_rm(net->h, 0, 1, j->rows, net->size[l], net->size[l + 1], net->d_d[l + 1], W(net, net->d_params, l), net->d_d[l]));
        }
    }
    return cudaGetLastError();
}

typedef struct { trainer *t; cudaGraphExec_t graph; int steps; cudaStream_t s; } epoch_job;

/* `steps` training steps from the start of the permutation (graph or launches), on stream 0's
 * timeline: the events of lb_time_ms are on the legacy default stream, which waits for s */
static cudaError_t run_epoch(void *ctx)
{
    epoch_job *e = (epoch_job *)ctx;
    cudaError_t err = cudaMemsetAsync(&e->t->d_state->cursor, 0, sizeof(int), e->s);
    for (int k = 0; k < e->steps && !err; k++) {
        if (e->graph) err = cudaGraphLaunch(e->graph, e->s);
        else train_step(e->t, e->s);
    }
    return err ? err : cudaGetLastError();
}

static int run_synthetic(const lb_args *args)
{
    network net = {0};
    net.act = strcmp(act_arg, "sigmoid") == 0 ? ACT_SIGMOID : ACT_RELU;
    net.n_layers = parse_layers(synthetic, &net);
    if (net.n_layers < 1) lb_usage_error(&program, "--synthetic takes sizes F,H,...,C (2 to %d numbers)", MAX_LAYERS + 1);
    if (net.size[net.n_layers] > MAX_CLASSES) lb_usage_error(&program, "--synthetic: at most %d classes", MAX_CLASSES);
    int rows = batch > 0 ? batch : 128, steps = 64, n = rows * steps, F = net.size[0], C = net.size[net.n_layers];
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    char shape[128] = "";
    for (int l = 0; l <= net.n_layers; l++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), l ? "-%d" : "%d", net.size[l]);
    if (!args->quiet)
        printf("dnn benchmark: %s, batch %d, %s, random data (%d samples), %s (%s)\n", shape, rows,
               adam ? "Adam" : "SGD with momentum", n, gpu.prop.name, gpu.sm);

    lb_rng rng;
    lb_rng_seed(&rng, args->seed);
    float *h_x = lb_host_alloc(sizeof(float) * (size_t)n * F, "data");
    int *h_y = lb_host_alloc(sizeof(int) * n, "labels"), *perm = lb_host_alloc(sizeof(int) * n, "permutation");
    lb_fill_uniform(h_x, (size_t)n * F, -1.0f, 1.0f, &rng);
    for (int i = 0; i < n; i++) h_y[i] = (int)(lb_rng_next(&rng) % (uint64_t)C), perm[i] = i;
    shuffle(perm, n, &rng);
    net_alloc(&net, rows);
    float *h_p = lb_host_alloc(sizeof(float) * net.n_params, "parameters");
    init_params(&net, h_p, &rng);
    CUDA_CHECK(cudaMemcpy(net.d_params, h_p, sizeof(float) * net.n_params, cudaMemcpyHostToDevice));
    float *d_x;
    int *d_y, *d_perm, *d_yb;
    step_state *d_state;
    CUDA_CHECK(cudaMalloc((void **)&d_x, sizeof(float) * (size_t)n * F));
    CUDA_CHECK(cudaMalloc((void **)&d_y, sizeof(int) * n));
    CUDA_CHECK(cudaMalloc((void **)&d_perm, sizeof(int) * n));
    CUDA_CHECK(cudaMalloc((void **)&d_yb, sizeof(int) * rows));
    CUDA_CHECK(cudaMalloc((void **)&d_state, sizeof(step_state)));
    CUDA_CHECK(cudaMemset(d_state, 0, sizeof(step_state)));
    CUDA_CHECK(cudaMemcpy(d_x, h_x, sizeof(float) * (size_t)n * F, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y, h_y, sizeof(int) * n, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_perm, perm, sizeof(int) * n, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));   /* blocking: the default stream's events order with it */
    CUBLAS_CHECK(cublasSetStream(net.h, s));
    trainer t = {&net, rows, d_x, d_y, d_perm, d_yb, d_state, adam, (float)(lr > 0 ? lr : adam ? 1e-3 : 0.01), (float)momentum};

    epoch_job plain = {&t, NULL, steps, s}, graphed = {&t, capture_step(&t, s), steps, s};
    float plain_ms = lb_time_ms(run_epoch, &plain, 1, args->iters) / steps;
    float graph_ms = lb_time_ms(run_epoch, &graphed, 1, args->iters) / steps;
    step_state st;
    CUDA_CHECK(cudaMemcpy(&st, d_state, sizeof st, cudaMemcpyDeviceToHost));
    int finite = isfinite(st.loss_sum);

    /* each GEMM of the step alone, 50 times back to back (one alone would time its launch) */
    CUBLAS_CHECK(cublasSetStream(net.h, 0));
    int L = net.n_layers, n_gemms = 3 * L - 1;
    float gemm_sum = 0.0f;
    if (!args->quiet) printf("the step's GEMMs timed alone (rows x cols x inner, us):");
    for (int w = 0; w < n_gemms; w++) {
        gemm_job gj = {&net, w, rows, 50};
        float ms = lb_time_ms(run_one_gemm, &gj, 1, args->iters) / 50;
        gemm_sum += ms;
        if (!args->quiet) printf(" %.1f", ms * 1e3);
    }
    double sps = rows / (graph_ms * 1e-3);
    if (!args->quiet) {
        printf("\n step (%d GEMMs + %d small kernels)     us per step   samples/s     vs GEMM sum\n", n_gemms, L + 3);
        printf(" kernels launched one by one          %9.1f   %11.3g   %8.2f\n", plain_ms * 1e3, rows / (plain_ms * 1e-3), plain_ms / gemm_sum);
        printf(" replayed as one CUDA graph           %9.1f   %11.3g   %8.2f   (goal <= 1.25)\n", graph_ms * 1e3, sps, graph_ms / gemm_sum);
        printf(" sum of the GEMMs alone               %9.1f\n", gemm_sum * 1e3);
        printf("loss after %d steps: %s\n", (args->iters + 1) * 2 * steps, finite ? "finite" : "NOT FINITE");
    }
    char sz[160];
    snprintf(sz, sizeof sz, "%s_b%d", shape, rows);
    lb_result r1 = {"dnn", -1, "step_graph", sz, graph_ms, "msamples_s", sps / 1e6, "gemm_sum", graph_ms / gemm_sum, finite};
    lb_result r2 = {"dnn", -1, "step_launches", sz, plain_ms, "msamples_s", rows / (plain_ms * 1e-3) / 1e6, "gemm_sum", plain_ms / gemm_sum, finite};
    lb_result r3 = {"dnn", -1, "gemm_sum", sz, gemm_sum, "msamples_s", rows / (gemm_sum * 1e-3) / 1e6, "gemm_sum", 1.0, -1};
    lb_print_result(&r1, args->quiet);
    lb_print_result(&r2, args->quiet);
    lb_print_result(&r3, args->quiet);
    if (args->quiet)
        printf("dnn: %s batch %d: %.1f us per step, %.3g samples/s, %.2fx the GEMMs alone, %s\n", shape, rows, graph_ms * 1e3,
               sps, graph_ms / gemm_sum, finite ? "PASS" : "FAIL");
    CUDA_CHECK(cudaGraphExecDestroy(graphed.graph));
    CUDA_CHECK(cudaStreamDestroy(s));
    net_free(&net);
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    CUDA_CHECK(cudaFree(d_perm));
    CUDA_CHECK(cudaFree(d_yb));
    CUDA_CHECK(cudaFree(d_state));
    free(h_x); free(h_y); free(perm); free(h_p);
    return finite ? LB_EXIT_PASS : LB_EXIT_FAIL;
}

/* ================================================================ main */

static void print_confusion(const dataset *d, const int *confusion)
{
    printf("confusion matrix on the test set (rows: true class, columns: predicted)\n%14s", "");
    for (int c = 0; c < d->classes; c++) printf(" %8.8s", d->class_names[c]);
    printf("\n");
    for (int r = 0; r < d->classes; r++) {
        printf("%14.14s", d->class_names[r]);
        for (int c = 0; c < d->classes; c++) printf(" %8d", confusion[r * d->classes + c]);
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    double t_start = lb_wall_ms();
    lb_args args = {.iters = 20, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    if (strcmp(act_arg, "relu") && strcmp(act_arg, "sigmoid")) lb_usage_error(&program, "--act must be relu or sigmoid");
    if (epochs < -1 || epochs > 1000000) lb_usage_error(&program, "--epochs must be 0..1000000");
    if (batch == 0 || batch < -1 || batch > 65536) lb_usage_error(&program, "--batch must be 1..65536");
    if (lr != -1.0 && !(lr > 0.0 && lr < 100.0)) lb_usage_error(&program, "--lr must be in (0, 100)");
    if (!(momentum >= 0.0 && momentum < 1.0)) lb_usage_error(&program, "--momentum must be in [0, 1)");
    if (!(test_frac > 0.0 && test_frac < 1.0)) lb_usage_error(&program, "--test-frac must be in (0, 1)");
    if (synthetic) return run_synthetic(&args);

    /* ---- data and shape, all checked before the GPU is touched */
    char err[512];
    dataset all, pred_set = {0};
    if (load_csv(data_path, &all, 0, err, sizeof err))
        lb_die(LB_EXIT_USAGE, "dnn: %s%s", err, strstr(err, "cannot open") ? " (run from ch09_dnn, or pass --data FILE)" : "");
    if (predict_path) {
        if (load_csv(predict_path, &pred_set, 1, err, sizeof err)) lb_die(LB_EXIT_USAGE, "dnn: %s", err);
        if (pred_set.features != all.features || pred_set.classes != all.classes)
            lb_die(LB_EXIT_USAGE, "dnn: %s has %d features and %d classes, the training data %d and %d", predict_path,
                   pred_set.features, pred_set.classes, all.features, all.classes);
    }
    network net = {0};
    net.act = strcmp(act_arg, "sigmoid") == 0 ? ACT_SIGMOID : ACT_RELU;
    float *loaded = NULL, *mean = NULL, *sd = NULL;
    if (load_path) {
        if (!(loaded = load_weights(load_path, &net, &mean, &sd, err, sizeof err))) lb_die(LB_EXIT_USAGE, "dnn: %s", err);
        network want = {0};
        if (layers_arg && (parse_layers(layers_arg, &want) != net.n_layers ||
                           memcmp(want.size, net.size, sizeof(int) * (net.n_layers + 1))))
            lb_die(LB_EXIT_USAGE, "dnn: %s holds a network of another shape than --layers %s", load_path, layers_arg);
    } else if (layers_arg) {
        net.n_layers = parse_layers(layers_arg, &net);
        if (net.n_layers < 1) lb_usage_error(&program, "--layers takes 2 to %d sizes, e.g. 4,16,16,3", MAX_LAYERS + 1);
    } else {   /* a default for the data set */
        net.size[0] = all.features;
        if (all.features <= 16) net.n_layers = 3, net.size[1] = net.size[2] = 16;
        else net.n_layers = 2, net.size[1] = 2 * all.features;
        net.size[net.n_layers] = all.classes;
    }
    if (net.size[0] != all.features || net.size[net.n_layers] != all.classes)
        lb_die(LB_EXIT_USAGE, "dnn: the network takes %d features to %d classes, %s has %d features and %d classes",
               net.size[0], net.size[net.n_layers], data_path, all.features, all.classes);
    layout(&net);

    /* ---- split, normalize */
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    int *idx = lb_host_alloc(sizeof(int) * all.n, "indices");
    for (int i = 0; i < all.n; i++) idx[i] = i;
    shuffle(idx, all.n, &rng);
    int n_test = (int)lround(all.n * test_frac), n_train = all.n - n_test;
    if (n_train < 1) lb_die(LB_EXIT_USAGE, "dnn: %s: no samples left for training with --test-frac %g", data_path, test_frac);
    dataset train = subset(&all, idx, n_train), test = subset(&all, idx + n_train, n_test);
    if (!mean) {
        mean = lb_host_alloc(sizeof(float) * all.features, "means");
        sd = lb_host_alloc(sizeof(float) * all.features, "deviations");
        feature_stats(&train, mean, sd);
    }
    normalize(&train, mean, sd);
    normalize(&test, mean, sd);
    if (predict_path) normalize(&pred_set, mean, sd);
    int small = n_train < 500;
    if (epochs < 0) epochs = load_path ? 0 : small ? 200 : 30;
    if (batch < 0) batch = small ? 16 : 32;
    if (batch > n_train) batch = n_train;
    if (lr < 0) lr = adam ? 1e-3 : 0.05;

    /* ---- the GPU */
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    int max_rows = batch > EVAL_ROWS ? batch : EVAL_ROWS;
    size_t act_floats = 0;
    for (int l = 0; l <= net.n_layers; l++) act_floats += (size_t)2 * max_rows * net.size[l];
    lb_require_device_memory(sizeof(float) * (4 * net.n_params + act_floats + (size_t)n_train * all.features) + (32u << 20),
                             "the network and the training set");
    char shape[128] = "";
    for (int l = 0; l <= net.n_layers; l++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), l ? "-%d" : "%d", net.size[l]);
    if (!args.quiet)
        printf("dnn: %s (%d samples: %d train, %d test), layers %s, %s, %s lr %g, batch %d, %d epochs, seed %llu, %s (%s)\n",
               data_path, all.n, n_train, n_test, shape, net.act == ACT_RELU ? "ReLU" : "sigmoid",
               adam ? "Adam" : "SGD momentum", lr, batch, epochs, args.seed, gpu.prop.name, gpu.sm);
    net_alloc(&net, max_rows);
    if (!loaded) {
        loaded = lb_host_alloc(sizeof(float) * net.n_params, "parameters");
        init_params(&net, loaded, &rng);
    }
    CUDA_CHECK(cudaMemcpy(net.d_params, loaded, sizeof(float) * net.n_params, cudaMemcpyHostToDevice));
    float *d_x;
    int *d_y, *d_perm, *d_yb;
    step_state *d_state;
    CUDA_CHECK(cudaMalloc((void **)&d_x, sizeof(float) * (size_t)n_train * all.features));
    CUDA_CHECK(cudaMalloc((void **)&d_y, sizeof(int) * n_train));
    CUDA_CHECK(cudaMalloc((void **)&d_perm, sizeof(int) * n_train));
    CUDA_CHECK(cudaMalloc((void **)&d_yb, sizeof(int) * batch));
    CUDA_CHECK(cudaMalloc((void **)&d_state, sizeof(step_state)));
    CUDA_CHECK(cudaMemset(d_state, 0, sizeof(step_state)));
    CUDA_CHECK(cudaMemcpy(d_x, train.x, sizeof(float) * (size_t)n_train * all.features, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y, train.y, sizeof(int) * n_train, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasSetStream(net.h, s));
    trainer t = {&net, batch, d_x, d_y, d_perm, d_yb, d_state, adam, (float)lr, (float)momentum};
    int status = LB_EXIT_PASS;

    if (do_gradcheck) {
        int rows = n_train < 8 ? n_train : 8;
        double worst = gradcheck(&t, &train, rows, s, args.quiet);
        /* fp32 gradients against a double-precision oracle: 1e-3 is ten times what a correct
         * backward pass shows; a wrong transpose or a missing term gives order 1 */
        int ok = worst <= 1e-3;
        if (args.quiet) printf("dnn gradcheck: %s, max relative error %.2e, %s\n", shape, worst, ok ? "PASS" : "FAIL");
        else printf("%s\n", ok ? "PASS" : "FAIL");
        status = ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
        epochs = 0;
        predict_path = save_path = NULL;
    }

    /* ---- training */
    cudaGraphExec_t graph = (epochs > 0 && !no_graph) ? capture_step(&t, s) : NULL;
    int steps = n_train / batch;   /* the last partial batch of each epoch is left out */
    int *perm = lb_host_alloc(sizeof(int) * n_train, "permutation");
    for (int i = 0; i < n_train; i++) perm[i] = i;
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    double train_ms = 0.0, last_loss = 0.0;
    for (int e = 0; e < epochs; e++) {
        shuffle(perm, n_train, &rng);
        CUDA_CHECK(cudaMemcpyAsync(d_perm, perm, sizeof(int) * n_train, cudaMemcpyHostToDevice, s));
        CUDA_CHECK(cudaMemsetAsync(&d_state->cursor, 0, sizeof(int), s));
        CUDA_CHECK(cudaMemsetAsync(&d_state->loss_sum, 0, sizeof(float) + sizeof(int), s));   /* loss_sum, correct */
        CUDA_CHECK(cudaEventRecord(e0, s));
        for (int k = 0; k < steps; k++) {
            if (graph) CUDA_CHECK(cudaGraphLaunch(graph, s));
            else train_step(&t, s);
        }
        CUDA_CHECK(cudaEventRecord(e1, s));
        step_state st;
        CUDA_CHECK(cudaMemcpyAsync(&st, d_state, sizeof st, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        train_ms += ms;
        last_loss = st.loss_sum / steps;
        if (!isfinite(last_loss)) {
            fprintf(stderr, "dnn: the loss is %g at epoch %d: training diverged (try a smaller --lr)\n", last_loss, e + 1);
            status = LB_EXIT_FAIL;
            break;
        }
        if (!args.quiet)
            printf("epoch %4d/%d: loss %.4f, train acc %5.1f%% (during the epoch), test acc %5.1f%%, %.2f ms\n", e + 1, epochs,
                   last_loss, 100.0 * st.correct / (steps * batch), 100.0 * accuracy(&net, &test, NULL, s), ms);
    }

    /* ---- results */
    if (!do_gradcheck) {
        int *confusion = calloc((size_t)all.classes * all.classes, sizeof(int));
        double train_acc = accuracy(&net, &train, NULL, s), test_acc = accuracy(&net, &test, confusion, s);
        double total_s = (lb_wall_ms() - t_start) / 1e3;
        if (!args.quiet) {
            printf("final: train accuracy %.2f%%, test accuracy %.2f%% (%d of %d)\n", 100 * train_acc, 100 * test_acc,
                   (int)lround(test_acc * n_test), n_test);
            if (n_test) print_confusion(&all, confusion);
            printf("training %.1f ms (%d steps of %d, %.1f us each); whole run %.2f s\n", train_ms, epochs * steps, batch,
                   epochs * steps > 0 ? 1e3 * train_ms / (epochs * steps) : 0.0, total_s);
        } else {
            printf("dnn: %s %s, %d epochs: test accuracy %.2f%%, whole run %.2f s\n", data_path, shape, epochs,
                   100 * test_acc, total_s);
        }
        /* the data set's file name without folder and extension: ../datasets/iris.csv -> iris */
        const char *base = strrchr(data_path, '/') ? strrchr(data_path, '/') + 1 : data_path;
        char name[96], sz[160];
        snprintf(name, sizeof name, "%.*s_seed%llu", (int)strcspn(base, "."), base, args.seed);
        snprintf(sz, sizeof sz, "%s_e%d", shape, epochs);
        int acc_ok = min_accuracy < 0 || 100 * test_acc >= min_accuracy;
        if (!acc_ok) {
            fprintf(stderr, "dnn: test accuracy %.2f%% is below --min-accuracy %g\n", 100 * test_acc, min_accuracy);
            status = LB_EXIT_FAIL;
        }
        lb_result r = {"dnn", -1, name, sz, train_ms, "test_acc_pct", 100 * test_acc, NULL, 0.0, min_accuracy < 0 ? -1 : acc_ok};
        lb_print_result(&r, args.quiet);
        free(confusion);
    }
    if (save_path) {
        if (save_weights(save_path, &net, mean, sd, err, sizeof err)) lb_die(LB_EXIT_USAGE, "dnn: %s", err);
        if (!args.quiet) printf("saved the weights to %s\n", save_path);
    }
    if (predict_path) {
        int *pred = lb_host_alloc(sizeof(int) * pred_set.n, "predictions");
        float *prob = lb_host_alloc(sizeof(float) * pred_set.n, "probabilities");
        predict_set(&net, &pred_set, pred, prob, s);
        int known = 0, ok = 0;
        for (int i = 0; i < pred_set.n; i++) {
            printf("%s row %d: %s (p = %.3f)", predict_path, i + 1, all.class_names[pred[i]], prob[i]);
            if (pred_set.y[i] >= 0) printf(", labelled %s", all.class_names[pred_set.y[i]]), known++, ok += pred[i] == pred_set.y[i];
            printf("\n");
        }
        if (known) printf("%d of %d labelled rows classified right\n", ok, known);
        free(pred);
        free(prob);
    }

    if (graph) CUDA_CHECK(cudaGraphExecDestroy(graph));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    CUDA_CHECK(cudaStreamDestroy(s));
    net_free(&net);
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    CUDA_CHECK(cudaFree(d_perm));
    CUDA_CHECK(cudaFree(d_yb));
    CUDA_CHECK(cudaFree(d_state));
    free(loaded); free(mean); free(sd); free(idx); free(perm);
    free_dataset(&all);
    free_dataset(&train);
    free_dataset(&test);
    free_dataset(&pred_set);
    return status;
}
