/* cublas_basics.c - cuBLAS levels 1, 2 and 3 from plain C, each checked against the CPU.
 *
 *   level 1   saxpy (y = a x + y), sdot, snrm2, isamax on vectors of --vec floats (default 2^24)
 *   level 2   sgemv: y = A x with A the GEMM's A, (M,K)
 *   level 3   sgemm and dgemm: C = A @ B, A is (M,K), B is (K,N), C is (M,N), row-major;
 *             default M,N,K = 5000,10000,10000 as in the book; --tf32 adds the tensor-core
 *             TF32 mode and prints what it costs in accuracy
 *   build: make ch07      run: ./cublas_basics [--size M,N,K] [--vec N] [--tf32]
 *
 * cuBLAS is column-major (Fortran order), our arrays row-major (C order); the trick that
 * reconciles them without copying is explained once, at gemm_row_major below.
 * Timing: the book timed cublasCreate together with the first GEMM; this program prints that
 * number and the GEMM alone (CUDA events, median after a warm-up), and says why they differ.
 */
#include <cublas_v2.h>
#include "labbook.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- CPU references */

static double dot_cpu(const float *x, const float *y, size_t n, double *abs_sum)
{
    double s = 0.0, a = 0.0;
    for (size_t i = 0; i < n; i++) {
        s += (double)x[i] * y[i];
        a += fabs((double)x[i] * y[i]);
    }
    *abs_sum = a;
    return s;
}

/* isamax: the first index (1-based, Fortran style) of the largest |x[i]| */
static int amax_cpu(const float *x, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (fabsf(x[i]) > fabsf(x[best])) best = i;
    return (int)best + 1;
}

/* one element of C = A @ B (row-major), in double */
static double gemm_elem_f(const float *A, const float *B, int N, int K, int r, int c)
{
    double acc = 0.0;
    for (int k = 0; k < K; k++) acc += (double)A[(size_t)r * K + k] * B[(size_t)k * N + c];
    return acc;
}
static long double gemm_elem_d(const double *A, const double *B, int N, int K, int r, int c)
{
    long double acc = 0.0L;
    for (int k = 0; k < K; k++) acc += (long double)A[(size_t)r * K + k] * B[(size_t)k * N + c];
    return acc;
}

/* ---------------------------------------------------------------- row-major calls */

/* cuBLAS reads a matrix as column-major: our row-major C (M,N) is, to it, C^T (N,M). Since
 * C^T = B^T A^T, asking cuBLAS for "B times A" with M and N swapped, on the same pointers
 * and with our row lengths as its leading dimensions, leaves exactly our row-major C. */
static cublasStatus_t sgemm_row_major(cublasHandle_t h, const float *d_a, const float *d_b, float *d_c, int M, int N,
                                      int K)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, d_b, N, d_a, K, &zero, d_c, N);
}
static cublasStatus_t dgemm_row_major(cublasHandle_t h, const double *d_a, const double *d_b, double *d_c, int M, int N,
                                      int K)
{
    const double one = 1.0, zero = 0.0;
    return cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, d_b, N, d_a, K, &zero, d_c, N);
}
/* y = A x with A row-major (M,K): cuBLAS sees A^T, column-major (K,M), so ask for the transpose */
static cublasStatus_t sgemv_row_major(cublasHandle_t h, const float *d_a, const float *d_x, float *d_y, int M, int K)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemv(h, CUBLAS_OP_T, K, M, &one, d_a, K, d_x, 1, &zero, d_y, 1);
}

/* ---------------------------------------------------------------- timing jobs */

typedef struct {
    cublasHandle_t h;
    int precision; /* 32 or 64 */
    const void *a, *b;
    void *c;
    int m, n, k;
} gemm_job;

static cudaError_t run_gemm(void *ctx)
{
    gemm_job *j = (gemm_job *)ctx;
    if (j->precision == 64)
        CUBLAS_CHECK(dgemm_row_major(j->h, j->a, j->b, j->c, j->m, j->n, j->k));
    else
        CUBLAS_CHECK(sgemm_row_major(j->h, j->a, j->b, j->c, j->m, j->n, j->k));
    return cudaGetLastError();
}

static double tflops(int m, int n, int k, double ms) { return 2.0 * m * n * (double)k / (ms * 1e9); }

/* ---------------------------------------------------------------- checks */

