/* dynamic_parallelism.c - kernels that launch kernels (built with -rdc=true, -lcudadevrt):
 *   1  the book's recursive hello, --depth levels deep (each level counted on the device)
 *   2  quicksort from the device: one-thread kernels partition and launch a child per half,
 *      with a depth limit (--max-depth) and heapsort / insertion-sort fallbacks; checked against
 *      the CPU's qsort on random, sorted, reversed and all-equal inputs (--size n, default 10^6)
 *   3  Mariani-Silver Mandelbrot against the plain one-thread-per-pixel kernel: the images must
 *      be equal; both timed
 *   build: make ch10      run: ./dynamic_parallelism [--depth D] [--size N] [--image WxH]
 */
#include "labbook.h"
#include "dynamic_parallelism_kernels.h"

#include <string.h>

/* ---------------------------------------------------------------- CPU references */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void fill_input(int *x, int n, int kind, lb_rng *rng)
{
    for (int i = 0; i < n; i++)
        x[i] = kind == 0 ? (int)(lb_rng_next(rng) >> 33) : kind == 1 ? i : kind == 2 ? n - i : 7;
}

/* ---------------------------------------------------------------- main */

typedef struct {
    int mariani;
    int *d;
    int w, h;
    float step;
    int max_iter, max_depth;
} mandel_job;

static cudaError_t run_mandel(void *ctx)
{
    mandel_job *j = (mandel_job *)ctx;
    return mandel_dp_launch(j->mariani, j->d, j->w, j->h, -2.0f, -1.25f, j->step, j->max_iter, j->max_depth);
}

