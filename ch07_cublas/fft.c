/* fft.c - 1D FFTs with cuFFT: checked against a CPU DFT and by the round trip, then timed.
 *
 *   forward:  X[k] = sum_j x[j] e^(-2 pi i jk/n);  cuFFT's inverse has no 1/n, so
 *   inverse(forward(x)) = n x.  Complex data is cufftComplex (float2: re, im).
 *   build: make ch07      run: ./fft [--size NMAX]
 *
 * What it shows:
 *   C2C and R2C (real input: n/2 + 1 outputs, the rest are their conjugates) against an
 *   O(n^2) DFT in double, for n = 1, 2, 7, 64, 100, 1000, 4096 (powers of two or not)
 *   the round trip at n up to NMAX (default 2^24): forward then inverse equals n times the input
 *   a batch of transforms in one plan (cufftPlanMany) against the DFT of each
 *   throughput for n = 2^10 .. NMAX, batched to 2^24 points a call: ms, GFLOP/s (5 n log2 n per
 *   complex transform, the usual convention), and GB/s if the data crossed memory once; random
 *   input, and every timed plan's output checked (round trip of each batch, sampled DFT bins)
 */
#include <cufft.h>
#include "labbook.h"

#include <math.h>
#include <string.h>

#define PI 3.14159265358979323846
#define THROUGHPUT_POINTS (1 << 24)

/* ---------------------------------------------------------------- CPU reference */

/* X[k] = sum_j x[j] e^(-2 pi i jk/n), in double; jk mod n keeps the angle exact */
static void dft_cpu(const float *x_re, const float *x_im, int n, double *X_re, double *X_im)
{
    for (int k = 0; k < n; k++) {
        double re = 0.0, im = 0.0;
        for (int j = 0; j < n; j++) {
            double a = -2.0 * PI * (double)(((long long)j * k) % n) / n;
            double xr = x_re[j], xi = x_im ? x_im[j] : 0.0;
            re += xr * cos(a) - xi * sin(a);
            im += xr * sin(a) + xi * cos(a);
        }
        X_re[k] = re;
        X_im[k] = im;
    }
}

/* fp32 FFT error grows with log2(n) and the data's norm: 2^-20 * log2(2n) * sqrt(n) per output
 * for inputs in [-1, 1], several times what cuFFT shows, far below any wrong twiddle */
static double fft_tol(int n) { return 9.5367431640625e-07 * log2(2.0 * n) * sqrt((double)n); }

/* compare n complex outputs (interleaved) with the DFT */
static int check_vs_dft(const char *what, const cufftComplex *got, const double *w_re, const double *w_im, int n,
                        int quiet)
{
    double tol = fft_tol(n), max_err = 0.0;
    int bad = 0;
    for (int k = 0; k < n; k++) {
        double e = fmax(fabs(got[k].x - w_re[k]), fabs(got[k].y - w_im[k]));
        if (!(e <= tol)) { /* NaN fails */
            if (!quiet && bad < 3)
                fprintf(stderr, "  %s: X[%d] = (%.6g, %.6g), want (%.6g, %.6g)\n", what, k, got[k].x, got[k].y, w_re[k],
                        w_im[k]);
            bad++;
        }
        if (e > max_err || e != e) max_err = e;
    }
    if (!quiet) printf("  %-28s %s (max abs err %.1e, tolerance %.1e)\n", what, bad ? "FAIL" : "PASS", max_err, tol);
    return bad == 0;
}

/* ---------------------------------------------------------------- checks */

