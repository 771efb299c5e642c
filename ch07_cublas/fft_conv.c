/* fft_conv.c - blurring a photograph with a Gaussian: 2D convolution by FFT (cuFFT) against a
 * direct shared-memory kernel and a CPU reference.
 *
 *   image W x H (default datasets/camera.pgm, 512 x 512); Gaussian of sigma (default 15, as in
 *   the book), cut at radius r = ceil(3 sigma), weights summing to 1; zero outside the image;
 *   the output has the image's size and is written to blurred.png.
 *   build: make ch07      run: ./fft_conv [--sigma S] [--input FILE.pgm] [--output FILE.png]
 *
 * The FFT path, per image: R2C of the zero-padded image (PH x PW, PH >= H + r, PW >= W + r, sizes
 * of the form 2^a 3^b, which cuFFT does fastest), multiply by the filter's spectrum (made
 * once per sigma, like a plan), C2R. Padding by r keeps the circular convolution the FFT computes
 * from wrapping one edge of the image onto the other.
 * Reported: the path's speed against its two cuFFT calls alone, like for like: three launches
 * against R2C + C2R launched, the path in a CUDA graph against R2C + C2R in a graph (goal:
 * >= 0.91x, the multiply costing under a tenth); the direct kernel; and a table of the two
 * methods' times as the filter grows (the crossover).
 * --delta N replaces the photo by an N x N black image with one white pixel in the middle:
 * its blur must be the filter itself, a known answer.
 */
#include <cufft.h>
#include "labbook.h"
#include "fft_conv_kernels.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- the filter */

/* 1D Gaussian weights g[0..2r] (g[r] at the centre), summing to 1; the 2D filter is g(dy) g(dx) */
static double *gaussian_1d(double sigma, int r)
{
    double *g = lb_host_alloc(sizeof(double) * (2 * r + 1), "the filter"), sum = 0.0;
    for (int d = -r; d <= r; d++) sum += g[d + r] = exp(-(double)d * d / (2.0 * sigma * sigma));
    for (int i = 0; i <= 2 * r; i++) g[i] /= sum;
    return g;
}

static int radius_of(double sigma) { return (int)ceil(3.0 * sigma); }

/* ---------------------------------------------------------------- CPU reference */

/* The Gaussian is separable, so the reference convolves rows, then columns, in double: the
 * same sums as the 2D filter (w = g g^T) at 2(2r+1) instead of (2r+1)^2 operations a pixel. */
static void blur_cpu(const float *img, int W, int H, const double *g, int r, float *out)
{
    double *tmp = lb_host_alloc(sizeof(double) * (size_t)W * H, "the CPU blur");
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double s = 0.0;
            for (int d = -r; d <= r; d++)
                if (x + d >= 0 && x + d < W) s += img[(size_t)y * W + x + d] * g[d + r];
            tmp[(size_t)y * W + x] = s;
        }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double s = 0.0;
            for (int d = -r; d <= r; d++)
                if (y + d >= 0 && y + d < H) s += tmp[(size_t)(y + d) * W + x] * g[d + r];
            out[(size_t)y * W + x] = (float)s;
        }
    free(tmp);
}

/* ---------------------------------------------------------------- FFT sizes */

/* the smallest m >= n of the form 2^a 3^b: cuFFT's fastest sizes (5 and 7 work, more slowly) */
static int fft_size(int n)
{
    for (int m = n;; m++) {
        int k = m;
        for (int p = 2; p <= 3; p++)
            while (k % p == 0) k /= p;
        if (k == 1) return m;
    }
}

/* ---------------------------------------------------------------- the FFT path */

typedef struct {
    int W, H, PH, PW, r;
    cufftHandle r2c, c2r;
    float *d_pad;               /* PH x PW real: the padded image in, the blurred image out */
    cufftComplex *d_spec;       /* PH x (PW/2 + 1): the image's spectrum */
    cufftComplex *d_filter;     /* the same for the filter, made once per sigma */
    float *d_pad_image;         /* the padded input, kept to restore d_pad before each run */
    int part;                   /* what run_fft_path does: see enum */
    cudaGraphExec_t graph;      /* the path: R2C, multiply, C2R */
    cudaGraphExec_t ffts_graph; /* its two cuFFT calls alone: the graph's baseline */
} fft_conv;

