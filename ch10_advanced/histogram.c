/* histogram.c - a 256-bin histogram of n bytes (default 2^28), against CUB, on three inputs:
 * uniform random bytes, all bytes equal, and a narrow band (8 values) where the atomics on a
 * few bins contend. Every count is checked exactly against the CPU.
 *   build: make ch10      run: ./histogram [version] [--size N] [--input uniform|one|band|all]
 *
 * Versions: the table versions[] below (0 cub::DeviceHistogram::HistogramEven, 1 global atomics,
 * 2 shared-memory privatized, 3 per-warp sub-histograms with 16-byte loads), listed by
 * ./histogram --help; the kernels are in histogram_kernels.cu.
 * GB/s counts the bytes read, against a D2D cudaMemcpy moving as many and against CUB.
 */
#include "labbook.h"
#include "histogram_kernels.h"

#include <string.h>

static const char *const inputs[3] = {"uniform", "one", "band"};

/* ---------------------------------------------------------------- CPU reference */

static void histogram_cpu(const unsigned char *x, size_t n, unsigned int *hist)
{
    memset(hist, 0, HISTOGRAM_BINS * sizeof(unsigned int));
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

/* ---------------------------------------------------------------- the versions */

typedef struct {
    int v;
    const unsigned char *in;
    size_t n;
    unsigned int *hist;
    void *scratch;
    size_t scratch_bytes; /* asked once, at setup: the query is not part of what is timed */
} hist_job;

static cudaError_t run_hist(void *ctx)
{
    hist_job *j = (hist_job *)ctx;
    return histogram_launch(j->v, j->in, j->n, j->hist, j->scratch, j->scratch_bytes);
}

/* Every version: number, RESULT name, title, oldest GPU, what runs it (histogram_launch runs
 * CUB for version 0 too). To add one: the kernel and its case in histogram_launch,
 * HISTOGRAM_VERSIONS in histogram_kernels.h, and a row here. */
static const lb_version versions[] = {
    {0, "cub", "cub::DeviceHistogram", LB_OLDEST_SM, run_hist},
    {1, "global_atomics", "global atomics", LB_OLDEST_SM, run_hist},
    {2, "shared_private", "shared-memory privatized", LB_OLDEST_SM, run_hist},
    {3, "warp_private_vec16", "per-warp, 16-byte loads", LB_OLDEST_SM, run_hist},
};
_Static_assert(sizeof versions / sizeof versions[0] == HISTOGRAM_VERSIONS,
               "one row in versions[] per version: HISTOGRAM_VERSIONS in histogram_kernels.h");

/* ---------------------------------------------------------------- main */

static const char *input = "all";
static const lb_opt options[] = {
    {"--input", LB_OPT_STRING, &input, "uniform, one (all bytes 42), band (100..107), or all three"},
};
static const lb_program program = {
    .name = "histogram",
    .synopsis = "a 256-bin byte histogram: global atomics, shared-memory and per-warp privatization, against CUB",
    .details = NULL,
    .uses = LB_USE_SIZE | LB_USE_ITERS | LB_USE_SEED | LB_USE_CHECK_ONLY | LB_USE_QUIET,
    .opts = options,
    .n_opts = 1,
    .versions = versions,
    .n_versions = HISTOGRAM_VERSIONS,
};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{1 << 28}, 1}, .max_size_dims = 1, .iters = 20, .seed = 1};
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
    if (!args.quiet)
        printf("histogram: 256 bins over n=%zu bytes, %s (%s), seed %llu\n", n, gpu.prop.name, gpu.sm, args.seed);

    unsigned char *h = lb_host_alloc(n, "the input"), *d_in;
    unsigned int want[HISTOGRAM_BINS], got[HISTOGRAM_BINS], *d_hist;
    void *d_scratch;
    CUDA_CHECK(cudaMalloc((void **)&d_in, n));
    CUDA_CHECK(cudaMalloc((void **)&d_hist, sizeof got));
    CUDA_CHECK(cudaMalloc(&d_scratch, scratch));
    /* the report: GB/s of bytes read, against a copy of as many bytes and CUB; one table per input */
    lb_report rep = {.prog = &program,
                     .args = &args,
                     .unit = "gbps",
                     .unit_head = "GB/s",
                     .base = "cub",
                     .base_head = "vs CUB",
                     .ceiling_head = "vs memcpy"};
    lb_report_ceiling(&rep, n, args.iters);
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    char sz[48], heading[48];
    for (int kind = first; kind <= last; kind++) {
        fill(h, n, kind, &rng);
        histogram_cpu(h, n, want);
        CUDA_CHECK(cudaMemcpy(d_in, h, n, cudaMemcpyHostToDevice));
        snprintf(sz, sizeof sz, "%zu_%s", n, inputs[kind]);
        snprintf(heading, sizeof heading, "input: %s", inputs[kind]);
        lb_report_table(&rep, sz, heading);
        for (int v = 0; v < HISTOGRAM_VERSIONS; v++) { /* CUB (version 0) always, first: the baseline */
            if (v > 0 && !lb_version_wanted(&program, &args, &gpu, v)) continue;
            hist_job job = {v, d_in, n, d_hist, d_scratch, scratch};
            lb_poison_device(d_hist, sizeof got);
            CUDA_CHECK(versions[v].run(&job));
            CUDA_CHECK(cudaMemcpy(got, d_hist, sizeof got, cudaMemcpyDeviceToHost));
            lb_check c =
                lb_check_i32(versions[v].name, (const int *)got, (const int *)want, HISTOGRAM_BINS, args.quiet);
            float ms = args.check_only ? 0.0f : lb_time_ms(versions[v].run, &job, 2, args.iters);
            lb_report_row(&rep, v, NULL, ms, ms > 0 ? n / (ms * 1e6) : 0.0, c.n_bad == 0,
                          c.n_bad ? "FAIL" : "PASS (all 256 bins exact)");
        }
    }
    free(h);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_hist));
    CUDA_CHECK(cudaFree(d_scratch));
    return lb_report_finish(&rep);
}