static int report(const char *what, int ok, int quiet, const char *fmt_detail, double detail)
{
    if (!quiet) {
        printf("  %-34s %s", what, ok ? "PASS" : "FAIL");
        if (fmt_detail) printf(fmt_detail, detail);
        printf("\n");
    }
    return ok;
}

/* Compare sampled rows and columns of a GEMM result (4 + 4, with the first row and the last
 * column) with the CPU; A, B, C are float, or double when `dbl`. atol is the absolute
 * tolerance; also returns the largest error and the largest |C| sampled (for a relative error). */
typedef struct {
    int ok;
    double max_err, max_ref;
} gemm_check;

static gemm_check check_gemm(int dbl, const void *A, const void *B, const void *C, int M, int N, int K, double atol,
                             lb_rng *rng, int quiet)
{
    gemm_check g = {1, 0.0, 0.0};
    int shown = 0;
    for (int s = 0; s < 8; s++) {
        int is_row = s < 4, idx = (int)(lb_rng_next(rng) % (uint64_t)(is_row ? M : N));
        if (s == 0) idx = 0;
        if (s == 4) idx = N - 1; /* the first row and the last column, always */
        int len = is_row ? N : M;
        for (int i = 0; i < len; i++) {
            int r = is_row ? idx : i, c = is_row ? i : idx;
            size_t at = (size_t)r * N + c;
            long double want = dbl ? gemm_elem_d(A, B, N, K, r, c) : gemm_elem_f(A, B, N, K, r, c);
            long double got = dbl ? ((const double *)C)[at] : ((const float *)C)[at];
            double err = (double)fabsl(got - want);
            if (!(err <= atol)) { /* NaN fails */
                if (!quiet && shown++ < 3) fprintf(stderr, "    C[%d][%d]: got %.15Lg, want %.15Lg\n", r, c, got, want);
                g.ok = 0;
            }
            if (err > g.max_err || err != err) g.max_err = err;
            if (fabsl(want) > g.max_ref) g.max_ref = (double)fabsl(want);
        }
    }
    return g;
}

/* ---------------------------------------------------------------- main */

