/* mandelbrot.c - the Mandelbrot set on the CPU (1 thread, all cores) and the GPU.
 *
 *   The image is W x H pixels over the window [xmin,xmax] x [ymin,ymax] of the complex plane;
 *   each pixel holds the number of iterations z <- z*z + c (from z = 0) before |z| > 2, up
 *   to --max-iter. Written to mandelbrot.png.
 *   build: make ch03      run: ./mandelbrot [version] [--size 8192 | 1024x768] [--max-iter 256]
 *
 * versions: the table versions[] below (0 the CPU on every core, 1-3 GPU kernels), listed by
 * ./mandelbrot --help; the kernels are in mandelbrot_kernels.cu.
 *   A single-thread CPU run is timed too, for the speed-up (skipped above 2048x2048: --cpu1).
 *
 * --amdahl (the book's chapter 1): time the phases of the CPU-only run (compute on one thread,
 * colouring, PNG), take the compute's share p, and set the speed-up Amdahl's law predicts,
 * 1 / ((1 - p) + p / s), beside the one measured, for s = this machine's cores and s = the GPU
 * kernel's own speed-up: the parts left on the CPU bound what any s can give.
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

#define MAX_SIDE 16384
#define CPU1_MAX_PIXELS (2048LL * 2048LL)

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
    for (size_t i = 0; i < n; i++) index[i] = table[counts[i] < 0 ? 0 : counts[i] > max_iter ? max_iter : counts[i]];
    free(table);
}

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int version;
    mandel_view view;
    int *d_counts;
} mandel_job;

static cudaError_t run_kernel(void *ctx)
{
    mandel_job *j = (mandel_job *)ctx;
    return mandelbrot_launch(j->version, j->view, j->d_counts);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. Version 0 is the CPU,
 * run in main as the reference image. To add a version: the kernel and its case in
 * mandelbrot_launch, MANDELBROT_VERSIONS in mandelbrot_kernels.h, and a row here. */
