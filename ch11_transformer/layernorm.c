/* layernorm.c - LayerNorm along each row, the normalization of every transformer block:
 * forward as two passes, Welford in one, and the row in registers; RMSNorm; and the backward
 * pass (dX, dgamma, dbeta), each checked against the CPU in double and timed against a
 * device-to-device cudaMemcpy of the bytes it must move.
 *
 *   X, Y are rows x cols floats, row-major (default 16384 x 4096); X = --offset + uniform in
 *   [-1, 1) from --seed (a large offset is what breaks E[x^2] - mean^2); gamma in [0.5, 1.5),
 *   beta in [-0.5, 0.5), dY uniform in [-1, 1).
 *   build: make ch11 (or `make` here)   run: ./layernorm [version] [--size ROWSxCOLS] [--offset O]
 *
 * versions: the table versions[] below (0 the copy, 1 two passes, 2 Welford, 3 the row in
 * registers), listed by ./layernorm --help; then RMSNorm, the backward pass, the one-read
 * backward added to a residual's gradient R (backward_add: R + dX, and the same in bf16), and
 * version 3 writing bf16 (forward_bf16) as rows of their own. The kernels are in
 * layernorm_kernels.cu.
 * GB/s: forward and RMSNorm 2 x rows x cols x 4 bytes (X read, Y written); backward 3 x that
 * (dY and X read, dX written); backward_add 4.5 x (dY, X, R read, R + dX written in fp32 and
 * bf16); forward_bf16 1.5 x.
 */
#include "labbook.h"
#include "layernorm_kernels.h"

#include <math.h>
#include <string.h>

#define EPS_F 5.96e-8 /* a float's half ulp at 1, 2^-24 */

/* ---------------------------------------------------------------- CPU reference and bounds */

/* Every sum of a row is taken by a block of 256 threads or more: each thread's share (cols / 256
 * terms at most), then trees of 32 and 8; its roundings add like a random walk: 8 sqrt(chain)
 * ulps of the sum of the terms' sizes */
static double chain_ulps(int n) { return 8.0 * sqrt(n / 256.0 + 64.0); }

typedef struct {
    int rows, cols;
    const float *x, *gamma, *beta, *dy;
    double *mean, *rstd, *e_mean; /* each row's mean, 1 / std, and the bound on the mean's error */
} ln_data;

/* Forward in double: Y, and every row's mean and rstd; e_mean[r], the float mean's error bound:
 * chain_ulps of the sum of |x|, plus its own rounding */
static void layernorm_cpu(ln_data *d, float *y, float *y_rms)
{
    int cols = d->cols;
    for (int r = 0; r < d->rows; r++) {
        const float *xr = d->x + (size_t)r * cols;
        double s = 0.0, a = 0.0, q = 0.0, sq = 0.0;
        for (int c = 0; c < cols; c++) s += xr[c], a += fabs((double)xr[c]), sq += (double)xr[c] * xr[c];
        double mean = s / cols;
        for (int c = 0; c < cols; c++) q += ((double)xr[c] - mean) * ((double)xr[c] - mean);
        double rstd = 1.0 / sqrt(q / cols + (double)LN_EPS), rr = 1.0 / sqrt(sq / cols + (double)LN_EPS);
        for (int c = 0; c < cols; c++) {
            y[(size_t)r * cols + c] = (float)(((double)xr[c] - mean) * rstd * d->gamma[c] + d->beta[c]);
            y_rms[(size_t)r * cols + c] = (float)((double)xr[c] * rr * d->gamma[c]);
        }
        d->mean[r] = mean, d->rstd[r] = rstd;
        d->e_mean[r] = EPS_F * (chain_ulps(cols) * a / cols + 2.0 * fabs(mean));
    }
}

/* One forward output's bound: the normalized value's roundings (the sums', rsqrt's, a few more)
 * relative to |xh gamma|; the mean's error through rstd and gamma; the last add of beta */