/* C2C and R2C of one random signal of n against the DFT */
static int check_small(int n, lb_rng *rng, int quiet)
{
    float *re = lb_host_alloc(sizeof(float) * n, "x"), *im = lb_host_alloc(sizeof(float) * n, "x");
    double *W_re = lb_host_alloc(sizeof(double) * n, "DFT"), *W_im = lb_host_alloc(sizeof(double) * n, "DFT");
    cufftComplex *h = lb_host_alloc(sizeof(cufftComplex) * n, "X");
    lb_fill_uniform(re, (size_t)n, -1.0f, 1.0f, rng);
    lb_fill_uniform(im, (size_t)n, -1.0f, 1.0f, rng);
    cufftComplex *d_in, *d_out;
    float *d_real;
    CUDA_CHECK(cudaMalloc((void **)&d_in, sizeof(cufftComplex) * n));
    CUDA_CHECK(cudaMalloc((void **)&d_out, sizeof(cufftComplex) * n));
    CUDA_CHECK(cudaMalloc((void **)&d_real, sizeof(float) * n));
    char what[64];
    int ok = 1;

    /* complex to complex */
    for (int i = 0; i < n; i++) h[i].x = re[i], h[i].y = im[i];
    CUDA_CHECK(cudaMemcpy(d_in, h, sizeof(cufftComplex) * n, cudaMemcpyHostToDevice));
    lb_poison_device(d_out, sizeof(cufftComplex) * n);
    cufftHandle plan;
    CUFFT_CHECK(cufftPlan1d(&plan, n, CUFFT_C2C, 1));
    CUFFT_CHECK(cufftExecC2C(plan, d_in, d_out, CUFFT_FORWARD));
    CUDA_CHECK(cudaMemcpy(h, d_out, sizeof(cufftComplex) * n, cudaMemcpyDeviceToHost));
    CUFFT_CHECK(cufftDestroy(plan));
    dft_cpu(re, im, n, W_re, W_im);
    snprintf(what, sizeof what, "C2C n=%d vs DFT", n);
    ok &= check_vs_dft(what, h, W_re, W_im, n, quiet);

    /* real to complex: the first n/2 + 1 outputs of the real signal's DFT */
    CUDA_CHECK(cudaMemcpy(d_real, re, sizeof(float) * n, cudaMemcpyHostToDevice));
    lb_poison_device(d_out, sizeof(cufftComplex) * n);
    CUFFT_CHECK(cufftPlan1d(&plan, n, CUFFT_R2C, 1));
    CUFFT_CHECK(cufftExecR2C(plan, d_real, d_out));
    CUDA_CHECK(cudaMemcpy(h, d_out, sizeof(cufftComplex) * (n / 2 + 1), cudaMemcpyDeviceToHost));
    CUFFT_CHECK(cufftDestroy(plan));
    dft_cpu(re, NULL, n, W_re, W_im);
    snprintf(what, sizeof what, "R2C n=%d vs DFT", n);
    ok &= check_vs_dft(what, h, W_re, W_im, n / 2 + 1, quiet);

    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_real));
    free(re);
    free(im);
    free(W_re);
    free(W_im);
    free(h);
    return ok;
}

/* forward then inverse must give n x: C2C in place, and R2C then C2R */
static int check_round_trip(int n, lb_rng *rng, int quiet)
{
    size_t bytes = sizeof(cufftComplex) * (size_t)n;
    cufftComplex *h = lb_host_alloc(bytes, "x"), *back = lb_host_alloc(bytes, "x back");
    float *hr = lb_host_alloc(sizeof(float) * (size_t)n, "real x"),
          *hr_back = lb_host_alloc(sizeof(float) * (size_t)n, "real x back");
    lb_fill_uniform((float *)h, 2 * (size_t)n, -1.0f, 1.0f, rng);
    lb_fill_uniform(hr, (size_t)n, -1.0f, 1.0f, rng);
    cufftComplex *d;
    float *d_real;
    CUDA_CHECK(cudaMalloc((void **)&d, bytes + sizeof(cufftComplex))); /* R2C needs n/2+1 */
    CUDA_CHECK(cudaMalloc((void **)&d_real, sizeof(float) * (size_t)n));
    cufftHandle plan;
    CUDA_CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    CUFFT_CHECK(cufftPlan1d(&plan, n, CUFFT_C2C, 1));
    CUFFT_CHECK(cufftExecC2C(plan, d, d, CUFFT_FORWARD)); /* in place */
    CUFFT_CHECK(cufftExecC2C(plan, d, d, CUFFT_INVERSE));
    CUFFT_CHECK(cufftDestroy(plan));
    CUDA_CHECK(cudaMemcpy(back, d, bytes, cudaMemcpyDeviceToHost));

    CUDA_CHECK(cudaMemcpy(d_real, hr, sizeof(float) * (size_t)n, cudaMemcpyHostToDevice));
    cufftHandle fwd, inv;
    CUFFT_CHECK(cufftPlan1d(&fwd, n, CUFFT_R2C, 1));
    CUFFT_CHECK(cufftPlan1d(&inv, n, CUFFT_C2R, 1));
    CUFFT_CHECK(cufftExecR2C(fwd, d_real, d));
    lb_poison_device(d_real, sizeof(float) * (size_t)n);
    CUFFT_CHECK(cufftExecC2R(inv, d, d_real));
    CUFFT_CHECK(cufftDestroy(fwd));
    CUFFT_CHECK(cufftDestroy(inv));
    CUDA_CHECK(cudaMemcpy(hr_back, d_real, sizeof(float) * (size_t)n, cudaMemcpyDeviceToHost));

    /* each output is n x[j] plus the rounding of two transforms: 2^-20 log2(2n) sqrt(n) each,
     * times sqrt(n) for the second one's larger inputs */
    double tol = 2.0 * fft_tol(n) * sqrt((double)n), max_c = 0.0, max_r = 0.0;
    size_t bad = 0;
    for (size_t j = 0; j < (size_t)n; j++) {
        double e = fmax(fabs(back[j].x - (double)n * h[j].x), fabs(back[j].y - (double)n * h[j].y));
        double er = fabs(hr_back[j] - (double)n * hr[j]);
        if (!(e <= tol) || !(er <= tol)) {
            if (!quiet && bad < 3) fprintf(stderr, "  round trip n=%d: element %zu off by %.3g / %.3g\n", n, j, e, er);
            bad++;
        }
        if (e > max_c || e != e) max_c = e;
        if (er > max_r || er != er) max_r = er;
    }
    if (!quiet)
        printf("  round trip n=%-14d %s (C2C max err %.1e, R2C+C2R %.1e, of values up to %d)\n", n,
               bad ? "FAIL" : "PASS", max_c, max_r, n);
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaFree(d_real));
    free(h);
    free(back);
    free(hr);
    free(hr_back);
    return bad == 0;
}