static const lb_version versions[] = {
    {0, "cpu_omp", "CPU, OpenMP (every core)", LB_OLDEST_SM, NULL},
    {1, "gpu_1d", "GPU 1D grid, 32x1 warps", LB_OLDEST_SM, run_kernel},
    {2, "gpu_2d", "GPU 2D, 8x4-pixel warps", LB_OLDEST_SM, run_kernel},
    {3, "gpu_2d_batch8", "GPU 2D, test every 8 iter", LB_OLDEST_SM, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == MANDELBROT_VERSIONS,
               "one row in versions[] per version: MANDELBROT_VERSIONS in mandelbrot_kernels.h");

/* ---------------------------------------------------------------- Amdahl's law */

/* The whole run on one CPU thread is compute + colour + png; only the compute is parallel. */
static double amdahl_predict(double p, double s) { return 1.0 / ((1.0 - p) + p / s); }

static void print_amdahl(double cpu1_ms, double omp_ms, int threads, double kernel_ms, double copy_ms, double colour_ms,
                         double png_ms, const char *size, int quiet)
{
    double serial = colour_ms + png_ms, whole_cpu1 = cpu1_ms + serial;
    double p = cpu1_ms / whole_cpu1;
    struct {
        const char *label, *name;
        double s, whole;
    } row[2] = {
        {"CPU, every core", "amdahl_cores", (double)threads, omp_ms + serial},
        {"GPU kernel", "amdahl_gpu", cpu1_ms / kernel_ms, kernel_ms + copy_ms + serial},
    };
    if (!quiet) {
        printf("Amdahl's law: one CPU thread takes %.2f ms = compute %.2f + colouring %.2f + PNG %.2f;\n"
               "  the compute is p = %.4f of it, so no speed-up of the compute alone gives more than %.1fx\n",
               whole_cpu1, cpu1_ms, colour_ms, png_ms, p, 1.0 / (1.0 - p));
        printf(" compute on                s (compute)   predicted whole   measured whole\n");
    }
    for (int k = 0; k < 2; k++) {
        /* for the cores, s is their count (the ideal); for the GPU, its kernel's measured speed-up */
        double predicted = amdahl_predict(p, row[k].s), measured = whole_cpu1 / row[k].whole;
        if (!quiet) printf(" %-24s %10.1fx %16.1fx %16.1fx\n", row[k].label, row[k].s, predicted, measured);
        lb_result r = {"mandelbrot", -1,       row[k].name,          size, row[k].whole, "speedup",
                       measured,     "amdahl", measured / predicted, -1};
        lb_print_result(&r, quiet);
    }
    if (!quiet)
        printf("  (the GPU's whole run adds the copy to the host, %.2f ms, which Amdahl's p does not know about)\n",
               copy_ms);
}

/* --cpu-only: the program as it would be without a GPU, one thread, each phase timed; what
 * `make cpu-profile` (ch01) profiles with gprof. Returns the exit code. */
static int run_cpu_only(const mandel_view *v, const char *png, int quiet)
{
    size_t pixels = (size_t)v->width * v->height;
    int *counts = lb_host_alloc(pixels * sizeof(int), "the image");
    unsigned char *index = lb_host_alloc(pixels, "the picture"), palette[256 * 3];
    double t0 = lb_wall_ms();
    mandelbrot_cpu(v, counts, 1);
    double compute_ms = lb_wall_ms() - t0;
    t0 = lb_wall_ms();
    colour_counts(counts, pixels, v->max_iter, index);
    double colour_ms = lb_wall_ms() - t0, png_ms = 0;
    if (png) {
        make_palette(palette);
        t0 = lb_wall_ms();
        if (lb_write_png(png, v->width, v->height, 1, index, palette))
            lb_die(LB_EXIT_USAGE, "mandelbrot: cannot write %s: %s", png, strerror(errno));
        png_ms = lb_wall_ms() - t0;
    }
    double whole = compute_ms + colour_ms + png_ms;
    printf("mandelbrot --cpu-only: %dx%d, one thread: compute %.2f ms + colouring %.2f + PNG %.2f = %.2f ms; "
           "the compute is p = %.4f of it%s\n",
           v->width, v->height, compute_ms, colour_ms, png_ms, whole, compute_ms / whole,
           quiet ? "" : " (the part worth moving to the GPU)");
    free(counts);
    free(index);
    return LB_EXIT_PASS;
}

/* ---------------------------------------------------------------- main */

static int max_iter = 256, force_cpu1 = 0, no_png = 0, amdahl = 0, cpu_only = 0;
static const char *window_text = "-2,2,-2,2", *png_path = "mandelbrot.png";
static const lb_opt options[] = {
    {"--max-iter", LB_OPT_INT, &max_iter, "iteration limit per pixel"},
    {"--window", LB_OPT_STRING, &window_text, "xmin,xmax,ymin,ymax of the complex plane"},
    {"--png", LB_OPT_STRING, &png_path, "output image"},
    {"--no-png", LB_OPT_FLAG, &no_png, "don't write the image"},
    {"--cpu-only", LB_OPT_FLAG, &cpu_only, "only the single-thread CPU run, its phases timed (no GPU needed)"},
    {"--amdahl", LB_OPT_FLAG, &amdahl, "Amdahl's law: the run's phases, the speed-ups predicted and measured"},
    {"--cpu1", LB_OPT_FLAG, &force_cpu1, "time the single-thread CPU at any size (slow)"},
};
static const lb_program program = {
    .name = "mandelbrot",
    .synopsis = "the Mandelbrot set: CPU (1 thread, OpenMP) vs GPU kernels, iterations/s",
    .details = "--size is N (N x N pixels) or WxH, at most 16384 each.\n",
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = sizeof options / sizeof options[0],
    .versions = versions,
    .n_versions = MANDELBROT_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{512}, 1}, .max_size_dims = 2, .iters = 10};
    lb_parse_args(&program, &args, argc, argv);
    if (!no_png && !png_path[0]) lb_usage_error(&program, "--png needs a file name (--no-png writes none)");
    if (!no_png) lb_check_output_path(&program, "--png", png_path);
    int width = (int)fmin((double)args.size.v[0], MAX_SIDE + 1.0);
    int height = args.size.n > 1 ? (int)fmin((double)args.size.v[1], MAX_SIDE + 1.0) : width;
    if (width > MAX_SIDE || height > MAX_SIDE)
        lb_usage_error(&program, "--size: at most %dx%d pixels", MAX_SIDE, MAX_SIDE);
    if (max_iter < 1) lb_usage_error(&program, "--max-iter must be positive");
    if (amdahl && args.check_only) lb_usage_error(&program, "--amdahl times the run: not with --check-only");
    if (amdahl) force_cpu1 = 1; /* its compute phase is the single-thread run */
    if (cpu_only && (amdahl || args.version >= 0 || args.check_only))
        lb_usage_error(&program, "--cpu-only runs the CPU alone: no version, --amdahl or --check-only with it");
    double xmin, xmax, ymin, ymax;
    char extra;
    if (sscanf(window_text, "%lf,%lf,%lf,%lf%c", &xmin, &xmax, &ymin, &ymax, &extra) != 4 || !(xmin < xmax) ||
        !(ymin < ymax))
        lb_usage_error(&program, "--window '%s' is not xmin,xmax,ymin,ymax with min < max", window_text);
    /* 1e400 reads as infinity; a window must be finite (and its width a finite number too) */
    if (!isfinite(xmax - xmin) || !isfinite(ymax - ymin))
        lb_usage_error(&program, "--window '%s': the corners must be finite numbers", window_text);

    size_t pixels = (size_t)width * height, bytes = pixels * sizeof(int);
    mandel_view view = {width,
                        height,
                        max_iter,
                        (float)xmin,
                        (float)((xmax - xmin) / width),
                        (float)ymax,
                        (float)((ymax - ymin) / height)};
    if (cpu_only) return run_cpu_only(&view, no_png ? NULL : png_path, args.quiet);
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(bytes, "the image");
    int threads = omp_get_max_threads();
    if (!args.quiet)
        printf("mandelbrot: %dx%d pixels, max %d iterations, window [%g,%g]x[%g,%g], %s (%s), "
               "%d CPU threads\n",
               width, height, max_iter, xmin, xmax, ymin, ymax, gpu.prop.name, gpu.sm, threads);

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
        cpu1_fail = memcmp(one, ref, bytes) != 0; /* same code, so it must be identical */
        free(one);
    }

    int *d_counts;
    CUDA_CHECK(cudaMalloc((void **)&d_counts, bytes));
    /* the report: iterations per second, against the CPU on every core (version 0) */
    double giter = (double)total_iter / 1e9;
    char sz[32];
    snprintf(sz, sizeof sz, "%dx%d", width, height);
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "giter_s",
                     .unit_head = "G iter/s",
                     .base = "cpu_omp",
                     .base_head = "vs CPU"};
    lb_report_table(&rep, sz, NULL);
    if (!args.check_only) {
        rep.base_value = giter / (cpu_omp_ms * 1e-3);
        if (lb_version_wanted(&program, &args, &gpu, 0))
            lb_report_row(&rep, 0, NULL, cpu_omp_ms, rep.base_value, -1, "reference");
        if (cpu1_ms > 0 && args.version <= 0)
            lb_report_row(&rep, -1, "cpu_1thread", cpu1_ms, giter / (cpu1_ms * 1e-3), !cpu1_fail,
                          cpu1_fail ? "FAIL (differs)" : "same image");
    }
    if (cpu1_fail && args.version > 0) rep.failures++; /* (otherwise its row above counts it) */

    int gpu_ran = 0, best = -1;
    float ms[MANDELBROT_VERSIONS] = {0};
    for (int v = 1; v < MANDELBROT_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        mandel_job job = {v, view, d_counts};
        lb_poison_device(d_counts, bytes); /* -1 everywhere: an unwritten pixel fails */
        CUDA_CHECK(versions[v].run(&job));
        CUDA_CHECK(cudaMemcpy(got, d_counts, bytes, cudaMemcpyDeviceToHost));
        lb_check c = lb_check_i32(versions[v].name, got, ref, pixels, args.quiet);
        if (!args.check_only) ms[v] = lb_time_ms(versions[v].run, &job, 2, args.iters);
        char verdict[96];
        lb_report_row(&rep, v, NULL, ms[v], ms[v] > 0 ? giter / (ms[v] * 1e-3) : 0.0, c.n_bad == 0,
                      lb_check_summary(&c, verdict, sizeof verdict));
        gpu_ran = 1;
        if (!args.check_only && c.n_bad == 0 && (best < 0 || ms[v] < ms[best])) best = v;
    }
    if (!args.quiet)
        printf("iterations performed: %.3g (%.1f per pixel on average)\n", (double)total_iter,
               (double)total_iter / pixels);

    /* The whole GPU program, for Amdahl's law: the kernel is one part of what the user waits for. */
    double copy_ms = 0, colour_ms = 0, png_ms = 0;
    unsigned char *index = lb_host_alloc(pixels, "the picture");
    const int *image = ref; /* version 0 alone: picture the CPU's image */
    if (gpu_ran) {          /* else the last GPU version's, already verified */
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
               "= %.3f ms; the kernel is %.1f%% of it\n",
               best, ms[best], copy_ms, colour_ms, png_ms, ms[best] + copy_ms + colour_ms + png_ms,
               100.0 * ms[best] / (ms[best] + copy_ms + colour_ms + png_ms));
    if (best > 0 && !no_png) { /* for Amdahl's law in ch01's README */
        double whole = ms[best] + copy_ms + colour_ms + png_ms;
        lb_result r = {"mandelbrot", best, "whole_gpu_run", sz, whole, "kernel_share", ms[best] / whole, NULL, 0.0, 1};
        lb_print_result(&r, args.quiet);
    }
    if (amdahl && best > 0 && cpu1_ms > 0)
        print_amdahl(cpu1_ms, cpu_omp_ms, threads, ms[best], copy_ms, colour_ms, png_ms, sz, args.quiet);
    else if (amdahl && !args.quiet)
        printf("--amdahl: needs a GPU version that passed, and the single-thread CPU run\n");
    if (!args.quiet && !no_png) printf("wrote %s\n", png_path);
    CUDA_CHECK(cudaFree(d_counts));
    free(ref);
    free(got);
    free(index);
    return lb_report_finish(&rep);
}