static int depth = 4, max_depth = 16, max_iter = 256;
static lb_dims image = {{2048, 2048}, 2};
static const lb_opt options[] = {
    {"--depth", LB_OPT_INT, &depth, "levels of the recursive hello (1..24)"},
    {"--max-depth", LB_OPT_INT, &max_depth, "nesting limit for quicksort and Mariani-Silver (1..23)"},
    {"--image", LB_OPT_DIMS, &image, "the Mandelbrot image, WxH"},
    {"--max-iter", LB_OPT_INT, &max_iter, "Mandelbrot iterations"},
};
static const lb_program program = {
    .name = "dynamic_parallelism",
    .synopsis = "kernels launching kernels: recursive hello, device-side quicksort, Mariani-Silver Mandelbrot",
    .details = "--size is the number of ints quicksort sorts.\n",
    .uses = LB_USE_SIZE | LB_USE_SEED | LB_USE_QUIET | LB_USE_CHECK_ONLY | LB_USE_ITERS,
    .opts = options,
    .n_opts = 4,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1000000}, 1}, .max_size_dims = 1, .iters = 5, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    /* the hardware nests at most 24 levels of launches */
    if (depth < 1 || depth > 24) lb_usage_error(&program, "--depth must be 1..24 (launches nest at most 24 deep)");
    if (max_depth < 1 || max_depth > 23) lb_usage_error(&program, "--max-depth must be 1..23");
    if (args.size.v[0] > (1 << 30)) lb_usage_error(&program, "--size: at most 2^30");
    int n = (int)args.size.v[0];
    int w = (int)image.v[0], h = image.n == 2 ? (int)image.v[1] : w;
    if (w < 1 || h < 1 || w > 16384 || h > 16384) lb_usage_error(&program, "--image: each side 1 to 16384");
    if (max_iter < 1 || max_iter > 100000) lb_usage_error(&program, "--max-iter must be 1..100000");
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_require_device_memory(sizeof(int) * ((size_t)n + 2 * (size_t)w * h), "the arrays");
    /* every launch not yet started waits in a queue of this size: quicksort keeps many */
    CUDA_CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 1 << 16));
    if (!args.quiet) printf("dynamic_parallelism: %s (%s), seed %llu\n", gpu.prop.name, gpu.sm, args.seed);
    int failures = 0;

    /* ---- 1: the recursive hello */
    unsigned int *d_count, count;
    CUDA_CHECK(cudaMalloc((void **)&d_count, sizeof count));
    CUDA_CHECK(cudaMemset(d_count, 0, sizeof count));
    CUDA_CHECK(hello_launch(depth, !args.quiet, d_count));
    CUDA_CHECK(cudaDeviceSynchronize()); /* (also flushes the device printf buffer) */
    CUDA_CHECK(cudaMemcpy(&count, d_count, sizeof count, cudaMemcpyDeviceToHost));
    int ok = count == (unsigned int)(HELLO_THREADS * depth);
    failures += !ok;
    if (!args.quiet)
        printf("recursive hello: %u threads ran over %d levels (want %d): %s\n", count, depth, HELLO_THREADS * depth,
               ok ? "PASS" : "FAIL");
    CUDA_CHECK(cudaFree(d_count));

    /* ---- 2: quicksort */
    static const char *const kinds[4] = {"random", "sorted", "reversed", "all_equal"};
    int *h_x = lb_host_alloc(sizeof(int) * (size_t)n, "the input"),
        *h_want = lb_host_alloc(sizeof(int) * (size_t)n, "qsort's");
    int *h_got = lb_host_alloc(sizeof(int) * (size_t)n, "the result"), *d_x, *d_err;
    CUDA_CHECK(cudaMalloc((void **)&d_x, sizeof(int) * (size_t)n));
    CUDA_CHECK(cudaMalloc((void **)&d_err, sizeof(int)));
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    char sz[48];
    if (!args.quiet) printf("quicksort of %d ints, depth limit %d:\n", n, max_depth);
    for (int kind = 0; kind < 4; kind++) {
        fill_input(h_x, n, kind, &rng);
        memcpy(h_want, h_x, sizeof(int) * (size_t)n);
        double t0 = lb_wall_ms();
        qsort(h_want, (size_t)n, sizeof(int), cmp_int);
        double cpu_ms = lb_wall_ms() - t0;
        CUDA_CHECK(cudaMemcpy(d_x, h_x, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemset(d_err, 0, sizeof(int)));
        cudaEvent_t e0, e1;
        CUDA_CHECK(cudaEventCreate(&e0));
        CUDA_CHECK(cudaEventCreate(&e1));
        CUDA_CHECK(cudaEventRecord(e0, 0));
        CUDA_CHECK(quicksort_launch(d_x, n, max_depth, d_err));
        CUDA_CHECK(cudaEventRecord(e1, 0));
        CUDA_CHECK(cudaEventSynchronize(e1)); /* the top launch ends when all its children have */
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        int launch_failed;
        CUDA_CHECK(cudaMemcpy(h_got, d_x, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&launch_failed, d_err, sizeof(int), cudaMemcpyDeviceToHost));
        lb_check c = lb_check_i32(kinds[kind], h_got, h_want, (size_t)n, args.quiet);
        failures += c.n_bad != 0;
        if (!args.quiet)
            printf("  %-10s %10.3f ms on the GPU, %8.3f ms qsort on the CPU: %s%s\n", kinds[kind], ms, cpu_ms,
                   c.n_bad ? "FAIL" : "PASS (= qsort)",
                   launch_failed ? " (some child launches failed: their parents heap-sorted instead)" : "");
        snprintf(sz, sizeof sz, "%d_%s", n, kinds[kind]);
        lb_result r = {"dynamic_parallelism", -1,   "quicksort", sz,          ms, "mkeys_s",
                       n / (ms * 1e3),        NULL, 0.0,         c.n_bad == 0};
        if (!args.check_only) lb_print_result(&r, args.quiet);
        CUDA_CHECK(cudaEventDestroy(e0));
        CUDA_CHECK(cudaEventDestroy(e1));
    }
    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_err));
    free(h_x);
    free(h_want);
    free(h_got);

    /* ---- 3: Mariani-Silver against the plain kernel */
    size_t img = sizeof(int) * (size_t)w * h;
    int *d_plain, *d_ms, *h_plain = lb_host_alloc(img, "an image"), *h_ms = lb_host_alloc(img, "an image");
    CUDA_CHECK(cudaMalloc((void **)&d_plain, img));
    CUDA_CHECK(cudaMalloc((void **)&d_ms, img));
    lb_poison_device(d_plain, img);
    lb_poison_device(d_ms, img);
    float step = 2.5f / w;
    mandel_job jp = {0, d_plain, w, h, step, max_iter, max_depth}, jm = {1, d_ms, w, h, step, max_iter, max_depth};
    CUDA_CHECK(run_mandel(&jp));
    CUDA_CHECK(run_mandel(&jm));
    CUDA_CHECK(cudaMemcpy(h_plain, d_plain, img, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(h_ms, d_ms, img, cudaMemcpyDeviceToHost));
    lb_check c = lb_check_i32("Mariani-Silver vs plain", h_ms, h_plain, (size_t)w * h, args.quiet);
    failures += c.n_bad != 0;
    float plain_ms = 0.0f, ms_ms = 0.0f;
    if (!args.check_only) {
        plain_ms = lb_time_ms(run_mandel, &jp, 1, args.iters);
        ms_ms = lb_time_ms(run_mandel, &jm, 1, args.iters);
        snprintf(sz, sizeof sz, "%dx%d_%dit", w, h, max_iter);
        lb_result r1 = {"dynamic_parallelism",
                        -1,
                        "mandel_plain",
                        sz,
                        plain_ms,
                        "mpix_s",
                        (double)w * h / (plain_ms * 1e3),
                        "plain",
                        1.0,
                        c.n_bad == 0};
        lb_result r2 = {"dynamic_parallelism",         -1,      "mandel_mariani", sz,          ms_ms, "mpix_s",
                        (double)w * h / (ms_ms * 1e3), "plain", plain_ms / ms_ms, c.n_bad == 0};
        lb_print_result(&r1, args.quiet);
        lb_print_result(&r2, args.quiet);
    }
    if (!args.quiet) {
        printf("Mandelbrot %dx%d, %d iterations: Mariani-Silver %s the plain kernel's image", w, h, max_iter,
               c.n_bad ? "DIFFERS from" : "equals");
        if (c.n_bad) printf(" in %zu pixels", c.n_bad);
        if (!args.check_only)
            printf("; plain %.3f ms, Mariani-Silver %.3f ms (%.2fx)", plain_ms, ms_ms, plain_ms / ms_ms);
        printf("\n");
    } else {
        printf("dynamic_parallelism: hello depth %d, quicksort n=%d, Mandelbrot %dx%d, %s\n", depth, n, w, h,
               failures ? "FAIL" : "PASS");
    }
    CUDA_CHECK(cudaFree(d_plain));
    CUDA_CHECK(cudaFree(d_ms));
    free(h_plain);
    free(h_ms);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