/* `batch` transforms of n in one plan: each equals its own DFT */
static int check_batched(int n, int batch, lb_rng *rng, int quiet)
{
    size_t total = (size_t)n * batch;
    cufftComplex *h = lb_host_alloc(sizeof(cufftComplex) * total, "x");
    float *re = lb_host_alloc(sizeof(float) * n, "x"), *im = lb_host_alloc(sizeof(float) * n, "x");
    double *W_re = lb_host_alloc(sizeof(double) * n, "DFT"), *W_im = lb_host_alloc(sizeof(double) * n, "DFT");
    lb_fill_uniform((float *)h, 2 * total, -1.0f, 1.0f, rng);
    cufftComplex *d_in, *d_out;
    CUDA_CHECK(cudaMalloc((void **)&d_in, sizeof(cufftComplex) * total));
    CUDA_CHECK(cudaMalloc((void **)&d_out, sizeof(cufftComplex) * total));
    CUDA_CHECK(cudaMemcpy(d_in, h, sizeof(cufftComplex) * total, cudaMemcpyHostToDevice));
    lb_poison_device(d_out, sizeof(cufftComplex) * total);
    /* rank 1, size n, contiguous signals one after the other (stride 1, distance n) */
    cufftHandle plan;
    CUFFT_CHECK(cufftPlanMany(&plan, 1, &n, NULL, 1, n, NULL, 1, n, CUFFT_C2C, batch));
    CUFFT_CHECK(cufftExecC2C(plan, d_in, d_out, CUFFT_FORWARD));
    CUFFT_CHECK(cufftDestroy(plan));
    cufftComplex *got = lb_host_alloc(sizeof(cufftComplex) * total, "X");
    CUDA_CHECK(cudaMemcpy(got, d_out, sizeof(cufftComplex) * total, cudaMemcpyDeviceToHost));
    int ok = 1;
    char what[64];
    for (int b = 0; b < batch; b++) {
        for (int j = 0; j < n; j++) re[j] = h[(size_t)b * n + j].x, im[j] = h[(size_t)b * n + j].y;
        dft_cpu(re, im, n, W_re, W_im);
        snprintf(what, sizeof what, "batch %d of %d, n=%d", b + 1, batch, n);
        ok &= check_vs_dft(what, got + (size_t)b * n, W_re, W_im, n, quiet);
    }
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    free(h);
    free(re);
    free(im);
    free(W_re);
    free(W_im);
    free(got);
    return ok;
}

/* ---------------------------------------------------------------- throughput */

typedef struct {
    cufftHandle plan;
    int real;
    void *in, *out;
} fft_job;

static cudaError_t run_fft(void *ctx)
{
    fft_job *j = (fft_job *)ctx;
    if (j->real)
        CUFFT_CHECK(cufftExecR2C(j->plan, (cufftReal *)j->in, (cufftComplex *)j->out));
    else
        CUFFT_CHECK(cufftExecC2C(j->plan, (cufftComplex *)j->in, (cufftComplex *)j->out, CUFFT_FORWARD));
    return cudaGetLastError();
}

/* The timed plan's output, checked: every batch transformed back (C2C inverse, or C2R) must
 * give n x, element by element, and the first, middle and last batch's bin k = batch mod n
 * must equal its DFT. A wrong batch count, stride or distance leaves batches untouched
 * (poison) or wrong. Returns the number of wrong values. */