typedef struct {
    const ln_data *d;
    const float *want;
    int rms;
} fwd_tol;
static double forward_tolerance(size_t i, const void *ctx)
{
    const fwd_tol *t = (const fwd_tol *)ctx;
    const ln_data *d = t->d;
    size_t r = i / (size_t)d->cols;
    int c = (int)(i % (size_t)d->cols);
    double k = chain_ulps(d->cols) + 16.0, g = fabs((double)d->gamma[c]);
    if (t->rms) return EPS_F * k * fabs((double)t->want[i]) + 1e-30;
    double xh = ((double)d->x[i] - d->mean[r]) * d->rstd[r];
    return EPS_F * (k * fabs(xh) * g + 4.0 * (fabs((double)t->want[i]) + fabs((double)d->beta[c]))) +
           g * d->rstd[r] * d->e_mean[r] + 1e-30;
}

/* Backward in double: dX, dgamma, dbeta, and their bounds (dx_tol per element, dg_tol and db_tol
 * per column, for column sums of `group` rows at a time). dX = rstd (dxh - m1 - xh m2), m1 = mean(dxh), m2 = mean(dxh xh), dxh = dy gamma:
 * each sum within chain_ulps of its terms' sizes, and xh off by rstd e_mean (the float mean's
 * error) wherever it appears. */
static void layernorm_backward_cpu(const ln_data *d, float *dx, double *dx_tol, float *dg, float *db, double *dg_tol,
                                   double *db_tol, int group)
{
    int rows = d->rows, cols = d->cols;
    /* a column's sum: `group` rows in turn, then the groups' sums (in 32 lanes of every 32nd
     * group, then the lanes in turn: chains no longer than the groups' count, as bounded here) */
    double k = chain_ulps(cols) + 16.0, k_rows = 8.0 * sqrt((double)rows / group + group + 64.0) + 16.0;
    double *sg = calloc((size_t)cols, sizeof(double)), *sb = calloc((size_t)cols, sizeof(double));
    double *ag = calloc((size_t)cols, sizeof(double)), *ab = calloc((size_t)cols, sizeof(double));
    double *ex = calloc((size_t)cols, sizeof(double));
    if (!sg || !sb || !ag || !ab || !ex) lb_die(LB_EXIT_CUDA, "layernorm: out of host memory for the column sums");
    for (int r = 0; r < rows; r++) {
        size_t off = (size_t)r * cols;
        double mu = d->mean[r], rs = d->rstd[r], e_xh = rs * d->e_mean[r], m1 = 0, m2 = 0, a1 = 0, a2 = 0;
        for (int c = 0; c < cols; c++) {
            double xh = ((double)d->x[off + c] - mu) * rs, dxh = (double)d->dy[off + c] * d->gamma[c];
            m1 += dxh, m2 += dxh * xh, a1 += fabs(dxh), a2 += fabs(dxh * xh);
            sg[c] += d->dy[off + c] * xh, sb[c] += d->dy[off + c];
            ag[c] += fabs(d->dy[off + c] * xh), ab[c] += fabs((double)d->dy[off + c]);
            ex[c] += fabs((double)d->dy[off + c]) * e_xh;
        }
        m1 /= cols, m2 /= cols, a1 /= cols, a2 /= cols;
        for (int c = 0; c < cols; c++) {
            double xh = ((double)d->x[off + c] - mu) * rs, dxh = (double)d->dy[off + c] * d->gamma[c];
            double v = rs * (dxh - m1 - xh * m2);
            dx[off + c] = (float)v;
            dx_tol[off + c] = rs * (EPS_F * (16.0 * fabs(dxh) + k * a1 + k * fabs(xh) * a2) + fabs(xh) * a1 * e_xh +
                                    fabs(m2) * e_xh) +
                              EPS_F * k * fabs(v) + 1e-30;
        }
    }
    for (int c = 0; c < cols; c++) {
        dg[c] = (float)sg[c], db[c] = (float)sb[c];
        dg_tol[c] = EPS_F * k_rows * ag[c] + ex[c] + 1e-30;
        db_tol[c] = EPS_F * k_rows * ab[c] + 1e-30;
    }
    free(sg), free(sb), free(ag), free(ab), free(ex);
}

static double array_tolerance(size_t i, const void *ctx) { return ((const double *)ctx)[i]; }
/* an output rounded to bf16 (half an ulp: up to 2^-8 of its size, 8 significant bits) after the
 * float result's own bound */
