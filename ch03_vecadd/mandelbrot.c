/* mandelbrot.c - the Mandelbrot set on the CPU (1 thread, all cores) and the GPU.
 *
 *   The image is W x H pixels over the window [xmin,xmax] x [ymin,ymax] of the complex plane;
 *   each pixel holds the number of iterations z <- z*z + c (from z = 0) before |z| > 2, up
 *   to --max-iter. Written to mandelbrot.png.
 *   build: make ch03      run: ./mandelbrot [version] [--size 8192 | 1024x768] [--max-iter 256]
 *
 * versions (GPU kernels in mandelbrot_kernels.cu):
 *   0  CPU, every core (OpenMP): the baseline and the reference image
 *   1  GPU, 1D grid over the flattened image, one thread per pixel (the book's)
 *   2  GPU, 2D blocks whose warps are 8x4-pixel squares (less divergence)
 *   3  GPU, as 2 with the escape test every 8 iterations (fewer instructions)
 *   A single-thread CPU run is timed too, for the speed-up (skipped above 2048x2048: --cpu1).
 *
 * Speed is counted in iterations actually performed (the sum of all pixels' counts) per
 * second. GPU and CPU do the same fused multiply-adds in the same order (fmaf here,
 * __fmaf_rn there), so the images must be equal pixel for pixel.
 */
#include "labbook.h"
#include "mandelbrot_kernels.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#define N_VERSIONS 4
#define MAX_SIDE 16384
#define CPU1_MAX_PIXELS (2048LL * 2048LL)
static const char *const version_title[N_VERSIONS] = {
    "CPU, OpenMP (every core)", "GPU 1D grid, 32x1 warps", "GPU 2D, 8x4-pixel warps", "GPU 2D, test every 8 iter"};
static const char *const version_name[N_VERSIONS] = {"cpu_omp", "gpu_1d", "gpu_2d", "gpu_2d_batch8"};

/* ---------------------------------------------------------------- CPU reference */

/* The same operations as the GPU's step() and escaped(); see mandelbrot_kernels.cu.
 * (ISO C mode does not contract a*b+c into an FMA, and fmaf rounds once, like __fmaf_rn.) */
static int escape_count_cpu(float cr, float ci, int max_iter)
{
    float zr = 0.0f, zi = 0.0f;
    int n = 0;
    while (n < max_iter && fmaf(zr, zr, zi * zi) <= 4.0f) {
        float t = fmaf(-zi, zi, cr);
        zi = fmaf(zr + zr, zi, ci);
        zr = fmaf(zr, zr, t);
        n++;
    }
    return n;
}

static void mandelbrot_cpu(const mandel_view *v, int *counts, int threads)
{
    /* rows differ a lot in cost (the set's interior runs to max_iter), so hand them out
     * one at a time (dynamic) rather than in equal slices */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int y = 0; y < v->height; y++) {
        float ci = fmaf((float)y + 0.5f, -v->dy, v->y0);
        for (int x = 0; x < v->width; x++) {
            float cr = fmaf((float)x + 0.5f, v->dx, v->x0);
            counts[(size_t)y * v->width + x] = escape_count_cpu(cr, ci, v->max_iter);
        }
    }
}

/* ---------------------------------------------------------------- picture */

/* 256-colour palette: index 0 black (inside the set), 1..255 from deep blue through white
 * to orange as the escape count grows. */
static void make_palette(unsigned char pal[256 * 3])
{
    pal[0] = pal[1] = pal[2] = 0;
    for (int i = 1; i < 256; i++) {
        double t = (i - 1) / 254.0;
        pal[3 * i + 0] = (unsigned char)(255 * fmin(1.0, 2.0 * t));
        pal[3 * i + 1] = (unsigned char)(255 * fmin(1.0, 1.6 * t * t + 0.3 * t));
        pal[3 * i + 2] = (unsigned char)(255 * fmin(1.0, 0.35 + 1.3 * t - 1.2 * t * t));
    }
}

/* count -> palette index through a table of max_iter + 1 entries: one square root per
 * possible count instead of one per pixel */
static void colour_counts(const int *counts, size_t n, int max_iter, unsigned char *index)
{
    unsigned char *table = lb_host_alloc((size_t)max_iter + 1, "the colour table");
    for (int c = 0; c <= max_iter; c++)
        table[c] = c >= max_iter ? 0 : (unsigned char)(1 + (int)(254.0 * sqrt((double)c / max_iter)));
    for (size_t i = 0; i < n; i++)
        index[i] = table[counts[i] < 0 ? 0 : counts[i] > max_iter ? max_iter : counts[i]];
    free(table);
}

/* ---------------------------------------------------------------- timing jobs */

typedef struct { int version; mandel_view view; int *d_counts; } mandel_job;

static cudaError_t run_kernel(void *ctx)
{
    mandel_job *j = (mandel_job *)ctx;
    return mandelbrot_launch(j->version, j->view, j->d_counts);
}

/* ---------------------------------------------------------------- main */

