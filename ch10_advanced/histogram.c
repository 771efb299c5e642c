/* histogram.c - a 256-bin histogram of n bytes (default 2^28), against CUB, on three inputs:
 * uniform random bytes, all bytes equal, and a narrow band (8 values) where the atomics on a
 * few bins contend. Every count is checked exactly against the CPU.
 *   build: make ch10      run: ./histogram [version] [--size N] [--input uniform|one|band|all]
 *
 * Versions (histogram_kernels.cu): 0 cub::DeviceHistogram::HistogramEven, 1 global atomics,
 * 2 shared-memory privatized, 3 per-warp sub-histograms with 16-byte loads.
 * GB/s counts the bytes read, against a D2D cudaMemcpy moving as many and against CUB.
 */
#include "labbook.h"
#include "histogram_kernels.h"

#include <string.h>

static const char *const names[HIST_VERSIONS] = {"cub", "global_atomics", "shared_private", "warp_private_vec16"};
static const char *const inputs[3] = {"uniform", "one", "band"};

/* ---------------------------------------------------------------- CPU reference */

static void histogram_cpu(const unsigned char *x, size_t n, unsigned int *hist)
{
    memset(hist, 0, HIST_BINS * sizeof(unsigned int));
    for (size_t i = 0; i < n; i++) hist[x[i]]++;
}

static void fill(unsigned char *x, size_t n, int kind, lb_rng *rng)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = lb_rng_next(rng);
        for (size_t k = 0; k < 8 && i + k < n; k++) {
            unsigned char b = (unsigned char)(r >> (8 * k));
            x[i + k] = kind == 0 ? b : kind == 1 ? 42 : (unsigned char)(100 + (b & 7));
        }
    }
}

/* ---------------------------------------------------------------- main */

typedef struct { int v; const unsigned char *in; size_t n; unsigned int *hist; void *scratch; } hist_job;

static cudaError_t run_hist(void *ctx)
{
    hist_job *j = (hist_job *)ctx;
    return histogram_launch(j->v, j->in, j->n, j->hist, j->scratch);
}

static const char *input = "all";
static const lb_opt options[] = {
    {"--input", LB_OPT_STRING, &input, "uniform, one (all bytes 42), band (100..107), or all three"},
};
static const lb_program program = {
    "histogram", "a 256-bin byte histogram: global atomics, shared-memory and per-warp privatization, against CUB",
    "versions: 0 CUB, 1 global atomics, 2 shared-memory privatized, 3 per-warp sub-histograms, 16-byte loads\n",
    LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET | LB_USE_VERSION, options, 1};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 28}, 1}, .max_size_dims = 1, .iters = 20, .seed = 1, .version = -1,
                    .max_version = HIST_VERSIONS - 1};
    lb_parse_args(&program, &args, argc, argv);
    size_t n = (size_t)args.size.v[0];
    if (n > ((size_t)1 << 32) - 1) lb_usage_error(&program, "--size: below 2^32 (the counts are 32-bit)");
    int first = 0, last = 2;
    if (strcmp(input, "all")) {
        for (first = 0; first < 3 && strcmp(input, inputs[first]); first++) {}
        if (first == 3) lb_usage_error(&program, "--input must be uniform, one, band or all");
        last = first;
    }
    lb_gpu gpu;
    lb_gpu_init(&gpu);
    size_t scratch = histogram_scratch_bytes(0, n) + 256;
    lb_require_device_memory(n + scratch, "the input");
    if (!args.quiet) printf("histogram: 256 bins over n=%zu bytes, %s (%s), seed %llu\n", n, gpu.prop.name, gpu.sm, args.seed);

    unsigned char *h = lb_host_alloc(n, "the input"), *d_in;
    unsigned int want[HIST_BINS], got[HIST_BINS], *d_hist;
    void *d_scratch;
    CUDA_CHECK(cudaMalloc((void **)&d_in, n));
    CUDA_CHECK(cudaMalloc((void **)&d_hist, sizeof got));
    CUDA_CHECK(cudaMalloc(&d_scratch, scratch));
    float mc_ms = 0.0f;
    double mc_gbps = args.check_only ? 0.0 : lb_memcpy_ceiling_gbps(n, args.iters, &mc_ms);
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    int failures = 0;
    char sz[48];
    for (int kind = first; kind <= last; kind++) {
        fill(h, n, kind, &rng);
        histogram_cpu(h, n, want);
        CUDA_CHECK(cudaMemcpy(d_in, h, n, cudaMemcpyHostToDevice));
        snprintf(sz, sizeof sz, "%zu_%s", n, inputs[kind]);
        if (!args.quiet) {
            printf("input: %s\n ver  kernel                   ms       GB/s   vs memcpy   vs CUB   check\n", inputs[kind]);
            if (!args.check_only) printf("   -  cudaMemcpy D2D       %9.4f %9.0f        1.00        -\n", mc_ms, mc_gbps);
        }
        double cub_gbps = 0.0;
        for (int v = 0; v < HIST_VERSIONS; v++) {
            if (args.version >= 0 && v != args.version && v != 0) continue;
            hist_job job = {v, d_in, n, d_hist, d_scratch};
            lb_poison_device(d_hist, sizeof got);
            CUDA_CHECK(run_hist(&job));
            CUDA_CHECK(cudaMemcpy(got, d_hist, sizeof got, cudaMemcpyDeviceToHost));
            lb_check c = lb_check_i32(names[v], (const int *)got, (const int *)want, HIST_BINS, args.quiet);
            int ok = c.n_bad == 0;
            failures += !ok;
            float ms = 0.0f;
            double gbps = 0.0;
            if (!args.check_only) {
                ms = lb_time_ms(run_hist, &job, 2, args.iters);
                gbps = n / (ms * 1e6);
                if (v == 0) cub_gbps = gbps;
                lb_result r = {"histogram", v, names[v], sz, ms, "gbps", gbps, "cub", gbps / cub_gbps, ok};
                lb_print_result(&r);
            }
            if (!args.quiet) {
                printf("   %d  %-20s", v, names[v]);
                if (!args.check_only) printf(" %9.4f %9.0f %11.2f %8.2f", ms, gbps, gbps / mc_gbps, gbps / cub_gbps);
                printf("   %s\n", ok ? "PASS (all 256 bins exact)" : "FAIL");
            }
        }
    }
    if (args.quiet) printf("histogram: n=%zu, %s\n", n, failures ? "FAIL" : "PASS");
    free(h);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_hist));
    CUDA_CHECK(cudaFree(d_scratch));
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
