/* elementwise.c - scalar multiply and saxpy on 50M floats: CPU vs GPU, with and without copies.
 *
 *   x, y are float vectors of n elements (default 50,000,000, as the book's gpuarray timing).
 *   scale: y = a * x      saxpy: y = a * x + y      (a = 2)
 *   build: make ch03      run: ./elementwise [--size N] [--block B] [--iters R]
 *
 * Three times per operation, each taken the right way:
 *   CPU           one core, host wall clock, median of 3 runs
 *   GPU kernel    CUDA events around the kernel alone, median of --iters
 *   GPU + copies  CUDA events around copy in, kernel, copy out (pageable memory): what a
 *                 program that keeps its data on the host really pays
 * The kernel's GB/s is compared with a device-to-device cudaMemcpy of the same bytes.
 */
#include "labbook.h"
#include "elementwise_kernels.h"

#define SCALE_A 2.0f
enum { OP_SCALE, OP_SAXPY, N_OPS };
static const char *const op_title[N_OPS] = {"scale  y = a*x", "saxpy  y = a*x + y"};
static const char *const op_name[N_OPS] = {"scale", "saxpy"};

/* ---------------------------------------------------------------- CPU reference */

static void scale_cpu(float a, const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = a * x[i];
}

/* out = a*x + y: written out of place so that repeated timing runs see the same input */
static void saxpy_cpu(float a, const float *x, const float *y, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = a * x[i] + y[i];
}

/* ---------------------------------------------------------------- timing jobs */

typedef struct {
    int op;
    size_t n;
    int block;
    float *d_x, *d_y;
    const float *h_x, *h_y;
    float *h_out;
} op_job;

static cudaError_t run_kernel(void *ctx)
{
    op_job *j = (op_job *)ctx;
    return j->op == OP_SCALE ? scale_launch(SCALE_A, j->d_x, j->d_y, j->n, j->block)
                             : saxpy_launch(SCALE_A, j->d_x, j->d_y, j->n, j->block);
}

static cudaError_t run_with_copies(void *ctx)
{
    op_job *j = (op_job *)ctx;
    size_t bytes = j->n * sizeof(float);
    cudaError_t e = cudaMemcpy(j->d_x, j->h_x, bytes, cudaMemcpyHostToDevice);
    if (!e && j->op == OP_SAXPY) e = cudaMemcpy(j->d_y, j->h_y, bytes, cudaMemcpyHostToDevice);
    if (!e) e = run_kernel(j);
    if (!e) e = cudaMemcpy(j->h_out, j->d_y, bytes, cudaMemcpyDeviceToHost);
    return e;
}

static double cpu_median_ms(int op, const float *x, const float *y, float *out, size_t n)
{
    double t[3];
    for (int r = 0; r < 3; r++) {
        double t0 = lb_wall_ms();
        if (op == OP_SCALE)
            scale_cpu(SCALE_A, x, out, n);
        else
            saxpy_cpu(SCALE_A, x, y, out, n);
        t[r] = lb_wall_ms() - t0;
    }
    /* median of three */
    double lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
    return t[2] < lo ? lo : t[2] > hi ? hi : t[2];
}

/* ---------------------------------------------------------------- main */