static size_t check_throughput(int n, int batch, int real, const float *h_x, const void *d_out, void *d_back,
                               float *h_back, int quiet)
{
    int dist_out = real ? n / 2 + 1 : n;
    size_t points = (size_t)n * batch, floats = real ? points : 2 * points;
    cufftHandle inv;
    CUFFT_CHECK(cufftPlanMany(&inv, 1, &n, NULL, 1, dist_out, NULL, 1, n, real ? CUFFT_C2R : CUFFT_C2C, batch));
    lb_poison_device(d_back, sizeof(float) * floats);
    if (real)
        CUFFT_CHECK(cufftExecC2R(inv, (cufftComplex *)d_out, (cufftReal *)d_back)); /* overwrites d_out */
    else
        CUFFT_CHECK(cufftExecC2C(inv, (cufftComplex *)d_out, (cufftComplex *)d_back, CUFFT_INVERSE));
    CUFFT_CHECK(cufftDestroy(inv));
    CUDA_CHECK(cudaMemcpy(h_back, d_back, sizeof(float) * floats, cudaMemcpyDeviceToHost));
    double tol = 2.0 * fft_tol(n) * sqrt((double)n); /* as check_round_trip */
    size_t bad = 0;
    for (size_t i = 0; i < floats; i++) {
        double e = fabs(h_back[i] - (double)n * h_x[i]);
        if (!(e <= tol)) {
            if (!quiet && bad < 3)
                fprintf(stderr, "  %s n=%d batch %zu: value %zu back as %.6g, want %.6g\n", real ? "R2C" : "C2C", n,
                        i / (real ? (size_t)n : 2 * (size_t)n), i, h_back[i], (double)n * h_x[i]);
            bad++;
        }
    }
    return bad;
}

/* bin k of the DFT of signal b (complex or real) in double */
static void dft_bin(const float *x, int n, int real, int k, double *re, double *im)
{
    *re = *im = 0.0;
    for (int j = 0; j < n; j++) {
        double a = -2.0 * PI * (double)(((long long)j * k) % n) / n;
        double xr = real ? x[j] : x[2 * j], xi = real ? 0.0 : x[2 * j + 1];
        *re += xr * cos(a) - xi * sin(a);
        *im += xr * sin(a) + xi * cos(a);
    }
}

/* Throughput: forward transforms of n = 1024 .. n_max, batched to `points` points a call, on
 * random input; each timed plan's output is checked afterwards (check_throughput, and one DFT
 * bin in three batches). Returns 1 if every check passed. */
