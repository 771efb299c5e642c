/* cross_entropy.c - the mean cross-entropy of a batch of logits over a vocabulary, and its
 * gradient, in one kernel that reads each logit once: what a language model's last layer costs
 * besides its GEMM, against the copy of the same bytes (the logits read, the gradient written).
 *
 *   logits are rows x classes floats, row-major (default 8192 x 50304, GPT-2's vocabulary padded
 *   to a multiple of 64: 1.65 GB), uniform in [-A, A] from --seed (--amplitude A, default 10);
 *   labels y uniform in 0..classes-1. loss = mean over rows of -log softmax(row)[y];
 *   grad = (softmax(row) - onehot(y)) / rows, the gradient of that mean.
 *   build: make ch11 (or `make` here)   run: ./cross_entropy [version] [--size ROWSxCLASSES]
 *
 * versions: the table versions[] below (0 the copy, 1 unfused ... 4 the row in shared memory),
 * listed by ./cross_entropy --help; the kernels are in cross_entropy_kernels.cu.
 * Then version 4 on bf16 logits with its gradient in bf16 written over them (ch12's GPT
 * classifier's: fused_smem_bf16), rows padded to a multiple of 8 whose padding must come back 0.
 * Checked: the loss and every element of the gradient against the CPU in double, within bounds
 * from the float arithmetic (below). GB/s counts 2 x rows x classes x 4 bytes (bf16: x 2).
 */
#include "labbook.h"
#include "cross_entropy_kernels.h"

#include <math.h>

/* ---------------------------------------------------------------- CPU reference */

/* The chain of float additions behind a row's sum: every version sums a row with a block of
 * 1024 threads, each its share of the row (classes / 1024 terms), then two trees of 32; the
 * roundings add like a random walk, 8 sqrt(chain) ulps of the sum (a lost float4 of a 50304-wide
 * row, 8e-5 of the sum, is 16 times that) */
static double sum_ulps(int classes) { return 8.0 * sqrt(classes / 1024.0 + 64.0); }

/* In double: each row's max m, sum s of exp(x - m) and loss log s + m - x[y]; the gradient;
 * the mean loss. row_max keeps the rows' max for the tolerance; *loss_tol gets the loss's bound:
 * each row's log s within 8 + sum_ulps ulps (the sum's rounding, below), the
 * logs and the subtraction a few ulps of their operands, the mean's own sum 8 sqrt(rows) ulps. */
static double cross_entropy_cpu(const float *x, const int *y, float *grad, double *row_max, int rows, int classes,
                                double *loss_tol)
{
    const double eps = 5.96e-8;
    double total = 0.0, bound = 0.0;
    /* rows on every core (8192 x 50304 is 412 million logits); each exponential in double,
     * taken twice (for the row's sum, then for its gradient) rather than kept: a row's worth of
     * doubles a thread would do, at the cost of a buffer per thread */
#pragma omp parallel for reduction(+ : total, bound) schedule(static)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * classes;
        float *gr = grad + (size_t)r * classes;
        double m = -INFINITY, s = 0.0;
        for (int c = 0; c < classes; c++) m = fmax(m, xr[c]);
        for (int c = 0; c < classes; c++) s += exp((double)xr[c] - m);
        for (int c = 0; c < classes; c++) gr[c] = (float)((exp((double)xr[c] - m) / s - (c == y[r])) / rows);
        double row_loss = log(s) + m - xr[y[r]];
        total += row_loss;
        bound += (8.0 + sum_ulps(classes) + 4.0 * (fabs(log(s)) + fabs(m) + fabs(xr[y[r]]))) * eps;
        row_max[r] = m;
    }
    double loss = total / rows;
    *loss_tol = bound / rows + 8.0 * sqrt((double)rows) * eps * fabs(loss) + 1e-30;
    return loss;
}

/* One gradient element's bound: p = exp(x - m) / s within the sum's ulps, the exponential's
 * (about |x - m| ulps for __expf, and 2) and a few more; then p - onehot and the division by
 * rows, a few ulps of what they give */