enum { PATH, R2C_ALONE, C2R_ALONE, FFTS, GRAPH, FFTS_GRAPH };

static size_t spec_len(const fft_conv *c) { return (size_t)c->PH * (c->PW / 2 + 1); }

/* the filter, centred on (0, 0) and wrapped around the edges of the PH x PW plane, to spectrum */
static void make_filter_spectrum(fft_conv *c, const double *g)
{
    size_t n = (size_t)c->PH * c->PW;
    float *h = calloc(n, sizeof(float));
    if (!h) lb_die(LB_EXIT_USAGE, "out of host memory for the %dx%d filter plane", c->PW, c->PH);
    for (int dy = -c->r; dy <= c->r; dy++)
        for (int dx = -c->r; dx <= c->r; dx++) {
            int y = ((dy % c->PH) + c->PH) % c->PH, x = ((dx % c->PW) + c->PW) % c->PW;
            h[(size_t)y * c->PW + x] += (float)(g[dy + c->r] * g[dx + c->r]); /* += : r may exceed the plane */
        }
    CUDA_CHECK(cudaMemcpy(c->d_pad, h, sizeof(float) * n, cudaMemcpyHostToDevice));
    CUFFT_CHECK(cufftExecR2C(c->r2c, c->d_pad, c->d_filter));
    CUDA_CHECK(cudaDeviceSynchronize());
    free(h);
}

static cudaError_t path_launches(fft_conv *c)
{
    CUFFT_CHECK(cufftExecR2C(c->r2c, c->d_pad, c->d_spec));
    cudaError_t e = pointwise_mul_launch(c->d_spec, c->d_filter, spec_len(c), 1.0f / ((float)c->PH * c->PW), 0);
    if (e) return e;
    CUFFT_CHECK(cufftExecC2R(c->c2r, c->d_spec, c->d_pad));
    return cudaGetLastError();
}

/* one timed unit: the path, its cuFFT calls alone (one, or both), each launched or as a graph */
static cudaError_t run_fft_path(void *ctx)
{
    fft_conv *c = (fft_conv *)ctx;
    switch (c->part) {
    case R2C_ALONE: CUFFT_CHECK(cufftExecR2C(c->r2c, c->d_pad, c->d_spec)); return cudaGetLastError();
    case C2R_ALONE: CUFFT_CHECK(cufftExecC2R(c->c2r, c->d_spec, c->d_pad)); return cudaGetLastError();
    case FFTS:
        CUFFT_CHECK(cufftExecR2C(c->r2c, c->d_pad, c->d_spec));
        CUFFT_CHECK(cufftExecC2R(c->c2r, c->d_spec, c->d_pad));
        return cudaGetLastError();
    case GRAPH: return cudaGraphLaunch(c->graph, 0);
    case FFTS_GRAPH: return cudaGraphLaunch(c->ffts_graph, 0);
    default: return path_launches(c);
    }
}

static void fft_conv_setup(fft_conv *c, int W, int H, int r, const float *h_img)
{
    c->W = W, c->H = H, c->r = r;
    c->PH = fft_size(H + r), c->PW = fft_size(W + r);
    size_t n = (size_t)c->PH * c->PW;
    CUDA_CHECK(cudaMalloc((void **)&c->d_pad, sizeof(float) * n));
    CUDA_CHECK(cudaMalloc((void **)&c->d_pad_image, sizeof(float) * n));
    CUDA_CHECK(cudaMalloc((void **)&c->d_spec, sizeof(cufftComplex) * spec_len(c)));
    CUDA_CHECK(cudaMalloc((void **)&c->d_filter, sizeof(cufftComplex) * spec_len(c)));
    CUFFT_CHECK(cufftPlan2d(&c->r2c, c->PH, c->PW, CUFFT_R2C));
    CUFFT_CHECK(cufftPlan2d(&c->c2r, c->PH, c->PW, CUFFT_C2R));
    /* the image in the top-left corner of a zero PH x PW plane: a 2D copy does the padding */
    CUDA_CHECK(cudaMemset(c->d_pad_image, 0, sizeof(float) * n));
    CUDA_CHECK(cudaMemcpy2D(c->d_pad_image, sizeof(float) * c->PW, h_img, sizeof(float) * W, sizeof(float) * W, H,
                            cudaMemcpyHostToDevice));
}

