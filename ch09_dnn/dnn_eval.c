/* dnn_eval.c - ch09's network on a whole data set (see dnn_net.h): predictions, accuracy and
 * loss in chunks, and the gradient check against a CPU loss in double. */
#define _POSIX_C_SOURCE 200809L
#include "dnn_net.h"

#include <math.h>
#include <string.h>

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

/* relative error, with a floor: a gradient of 1e-9 against 3e-9 is agreement */
static double rel_err(double a, double b) { return fabs(a - b) / fmax(fabs(a) + fabs(b), 1e-4); }

grad_verdict compare_gradient(double an, double lp, double l0, double lm, double hp, double hm)
{
    grad_verdict v = {(lp - lm) / (hp + hm), 0.0, 0};
    v.rel = rel_err(an, v.fd);
    if (v.rel <= GRADCHECK_TOL) return v;
    /* the central difference disagrees: where the loss has a kink inside [p - h, p + h] (a ReLU
     * input at or crossing 0: a hidden layer's units all dead for a row make the next layer's
     * inputs exactly its biases, 0 when they start at 0), the slopes on the two sides differ, the
     * central difference is their mean and no gradient, and the analytic one is either side's
     * slope (ReLU'(0) taken as 0 or 1). A wrong gradient at a smooth point has equal sides. */
    double right = (lp - l0) / hp, left = (l0 - lm) / hm;
    if (rel_err(left, right) > GRADCHECK_TOL) {
        double side = fmin(rel_err(an, left), rel_err(an, right));
        if (side <= GRADCHECK_TOL) v.rel = side, v.kink = 1;
    }
    return v;
}

/* One parameter's analytic gradient against the central difference (L(p + h) - L(p - h)) / 2h
 * of the CPU's double-precision loss (l0: the loss at p), or at a kink against the side it
 * takes (compare_gradient); returns the relative error. */
static double check_one(const network *net, float *params, const float *grads, size_t i, const dataset *train, int rows,
                        double l0, int quiet, int *n_reported, size_t *n_kinks)
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
    double an = grads[i];
    grad_verdict v = compare_gradient(an, lp, l0, lm, hp, hm);
    *n_kinks += v.kink;
    if (!quiet && !(v.rel <= GRADCHECK_TOL) && (*n_reported)++ < 5)
        fprintf(stderr, "  parameter %zu: analytic %.6g, finite difference %.6g (left %.6g, right %.6g)\n", i, an, v.fd,
                (l0 - lm) / hm, (lp - l0) / hp);
    return v.rel;
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

    size_t checked = 0, kinks = 0;
    double worst = 0.0, l0 = loss_cpu(net, params, train->x, train->y, rows);
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
                double rel = check_one(net, params, grads, i, train, rows, l0, quiet, &reported, &kinks);
                if (!(rel <= worst)) worst = rel; /* NaN sticks */
                checked++;
            }
        }
    }
    if (!quiet) {
        printf("gradcheck: %zu of %zu parameters (every layer's W and b: all, or %d at random) on %d samples, max "
               "relative error %.2e (finite differences of the CPU's double-precision loss, h = 1e-5)",
               checked, net->n_params, GRADCHECK_PER_BLOCK, rows, worst);
        if (kinks) printf("; %zu at a ReLU kink, against the one-sided difference their gradient takes", kinks);
        printf("\n");
    }
    /* a check that met kinks nearly everywhere compared little: then it fails, whatever matched */
    if (kinks * 4 > checked) {
        if (!quiet) printf("gradcheck: more than a quarter of the parameters at a kink: not a check\n");
        worst = fmax(worst, 1.0);
    }
    free(perm);
    free(params);
    free(grads);
    return worst;
}

/* ================================================================ the optimizers against the CPU */

/* One optimizer step as the header (dnn_kernels.h) states it, in double, from the same float
 * inputs: written here a second time, so that a slip in dnn_math.cuh (which both paths share,
 * so --compare-paths cannot see it) shows. The betas are the floats the kernels use. */
static void sgd_cpu(double *w, double *v, double g, double lr, double mu, double wd)
{
    *v = mu * *v - lr * (g + wd * *w);
    *w += *v;
}
static void adam_cpu(double *w, double *m, double *v, double g, double lr, double wd, int t)
{
    double b1 = (double)0.9f, b2 = (double)0.999f;
    *m = b1 * *m + (1.0 - b1) * g;
    *v = b2 * *v + (1.0 - b2) * g * g;
    double mh = *m / (1.0 - pow(b1, t)), vh = *v / (1.0 - pow(b2, t));
    *w -= lr * (mh / (sqrt(vh) + 1e-8) + wd * *w);
}

typedef struct {
    const double *scale;
} optimizer_tol;
/* a few roundings of the largest term that made the element: its scale (below), 16 ulps */
static double optimizer_tolerance(size_t i, const void *ctx)
{
    return 16.0 * 5.96e-8 * ((const optimizer_tol *)ctx)->scale[i] + 1e-30;
}

