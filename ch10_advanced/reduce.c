/* reduce.c - the sum of n floats (default 2^28 = 1 GB), from the textbook reduction to one
 * that races cub::DeviceReduce::Sum; every version checked against a double-precision CPU sum.
 *   build: make ch10      run: ./reduce [version] [--size N] [--exact]
 *
 * Versions: the table versions[] below (0 cub::DeviceReduce::Sum, 1-8 the steps), listed by
 * ./reduce --help; reduce_kernels.cu explains each step.
 * GB/s counts the bytes read (n * 4), against a device-to-device cudaMemcpy moving as many bytes
 * and against CUB, in the same run.
 */
#include "labbook.h"
#include "reduce_kernels.h"

#include <math.h>

/* ---------------------------------------------------------------- CPU reference */

static double sum_cpu(const float *x, size_t n, double *abs_sum)
{
    double s = 0.0, a = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i], a += fabs((double)x[i]);
    *abs_sum = a;
    return s;
}

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int v;
    const float *in;
    size_t n;
    float *out;
    void *scratch;
    size_t scratch_bytes; /* asked once, at setup: the query is not part of what is timed */
} reduce_job;

static cudaError_t run_reduce(void *ctx)
{
    reduce_job *j = (reduce_job *)ctx;
    return reduce_launch(j->v, j->in, j->n, j->out, j->scratch, j->scratch_bytes);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it (reduce_launch runs
 * CUB for version 0 too). To add one: the kernel and its case in reduce_launch (and in
 * reduce_scratch_bytes if it needs scratch), REDUCE_VERSIONS in reduce_kernels.h, a row here. */
static const lb_version versions[] = {
    {0, "cub", "cub::DeviceReduce::Sum", LB_OLDEST_SM, run_reduce},
    {1, "interleaved_divergent", "interleaved, divergent", LB_OLDEST_SM, run_reduce},
    {2, "interleaved_conflicts", "interleaved, bank conflicts", LB_OLDEST_SM, run_reduce},
    {3, "sequential", "sequential addressing", LB_OLDEST_SM, run_reduce},
    {4, "first_add", "first add during load", LB_OLDEST_SM, run_reduce},
    {5, "unrolled_warp", "last warp unrolled", LB_OLDEST_SM, run_reduce},
    {6, "shuffle", "warp shuffles", LB_OLDEST_SM, run_reduce},
    {7, "float4_atomic", "float4 + atomics (the book's)", LB_OLDEST_SM, run_reduce},
    {8, "float4_onepass", "one pass, deterministic", LB_OLDEST_SM, run_reduce},
};
_Static_assert(sizeof versions / sizeof versions[0] == REDUCE_VERSIONS,
               "one row in versions[] per version: REDUCE_VERSIONS in reduce_kernels.h");

/* ---------------------------------------------------------------- main */

static int exact = 0;
static const lb_opt options[] = {
    {"--exact", LB_OPT_FLAG, &exact, "inputs are the integers 0..3: every version must give the exact sum (n <= 2^22)"},
};
static const lb_program program = {
    .name = "reduce",
    .synopsis = "the sum of n floats: the classic reduction steps, warp shuffles, vector loads, against CUB",
    .details = NULL,
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 1,
    .versions = versions,
    .n_versions = REDUCE_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 28}, 1}, .max_size_dims = 1, .iters = 20, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0];
    if (n > ((size_t)1 << 32)) lb_usage_error(&program, "--size: at most 2^32");
    /* integer sums stay exact in float while every partial sum is below 2^24 */
    if (exact && n > ((size_t)1 << 22))
        lb_usage_error(&program, "--exact needs n <= 2^22 (3 n < 2^24 keeps float sums exact)");
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t scratch = 0;
    for (int v = 0; v < REDUCE_VERSIONS; v++)
        if (reduce_scratch_bytes(v, n) > scratch) scratch = reduce_scratch_bytes(v, n);
    lb_require_device_memory(n * sizeof(float) + scratch, "the input");
    if (!args.quiet)
        printf("reduce: sum of n=%zu floats (%s), %s (%s), seed %llu\n", n,
               exact ? "integers 0..3" : "uniform in [0, 1)", gpu.prop.name, gpu.sm, args.seed);

    float *h = lb_host_alloc(n * sizeof(float), "the input");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    if (exact)
        for (size_t i = 0; i < n; i++) h[i] = (float)(lb_rng_next(&rng) >> 62);
    else
        lb_fill_uniform(h, n, 0.0f, 1.0f, &rng);
    double abs_sum, want = sum_cpu(h, n, &abs_sum);
    /* Tolerance: 2^-14 of the sum. The inputs are in [0, 1), not [-1, 1): a sum of values of
     * both signs is near zero, and a tolerance relative to sum|x| would then be far larger
     * than the sum itself (a kernel returning 0 would pass). Rounding: the longest chain of
     * float additions behind any version's result is version 7's, a thread's share plus the
     * atomics (one per warp): about 10^4 additions at 2^28 on a large GPU, 2.5 * 10^4 at 2^32.
     * Each rounds by at most 2^-24 of the running sum, with random signs, so the chain errs by
     * about sqrt(length) * 2^-24 of the sum: under 2^-17 at 2^28, 2^-16.5 at 2^32. 2^-14
     * leaves 8x and 5x room and still fails a result that lacks one block of version 8
     * (1/1000 of the data on a large GPU: see tests). --exact (small integers, every sum
     * exact) checks that each element is counted exactly once. */
    double tol = exact ? 0.0 : abs_sum * 6.103515625e-5;

    float *d_in, *d_out;
    void *d_scratch;
    CUDA_CHECK(cudaMalloc((void **)&d_in, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&d_out, sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_scratch, scratch));
    CUDA_CHECK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    free(h);

    /* the report: GB/s of bytes read, against a copy of as many bytes and against CUB */
    char sz[32];
    snprintf(sz, sizeof sz, "%zu", n);
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "gbps",
                     .unit_head = "GB/s",
                     .base = "cub",
                     .base_head = "vs CUB",
                     .ceiling_head = "vs memcpy"};
    lb_report_table(&rep, sz, NULL);
    lb_report_ceiling(&rep, n * sizeof(float), args.iters);

    /* check and time each version; CUB (version 0) always, first: the baseline */
    for (int v = 0; v < REDUCE_VERSIONS; v++) {
        if (v > 0 && !lb_version_wanted(&program, &args, &gpu, v)) continue;
        reduce_job job = {v, d_in, n, d_out, d_scratch, scratch};
        float got;
        lb_poison_device(d_out, sizeof(float));
        CUDA_CHECK(versions[v].run(&job));
        CUDA_CHECK(cudaMemcpy(&got, d_out, sizeof got, cudaMemcpyDeviceToHost));
        double err = fabs((double)got - want);
        int ok = err <= tol; /* NaN fails */
        float ms = args.check_only ? 0.0f : lb_time_ms(versions[v].run, &job, 2, args.iters);
        char verdict[128];
        if (exact)
            snprintf(verdict, sizeof verdict, "%s (got %.9g, want %.9g)", ok ? "PASS" : "FAIL", got, want);
        else
            snprintf(verdict, sizeof verdict, "%s (error %.1e, tolerance %.1e)", ok ? "PASS" : "FAIL", err, tol);
        lb_report_row(&rep, v, NULL, ms, ms > 0 ? n * sizeof(float) / (ms * 1e6) : 0.0, ok, verdict);
    }
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_scratch));
    return lb_report_finish(&rep);
}