static void fft_conv_restore(fft_conv *c)
{
    CUDA_CHECK(cudaMemcpy(c->d_pad, c->d_pad_image, sizeof(float) * c->PH * c->PW, cudaMemcpyDeviceToDevice));
}

/* The path as a CUDA graph: captured once, then one launch replays all three kernels. With
 * multiply = 0, the two cuFFT calls alone, captured the same way: the graph's baseline (a graph
 * saves launch overhead, so a graph compared with launches would flatter the path). */
static cudaGraphExec_t fft_conv_capture(fft_conv *c, int multiply)
{
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUFFT_CHECK(cufftSetStream(c->r2c, s));
    CUFFT_CHECK(cufftSetStream(c->c2r, s));
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CUFFT_CHECK(cufftExecR2C(c->r2c, c->d_pad, c->d_spec));
    if (multiply)
        CUDA_CHECK(pointwise_mul_launch(c->d_spec, c->d_filter, spec_len(c), 1.0f / ((float)c->PH * c->PW), s));
    CUFFT_CHECK(cufftExecC2R(c->c2r, c->d_spec, c->d_pad));
    CUDA_CHECK(cudaStreamEndCapture(s, &g));
    CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    CUFFT_CHECK(cufftSetStream(c->r2c, 0));
    CUFFT_CHECK(cufftSetStream(c->c2r, 0));
    CUDA_CHECK(cudaStreamDestroy(s));
    return exec;
}

static void fft_conv_free(fft_conv *c)
{
    CUFFT_CHECK(cufftDestroy(c->r2c));
    CUFFT_CHECK(cufftDestroy(c->c2r));
    if (c->graph) CUDA_CHECK(cudaGraphExecDestroy(c->graph));
    if (c->ffts_graph) CUDA_CHECK(cudaGraphExecDestroy(c->ffts_graph));
    CUDA_CHECK(cudaFree(c->d_pad));
    CUDA_CHECK(cudaFree(c->d_pad_image));
    CUDA_CHECK(cudaFree(c->d_spec));
    CUDA_CHECK(cudaFree(c->d_filter));
}

/* run the path once from the padded image and crop the W x H result */
static void fft_conv_result(fft_conv *c, int use_graph, float *h_out)
{
    fft_conv_restore(c);
    c->part = use_graph ? GRAPH : PATH;
    CUDA_CHECK(run_fft_path(c));
    CUDA_CHECK(cudaMemcpy2D(h_out, sizeof(float) * c->W, c->d_pad, sizeof(float) * c->PW, sizeof(float) * c->W, c->H,
                            cudaMemcpyDeviceToHost));
}

/* ---------------------------------------------------------------- the direct path */

typedef struct {
    const float *d_img;
    float *d_out;
    int W, H;
    const float *d_w;
    int r;
} direct_job;

static cudaError_t run_direct(void *ctx)
{
    direct_job *j = (direct_job *)ctx;
    return direct_conv_launch(j->d_img, j->d_out, j->W, j->H, j->d_w, j->r, 0);
}