/* One step of each optimizer over n parameters from random w, g and optimizer state, at Adam
 * steps 1, 2 and 10 (the bias corrections largest at the start): every output (w and the
 * state) against the CPU. Returns the exit code. */
int check_optimizers(const lb_args *args)
{
    const size_t n = 65539; /* 2^16 + 3: the kernels' float4 loop, then a tail of 3 one by one */
    const float lr = 0.01f, mu = 0.9f, wd_sgd = 1e-3f, wd_adam = 1e-2f;
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_rng rng;
    lb_rng_seed(&rng, args->seed);
    float *h[4], *got[3];
    for (int k = 0; k < 4; k++) h[k] = lb_host_alloc(sizeof(float) * n, "inputs");   /* w, g, m, v */
    for (int k = 0; k < 3; k++) got[k] = lb_host_alloc(sizeof(float) * n, "results"); /* w, m, v */
    float *want = lb_host_alloc(sizeof(float) * n, "the CPU's"), *d[4];
    double *scale = lb_host_alloc(sizeof(double) * n, "scales");
    for (int k = 0; k < 4; k++) CUDA_CHECK(cudaMalloc((void **)&d[k], sizeof(float) * n));
    step_state *d_state;
    CUDA_CHECK(cudaMalloc((void **)&d_state, sizeof *d_state));
    int failures = 0, cases = 0;
    const int adam_steps[] = {0, 1, 2, 10}; /* 0: SGD with momentum */
    for (int c = 0; c < 4; c++) {
        int t = adam_steps[c], adam = t > 0;
        lb_fill_uniform(h[0], n, -1.0f, 1.0f, &rng);
        lb_fill_uniform(h[1], n, -1.0f, 1.0f, &rng);
        lb_fill_uniform(h[2], n, -0.1f, 0.1f, &rng);
        lb_fill_uniform(h[3], n, adam ? 0.0f : -0.1f, adam ? 0.01f : 0.1f, &rng); /* Adam's v: a mean square */
        for (int k = 0; k < 4; k++)
            CUDA_CHECK(cudaMemcpy(d[k], h[k], sizeof(float) * n, cudaMemcpyHostToDevice));
        step_state st = {0, t, 0.0f, 0, lr};
        CUDA_CHECK(cudaMemcpy(d_state, &st, sizeof st, cudaMemcpyHostToDevice));
        if (adam)
            CUDA_CHECK(adam_launch(d[0], d[1], d[2], d[3], n, wd_adam, d_state, 0));
        else
            CUDA_CHECK(sgd_momentum_launch(d[0], d[1], d[3], n, mu, wd_sgd, d_state, 0));
        CUDA_CHECK(cudaMemcpy(got[0], d[0], sizeof(float) * n, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(got[1], d[2], sizeof(float) * n, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(got[2], d[3], sizeof(float) * n, cudaMemcpyDeviceToHost));
        /* the CPU's step on the same inputs: w, then the state (SGD keeps only v, in slot 2) */
        const char *what[3] = {"w", adam ? "m" : "v", "v"};
        for (int out = 0; out < (adam ? 3 : 2); out++) {
            for (size_t i = 0; i < n; i++) {
                double w = h[0][i], m = h[2][i], v = h[3][i], g = h[1][i];
                if (adam) {
                    adam_cpu(&w, &m, &v, g, lr, wd_adam, t);
                    /* the size of the step's terms; the GPU's 1 / (1 - powf(beta2, t)) carries powf's
                     * few ulps of beta2^t (near 1) relative to 1 - beta2^t, that is times c2, and
                     * half of that through the square root: 0.5 c2 ulps more of the step */
                    double c2 = 1.0 / (1.0 - pow((double)0.999f, t));
                    double step = fabs(m / (1.0 - pow((double)0.9f, t))) / (sqrt(v * c2) + 1e-8) +
                                  wd_adam * fabs(h[0][i]);
                    double s[3] = {fabs(h[0][i]) + lr * step * (2.0 + 0.5 * c2), fabs(h[2][i]) + fabs(g),
                                   fabs(h[3][i]) + g * g};
                    scale[i] = s[out];
                    want[i] = (float)(out == 0 ? w : out == 1 ? m : v);
                } else {
                    sgd_cpu(&w, &v, g, lr, mu, wd_sgd);
                    scale[i] = out == 0 ? fabs(h[0][i]) + fabs(v) : fabs(v) + fabs(h[3][i]) + lr * fabs(g);
                    want[i] = (float)(out == 0 ? w : v);
                }
            }
            char label[64];
            snprintf(label, sizeof label, "%s step %d, %s", adam ? "Adam" : "SGD", adam ? t : 1, what[out]);
            optimizer_tol tol = {scale};
            lb_check chk = lb_check_f32_bound(label, adam || out == 0 ? got[out] : got[2], want, n,
                                               optimizer_tolerance, &tol, args->quiet);
            cases++;
            failures += chk.n_bad > 0;
            if (!args->quiet)
                printf("  %-18s %s\n", label, chk.n_bad ? "FAIL" : "PASS");
        }
    }
    printf("dnn: the optimizers' kernels against the CPU (%zu parameters; SGD with momentum, Adam at steps 1, 2 "
           "and 10): %d of %d outputs %s\n",
           n, cases - failures, cases, failures ? "right: FAIL" : "right: PASS");
    for (int k = 0; k < 4; k++) {
        CUDA_CHECK(cudaFree(d[k]));
        free(h[k]);
    }
    for (int k = 0; k < 3; k++) free(got[k]);
    CUDA_CHECK(cudaFree(d_state));
    free(want);
    free(scale);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}

/* The error of one layer's logits against the CPU, each element over the size of its terms
 * (sum of |x w|): the largest such ratio. */
static double worst_relative(const float *got, const double *want, const double *mag, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]) / mag[i];
        if (!(e <= worst)) worst = e; /* NaN sticks */
    }
    return worst;
}