static int throughput(int n_max, int iters, lb_rng *rng, int quiet)
{
    size_t points = n_max > THROUGHPUT_POINTS ? (size_t)n_max : THROUGHPUT_POINTS;
    void *d_in, *d_out, *d_back;
    float *h_x = lb_host_alloc(sizeof(cufftComplex) * points, "the signals"),
          *h_back = lb_host_alloc(sizeof(cufftComplex) * points, "the signals back"),
          *h_bin = lb_host_alloc(sizeof(cufftComplex) * 4, "DFT bins");
    CUDA_CHECK(cudaMalloc(&d_in, sizeof(cufftComplex) * points));
    CUDA_CHECK(cudaMalloc(&d_out, sizeof(cufftComplex) * (points + points / 1024 + 1)));
    CUDA_CHECK(cudaMalloc(&d_back, sizeof(cufftComplex) * points));
    if (!quiet) {
        printf("throughput: forward transforms, batched to %zu points a call (out of place), random input, each\n"
               "batch checked afterwards (transformed back, and one DFT bin of the first, middle, last batch)\n",
               points);
        printf("        n    batch   C2C ms   C2C GFLOP/s   C2C GB/s    R2C ms   R2C GFLOP/s   R2C GB/s   check\n");
    }
    /* random signals, the same for every n: complex ones read 2 floats a point, real ones 1 */
    lb_fill_uniform(h_x, 2 * points, -1.0f, 1.0f, rng);
    CUDA_CHECK(cudaMemcpy(d_in, h_x, sizeof(cufftComplex) * points, cudaMemcpyHostToDevice));
    int all_ok = 1;
    for (int n = 1024; n <= n_max; n *= 2) {
        int batch = (int)(points / (size_t)n), ok = 1;
        double res[2][3];
        for (int real = 0; real <= 1; real++) {
            fft_job j = {0, real, d_in, d_out};
            int dist_out = real ? n / 2 + 1 : n;
            CUFFT_CHECK(
                cufftPlanMany(&j.plan, 1, &n, NULL, 1, n, NULL, 1, dist_out, real ? CUFFT_R2C : CUFFT_C2C, batch));
            lb_poison_device(d_out, sizeof(cufftComplex) * (size_t)dist_out * batch);
            float ms = lb_time_ms(run_fft, &j, 2, iters);
            CUFFT_CHECK(cufftDestroy(j.plan));
            /* one DFT bin of three batches, before the C2R of the round trip overwrites d_out */
            size_t bad = 0;
            const int probe[3] = {0, batch / 2, batch - 1};
            for (int p = 0; p < 3; p++) {
                int b = probe[p], k = b % dist_out;
                double re, im;
                CUDA_CHECK(cudaMemcpy(h_bin, (cufftComplex *)d_out + (size_t)b * dist_out + k, sizeof(cufftComplex),
                                      cudaMemcpyDeviceToHost));
                dft_bin(h_x + (size_t)b * n * (real ? 1 : 2), n, real, k, &re, &im);
                if (!(fmax(fabs(h_bin[0] - re), fabs(h_bin[1] - im)) <= fft_tol(n))) {
                    if (!quiet)
                        fprintf(stderr, "  %s n=%d batch %d: bin %d = (%.6g, %.6g), DFT (%.6g, %.6g)\n",
                                real ? "R2C" : "C2C", n, b, k, h_bin[0], h_bin[1], re, im);
                    bad++;
                }
            }
            bad += check_throughput(n, batch, real, h_x, d_out, d_back, h_back, quiet);
            ok &= bad == 0;
            /* 5 n log2 n flops per complex transform; a real one is counted as half of that */
            double flops = (real ? 2.5 : 5.0) * n * log2((double)n) * batch;
            double bytes = real ? (double)batch * (4.0 * n + 8.0 * (n / 2 + 1)) : 16.0 * n * batch;
            res[real][0] = ms;
            res[real][1] = flops / (ms * 1e6);
            res[real][2] = bytes / (ms * 1e6);
            char sz[32];
            snprintf(sz, sizeof sz, "%d", n);
            lb_result r = {"fft", -1, real ? "r2c" : "c2c", sz, ms, "gflops", res[real][1], NULL, 0.0, bad == 0};
            lb_print_result(&r, quiet);
        }
        all_ok &= ok;
        if (!quiet)
            printf(" %8d %8d %8.4f %13.0f %10.0f  %8.4f %13.0f %10.0f   %s\n", n, batch, res[0][0], res[0][1],
                   res[0][2], res[1][0], res[1][1], res[1][2], ok ? "PASS" : "FAIL");
    }
    float mc_ms;
    double mc = lb_memcpy_ceiling_gbps(2 * sizeof(cufftComplex) * points, iters, &mc_ms);
    if (!quiet)
        printf(
            "GB/s counts the input read and the output written once; a D2D cudaMemcpy of the same bytes: %.0f GB/s\n",
            mc);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_back));
    free(h_x);
    free(h_back);
    free(h_bin);
    return all_ok;
}

/* ---------------------------------------------------------------- main */

static const lb_program program = {
    .name = "fft",
    .synopsis = "1D FFTs with cuFFT: C2C, R2C, batched; checked against a CPU DFT and by the round trip; throughput",
    .details = "--size is NMAX, the largest transform for the round trip and the throughput table (a power of two, "
               "1024..2^27).\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = NULL,
    .n_opts = 0,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 24}, 1}, .max_size_dims = 1, .iters = 10, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    long long n_max = args.size.v[0];
    if (n_max < 1024 || n_max > (1 << 27) || (n_max & (n_max - 1)))
        lb_usage_error(&program, "--size must be a power of two from 1024 to 2^27");

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t points = n_max > THROUGHPUT_POINTS ? (size_t)n_max : THROUGHPUT_POINTS;
    lb_require_device_memory(3 * sizeof(cufftComplex) * points + 64 * 1024 * 1024, "the signals and cuFFT's work area");
    if (!args.quiet)
        printf("fft: cuFFT %d, %s (%s), seed %llu\nchecks\n", CUFFT_VERSION, gpu.prop.name, gpu.sm, args.seed);
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    int ok = 1;
    static const int small[] = {1, 2, 7, 64, 100, 1000, 4096};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) ok &= check_small(small[i], &rng, args.quiet);
    ok &= check_batched(1000, 5, &rng, args.quiet);
    ok &= check_round_trip(12345, &rng, args.quiet);
    ok &= check_round_trip((int)n_max, &rng, args.quiet);
    if (!args.check_only) ok &= throughput((int)n_max, args.iters, &rng, args.quiet);
    if (args.quiet)
        printf("fft: checks up to n=%lld, %s\n", n_max, ok ? "PASS" : "FAIL");
    else
        printf("%s\n", ok ? "all checks PASS" : "some checks FAILED");
    return ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}