static int max_iter = 256, force_cpu1 = 0, no_png = 0;
static const char *window_text = "-2,2,-2,2", *png_path = "mandelbrot.png";
static const lb_opt options[] = {
    {"--max-iter", LB_OPT_INT, &max_iter, "iteration limit per pixel"},
    {"--window", LB_OPT_STRING, &window_text, "xmin,xmax,ymin,ymax of the complex plane"},
    {"--png", LB_OPT_STRING, &png_path, "output image"},
    {"--no-png", LB_OPT_FLAG, &no_png, "don't write the image"},
    {"--cpu1", LB_OPT_FLAG, &force_cpu1, "time the single-thread CPU at any size (slow)"},
};
static const lb_program program = {
    "mandelbrot", "the Mandelbrot set: CPU (1 thread, OpenMP) vs GPU kernels, iterations/s",
    "versions:\n"
    "  0  CPU, every core (OpenMP): the baseline and the reference image\n"
    "  1  GPU, 1D grid over the flattened image (the book's)\n"
    "  2  GPU, 2D blocks of 8x4-pixel warps\n"
    "  3  GPU, 2D, escape test every 8 iterations\n"
    "--size is N (N x N pixels) or WxH, at most 16384 each.\n",
    LB_USE_SIZE | LB_USE_ITERS | LB_USE_CHECK_ONLY | LB_USE_QUIET | LB_USE_VERSION,
    options, sizeof options / sizeof options[0]};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{512}, 1}, .max_size_dims = 2, .iters = 10, .version = -1,
                    .max_version = N_VERSIONS - 1};
    lb_parse_args(&program, &args, argc, argv);
    int width = (int)fmin((double)args.size.v[0], MAX_SIDE + 1.0);
    int height = args.size.n > 1 ? (int)fmin((double)args.size.v[1], MAX_SIDE + 1.0) : width;
    if (width > MAX_SIDE || height > MAX_SIDE)
        lb_usage_error(&program, "--size: at most %dx%d pixels", MAX_SIDE, MAX_SIDE);
    if (max_iter < 1) lb_usage_error(&program, "--max-iter must be positive");
    double xmin, xmax, ymin, ymax;
    char extra;
    if (sscanf(window_text, "%lf,%lf,%lf,%lf%c", &xmin, &xmax, &ymin, &ymax, &extra) != 4 ||
        !(xmin < xmax) || !(ymin < ymax))
        lb_usage_error(&program, "--window '%s' is not xmin,xmax,ymin,ymax with min < max", window_text);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t pixels = (size_t)width * height, bytes = pixels * sizeof(int);
    lb_require_device_memory(bytes, "the image");
    mandel_view view = {width, height, max_iter, (float)xmin, (float)((xmax - xmin) / width),
                        (float)ymax, (float)((ymax - ymin) / height)};
    int threads = omp_get_max_threads();
    if (!args.quiet)
        printf("mandelbrot: %dx%d pixels, max %d iterations, window [%g,%g]x[%g,%g], %s (%s), "
               "%d CPU threads\n", width, height, max_iter, xmin, xmax, ymin, ymax, gpu.prop.name,
               gpu.sm, threads);

    /* the reference image, timed: version 0 */
    int *ref = lb_host_alloc(bytes, "the CPU image"), *got = lb_host_alloc(bytes, "the GPU image");
    double t0 = lb_wall_ms();
    mandelbrot_cpu(&view, ref, threads);
    double cpu_omp_ms = lb_wall_ms() - t0;
    long long total_iter = 0;
    for (size_t i = 0; i < pixels; i++) total_iter += ref[i];

    double cpu1_ms = 0.0;
    int cpu1_fail = 0;
    if (!args.check_only && (force_cpu1 || (long long)pixels <= CPU1_MAX_PIXELS)) {
        int *one = lb_host_alloc(bytes, "the single-thread image");
        t0 = lb_wall_ms();
        mandelbrot_cpu(&view, one, 1);
        cpu1_ms = lb_wall_ms() - t0;
        cpu1_fail = memcmp(one, ref, bytes) != 0;   /* same code, so it must be identical */
        free(one);
    }

    int *d_counts;
    CUDA_CHECK(cudaMalloc((void **)&d_counts, bytes));
    int first = args.version < 0 ? 1 : args.version, last = args.version < 0 ? N_VERSIONS - 1 : args.version;
    float ms[N_VERSIONS] = {0};
    lb_check check[N_VERSIONS];
    int failures = cpu1_fail;
    for (int v = (first == 0 ? 1 : first); v <= last && first != 0; v++) {
        mandel_job job = {v, view, d_counts};
        lb_poison_device(d_counts, bytes);   /* -1 everywhere: an unwritten pixel fails */
        CUDA_CHECK(run_kernel(&job));
        CUDA_CHECK(cudaMemcpy(got, d_counts, bytes, cudaMemcpyDeviceToHost));
        check[v] = lb_check_i32(version_name[v], got, ref, pixels, args.quiet);
        failures += check[v].n_bad != 0;
        if (!args.check_only) ms[v] = lb_time_ms(run_kernel, &job, 2, args.iters);
    }

    /* report */
    double giter = (double)total_iter / 1e9;
    char sz[32], buf[96];
    snprintf(sz, sizeof sz, "%dx%d", width, height);
    if (!args.quiet) {
        printf(" ver  version                             ms     G iter/s   vs CPU   check\n");
        if (cpu1_ms > 0)
            printf("   -  CPU, 1 thread                %11.3f %10.2f %8.2f   %s\n", cpu1_ms,
                   giter / (cpu1_ms * 1e-3), cpu_omp_ms / cpu1_ms, cpu1_fail ? "FAIL (differs)" : "same image");
        if (!args.check_only && (args.version <= 0))
            printf("   0  %-26s %11.3f %10.2f %8.2f   reference\n", version_title[0], cpu_omp_ms,
                   giter / (cpu_omp_ms * 1e-3), 1.0);
    }
    if (!args.check_only && args.version <= 0) {
        lb_result r = {"mandelbrot", 0, version_name[0], sz, cpu_omp_ms, "giter_s",
                       giter / (cpu_omp_ms * 1e-3), "cpu_omp", 1.0, -1};
        lb_print_result(&r);
        if (cpu1_ms > 0) {
            lb_result r1 = {"mandelbrot", -1, "cpu_1thread", sz, cpu1_ms, "giter_s",
                            giter / (cpu1_ms * 1e-3), "cpu_omp", cpu_omp_ms / cpu1_ms, !cpu1_fail};
            lb_print_result(&r1);
        }
    }
    int best = -1;
    for (int v = (first == 0 ? 1 : first); v <= last && first != 0; v++) {
        const char *verdict = lb_check_summary(&check[v], buf, sizeof buf);
        if (args.check_only) {
            if (!args.quiet) printf("  %2d  %-26s           -          -        -   %s\n", v, version_title[v], verdict);
            continue;
        }
        double rate = giter / (ms[v] * 1e-3);
        if (best < 0 || ms[v] < ms[best]) best = v;
        if (!args.quiet)
            printf("  %2d  %-26s %11.3f %10.1f %8.1f   %s\n", v, version_title[v], ms[v], rate,
                   cpu_omp_ms / ms[v], verdict);
        lb_result r = {"mandelbrot", v, version_name[v], sz, ms[v], "giter_s", rate, "cpu_omp",
                       cpu_omp_ms / ms[v], check[v].n_bad == 0};
        lb_print_result(&r);
    }
    if (!args.quiet)
        printf("iterations performed: %.3g (%.1f per pixel on average)\n", (double)total_iter,
               (double)total_iter / pixels);

    /* The whole GPU program, for Amdahl's law: the kernel is one part of what the user waits for. */
    double copy_ms = 0, colour_ms = 0, png_ms = 0;
    unsigned char *index = lb_host_alloc(pixels, "the picture");
    const int *image = ref;              /* version 0 alone: picture the CPU's image */
    if (first != 0) {                    /* else the last GPU version's, already verified */
        t0 = lb_wall_ms();
        CUDA_CHECK(cudaMemcpy(got, d_counts, bytes, cudaMemcpyDeviceToHost));
        copy_ms = lb_wall_ms() - t0;
        image = got;
    }
    t0 = lb_wall_ms();
    colour_counts(image, pixels, max_iter, index);
    colour_ms = lb_wall_ms() - t0;
    if (!no_png) {
        unsigned char palette[256 * 3];
        make_palette(palette);
        t0 = lb_wall_ms();
        if (lb_write_png(png_path, width, height, 1, index, palette))
            lb_die(LB_EXIT_USAGE, "mandelbrot: cannot write %s: %s", png_path, strerror(errno));
        png_ms = lb_wall_ms() - t0;
    }
    if (!args.quiet && best > 0)
        printf("whole GPU run (version %d): kernel %.3f ms + copy to host %.3f + colouring %.3f + PNG %.3f "
               "= %.3f ms; the kernel is %.1f%% of it\n", best, ms[best], copy_ms, colour_ms, png_ms,
               ms[best] + copy_ms + colour_ms + png_ms,
               100.0 * ms[best] / (ms[best] + copy_ms + colour_ms + png_ms));
    if (best > 0 && !no_png) {   /* for Amdahl's law in ch01's README */
        double whole = ms[best] + copy_ms + colour_ms + png_ms;
        lb_result r = {"mandelbrot", best, "whole_gpu_run", sz, whole, "kernel_share",
                       ms[best] / whole, NULL, 0.0, check[best].n_bad == 0};
        lb_print_result(&r);
    }
    if (!args.quiet && !no_png) printf("wrote %s\n", png_path);
    if (args.quiet) {
        if (best > 0)
            printf("mandelbrot: %s, GPU v%d %.3f ms = %.0f G iter/s, %.0fx the %d-thread CPU, %s\n", sz,
                   best, ms[best], giter / (ms[best] * 1e-3), cpu_omp_ms / ms[best], threads,
                   failures ? "FAIL" : "PASS");
        else
            printf("mandelbrot: %s, %s\n", sz, failures ? "FAIL" : "all versions PASS");
    }

    CUDA_CHECK(cudaFree(d_counts));
    free(ref); free(got); free(index);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