/* --check-tf32 (see dnn_net.h). A sum of K products in fp32 is off by at most (K + 2) 2^-24 of
 * the size of its terms; TF32 rounds both inputs to 10-bit mantissas first (2^-11 each, 2^-10
 * if truncated), so a product is off by up to 2^-9 of itself before the sum. The errors of
 * random signs add like sqrt(K) in both, so TF32's worst comes out thousands of times fp32's
 * (2^-11 against 2^-24 a term); 64 times is the least it must show. */
int check_tf32(const lb_args *args)
{
    const int rows = 128, K = 1024, N = 256;
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    if (gpu.cc < 80)
        lb_die(LB_EXIT_USAGE, "dnn: --check-tf32 needs TF32 tensor cores (sm_80 or newer); this GPU is %s", gpu.sm);
    lb_rng rng;
    lb_rng_seed(&rng, args->seed);
    size_t nx = (size_t)rows * K, nw = (size_t)K * N, nz = (size_t)rows * N;
    float *x = lb_host_alloc(sizeof(float) * nx, "inputs"), *params = lb_host_alloc(sizeof(float) * (nw + N), "weights");
    float *z = lb_host_alloc(sizeof(float) * nz, "logits");
    double *want = lb_host_alloc(sizeof(double) * nz, "the CPU's"), *mag = lb_host_alloc(sizeof(double) * nz, "sizes");
    lb_fill_uniform(x, nx, -1.0f, 1.0f, &rng);
    lb_fill_uniform(params, nw, -1.0f, 1.0f, &rng);
    memset(params + nw, 0, sizeof(float) * N); /* biases 0: both paths' logits are X W alone */
    for (int r = 0; r < rows; r++)
        for (int n = 0; n < N; n++) {
            double s = 0.0, m = 0.0;
            for (int k = 0; k < K; k++) {
                double t = (double)x[(size_t)r * K + k] * params[(size_t)k * N + n];
                s += t, m += fabs(t);
            }
            want[(size_t)r * N + n] = s, mag[(size_t)r * N + n] = m;
        }
    const double fp32_bound = (K + 2) * 0x1p-24, tf32_bound = 0x1p-9 + fp32_bound;
    int failures = 0;
    for (int lt = 0; lt < 2; lt++) {
        double err[2];
        for (int tf32 = 0; tf32 < 2; tf32++) {
            network net = {0};
            net.n_layers = 1, net.size[0] = K, net.size[1] = N, net.act = ACT_RELU;
            net.path = lt ? DNN_PATH_LT : DNN_PATH_CUBLAS, net.tf32 = tf32;
            net_alloc(&net, rows);
            CUDA_CHECK(cudaMemcpy(net.d_params, params, sizeof(float) * (nw + N), cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(net.d_a[0], x, sizeof(float) * nx, cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemset(net.d_a[1], 0xff, sizeof(float) * nz)); /* NaN: a GEMM that writes nothing fails */
            if (lt)
                lt_forward(&net, rows, 0); /* the training step's forward */
            else
                (void)forward(&net, rows, 0);
            CUDA_CHECK(cudaMemcpy(z, net.d_a[1], sizeof(float) * nz, cudaMemcpyDeviceToHost));
            err[tf32] = worst_relative(z, want, mag, nz);
            net_free(&net);
        }
        int fp32_ok = err[0] <= fp32_bound, tf32_ok = err[1] <= tf32_bound && err[1] > 64.0 * err[0];
        failures += !fp32_ok + !tf32_ok;
        printf("  %-8s path: fp32 off by %.2e of the terms' size (bound %.2e: %s); TF32 by %.2e (bound %.2e, and "
               "at least 64x fp32's: %s)\n",
               lt ? "cuBLASLt" : "cuBLAS", err[0], fp32_bound, fp32_ok ? "PASS" : "FAIL", err[1], tf32_bound,
               tf32_ok ? "PASS" : "FAIL");
    }
    printf("dnn: one layer (%d rows, %d inputs, %d units) in fp32 and TF32 on both cuBLAS paths against the CPU: %s\n",
           rows, K, N, failures ? "FAIL" : "PASS");
    free(x), free(params), free(z), free(want), free(mag);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