static long long vec_n = 1 << 24;
static int use_tf32 = 0;
static const lb_opt options[] = {
    {"--vec", LB_OPT_I64, &vec_n, "length of the level-1 vectors"},
    {"--tf32", LB_OPT_FLAG, &use_tf32, "also run SGEMM in TF32 tensor-core mode and show its error"},
};
static const lb_program program = {
    .name = "cublas_basics",
    .synopsis = "cuBLAS levels 1-3 (saxpy, sdot, snrm2, isamax, sgemv, sgemm, dgemm) checked against the CPU",
    .details = "--size is the GEMM's M,N,K (or N for square); the GEMV uses the GEMM's A.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 2,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{5000, 10000, 10000}, 3}, .max_size_dims = 3, .iters = 10, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    int M, N, K;
    lb_size_mnk(&program, &args, &M, &N, &K);
    if (vec_n < 1 || vec_n > (1LL << 31) - 1)
        lb_usage_error(&program, "--vec must be 1..2^31-1 (cuBLAS counts in int)");
    size_t n = (size_t)vec_n, a_n = (size_t)M * K, b_n = (size_t)K * N, c_n = (size_t)M * N;

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    /* the largest set alive at once: the double-precision GEMM */
    size_t need = sizeof(double) * (a_n + b_n + c_n);
    if (sizeof(float) * 2 * n > need) need = sizeof(float) * 2 * n;
    lb_require_device_memory(need, "the matrices");
    if (!args.quiet)
        printf("cublas_basics: vectors of %zu, GEMM M=%d N=%d K=%d, %s (%s), seed %llu\n", n, M, N, K, gpu.prop.name,
               gpu.sm, args.seed);
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    int all_ok = 1;

    /* The book's timing: handle creation and the first GEMM together, by the host clock. The
     * matrices are uploaded first so that only cublasCreate + GEMM are inside. */
    float *h_a = lb_host_alloc(sizeof(float) * a_n, "A"), *h_b = lb_host_alloc(sizeof(float) * b_n, "B");
    float *h_c = lb_host_alloc(sizeof(float) * c_n, "C");
    lb_fill_uniform(h_a, a_n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(h_b, b_n, -1.0f, 1.0f, &rng);
    float *d_a, *d_b, *d_c;
    CUDA_CHECK(cudaMalloc((void **)&d_a, sizeof(float) * a_n));
    CUDA_CHECK(cudaMalloc((void **)&d_b, sizeof(float) * b_n));
    CUDA_CHECK(cudaMalloc((void **)&d_c, sizeof(float) * c_n));
    CUDA_CHECK(cudaMemcpy(d_a, h_a, sizeof(float) * a_n, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_b, h_b, sizeof(float) * b_n, cudaMemcpyHostToDevice));
    lb_poison_device(d_c, sizeof(float) * c_n);
    CUDA_CHECK(cudaDeviceSynchronize());

    double t0 = lb_wall_ms();
    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(sgemm_row_major(h, d_a, d_b, d_c, M, N, K));
    CUDA_CHECK(cudaDeviceSynchronize());
    double first_ms = lb_wall_ms() - t0;
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH)); /* plain fp32: no TF32 unless asked */

    /* ---- level 3, single precision: check the first result, then time */
    if (!args.quiet) printf("level 3\n");
    CUDA_CHECK(cudaMemcpy(h_c, d_c, sizeof(float) * c_n, cudaMemcpyDeviceToHost));
    /* fp32 sums of K products of values in [-1, 1]: rounding grows about like sqrt(K); K * 2^-22
     * is a few times the worst seen and far below the O(1) error of any wrong element */
    gemm_check gs = check_gemm(0, h_a, h_b, h_c, M, N, K, K * 2.384185791015625e-07, &rng, args.quiet);
    all_ok &=
        report("sgemm (8 rows/columns vs CPU)", gs.ok, args.quiet, " (max rel err %.1e)", gs.max_err / gs.max_ref);

    gemm_job js = {h, 32, d_a, d_b, d_c, M, N, K};
    float s_ms = 0.0f, tf_ms = 0.0f;
    gemm_check gt = {1, 0.0, 1.0};
    if (!args.check_only) s_ms = lb_time_ms(run_gemm, &js, 1, args.iters);

    if (use_tf32) {
        /* TF32: inputs rounded to 10 mantissa bits (2^-11 relative), products summed in fp32 on
         * the tensor cores. The error of a length-K sum of rounded products grows like sqrt(K):
         * allow 6 sqrt(K) 2^-11 (about 6 standard deviations for values in [-1, 1]). */
        CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
        lb_poison_device(d_c, sizeof(float) * c_n);
        CUDA_CHECK(run_gemm(&js));
        CUDA_CHECK(cudaMemcpy(h_c, d_c, sizeof(float) * c_n, cudaMemcpyDeviceToHost));
        gt = check_gemm(0, h_a, h_b, h_c, M, N, K, 6.0 * sqrt((double)K) * 4.8828125e-4, &rng, args.quiet);
        all_ok &= report("sgemm TF32 (8 rows/columns vs CPU)", gt.ok, args.quiet, " (max rel err %.1e)",
                         gt.max_err / gt.max_ref);
        if (!args.check_only) tf_ms = lb_time_ms(run_gemm, &js, 1, args.iters);
        CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
    }

    /* ---- level 2: y = A x with the same A */
    float *d_x, *d_y;
    CUDA_CHECK(cudaMalloc((void **)&d_x, sizeof(float) * K));
    CUDA_CHECK(cudaMalloc((void **)&d_y, sizeof(float) * M));
    float *h_x = lb_host_alloc(sizeof(float) * K, "x"), *h_y = lb_host_alloc(sizeof(float) * M, "y");
    float *h_yref = lb_host_alloc(sizeof(float) * M, "y reference");
    lb_fill_uniform(h_x, (size_t)K, -1.0f, 1.0f, &rng);
    CUDA_CHECK(cudaMemcpy(d_x, h_x, sizeof(float) * K, cudaMemcpyHostToDevice));
    lb_poison_device(d_y, sizeof(float) * M);
    CUBLAS_CHECK(sgemv_row_major(h, d_a, d_x, d_y, M, K));
    CUDA_CHECK(cudaMemcpy(h_y, d_y, sizeof(float) * M, cudaMemcpyDeviceToHost));
    for (int r = 0; r < M; r++) {
        double acc = 0.0;
        for (int k = 0; k < K; k++) acc += (double)h_a[(size_t)r * K + k] * h_x[k];
        h_yref[r] = (float)acc;
    }
    if (!args.quiet) printf("level 2\n");
    lb_check cv = lb_check_f32("sgemv", h_y, h_yref, (size_t)M, K * 2.384185791015625e-07, 1e-5, args.quiet);
    all_ok &= report("sgemv (every element vs CPU)", cv.n_bad == 0, args.quiet, " (max abs err %.1e)", cv.max_abs_err);
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    free(h_x);
    free(h_y);
    free(h_yref);
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_c));
    free(h_c);

    /* ---- level 3, double precision, from the same values */
    double *hd_a = lb_host_alloc(sizeof(double) * a_n, "A (double)"),
           *hd_b = lb_host_alloc(sizeof(double) * b_n, "B (double)");
    double *hd_c = lb_host_alloc(sizeof(double) * c_n, "C (double)");
    for (size_t i = 0; i < a_n; i++) hd_a[i] = h_a[i];
    for (size_t i = 0; i < b_n; i++) hd_b[i] = h_b[i];
    free(h_a);
    free(h_b);
    double *dd_a, *dd_b, *dd_c;
    CUDA_CHECK(cudaMalloc((void **)&dd_a, sizeof(double) * a_n));
    CUDA_CHECK(cudaMalloc((void **)&dd_b, sizeof(double) * b_n));
    CUDA_CHECK(cudaMalloc((void **)&dd_c, sizeof(double) * c_n));
    CUDA_CHECK(cudaMemcpy(dd_a, hd_a, sizeof(double) * a_n, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dd_b, hd_b, sizeof(double) * b_n, cudaMemcpyHostToDevice));
    lb_poison_device(dd_c, sizeof(double) * c_n);
    gemm_job jd = {h, 64, dd_a, dd_b, dd_c, M, N, K};
    CUDA_CHECK(run_gemm(&jd));
    CUDA_CHECK(cudaMemcpy(hd_c, dd_c, sizeof(double) * c_n, cudaMemcpyDeviceToHost));
    /* products of fp32 values are exact in double; K * 2^-50 bounds the sum's rounding */
    gemm_check gd = check_gemm(1, hd_a, hd_b, hd_c, M, N, K, K * 8.881784197001252e-16, &rng, args.quiet);
    all_ok &=
        report("dgemm (8 rows/columns vs CPU)", gd.ok, args.quiet, " (max rel err %.1e)", gd.max_err / gd.max_ref);
    float d_ms = 0.0f;
    if (!args.check_only) d_ms = lb_time_ms(run_gemm, &jd, 1, args.iters);
    CUDA_CHECK(cudaFree(dd_a));
    CUDA_CHECK(cudaFree(dd_b));
    CUDA_CHECK(cudaFree(dd_c));
    free(hd_a);
    free(hd_b);
    free(hd_c);

    /* ---- level 1 on vectors of n */
    float *hx = lb_host_alloc(sizeof(float) * n, "x"), *hy = lb_host_alloc(sizeof(float) * n, "y");
    float *hy_out = lb_host_alloc(sizeof(float) * n, "y out");
    lb_fill_uniform(hx, n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(hy, n, -1.0f, 1.0f, &rng);
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc((void **)&dx, sizeof(float) * n));
    CUDA_CHECK(cudaMalloc((void **)&dy, sizeof(float) * n));
    CUDA_CHECK(cudaMemcpy(dx, hx, sizeof(float) * n, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dy, hy, sizeof(float) * n, cudaMemcpyHostToDevice));
    if (!args.quiet) printf("level 1\n");
    /* scalar results come back to host variables: the default pointer mode is HOST, and the
     * call waits for the result */
    float dot = 0.0f, nrm = 0.0f;
    int amax = 0;
    CUBLAS_CHECK(cublasSdot(h, (int)n, dx, 1, dy, 1, &dot));
    CUBLAS_CHECK(cublasSnrm2(h, (int)n, dx, 1, &nrm));
    CUBLAS_CHECK(cublasIsamax(h, (int)n, dx, 1, &amax));
    const float alpha = 0.75f;
    CUBLAS_CHECK(cublasSaxpy(h, (int)n, &alpha, dx, 1, dy, 1));
    CUDA_CHECK(cudaMemcpy(hy_out, dy, sizeof(float) * n, cudaMemcpyDeviceToHost));
    double abs_sum, want_dot = dot_cpu(hx, hy, n, &abs_sum), sq;
    double want_nrm = sqrt(dot_cpu(hx, hx, n, &sq));
    /* an fp32 sum of n terms, added in a tree, is off by about log2(n) * 2^-24 * sum|terms| */
    all_ok &=
        report("sdot", fabs(dot - want_dot) <= 1e-5 * abs_sum, args.quiet, " (abs err %.1e)", fabs(dot - want_dot));
    all_ok &= report("snrm2", fabs(nrm - want_nrm) <= 1e-5 * want_nrm, args.quiet, " (rel err %.1e)",
                     fabs(nrm - want_nrm) / want_nrm);
    int want_amax = amax_cpu(hx, n);
    all_ok &= report("isamax (1-based)", amax == want_amax, args.quiet, " (index %.0f)", (double)amax);
    for (size_t i = 0; i < n; i++) hy[i] = fmaf(alpha, hx[i], hy[i]);
    lb_check ca = lb_check_f32("saxpy", hy_out, hy, n, 1e-6, 1e-6, args.quiet);
    all_ok &= report("saxpy (every element)", ca.n_bad == 0, args.quiet, NULL, 0.0);
    CUDA_CHECK(cudaFree(dx));
    CUDA_CHECK(cudaFree(dy));
    free(hx);
    free(hy);
    free(hy_out);
    CUBLAS_CHECK(cublasDestroy(h));

    char sz[48];
    snprintf(sz, sizeof sz, "%dx%dx%d", M, N, K);
    if (!args.check_only) {
        if (!args.quiet) {
            printf("GEMM, M=%d N=%d K=%d (%.2f TFLOP each)\n", M, N, K, 2.0 * M * N * (double)K / 1e12);
            printf("  create handle + first SGEMM (the book's way)   %9.3f ms  %8.2f TFLOP/s\n", first_ms,
                   tflops(M, N, K, first_ms));
            printf("  SGEMM alone (events, median of %d)             %9.3f ms  %8.2f TFLOP/s\n", args.iters, s_ms,
                   tflops(M, N, K, s_ms));
            if (use_tf32)
                printf("  SGEMM TF32 tensor cores                        %9.3f ms  %8.2f TFLOP/s  (%.1fx, max rel err "
                       "%.1e vs %.1e)\n",
                       tf_ms, tflops(M, N, K, tf_ms), s_ms / tf_ms, gt.max_err / gt.max_ref, gs.max_err / gs.max_ref);
            printf("  DGEMM alone                                    %9.3f ms  %8.2f TFLOP/s\n", d_ms,
                   tflops(M, N, K, d_ms));
            printf("the first number adds cublasCreate (library and kernel loading, workspace) and a first launch,\n"
                   "paid once per program: %.1f ms of it is not GEMM. Time the operation you repeat.\n",
                   first_ms - s_ms);
        }
        lb_result r1 = {"cublas_basics",           -1,      "sgemm_with_create", sz,   first_ms, "tflops",
                        tflops(M, N, K, first_ms), "sgemm", s_ms / first_ms,     gs.ok};
        lb_result r2 = {"cublas_basics", -1, "sgemm", sz, s_ms, "tflops", tflops(M, N, K, s_ms), "sgemm", 1.0, gs.ok};
        lb_result r3 = {"cublas_basics",       -1,      "dgemm",     sz,   d_ms, "tflops",
                        tflops(M, N, K, d_ms), "sgemm", s_ms / d_ms, gd.ok};
        lb_print_result(&r1, args.quiet);
        lb_print_result(&r2, args.quiet);
        if (use_tf32) {
            lb_result r4 = {"cublas_basics",        -1,      "sgemm_tf32", sz,   tf_ms, "tflops",
                            tflops(M, N, K, tf_ms), "sgemm", s_ms / tf_ms, gt.ok};
            lb_print_result(&r4, args.quiet);
        }
        lb_print_result(&r3, args.quiet);
    }
    if (args.quiet)
        printf("cublas_basics: levels 1-3 checked, GEMM %s: sgemm %.2f, dgemm %.2f TFLOP/s, %s\n", sz,
               s_ms ? tflops(M, N, K, s_ms) : 0.0, d_ms ? tflops(M, N, K, d_ms) : 0.0, all_ok ? "PASS" : "FAIL");
    else
        printf("%s\n", all_ok ? "all checks PASS" : "some checks FAILED");
    return all_ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}
