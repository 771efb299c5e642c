/* divergence.c - the cost of a branch that splits warps.
 *
 *   x is n floats (default 2^22); each thread runs one of two paths of `--work` multiply-adds.
 *   build: make ch06      run: ./divergence [--size N] [--work W] [--block B] [--print]
 *
 * versions: the table versions[] below, listed by ./divergence --help:
 *   1 branches on the thread's parity (odd/even): every warp runs both paths, one after the other;
 *   2 branches on the warp's parity: each warp runs one path (the baseline).
 * Same arithmetic in both; the first should take about twice as long. --print shows, with
 * device printf, which lanes of a warp take which path (the book's version).
 */
#include "labbook.h"
#include "divergence_kernels.h"

#include <math.h>

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

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int version;
    float *d_x;
    size_t n;
    int work, block;
} div_job;

static cudaError_t run_kernel(void *ctx)
{
    div_job *j = (div_job *)ctx;
    return divergence_launch(j->version, j->d_x, j->n, j->work, j->block);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it. Version 2 (no
 * divergence) is the baseline the other is compared with. */
static const lb_version versions[] = {
    {1, "by_thread", "branch on thread parity", LB_OLDEST_SM, run_kernel},
    {2, "by_warp", "branch on warp parity", LB_OLDEST_SM, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == DIVERGENCE_VERSIONS,
               "one row in versions[] per version: DIVERGENCE_VERSIONS in divergence_kernels.h");

/* ---------------------------------------------------------------- main */

static int work = 64, print = 0;
static const lb_opt options[] = {
    {"--work", LB_OPT_INT, &work, "multiply-adds per thread on its path"},
    {"--print", LB_OPT_FLAG, &print, "show with device printf which lanes take which path"},
};
static const lb_program program = {
    .name = "divergence",
    .synopsis = "a branch on odd/even thread (divergent) vs on warp index (uniform), same work, timed",
    .details = "--block must be a multiple of 64, so that both versions give each path the same threads.\n",
    .uses = LB_USE_ALL,
    .opts = options,
    .n_opts = 2,
    .versions = versions,
    .n_versions = DIVERGENCE_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 22}, 1}, .max_size_dims = 1, .block = 256, .iters = 20, .seed = 1};
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

    /* check and time each version (versions[0] is version 1) */
    float ms[DIVERGENCE_VERSIONS + 1] = {0};
    size_t bad[DIVERGENCE_VERSIONS + 1] = {0};
    size_t step = lb_sample_step(n, work, 67108864.0);
    for (int v = 1; v <= DIVERGENCE_VERSIONS; v++) {
        if (!lb_version_wanted(&program, &args, &gpu, v)) continue;
        div_job job = {v, d_x, n, work, args.block};
        CUDA_CHECK(cudaMemcpy(d_x, h_x, bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(versions[v - 1].run(&job));
        CUDA_CHECK(cudaMemcpy(h_got, d_x, bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i = lb_sample_next(i, n, step)) {
            float want = path_cpu(h_x[i], path_of(i, args.block, v), work);
            if (!(h_got[i] == want)) { /* the same FMAs: equal; NaN fails */
                if (!args.quiet && bad[v] < 5)
                    fprintf(stderr, "  %s mismatch at [%zu]: got %.9g, want %.9g\n", versions[v - 1].name, i, h_got[i],
                            want);
                bad[v]++;
            }
        }
        if (!args.check_only) ms[v] = lb_time_ms(versions[v - 1].run, &job, 2, args.iters);
    }

    /* report: GFLOP/s (2 flops per multiply-add), against the uniform branch when it ran */
    char sz[32];
    snprintf(sz, sizeof sz, "%zu", n);
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "gflops",
                     .unit_head = "GFLOP/s",
                     .base = ms[2] > 0 ? "by_warp" : NULL,
                     .base_head = "vs uniform"};
    lb_report_table(&rep, sz, NULL);
    rep.base_value = ms[2] > 0 ? 2.0 * work * n / (ms[2] * 1e6) : -1.0;
    for (int v = 1; v <= DIVERGENCE_VERSIONS; v++) {
        if (args.version > 0 && v != args.version) continue;
        lb_report_row(&rep, v, NULL, ms[v], ms[v] > 0 ? 2.0 * work * n / (ms[v] * 1e6) : 0.0, !bad[v],
                      bad[v] ? "FAIL" : "PASS (exact)");
    }
    CUDA_CHECK(cudaFree(d_x));
    free(h_x);
    free(h_got);
    return lb_report_finish(&rep);
}
