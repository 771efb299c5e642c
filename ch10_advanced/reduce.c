/* reduce.c - the sum of n floats (default 2^28 = 1 GB), from the textbook reduction to one
 * that races cub::DeviceReduce::Sum; every version checked against a double-precision CPU sum.
 *   build: make ch10      run: ./reduce [version] [--size N] [--exact]
 *
 * Versions (reduce_kernels.cu explains each step):
 *   0 cub::DeviceReduce::Sum   1 interleaved, divergent   2 interleaved, bank conflicts
 *   3 sequential addressing    4 first add during load    5 last warp unrolled (__syncwarp)
 *   6 warp shuffles            7 float4 + grid stride + atomicAdd (the book's optimized sum)
 *   8 one pass, 4 loads in flight, last block adds the partials (deterministic)
 * GB/s counts the bytes read (n * 4), against a device-to-device cudaMemcpy moving as many bytes
 * and against CUB, in the same run.
 */
#include "labbook.h"
#include "reduce_kernels.h"

#include <math.h>

static const char *const names[REDUCE_VERSIONS] = {"cub", "interleaved_divergent", "interleaved_conflicts",
                                                   "sequential", "first_add", "unrolled_warp", "shuffle",
                                                   "float4_atomic", "float4_onepass"};

/* ---------------------------------------------------------------- CPU reference */

static double sum_cpu(const float *x, size_t n, double *abs_sum)
{
    double s = 0.0, a = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i], a += fabs((double)x[i]);
    *abs_sum = a;
    return s;
}

/* ---------------------------------------------------------------- main */

typedef struct { int v; const float *in; size_t n; float *out; void *scratch; } reduce_job;

static cudaError_t run_reduce(void *ctx)
{
    reduce_job *j = (reduce_job *)ctx;
    return reduce_launch(j->v, j->in, j->n, j->out, j->scratch);
}

static int exact = 0;
static const lb_opt options[] = {
    {"--exact", LB_OPT_FLAG, &exact, "inputs are the integers 0..3: every version must give the exact sum (n <= 2^22)"},
};
static const lb_program program = {
    "reduce", "the sum of n floats: the classic reduction steps, warp shuffles, vector loads, against CUB",
    "versions: 0 CUB, 1 interleaved divergent, 2 interleaved bank conflicts, 3 sequential, 4 first add during load,\n"
    "5 last warp unrolled, 6 shuffles, 7 float4 + atomics (the book's), 8 one pass, deterministic\n",
    LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET | LB_USE_VERSION, options, 1};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 28}, 1}, .max_size_dims = 1, .iters = 20, .seed = 1, .version = -1,
                    .max_version = REDUCE_VERSIONS - 1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0];
    if (n > ((size_t)1 << 32)) lb_usage_error(&program, "--size: at most 2^32");
    /* integer sums stay exact in float while every partial sum is below 2^24 */
    if (exact && n > ((size_t)1 << 22)) lb_usage_error(&program, "--exact needs n <= 2^22 (3 n < 2^24 keeps float sums exact)");
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t scratch = 0;
    for (int v = 0; v < REDUCE_VERSIONS; v++)
        if (reduce_scratch_bytes(v, n) > scratch) scratch = reduce_scratch_bytes(v, n);
    lb_require_device_memory(n * sizeof(float) + scratch, "the input");
    if (!args.quiet)
        printf("reduce: sum of n=%zu floats (%s), %s (%s), seed %llu\n", n, exact ? "integers 0..3" : "uniform in [-1, 1)",
               gpu.prop.name, gpu.sm, args.seed);

    float *h = lb_host_alloc(n * sizeof(float), "the input");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    if (exact)
        for (size_t i = 0; i < n; i++) h[i] = (float)(lb_rng_next(&rng) >> 62);
    else
        lb_fill_uniform(h, n, -1.0f, 1.0f, &rng);
    double abs_sum, want = sum_cpu(h, n, &abs_sum);
    /* Tolerance. Every version adds at most a few thousand elements into one running float sum
     * (a thread's share) and combines the partial sums in trees of depth <= 32: the worst-case
     * rounding of such a sum is (terms + depth) * 2^-24 * sum|x| < 2^-11 sum|x|. That bound
     * catches NaN and gross errors; --exact (small integers, every sum exact) is the test that
     * counts each element exactly once. */
    double tol = exact ? 0.0 : abs_sum * 4.8828125e-4;

    float *d_in, *d_out;
    void *d_scratch;
    CUDA_CHECK(cudaMalloc((void **)&d_in, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc((void **)&d_out, sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_scratch, scratch));
    CUDA_CHECK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    free(h);

    float mc_ms = 0.0f;
    double mc_gbps = args.check_only ? 0.0 : lb_memcpy_ceiling_gbps(n * sizeof(float), args.iters, &mc_ms);
    if (!args.quiet) {
        printf(" ver  kernel                       ms       GB/s   vs memcpy   vs CUB   check\n");
        if (!args.check_only) printf("   -  cudaMemcpy D2D (same bytes)  %8.4f %9.0f        1.00        -\n", mc_ms, mc_gbps);
    }
    int failures = 0;
    double cub_gbps = 0.0, best_ratio = 0.0;
    int best = -1;
    char sz[32];
    snprintf(sz, sizeof sz, "%zu", n);
    for (int v = 0; v < REDUCE_VERSIONS; v++) {
        if (args.version >= 0 && v != args.version && v != 0) continue;   /* CUB always: the baseline */
        reduce_job job = {v, d_in, n, d_out, d_scratch};
        float got;
        lb_poison_device(d_out, sizeof(float));
        CUDA_CHECK(run_reduce(&job));
        CUDA_CHECK(cudaMemcpy(&got, d_out, sizeof got, cudaMemcpyDeviceToHost));
        double err = fabs((double)got - want);
        int ok = err <= tol;   /* NaN fails */
        failures += !ok;
        float ms = 0.0f;
        double gbps = 0.0;
        if (!args.check_only) {
            ms = lb_time_ms(run_reduce, &job, 2, args.iters);
            gbps = n * sizeof(float) / (ms * 1e6);
            if (v == 0) cub_gbps = gbps;
            else if (gbps / cub_gbps > best_ratio) best_ratio = gbps / cub_gbps, best = v;
        }
        if (!args.quiet) {
            printf("   %d  %-26s", v, names[v]);
            if (!args.check_only) printf(" %8.4f %9.0f %11.2f %8.2f", ms, gbps, gbps / mc_gbps, gbps / cub_gbps);
            printf("   %s (got %.9g, want %.9g", ok ? "PASS" : "FAIL", got, want);
            if (!exact) printf(", error %.1e, tolerance %.1e", err, tol);
            printf(")\n");
        }
        if (!args.check_only) {
            lb_result r = {"reduce", v, names[v], sz, ms, "gbps", gbps, "cub", gbps / cub_gbps, ok};
            lb_print_result(&r);
        }
    }
    if (args.quiet)
        printf("reduce: n=%zu, %s%s\n", n, failures ? "FAIL" : "PASS", "");
    else if (best >= 0)
        printf("best: version %d at %.2fx CUB (goal >= 1.00)\n", best, best_ratio);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaFree(d_scratch));
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