static float *upload_weights(const double *g, int r)
{
    int n = 2 * r + 1;
    float *h = lb_host_alloc(sizeof(float) * n * n, "the 2D filter"), *d;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) h[i * n + j] = (float)(g[i] * g[j]);
    CUDA_CHECK(cudaMalloc((void **)&d, sizeof(float) * n * n));
    CUDA_CHECK(cudaMemcpy(d, h, sizeof(float) * n * n, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

/* ---------------------------------------------------------------- timing */

/* One image takes tens of microseconds, as long as recording two events and launching:
 * lb_time_ms then times many images back to back in each sample (at least 1 ms of them) and
 * divides, so the events' cost is not part of the time per image. */
static float ms_per_image(lb_work_fn fn, void *ctx, int iters) { return lb_time_ms(fn, ctx, 1, iters); }

/* ---------------------------------------------------------------- checks and output */

/* out = 255 * filter around the centre pixel, 0 elsewhere: the blur of a single white pixel */
static lb_check check_delta(const char *what, const float *out, int N, const double *g, int r, int quiet)
{
    float *want = lb_host_alloc(sizeof(float) * (size_t)N * N, "the expected blur");
    int c = N / 2;
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++) {
            int dy = y - c, dx = x - c;
            want[(size_t)y * N + x] = (abs(dy) <= r && abs(dx) <= r) ? (float)(255.0 * g[dy + r] * g[dx + r]) : 0.0f;
        }
    lb_check k = lb_check_f32(what, out, want, (size_t)N * N, 0.02, 0.0, quiet);
    free(want);
    return k;
}

static int write_png_gray(const char *path, const float *img, int W, int H)
{
    unsigned char *px = lb_host_alloc((size_t)W * H, "the PNG");
    for (size_t i = 0; i < (size_t)W * H; i++) {
        float v = img[i] + 0.5f;
        px[i] = (unsigned char)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
    }
    int rc = lb_write_png(path, W, H, 1, px, NULL);
    free(px);
    return rc;
}

/* ---------------------------------------------------------------- main */

static double sigma = 15.0;
static const char *input = "../datasets/camera.pgm", *output = "blurred.png";
static int delta = 0;
static const lb_opt options[] = {
    {"--sigma", LB_OPT_DOUBLE, &sigma, "the Gaussian's standard deviation in pixels (0 < sigma <= 32)"},
    {"--input", LB_OPT_STRING, &input, "the image, binary PGM (P5, 8-bit)"},
    {"--output", LB_OPT_STRING, &output, "where the blurred image goes (PNG)"},
    {"--delta", LB_OPT_INT, &delta, "blur an N x N image with one white pixel instead (a known answer)"},
};
static const lb_program program = {
    .name = "fft_conv",
    .synopsis =
        "Gaussian blur by FFT convolution (cuFFT R2C, multiply, C2R) vs a direct shared-memory kernel and the CPU",
    .details = "The direct kernel handles sigma up to 32 (radius 96).\n",
    .uses = LB_USE_ITERS | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 4,
};

int main(int argc, char **argv)
{
    lb_args args = {.iters = 20, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    lb_check_output_path(&program, "--output", output);
    if (!(sigma > 0.0 && sigma <= 32.0)) lb_usage_error(&program, "--sigma must be in (0, 32]");
    if (delta < 0 || delta > 8192) lb_usage_error(&program, "--delta must be 1..8192");

    int W, H;
    float *img;
    char err[512];
    if (delta) {
        W = H = delta;
        img = calloc((size_t)W * H, sizeof(float));
        if (!img) lb_die(LB_EXIT_USAGE, "out of memory");
        img[(size_t)(H / 2) * W + W / 2] = 255.0f;
    } else {
        unsigned char *px = lb_read_pgm(input, &W, &H, err, sizeof err);
        if (!px)
            lb_die(LB_EXIT_USAGE, "fft_conv: %s%s", err,
                   strstr(err, "cannot open") ? " (run from ch07_cublas, or pass --input FILE.pgm)" : "");
        img = lb_host_alloc(sizeof(float) * (size_t)W * H, "the image");
        for (size_t i = 0; i < (size_t)W * H; i++) img[i] = px[i];
        free(px);
    }

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    int r = radius_of(sigma);
    double *g = gaussian_1d(sigma, r);
    fft_conv c = {0};
    fft_conv_setup(&c, W, H, r, img);
    if (!args.quiet)
        printf("fft_conv: %s %dx%d, Gaussian sigma %.3g (radius %d, %dx%d taps), FFT plane %dx%d, %s (%s)\n",
               delta ? "delta image" : input, W, H, sigma, r, 2 * r + 1, 2 * r + 1, c.PW, c.PH, gpu.prop.name, gpu.sm);
    make_filter_spectrum(&c, g);
    c.graph = fft_conv_capture(&c, 1);
    c.ffts_graph = fft_conv_capture(&c, 0);

    /* ---- results: FFT path (plain and graph) and direct, against the CPU (or the delta's answer) */
    float *ref = lb_host_alloc(sizeof(float) * (size_t)W * H, "the CPU blur");
    float *got = lb_host_alloc(sizeof(float) * (size_t)W * H, "the GPU blur");
    blur_cpu(img, W, H, g, r, ref);
    float *d_img, *d_out, *d_w = upload_weights(g, r);
    CUDA_CHECK(cudaMalloc((void **)&d_img, sizeof(float) * (size_t)W * H));
    CUDA_CHECK(cudaMalloc((void **)&d_out, sizeof(float) * (size_t)W * H));
    CUDA_CHECK(cudaMemcpy(d_img, img, sizeof(float) * (size_t)W * H, cudaMemcpyHostToDevice));
    int ok = 1;
    /* both GPU paths sum in fp32: 0.02 grey levels is far above their rounding and far below
     * the 0.5 that would change a pixel of the PNG */
    for (int m = 0; m < 3; m++) {
        const char *what = m == 0 ? "FFT path vs CPU" : m == 1 ? "FFT path (graph) vs CPU" : "direct vs CPU";
        if (m < 2) {
            lb_poison_host(got, sizeof(float) * (size_t)W * H);
            fft_conv_result(&c, m == 1, got);
        } else {
            direct_job dj = {d_img, d_out, W, H, d_w, r};
            lb_poison_device(d_out, sizeof(float) * (size_t)W * H);
            CUDA_CHECK(run_direct(&dj));
            CUDA_CHECK(cudaMemcpy(got, d_out, sizeof(float) * (size_t)W * H, cudaMemcpyDeviceToHost));
        }
        lb_check k = lb_check_f32(what, got, ref, (size_t)W * H, 0.02, 0.0, args.quiet);
        if (delta) {
            lb_check kd =
                check_delta(m == 2 ? "direct vs the filter" : "FFT path vs the filter", got, W, g, r, args.quiet);
            k.n_bad += kd.n_bad;
        }
        char sum[160];
        if (!args.quiet) printf("  %-26s %s\n", what, lb_check_summary(&k, sum, sizeof sum));
        ok &= k.n_bad == 0;
        if (m == 0 && output[0] && write_png_gray(output, got, W, H))
            lb_die(LB_EXIT_USAGE, "fft_conv: cannot write %s: %s", output, strerror(errno));
    }
    if (!args.quiet && output[0]) printf("  wrote %s (%dx%d)\n", output, W, H);

    if (!args.check_only) {
        /* ---- the path against its cuFFT calls alone. Each run's C2R writes into d_pad, so the
         * next run blurs the blurred image again: the values stay in [0, 255], and an FFT's time
         * does not depend on the values. */
        fft_conv_restore(&c);
        c.part = R2C_ALONE;
        float r2c_ms = ms_per_image(run_fft_path, &c, args.iters);
        c.part = C2R_ALONE;
        float c2r_ms = ms_per_image(run_fft_path, &c, args.iters);
        c.part = FFTS;
        float ffts_ms = ms_per_image(run_fft_path, &c, args.iters);
        c.part = PATH;
        float path_ms = ms_per_image(run_fft_path, &c, args.iters);
        c.part = FFTS_GRAPH;
        float ffts_graph_ms = ms_per_image(run_fft_path, &c, args.iters);
        c.part = GRAPH;
        float graph_ms = ms_per_image(run_fft_path, &c, args.iters);
        direct_job dj = {d_img, d_out, W, H, d_w, r};
        float direct_ms = ms_per_image(run_direct, &dj, args.iters);
        double mpix = (double)W * H / 1e6;
        char sz[48];
        snprintf(sz, sizeof sz, "%dx%d_s%g", W, H, sigma);
        /* ratios are speeds, higher is faster: the baseline's time over the path's */
        if (!args.quiet) {
            printf("times per image (ms; median of %d samples, each of many images back to back):\n", args.iters);
            printf("  R2C alone %.4f, C2R alone %.4f\n", r2c_ms, c2r_ms);
            printf(
                "  launched:  cuFFT alone (R2C, C2R)  %.4f;  FFT path (R2C, multiply, C2R)  %.4f = %.2fx the speed\n",
                ffts_ms, path_ms, ffts_ms / path_ms);
            printf("  as graphs: cuFFT alone (R2C, C2R)  %.4f;  FFT path (R2C, multiply, C2R)  %.4f = %.2fx the speed"
                   " (goal >= 0.91)\n",
                   ffts_graph_ms, graph_ms, ffts_graph_ms / graph_ms);
            printf("  direct, %dx%d taps  %.4f = %.2fx the speed of the FFT path as a graph\n", 2 * r + 1, 2 * r + 1,
                   direct_ms, graph_ms / direct_ms);
        }
        lb_result rs[] = {
            {"fft_conv", -1, "cufft_alone", sz, ffts_ms, "mpix_s", mpix / (ffts_ms * 1e-3), "cufft_alone", 1.0, ok},
            {"fft_conv", -1, "fft_path", sz, path_ms, "mpix_s", mpix / (path_ms * 1e-3), "cufft_alone",
             ffts_ms / path_ms, ok},
            {"fft_conv", -1, "cufft_alone_graph", sz, ffts_graph_ms, "mpix_s", mpix / (ffts_graph_ms * 1e-3),
             "cufft_alone_graph", 1.0, ok},
            {"fft_conv", -1, "fft_path_graph", sz, graph_ms, "mpix_s", mpix / (graph_ms * 1e-3), "cufft_alone_graph",
             ffts_graph_ms / graph_ms, ok},
            {"fft_conv", -1, "direct", sz, direct_ms, "mpix_s", mpix / (direct_ms * 1e-3), "fft_path_graph",
             graph_ms / direct_ms, ok},
        };
        for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) lb_print_result(&rs[i], args.quiet);

        /* ---- crossover: both methods as the filter grows (the FFT path's cost barely moves) */
        if (!args.quiet) {
            printf("crossover (same image): ms per image\n   sigma  radius   taps    FFT path (graph)    direct   "
                   "faster\n");
            static const double sigmas[] = {0.5, 1, 2, 4, 8, 15, 32};
            for (size_t i = 0; i < sizeof sigmas / sizeof sigmas[0]; i++) {
                int rr = radius_of(sigmas[i]);
                double *gg = gaussian_1d(sigmas[i], rr);
                fft_conv cc = {0};
                fft_conv_setup(&cc, W, H, rr, img);
                make_filter_spectrum(&cc, gg);
                cc.graph = fft_conv_capture(&cc, 1);
                fft_conv_restore(&cc);
                cc.part = GRAPH;
                float f_ms = ms_per_image(run_fft_path, &cc, args.iters);
                float *dw = upload_weights(gg, rr);
                direct_job dd = {d_img, d_out, W, H, dw, rr};
                float d_ms = ms_per_image(run_direct, &dd, args.iters);
                printf("  %6.1f  %6d  %5d  %18.4f  %8.4f   %s\n", sigmas[i], rr, (2 * rr + 1) * (2 * rr + 1), f_ms,
                       d_ms, f_ms < d_ms ? "FFT" : "direct");
                fft_conv_free(&cc);
                CUDA_CHECK(cudaFree(dw));
                free(gg);
            }
        }
    }
    if (args.quiet) printf("fft_conv: %dx%d, sigma %g, %s\n", W, H, sigma, ok ? "PASS" : "FAIL");
    fft_conv_free(&c);
    CUDA_CHECK(cudaFree(d_img));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_w));
    free(img);
    free(g);
    free(ref);
    free(got);
    return ok ? LB_EXIT_PASS : LB_EXIT_FAIL;
}