typedef struct {
    double (*bound)(size_t i, const void *ctx); /* the float result's */
    const void *ctx;
    const float *want;
} bf16_tol;
static double bf16_tolerance(size_t i, const void *ctx)
{
    const bf16_tol *t = (const bf16_tol *)ctx;
    double e = t->bound(i, t->ctx);
    return e + 0x1p-8 * (fabs((double)t->want[i]) + e);
}

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int version;
    const float *d_x, *d_gamma, *d_beta;
    float *d_y, *d_mean, *d_rstd;
    int rows, cols;
} ln_job;

static cudaError_t run_forward(void *ctx)
{
    ln_job *j = (ln_job *)ctx;
    return layernorm_forward_launch(j->version, j->d_x, j->d_gamma, j->d_beta, j->d_y, j->d_mean, j->d_rstd, j->rows,
                                    j->cols);
}
static cudaError_t run_rms(void *ctx)
{
    ln_job *j = (ln_job *)ctx;
    return rmsnorm_forward_launch(j->d_x, j->d_gamma, j->d_y, j->d_rstd, j->rows, j->cols);
}
typedef struct {
    const float *d_dy, *d_x, *d_mean, *d_rstd, *d_gamma;
    float *d_dx, *d_dgamma, *d_dbeta, *d_partial;
    int rows, cols;
} ln_backward_job;
static cudaError_t run_backward(void *ctx)
{
    ln_backward_job *j = (ln_backward_job *)ctx;
    return layernorm_backward_launch(j->d_dy, j->d_x, j->d_mean, j->d_rstd, j->d_gamma, j->d_dx, j->d_dgamma,
                                     j->d_dbeta, j->d_partial, j->rows, j->cols);
}
/* the one-read backward adding into dX (a residual's gradient) and writing the sum in bf16 too;
 * timed, it adds again each run: the bytes are the same */