typedef struct {
    const float *x;
    const double *row_max;
    const float *want;
    const int *y;
    int rows, classes;
} ce_tol;
static double grad_tolerance(size_t i, const void *ctx)
{
    const ce_tol *t = (const ce_tol *)ctx;
    double dx = fabs((double)t->x[i] - t->row_max[i / (size_t)t->classes]);
    double ulps = 8.0 + sum_ulps(t->classes) + 1.5 * dx;
    size_t r = i / (size_t)t->classes;
    double g = fabs((double)t->want[i]) * t->rows;                         /* |p - onehot| */
    double p = (double)t->want[i] * t->rows + ((int)(i % t->classes) == t->y[r]); /* p itself */
    return (ulps * 5.96e-8 * p + 4.0 * 5.96e-8 * g) / t->rows + 2.0 * 1.1754944e-38;
}

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int version;
    const float *d_x;
    const int *d_y;
    float *d_grad, *d_loss, *d_row_loss, *d_probs;
    int rows, classes;
} ce_job;

static cudaError_t run_kernel(void *ctx)
{
    ce_job *j = (ce_job *)ctx;
    return ce_launch(j->version, j->d_x, j->d_y, j->d_grad, j->d_loss, j->d_row_loss, j->d_probs, j->rows,
                     j->classes);
}