static const lb_program program = {
    .name = "elementwise",
    .synopsis = "scale (y = a*x) and saxpy (y = a*x + y): CPU, GPU kernel, GPU with copies",
    .details = NULL,
    .uses = LB_USE_SIZE | LB_USE_BLOCK | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = NULL,
    .n_opts = 0,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{50000000}, 1}, .max_size_dims = 1, .block = 256, .iters = 10, .seed = 1, .version = -1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0], bytes = n * sizeof(float);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_check_block(&program, &gpu, args.block);
    lb_require_device_memory(2 * bytes + (args.check_only ? 0 : 3 * bytes / 2 * 2), "elementwise");
    if (!args.quiet)
        printf("elementwise: n=%zu floats, a=%g, %s (%s), seed %llu\n", n, (double)SCALE_A, gpu.prop.name, gpu.sm,
               args.seed);

    float *h_x = lb_host_alloc(bytes, "x"), *h_y = lb_host_alloc(bytes, "y");
    float *h_ref = lb_host_alloc(bytes, "the reference"), *h_out = lb_host_alloc(bytes, "the result");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_x, n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(h_y, n, -1.0f, 1.0f, &rng);
    float *d_x, *d_y;
    CUDA_CHECK(cudaMalloc((void **)&d_x, bytes));
    CUDA_CHECK(cudaMalloc((void **)&d_y, bytes));

    char sz[32], buf[96];
    snprintf(sz, sizeof sz, "%zu", n);
    int failures = 0;
    double best_speedup = 0.0;
    if (!args.quiet)
        printf(" op                   CPU ms  kernel ms  +copies ms  kernel GB/s  vs memcpy  "
               "speed-up kernel/+copies  check\n");
    for (int op = 0; op < N_OPS; op++) {
        op_job job = {op, n, args.block, d_x, d_y, h_x, h_y, h_out};
        double cpu_ms = cpu_median_ms(op, h_x, h_y, h_ref, n);

        /* verify: scale writes a poisoned y; saxpy reads y, so y holds the input instead
         * and an element it skipped keeps its old value, which does not match a*x + y */
        CUDA_CHECK(cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice));
        if (op == OP_SCALE)
            lb_poison_device(d_y, bytes);
        else
            CUDA_CHECK(cudaMemcpy(d_y, h_y, bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(run_kernel(&job));
        CUDA_CHECK(cudaMemcpy(h_out, d_y, bytes, cudaMemcpyDeviceToHost));
        /* scale is one exact-rounded multiply on both sides: equal. saxpy: the GPU fuses
         * a*x+y into one FMA (one rounding), the CPU rounds twice: they may differ by about
         * one unit in the last place of |a*x| + |y| <= 3, so 1e-6 absolute + relative. */
        double tol = op == OP_SCALE ? 0.0 : 1e-6;
        lb_check c = lb_check_f32(op_name[op], h_out, h_ref, n, tol, tol, args.quiet);
        failures += c.n_bad != 0;
        if (args.check_only) {
            if (!args.quiet)
                printf(" %-18s %9.2f          -           -            -          -"
                       "                        -  %s\n",
                       op_title[op], cpu_ms, lb_check_summary(&c, buf, sizeof buf));
            continue;
        }

        float kernel_ms = lb_time_ms(run_kernel, &job, 3, args.iters);
        float copies_ms = lb_time_ms(run_with_copies, &job, 1, args.iters < 5 ? args.iters : 5);
        double moved = (op == OP_SCALE ? 2.0 : 3.0) * (double)bytes;
        double gbps = moved / (kernel_ms * 1e6);
        double ceiling = lb_memcpy_ceiling_gbps((size_t)moved, args.iters, NULL);
        if (cpu_ms / kernel_ms > best_speedup) best_speedup = cpu_ms / kernel_ms;
        if (!args.quiet)
            printf(" %-18s %9.2f %10.3f %11.2f %12.1f %10.2f %12.0fx / %6.2fx  %s\n", op_title[op], cpu_ms, kernel_ms,
                   copies_ms, gbps, gbps / ceiling, cpu_ms / kernel_ms, cpu_ms / copies_ms,
                   lb_check_summary(&c, buf, sizeof buf));
        if (!args.quiet)
            printf("    the copies are %.1f%% of the GPU + copies time\n", 100.0 * (copies_ms - kernel_ms) / copies_ms);
        char name[32];
        snprintf(name, sizeof name, "%s_cpu", op_name[op]);
        lb_result rc = {"elementwise", -1, name, sz, cpu_ms, "gbps", moved / (cpu_ms * 1e6), NULL, 0, -1};
        lb_print_result(&rc, args.quiet);
        snprintf(name, sizeof name, "%s_kernel", op_name[op]);
        lb_result rk = {"elementwise", -1, name, sz, kernel_ms, "gbps", gbps, "memcpy", gbps / ceiling, c.n_bad == 0};
        lb_print_result(&rk, args.quiet);
        snprintf(name, sizeof name, "%s_with_copies", op_name[op]);
        lb_result rw = {"elementwise",      -1,   name, sz,          copies_ms, "speedup_vs_cpu",
                        cpu_ms / copies_ms, NULL, 0,    c.n_bad == 0};
        lb_print_result(&rw, args.quiet);
    }
    if (args.quiet)
        printf("elementwise: n=%zu, kernel up to %.0fx faster than one CPU core, %s\n", n, best_speedup,
               failures ? "FAIL" : "PASS");

    CUDA_CHECK(cudaFree(d_x));
    CUDA_CHECK(cudaFree(d_y));
    free(h_x);
    free(h_y);
    free(h_ref);
    free(h_out);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