typedef struct {
    ln_backward_job b;
    uint16_t *d_dx16;
    float *d_dsum; /* the new dX's column sums (ch12: the bias gradient of the product before) */
} ln_backward_add_job;
static cudaError_t run_backward_add(void *ctx)
{
    ln_backward_add_job *j = (ln_backward_add_job *)ctx;
    return layernorm_backward_add_launch(j->b.d_dy, j->b.d_x, j->b.d_mean, j->b.d_rstd, j->b.d_gamma, j->b.d_dx,
                                         j->d_dx16, j->b.d_dgamma, j->b.d_dbeta, j->d_dsum, j->b.d_partial, j->b.rows,
                                         j->b.cols);
}
typedef struct {
    ln_job f;
    uint16_t *d_y16;
} ln_bf16_job;
static cudaError_t run_forward_bf16(void *ctx)
{
    ln_bf16_job *j = (ln_bf16_job *)ctx;
    return layernorm_forward_bf16_launch(j->f.d_x, j->f.d_gamma, j->f.d_beta, j->d_y16, j->f.d_mean, j->f.d_rstd,
                                         j->f.rows, j->f.cols);
}
/* n bf16 results from the device, as floats */
static void fetch_bf16(float *out, const uint16_t *d_bits, uint16_t *scratch, size_t n)
{
    CUDA_CHECK(cudaMemcpy(scratch, d_bits, 2 * n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) out[i] = lb_bf16_value(scratch[i]);
}

/* Every version of the forward pass: number, RESULT name, title, oldest GPU, what runs it.
 * Version 0 is the device-to-device copy of as many bytes, the floor. To add a version: the
 * kernel and its launcher in layernorm_kernels.cu (and in launchers[]), LN_VERSIONS in
 * layernorm_kernels.h, and a row here. */
static const lb_version versions[] = {
    {0, "memcpy", "cudaMemcpy D2D (the floor)", LB_OLDEST_SM, NULL},
    {1, "two_pass", "a block per row, two passes", LB_OLDEST_SM, run_forward},
    {2, "welford", "Welford in one pass", LB_OLDEST_SM, run_forward},
    {3, "registers", "the row in registers", LB_OLDEST_SM, run_forward},
};
_Static_assert(sizeof versions / sizeof versions[0] == LN_VERSIONS,
               "one row in versions[] per version: LN_VERSIONS in layernorm_kernels.h");

/* ---------------------------------------------------------------- main */

static double offset = 0.0;
static const lb_opt opts[] = {
    {"--offset", LB_OPT_DOUBLE, &offset, "X = offset + uniform in [-1, 1) (1000: a row's mean far from its spread)"},
};
static const lb_program program = {
    .name = "layernorm",
    .synopsis = "LayerNorm along rows: two passes, Welford, the row in registers; RMSNorm; the backward pass with "
                "dgamma and dbeta; against cudaMemcpy",
    .details = "--size is ROWSxCOLS (default 16384x4096; N alone: N x N), COLS at most 32768.\n"
               "RMSNorm and the backward pass run with every version (they have one each); so do the one-read\n"
               "backward that adds dX to a residual's gradient and writes it in bf16 too, and version 3 writing\n"
               "bf16 (ch12's GPT uses both).\n",
    .uses = LB_USE_ALL & ~LB_USE_BLOCK,
    .opts = opts,
    .n_opts = sizeof opts / sizeof opts[0],
    .versions = versions,
    .n_versions = LN_VERSIONS,
};

int main(int argc, char **argv)
{
    /* ---- setup: arguments (checked before the GPU is touched), GPU, inputs */
    lb_args args = {.size = {{16384, 4096}, 2}, .max_size_dims = 2, .iters = 20, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    int rows, cols;
    lb_size_rows_cols(&program, &args, LN_MAX_COLS, "columns", &rows, &cols);
    if (!(fabs(offset) <= 1e6)) lb_usage_error(&program, "--offset must be in [-1e6, 1e6]");
    size_t n = (size_t)rows * cols, bytes = n * sizeof(float);
    /* the column sums' partials: of LN_ROWS_PER_GROUP rows, or of LN_BWD_ROWS (fewer: more partials) */
    int groups_add = (rows + LN_BWD_ROWS - 1) / LN_BWD_ROWS;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    /* X, Y, dY, dX, the bf16 outputs, the column sums' partials; the floor's two buffers (the
     * backward's 3 x) */
    lb_require_device_memory(5 * bytes + 3 * (size_t)groups_add * cols * 4 + (args.check_only ? 0 : 3 * bytes),
                             "the rows");
    if (!args.quiet)
        printf("layernorm: fp32, %d x %d, X = %g + [-1, 1), %s (%s), seed %llu\n", rows, cols, offset, gpu.prop.name,
               gpu.sm, args.seed);

    float *h_x = lb_host_alloc(bytes, "X"), *h_dy = lb_host_alloc(bytes, "dY"), *h_got = lb_host_alloc(bytes, "results");
    float *h_y = lb_host_alloc(bytes, "Y"), *h_rms = lb_host_alloc(bytes, "RMSNorm's Y"), *h_dx = lb_host_alloc(bytes, "dX");
    float *h_gamma = lb_host_alloc(4 * (size_t)cols, "gamma"), *h_beta = lb_host_alloc(4 * (size_t)cols, "beta");
    float *h_dg = lb_host_alloc(4 * (size_t)cols, "dgamma"), *h_db = lb_host_alloc(4 * (size_t)cols, "dbeta");
    double *dx_tol = lb_host_alloc(8 * n, "dX's bounds"), *dg_tol = lb_host_alloc(8 * (size_t)cols, "bounds"),
           *db_tol = lb_host_alloc(8 * (size_t)cols, "bounds"), *dg_tol16 = lb_host_alloc(8 * (size_t)cols, "bounds"),
           *db_tol16 = lb_host_alloc(8 * (size_t)cols, "bounds");
    float *h_res = lb_host_alloc(bytes, "the residual's gradient");
    uint16_t *h_bits = lb_host_alloc(n * 2, "bf16 results");
    ln_data d = {rows, cols, h_x, h_gamma, h_beta, h_dy, lb_host_alloc(8 * (size_t)rows, "means"),
                 lb_host_alloc(8 * (size_t)rows, "rstd"), lb_host_alloc(8 * (size_t)rows, "bounds")};
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    for (size_t i = 0; i < n; i++) h_x[i] = (float)(offset + lb_rng_uniform(&rng, -1.0f, 1.0f));
    lb_fill_uniform(h_gamma, (size_t)cols, 0.5f, 1.5f, &rng);
    lb_fill_uniform(h_beta, (size_t)cols, -0.5f, 0.5f, &rng);
    lb_fill_uniform(h_dy, n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(h_res, n, -1.0f, 1.0f, &rng);
    layernorm_cpu(&d, h_y, h_rms);
    layernorm_backward_cpu(&d, h_dx, dx_tol, h_dg, h_db, dg_tol16, db_tol16, LN_BWD_ROWS);
    layernorm_backward_cpu(&d, h_dx, dx_tol, h_dg, h_db, dg_tol, db_tol, LN_ROWS_PER_GROUP);

    float *d_x, *d_y, *d_dy, *d_dx, *d_gamma, *d_beta, *d_mean, *d_rstd, *d_dg, *d_db, *d_ds, *d_partial;
    uint16_t *d_y16;
    /* the inputs with NaN past their ends: a kernel that reads past one fails */
    CUDA_CHECK(lb_malloc_guarded((void **)&d_x, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_y, bytes));
    CUDA_CHECK(lb_malloc_guarded((void **)&d_dy, bytes));
    CUDA_CHECK(lb_malloc_guarded((void **)&d_dx, bytes)); /* backward_add reads it (R) */
    CUDA_CHECK(lb_malloc_guarded((void **)&d_gamma, 4 * (size_t)cols));
    CUDA_CHECK(lb_malloc_guarded((void **)&d_beta, 4 * (size_t)cols));
    CUDA_CHECK(cudaMalloc((void **)&d_dg, 4 * (size_t)cols));
    CUDA_CHECK(cudaMalloc((void **)&d_db, 4 * (size_t)cols));
    CUDA_CHECK(cudaMalloc((void **)&d_ds, 4 * (size_t)cols));
    CUDA_CHECK(cudaMalloc((void **)&d_mean, 4 * (size_t)rows));
    CUDA_CHECK(cudaMalloc((void **)&d_rstd, 4 * (size_t)rows));
    CUDA_CHECK(cudaMalloc((void **)&d_partial, 3 * (size_t)groups_add * cols * 4));
    CUDA_CHECK(cudaMalloc((void **)&d_y16, n * 2));
    CUDA_CHECK(cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_dy, h_dy, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_gamma, h_gamma, 4 * (size_t)cols, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_beta, h_beta, 4 * (size_t)cols, cudaMemcpyHostToDevice));

    /* ---- the forward versions against the copy of the same bytes */
    char sz[48];
    snprintf(sz, sizeof sz, "%dx%d", rows, cols);
    lb_report rep = lb_report_vs_memcpy(&program, &args);
    lb_report_table(&rep, sz, NULL);
    double moved = 2.0 * (double)bytes;
    lb_report_memcpy_version(&rep, (size_t)moved);
    fwd_tol ftol = {&d, h_y, 0};
    char verdict[64];
    ln_job job = {0, d_x, d_gamma, d_beta, d_y, d_mean, d_rstd, rows, cols};
    for (int v = 1; v < LN_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        lb_poison_device(d_y, bytes);
        job.version = v;
        CUDA_CHECK(run_forward(&job));
        CUDA_CHECK(cudaMemcpy(h_got, d_y, bytes, cudaMemcpyDeviceToHost));
        lb_check c = lb_check_f32_bound(versions[v].name, h_got, h_y, n, forward_tolerance, &ftol, args.quiet);
        float ms = args.check_only ? 0.0f : lb_time_ms(run_forward, &job, 2, args.iters);
        lb_report_row(&rep, v, NULL, ms, ms > 0 ? moved / (ms * 1e6) : 0.0, c.n_bad == 0,
                      lb_check_summary(&c, verdict, sizeof verdict));
    }

    /* ---- RMSNorm, and the backward pass from the forward's saved mean and rstd (version 3's) */
    lb_poison_device(d_y, bytes);
    CUDA_CHECK(run_rms(&job));
    CUDA_CHECK(cudaMemcpy(h_got, d_y, bytes, cudaMemcpyDeviceToHost));
    fwd_tol rtol = {&d, h_rms, 1};
    lb_check c = lb_check_f32_bound("rmsnorm", h_got, h_rms, n, forward_tolerance, &rtol, args.quiet);
    float ms = args.check_only ? 0.0f : lb_time_ms(run_rms, &job, 2, args.iters);
    lb_report_item(&rep, "rmsnorm", "RMSNorm, the row in registers", ms, ms > 0 ? moved / (ms * 1e6) : 0.0,
                   c.n_bad == 0, lb_check_summary(&c, verdict, sizeof verdict));

    job.version = 3;
    CUDA_CHECK(run_forward(&job)); /* the mean and rstd the backward pass reads */
    ln_backward_job bj = {d_dy, d_x, d_mean, d_rstd, d_gamma, d_dx, d_dg, d_db, d_partial, rows, cols};
    lb_poison_device(d_dx, bytes);
    lb_poison_device(d_dg, 4 * (size_t)cols);
    lb_poison_device(d_db, 4 * (size_t)cols);
    CUDA_CHECK(run_backward(&bj));
    CUDA_CHECK(cudaMemcpy(h_got, d_dx, bytes, cudaMemcpyDeviceToHost));
    lb_check cb = lb_check_f32_bound("dX", h_got, h_dx, n, array_tolerance, dx_tol, args.quiet);
    CUDA_CHECK(cudaMemcpy(h_got, d_dg, 4 * (size_t)cols, cudaMemcpyDeviceToHost));
    cb.n_bad += lb_check_f32_bound("dgamma", h_got, h_dg, (size_t)cols, array_tolerance, dg_tol, args.quiet).n_bad;
    CUDA_CHECK(cudaMemcpy(h_got, d_db, 4 * (size_t)cols, cudaMemcpyDeviceToHost));
    cb.n_bad += lb_check_f32_bound("dbeta", h_got, h_db, (size_t)cols, array_tolerance, db_tol, args.quiet).n_bad;
    ms = args.check_only ? 0.0f : lb_time_ms(run_backward, &bj, 2, args.iters);
    lb_report_item(&rep, "backward", "backward: dX, dgamma, dbeta", ms, ms > 0 ? 1.5 * moved / (ms * 1e6) : 0.0,
                   cb.n_bad == 0, lb_check_summary(&cb, verdict, sizeof verdict));

    /* ---- the one-read backward (ch12's): dX added to a residual's gradient R already in d_dx,
     * the sum written in bf16 too, and its column sums; against R + dX (the add's rounding and,
     * for bf16, half an ulp of it added to dX's bound) and the sums of R + dX's columns in double
     * (each element's bound, and fp32's rounding over the partial sums as for dbeta) */
    ln_backward_add_job aj = {bj, d_y16, d_ds};
    CUDA_CHECK(cudaMemcpy(d_dx, h_res, bytes, cudaMemcpyHostToDevice));
    lb_poison_device(d_y16, n * 2);
    lb_poison_device(d_dg, 4 * (size_t)cols);
    lb_poison_device(d_db, 4 * (size_t)cols);
    lb_poison_device(d_ds, 4 * (size_t)cols);
    CUDA_CHECK(run_backward_add(&aj));
    double *sum_c = calloc(3 * (size_t)cols, sizeof(double)), *abs_c = sum_c + cols, *ds_tol = abs_c + cols;
    float *h_ds = lb_host_alloc(4 * (size_t)cols, "the column sums");
    if (!sum_c) lb_die(LB_EXIT_CUDA, "layernorm: out of host memory for the column sums");
    for (size_t i = 0; i < n; i++) {
        double sum = (double)h_res[i] + h_dx[i];
        dx_tol[i] += EPS_F * (fabs((double)h_dx[i]) + 2.0 * fabs(sum)); /* h_dx's rounding, the add's */
        h_dx[i] = (float)sum;
        sum_c[i % cols] += sum, abs_c[i % cols] += fabs(sum), ds_tol[i % cols] += dx_tol[i];
    }
    double k_rows = 8.0 * sqrt((double)rows / LN_BWD_ROWS + LN_BWD_ROWS + 64.0) + 16.0;
    for (int c = 0; c < cols; c++) h_ds[c] = (float)sum_c[c], ds_tol[c] += EPS_F * k_rows * abs_c[c] + 1e-30;
    CUDA_CHECK(cudaMemcpy(h_got, d_dx, bytes, cudaMemcpyDeviceToHost));
    lb_check ca = lb_check_f32_bound("R + dX", h_got, h_dx, n, array_tolerance, dx_tol, args.quiet);
    fetch_bf16(h_got, d_y16, h_bits, n);
    bf16_tol atol16 = {array_tolerance, dx_tol, h_dx};
    ca.n_bad += lb_check_f32_bound("R + dX in bf16", h_got, h_dx, n, bf16_tolerance, &atol16, args.quiet).n_bad;
    CUDA_CHECK(cudaMemcpy(h_got, d_dg, 4 * (size_t)cols, cudaMemcpyDeviceToHost));
    ca.n_bad += lb_check_f32_bound("dgamma", h_got, h_dg, (size_t)cols, array_tolerance, dg_tol16, args.quiet).n_bad;
    CUDA_CHECK(cudaMemcpy(h_got, d_db, 4 * (size_t)cols, cudaMemcpyDeviceToHost));
    ca.n_bad += lb_check_f32_bound("dbeta", h_got, h_db, (size_t)cols, array_tolerance, db_tol16, args.quiet).n_bad;
    CUDA_CHECK(cudaMemcpy(h_got, d_ds, 4 * (size_t)cols, cudaMemcpyDeviceToHost));
    ca.n_bad += lb_check_f32_bound("R + dX's column sums", h_got, h_ds, (size_t)cols, array_tolerance, ds_tol,
                                   args.quiet).n_bad;
    free(sum_c), free(h_ds);
    ms = args.check_only ? 0.0f : lb_time_ms(run_backward_add, &aj, 2, args.iters);
    /* dY, X and R read, dX written, its bf16 written: 4.5 x a forward's one way */
    lb_report_item(&rep, "backward_add", "backward in one read, + R, bf16 too, R's sums", ms,
                   ms > 0 ? 2.25 * moved / (ms * 1e6) : 0.0, ca.n_bad == 0, lb_check_summary(&ca, verdict, sizeof verdict));

    /* ---- version 3's forward writing bf16 (ch12's: the next product's operand) */
    ln_bf16_job fj = {job, d_y16};
    lb_poison_device(d_y16, n * 2);
    CUDA_CHECK(run_forward_bf16(&fj));
    fetch_bf16(h_got, d_y16, h_bits, n);
    bf16_tol ftol16 = {forward_tolerance, &ftol, h_y};
    lb_check cf = lb_check_f32_bound("Y in bf16", h_got, h_y, n, bf16_tolerance, &ftol16, args.quiet);
    ms = args.check_only ? 0.0f : lb_time_ms(run_forward_bf16, &fj, 2, args.iters);
    lb_report_item(&rep, "forward_bf16", "version 3, Y written in bf16", ms, ms > 0 ? 0.75 * moved / (ms * 1e6) : 0.0,
                   cf.n_bad == 0, lb_check_summary(&cf, verdict, sizeof verdict));

    free(h_x), free(h_dy), free(h_got), free(h_y), free(h_rms), free(h_dx), free(h_gamma), free(h_beta);
    free(h_dg), free(h_db), free(dx_tol), free(dg_tol), free(db_tol), free(dg_tol16), free(db_tol16), free(d.mean);
    free(d.rstd), free(d.e_mean), free(h_res), free(h_bits);
    CUDA_CHECK(cudaFree(d_y16));
    float *bufs[] = {d_x, d_y, d_dy, d_dx, d_gamma, d_beta, d_mean, d_rstd, d_dg, d_db, d_ds, d_partial};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) CUDA_CHECK(cudaFree(bufs[i]));
    return lb_report_finish(&rep);
}