/* version 4 on bf16 logits, the gradient written over them (rows `stride` apart) */
typedef struct {
    uint16_t *d_x;
    const int *d_y;
    float *d_loss, *d_row_loss;
    int rows, classes, stride;
} bf16_job;
static cudaError_t run_bf16(void *ctx)
{
    bf16_job *j = (bf16_job *)ctx;
    return ce_launch_bf16(j->d_x, j->d_y, j->d_x, j->d_loss, j->d_row_loss, j->rows, j->classes, j->stride);
}
/* its bound: the fp32 one, then the bf16 rounding of the result (half an ulp: up to 2^-8 of it) */
typedef struct {
    const ce_tol *fp32;
} bf16_ce_tol;
static double bf16_grad_tolerance(size_t i, const void *ctx)
{
    const bf16_ce_tol *t = (const bf16_ce_tol *)ctx;
    double e = grad_tolerance(i, t->fp32);
    return e + 0x1p-8 * (fabs((double)t->fp32->want[i]) + e);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. Version 0 is the
 * device-to-device copy of as many bytes, the floor. Version 4 keeps a row of up to 57344
 * logits in shared memory: 224 KiB, which a block may have on sm_90 (227 KiB; sm_80 has 163).
 * To add a version: the kernel and its launcher in cross_entropy_kernels.cu (and in
 * launchers[]), CE_VERSIONS in cross_entropy_kernels.h, and a row here. */
static const lb_version versions[] = {
    {0, "memcpy", "cudaMemcpy D2D (the floor)", LB_OLDEST_SM, NULL},
    {1, "unfused", "softmax, then loss and gradient", LB_OLDEST_SM, run_kernel},
    {2, "fused_3pass", "fused, a block per row, 3 reads", LB_OLDEST_SM, run_kernel},
    {3, "fused_online", "fused, online max+sum, 2 reads", LB_OLDEST_SM, run_kernel},
    {4, "fused_smem", "fused, the row in shared memory", 90, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == CE_VERSIONS,
               "one row in versions[] per version: CE_VERSIONS in cross_entropy_kernels.h");

/* Version 4 on bf16 logits, the gradient in bf16 written over them (ch12's classifier): a row of
 * the report. h_x is rounded to bf16 in place and h_grad, h_ref, row_max reused. */
static void bf16_item(lb_report *rep, const lb_args *args, float *h_x, const int *h_y, float *h_grad, float *h_ref,
                      double *row_max, const int *d_y, float *d_loss, float *d_row_loss, int rows, int classes)
{
    /* rows `stride` apart (classes rounded up to a multiple of 8: the 16-byte loads, and padded
     * columns that must come back 0). The reference from the logits rounded to bf16, as the
     * kernel reads them; the gradient's bound that of fp32 plus half a bf16 ulp of it. */
    int stride = (classes + 7) / 8 * 8;
    size_t n = (size_t)rows * classes;
    double loss_tol, want_loss;
    size_t n16 = (size_t)rows * stride;
    uint16_t *h_bits = lb_host_alloc(2 * n16, "the bf16 logits");
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < stride; c++) {
            size_t i = (size_t)r * classes + c;
            h_bits[(size_t)r * stride + c] = c < classes ? lb_bf16_bits(h_x[i]) : lb_bf16_bits(1.0f); /* padding: not 0 */
            if (c < classes) h_x[i] = lb_bf16_value(h_bits[(size_t)r * stride + c]);
        }
    want_loss = cross_entropy_cpu(h_x, h_y, h_ref, row_max, rows, classes, &loss_tol);
    uint16_t *d_x16;
    CUDA_CHECK(lb_malloc_guarded((void **)&d_x16, 2 * n16)); /* NaN past the end: an over-read fails */
    bf16_job bj = {d_x16, d_y, d_loss, d_row_loss, rows, classes, stride};
    lb_poison_device(d_loss, sizeof(float));
    CUDA_CHECK(cudaMemcpy(d_x16, h_bits, 2 * n16, cudaMemcpyHostToDevice));
    CUDA_CHECK(run_bf16(&bj));
    CUDA_CHECK(cudaMemcpy(h_bits, d_x16, 2 * n16, cudaMemcpyDeviceToHost));
    size_t pad_bad = 0;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < stride; c++) {
            uint16_t b = h_bits[(size_t)r * stride + c];
            if (c < classes) h_grad[(size_t)r * classes + c] = lb_bf16_value(b);
            else pad_bad += b != 0;
        }
    ce_tol tol = {h_x, row_max, h_ref, h_y, rows, classes};
    bf16_ce_tol btol = {&tol};
    lb_check cb = lb_check_f32_bound("bf16", h_grad, h_ref, n, bf16_grad_tolerance, &btol, args->quiet);
    float got_loss;
    CUDA_CHECK(cudaMemcpy(&got_loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
    int loss_ok = fabs((double)got_loss - want_loss) <= loss_tol; /* NaN fails */
    if (!loss_ok && !args->quiet)
        fprintf(stderr, "  bf16: loss %.9g, want %.9g (tolerance %.2g)\n", got_loss, want_loss, loss_tol);
    if (pad_bad && !args->quiet) fprintf(stderr, "  bf16: %zu padded columns of the gradient not 0\n", pad_bad);
    char verdict[96], grad_verdict[64];
    snprintf(verdict, sizeof verdict, "%s%s%s", lb_check_summary(&cb, grad_verdict, sizeof grad_verdict),
             loss_ok ? "" : ", loss FAIL", pad_bad ? ", padding FAIL" : "");
    /* timed in place too: each run reads what the last wrote (other values, the same bytes) */
    float ms = args->check_only ? 0.0f : lb_time_ms(run_bf16, &bj, 2, args->iters);
    lb_report_item(rep, "fused_smem_bf16", "4 on bf16 logits, bf16 gradient", ms,
                   ms > 0 ? 4.0 * (double)n / (ms * 1e6) : 0.0, cb.n_bad == 0 && loss_ok && !pad_bad, verdict);
    CUDA_CHECK(cudaFree(d_x16));
    free(h_bits);
}

/* ---------------------------------------------------------------- main */

static double amplitude = 10.0;
static const lb_opt opts[] = {
    {"--amplitude", LB_OPT_DOUBLE, &amplitude, "the logits uniform in [-value, value]"},
};
static const lb_program program = {
    .name = "cross_entropy",
    .synopsis = "the mean cross-entropy over a vocabulary and its gradient: unfused, fused in three passes, online, "
                "the row in shared memory, against cudaMemcpy",
    .details = "--size is ROWSxCLASSES (default 8192x50304), CLASSES at most 57344.\n"
               "Version 1 takes -log of a probability: past --amplitude 40 or so a label's probability can\n"
               "underflow to 0 and its loss is inf (FAIL); the fused versions take log s + m - x[y], which cannot.\n",
    .uses = LB_USE_ALL & ~LB_USE_BLOCK,
    .opts = opts,
    .n_opts = sizeof opts / sizeof opts[0],
    .versions = versions,
    .n_versions = CE_VERSIONS,
};

int main(int argc, char **argv)
{
    /* ---- setup: arguments (checked before the GPU is touched), GPU, inputs */
    lb_args args = {.size = {{8192, 50304}, 2}, .max_size_dims = 2, .iters = 10, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    int rows, classes;
    lb_size_rows_cols(&program, &args, CE_MAX_CLASSES, "classes", &rows, &classes);
    if (!(amplitude >= 0.0 && amplitude <= 1e6)) lb_usage_error(&program, "--amplitude must be 0..1e6");
    size_t n = (size_t)rows * classes, bytes = n * sizeof(float);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    /* logits, gradient, version 1's probabilities, the bf16 logits (rows padded to 8); the floor's
     * two buffers when timing */
    lb_require_device_memory(3 * bytes + (size_t)rows * ((classes + 7) / 8 * 8) * 2 + (args.check_only ? 0 : 2 * bytes),
                             "the logits, gradient and probabilities");
    if (!args.quiet)
        printf("cross_entropy: mean loss and its gradient, fp32, %d rows x %d classes, logits in [-%g, %g], %s (%s), "
               "seed %llu\n",
               rows, classes, amplitude, amplitude, gpu.prop.name, gpu.sm, args.seed);

    float *h_x = lb_host_alloc(bytes, "the logits"), *h_grad = lb_host_alloc(bytes, "the gradient"),
          *h_ref = lb_host_alloc(bytes, "the reference");
    int *h_y = lb_host_alloc(sizeof(int) * rows, "the labels");
    double *row_max = lb_host_alloc(sizeof(double) * rows, "the rows' max");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_x, n, (float)-amplitude, (float)amplitude, &rng);
    for (int r = 0; r < rows; r++) h_y[r] = (int)(lb_rng_next(&rng) % (uint64_t)classes);
    double loss_tol, want_loss = cross_entropy_cpu(h_x, h_y, h_ref, row_max, rows, classes, &loss_tol);

    float *d_x, *d_grad, *d_probs, *d_row_loss, *d_loss;
    int *d_y;
    CUDA_CHECK(lb_malloc_guarded((void **)&d_x, bytes)); /* NaN past the end: an over-read fails */
    CUDA_CHECK(cudaMalloc((void **)&d_grad, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_probs, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_row_loss, sizeof(float) * rows));
    CUDA_CHECK(cudaMalloc((void **)&d_loss, sizeof(float)));
    CUDA_CHECK(lb_malloc_guarded((void **)&d_y, sizeof(int) * rows)); /* -1 past the end */
    CUDA_CHECK(cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_y, h_y, sizeof(int) * rows, cudaMemcpyHostToDevice));

    /* ---- check and time each version against the copy of the same bytes */
    char sz[48];
    snprintf(sz, sizeof sz, "%dx%d", rows, classes);
    lb_report rep = lb_report_vs_memcpy(&program, &args);
    lb_report_table(&rep, sz, NULL);
    double moved = 2.0 * (double)bytes; /* the logits read once, the gradient written once */
    lb_report_memcpy_version(&rep, (size_t)moved);
    ce_tol tol = {h_x, row_max, h_ref, h_y, rows, classes};
    for (int v = 1; v < CE_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        lb_poison_device(d_grad, bytes); /* an element never written stays NaN and fails */
        lb_poison_device(d_loss, sizeof(float));
        ce_job job = {v, d_x, d_y, d_grad, d_loss, d_row_loss, d_probs, rows, classes};
        CUDA_CHECK(run_kernel(&job));
        float got_loss;
        CUDA_CHECK(cudaMemcpy(h_grad, d_grad, bytes, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&got_loss, d_loss, sizeof(float), cudaMemcpyDeviceToHost));
        lb_check c = lb_check_f32_bound(versions[v].name, h_grad, h_ref, n, grad_tolerance, &tol, args.quiet);
        double loss_err = fabs((double)got_loss - want_loss);
        int loss_ok = loss_err <= loss_tol; /* NaN fails */
        if (!loss_ok && !args.quiet)
            fprintf(stderr, "  %s: loss %.9g, want %.9g (tolerance %.2g)\n", versions[v].name, got_loss, want_loss,
                    loss_tol);
        char verdict[96], grad_verdict[64];
        snprintf(verdict, sizeof verdict, "%s%s", lb_check_summary(&c, grad_verdict, sizeof grad_verdict),
                 loss_ok ? "" : ", loss FAIL");
        float ms = args.check_only ? 0.0f : lb_time_ms(run_kernel, &job, 2, args.iters);
        lb_report_row(&rep, v, NULL, ms, ms > 0 ? moved / (ms * 1e6) : 0.0, c.n_bad == 0 && loss_ok, verdict);
    }

    if (ce_shared_bytes_bf16(classes) <= gpu.prop.sharedMemPerBlockOptin)
        bf16_item(&rep, &args, h_x, h_y, h_grad, h_ref, row_max, d_y, d_loss, d_row_loss, rows, classes);
    else if (!args.quiet)
        printf("fused_smem_bf16: not run (%zu bytes of shared memory a block: more than this GPU's)\n",
               ce_shared_bytes_bf16(classes));

    free(h_x);
    free(h_grad);
    free(h_ref);
    free(h_y);
    free(row_max);
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_grad));
    CUDA_CHECK(cudaFree(d_probs));
    CUDA_CHECK(cudaFree(d_row_loss));
    CUDA_CHECK(cudaFree(d_loss));
    CUDA_CHECK(cudaFree(d_y));
    return lb_report_finish(&rep);
}
