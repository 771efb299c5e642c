/* divergence.c - the cost of a branch that splits warps.
 *
 *   x is n floats (default 2^22); each thread runs one of two paths of `--work` multiply-adds.
 *   build: make ch06      run: ./divergence [--size N] [--work W] [--block B] [--print]
 *
 * versions (kernels in divergence_kernels.cu):
 *   1  branch on the thread's parity (odd/even): every warp runs both paths, one after the other
 *   2  branch on the warp's parity: each warp runs one path
 * Same arithmetic in both; the first should take about twice as long. --print shows, with
 * device printf, which lanes of a warp take which path (the book's version).
 */
#include "labbook.h"
#include "divergence_kernels.h"

#include <math.h>

static const char *const version_title[3] = {"", "branch on thread parity", "branch on warp parity"};
static const char *const version_name[3] = {"", "by_thread", "by_warp"};

/* ---------------------------------------------------------------- CPU reference */

static float path_cpu(float v, int which, int work)
{
    float a = which ? PATH1_A : PATH0_A, b = which ? PATH1_B : PATH0_B;
    for (int r = 0; r < work; r++) v = fmaf(a, v, b);
    return v;
}

/* which path element i took: its thread's place in the block decides */
static int path_of(size_t i, int block, int version)
{
    int t = (int)(i % (size_t)block);
    return version == 1 ? t % 2 : (t / 32) % 2;
}

/* ---------------------------------------------------------------- timing jobs */

typedef struct { int version; float *d_x; size_t n; int work, block; } div_job;

static cudaError_t run_kernel(void *ctx)
{
    div_job *j = (div_job *)ctx;
    return divergence_launch(j->version - 1, j->d_x, j->n, j->work, j->block);
}

/* ---------------------------------------------------------------- main */

static int work = 64, print = 0;
static const lb_opt options[] = {
    {"--work", LB_OPT_INT, &work, "multiply-adds per thread on its path"},
    {"--print", LB_OPT_FLAG, &print, "show with device printf which lanes take which path"},
};
static const lb_program program = {
    "divergence", "a branch on odd/even thread (divergent) vs on warp index (uniform), same work, timed",
    "versions:\n"
    "  1  branch on the thread's parity (divergent)\n"
    "  2  branch on the warp's parity (uniform)\n"
    "--block must be a multiple of 64, so that both versions give each path the same threads.\n",
    LB_USE_ALL, options, 2};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 22}, 1}, .max_size_dims = 1, .block = 256, .iters = 20, .seed = 1,
                    .version = -1, .min_version = 1, .max_version = 2};
    lb_parse_args(&program, &args, argc, argv);
    if (work < 1) lb_usage_error(&program, "--work must be positive");
    if (args.block % 64) lb_usage_error(&program, "--block %d: must be a multiple of 64", args.block);
    size_t n = (size_t)args.size.v[0], bytes = n * sizeof(float);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    lb_check_block(&program, &gpu, args.block);
    lb_require_device_memory(bytes, "x");
    if (print) {
        CUDA_CHECK(divergence_print_launch());
        CUDA_CHECK(cudaDeviceSynchronize());
        fflush(stdout);
    }
    if (!args.quiet)
        printf("divergence: %d multiply-adds per thread on one of two paths, n=%zu, block %d, %s (%s)\n", work, n,
               args.block, gpu.prop.name, gpu.sm);

    float *h_x = lb_host_alloc(bytes, "x"), *h_got = lb_host_alloc(bytes, "the result");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_x, n, -1.0f, 1.0f, &rng);
    float *d_x;
    CUDA_CHECK(cudaMalloc((void **)&d_x, bytes));

    int first = args.version < 0 ? 1 : args.version, last = args.version < 0 ? 2 : args.version;
    float ms[3] = {0};
    size_t bad[3] = {0};
    size_t step = lb_sample_step(n, work, 67108864.0);
    for (int v = first; v <= last; v++) {
        div_job job = {v, d_x, n, work, args.block};
        CUDA_CHECK(cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(run_kernel(&job));
        CUDA_CHECK(cudaMemcpy(h_got, d_x, bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i = lb_sample_next(i, n, step)) {
            float want = path_cpu(h_x[i], path_of(i, args.block, v), work);
            if (!(h_got[i] == want)) {   /* the same FMAs: equal; NaN fails */
                if (!args.quiet && bad[v] < 5)
                    fprintf(stderr, "  %s mismatch at [%zu]: got %.9g, want %.9g\n", version_name[v], i, h_got[i], want);
                bad[v]++;
            }
        }
        if (!args.check_only) ms[v] = lb_time_ms(run_kernel, &job, 2, args.iters);
    }

    char sz[32];
    snprintf(sz, sizeof sz, "%zu", n);
    if (!args.quiet) printf(" ver  branch                        ms      vs uniform   check\n");
    for (int v = first; v <= last; v++) {
        const char *verdict = bad[v] ? "FAIL" : "PASS (exact)";
        if (args.check_only) {
            if (!args.quiet) printf("  %2d  %-24s         -            -   %s\n", v, version_title[v], verdict);
            continue;
        }
        double ratio = ms[2] > 0 ? ms[v] / ms[2] : 0.0;
        if (!args.quiet) printf("  %2d  %-24s %10.4f %12.2f   %s\n", v, version_title[v], ms[v], ratio, verdict);
        lb_result r = {"divergence", v, version_name[v], sz, ms[v], "gflops", 2.0 * work * n / (ms[v] * 1e6),
                       ms[2] > 0 ? "by_warp" : NULL, ms[2] > 0 ? ms[2] / ms[v] : 0.0, !bad[v]};
        lb_print_result(&r);
    }
    int failures = (bad[1] != 0) + (bad[2] != 0);
    if (args.quiet) {
        if (!args.check_only && first == 1 && last == 2)
            printf("divergence: the divergent branch takes %.2fx the uniform one, %s\n", ms[1] / ms[2], failures ? "FAIL" : "PASS");
        else
            printf("divergence: %s\n", failures ? "FAIL" : "PASS");
    }
    CUDA_CHECK(cudaFree(d_x));
    free(h_x); free(h_got);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
