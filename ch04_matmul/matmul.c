/* matmul.c - single-precision matrix multiply C = A @ B, from naive to cuBLAS-class.
 *
 *   A is (M,K), B is (K,N), C is (M,N), row-major fp32 (default M = N = K = 4096).
 *   build: make ch04 (TILE=32 for version 2's tile)
 *   run:   ./matmul [version] [--size N | --size M,N,K] [--block B] [--sweep] [--tiling BMxBN,S]
 *
 * versions: the table versions[] below (0 cuBLAS, 1 naive ... 10 tiling by shape), listed by
 * ./matmul --help; the kernels, in the same order, are in matmul_kernels.cu.
 *
 * Verification: cuBLAS against a CPU reference accumulating in double (every element up
 * to 2^30 multiply-adds, else 8 sampled rows and 8 sampled columns); every kernel against
 * cuBLAS element by element, and against the CPU too when the full reference exists. Tolerance grows with K: each of the K products and sums
 * rounds, so the absolute error of one element grows about like K * 2^-24 * |a||b|.
 */
#include <cublas_v2.h>
#include "labbook.h"
#include "matmul_kernels.h"

#include <math.h>
#include <string.h>

/* The CPU reference (lb_gemm_reference, lb_gemm_check in common/labbook.c: each element summed in
 * double) and cuBLAS's row-major SGEMM (lb_sgemm_row_major in labbook.h; ch07's cublas_basics.c
 * builds that trick up step by step). */

/* ---------------------------------------------------------------- the versions */

/* What one run of a version needs; the timing helpers call run(&job) again and again. */
typedef struct {
    cublasHandle_t handle;
    const float *d_a, *d_b;
    float *d_c;
    int m, n, k;
    int version;
    matmul_opts opts; /* version 1's block edge, version 2's tile for --sweep, version 10's plan */
} mm_job;

static cudaError_t run_cublas(void *ctx)
{
    mm_job *j = (mm_job *)ctx;
    CUBLAS_CHECK(lb_sgemm_row_major(j->handle, j->d_a, j->d_b, j->d_c, j->m, j->n, j->k));
    return cudaGetLastError();
}

static cudaError_t run_kernel(void *ctx)
{
    mm_job *j = (mm_job *)ctx;
    return matmul_launch(j->version, j->d_a, j->d_b, j->d_c, j->m, j->n, j->k, &j->opts);
}

/* Every version, once: its number, RESULT name, title and what runs it (matmul_kernels.cu
 * has the kernels, in the same order, each with its launcher). To add one: the kernel, its
 * launcher and its entry in launchers[] there, MATMUL_VERSIONS in matmul_kernels.h, and a row
 * here. */
static const lb_version versions[] = {
    {0, "cublas", "cuBLAS sgemm (no TF32)", LB_OLDEST_SM, run_cublas},
    {1, "naive", "naive, 1 thread per element", LB_OLDEST_SM, run_kernel},
    {2, "tiled", "shared tiles (make TILE=)", LB_OLDEST_SM, run_kernel},
    {3, "regblock4x4", "2D reg. blocking 4x4", LB_OLDEST_SM, run_kernel},
    {4, "float4_8x8", "8x8, float4, A^T tile", LB_OLDEST_SM, run_kernel},
    {5, "quads_dbuf", "4x4 quads, double buf.", LB_OLDEST_SM, run_kernel},
    {6, "cp_async", "cp.async, 3 stages", 80, run_kernel},
    {7, "warptile_8x16", "2x2 warps, 8x16/thread", LB_OLDEST_SM, run_kernel},
    {8, "tile128x256", "128x256, cp.async A^T", 80, run_kernel},
    {9, "frag_dbuf", "8 + fragments dbuf.", 80, run_kernel},
    {10, "shape", "tile, split-K by shape", 80, run_kernel},
    {11, "zmap_16x8", "128x256, 16x8 z-map, no branch", 80, run_kernel},
};
_Static_assert(sizeof versions / sizeof versions[0] == MATMUL_VERSIONS,
               "one row in versions[] per version: MATMUL_VERSIONS in matmul_kernels.h");

static double tflops(int m, int n, int k, double ms) { return 2.0 * m * n * (double)k / (ms * 1e9); }

/* ---------------------------------------------------------------- checking */

/* |error| <= K * 2^-22 + 1e-5 |want|: about 4x the typical rounding of a length-K dot
 * product of values in [-1, 1]; a wrong index or a missed tile gives errors of order 1. */
static double abs_tol(int K) { return K * 2.384185791015625e-07; }

/* ---------------------------------------------------------------- sweep */

static void sweep(cublasHandle_t handle, int iters)
{
    static const int sizes[] = {512, 1024, 2048, 4096, 8192};
    printf("sweep: TFLOP/s (ratio to cuBLAS) for square sizes; naive by block edge, tiled by TILE\n");
    printf("   size   cuBLAS   naive b8  naive b16  naive b32  tiled 8  tiled 16  tiled 32");
    for (int v = 3; v < MATMUL_VERSIONS; v++) printf("      v%d   ", v);
    printf("\n");
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        size_t bytes = sizeof(float) * (size_t)n * n;
        lb_require_device_memory(3 * bytes, "the sweep");
        float *h = lb_host_alloc(bytes, "inputs"), *d_a, *d_b, *d_c;
        lb_rng rng;
        lb_rng_seed(&rng, 1);
        lb_fill_uniform(h, (size_t)n * n, -1.0f, 1.0f, &rng);
        CUDA_CHECK(lb_malloc_guarded((void **)&d_a, bytes)); /* NaN past the end: an over-read fails */
        CUDA_CHECK(lb_malloc_guarded((void **)&d_b, bytes));
        CUDA_CHECK(cudaMalloc((void **)&d_c, bytes));
        CUDA_CHECK(cudaMemcpy(d_a, h, bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(d_b, h, bytes, cudaMemcpyHostToDevice));
        free(h);
        int reps = n >= 4096 ? (iters < 3 ? iters : 3) : iters;
        mm_job base = {handle, d_a, d_b, d_c, n, n, n, 0, {16, 0, {0, 0, 0}}};
        double t0 = tflops(n, n, n, lb_time_ms(run_cublas, &base, 1, reps));
        printf("  %5d %8.1f", n, t0);
        /* naive with three block edges, tiled with three tiles, then versions 3.. as built */
        mm_job jobs[6 + MATMUL_VERSIONS - 3];
        for (int i = 0; i < 3; i++) jobs[i] = (mm_job){handle, d_a, d_b, d_c, n, n, n, 1, {8 << i, 0, {0, 0, 0}}};
        for (int i = 0; i < 3; i++) jobs[3 + i] = (mm_job){handle, d_a, d_b, d_c, n, n, n, 2, {0, 8 << i, {0, 0, 0}}};
        for (int v = 3; v < MATMUL_VERSIONS; v++)
            jobs[3 + v] = (mm_job){handle, d_a, d_b, d_c, n, n, n, v, {0, 0, {0, 0, 0}}};
        for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
            double t = tflops(n, n, n, lb_time_ms(run_kernel, &jobs[j], 1, reps));
            printf(" %5.1f(%.2f)", t, t / t0);
        }
        printf("\n");
        fflush(stdout);
        CUDA_CHECK(cudaFree(d_a));
        CUDA_CHECK(cudaFree(d_b));
        CUDA_CHECK(cudaFree(d_c));
    }
}

/* ---------------------------------------------------------------- main */

static int do_sweep = 0;
static const char *tiling_text = NULL;
static const lb_opt options[] = {
    {"--sweep", LB_OPT_FLAG, &do_sweep, "TFLOP/s table over naive block and TILE choices, sizes 512..8192"},
    {"--tiling", LB_OPT_STRING, &tiling_text,
     "version 10's plan instead of its own: BMxBN,S (128x256, 128x128 or 64x128; S parts of K)"},
};
static const lb_program program = {
    .name = "matmul",
    .synopsis = "C = A @ B in fp32 (row-major): naive, tiled and register-blocked kernels vs cuBLAS",
    .details = "--block B sets version 1's block to B x B threads. --size is N (square) or M,N,K.\n"
               "--tiling 64x128,4 makes version 10 use 64x128 tiles and K in 4 parts, whatever the shape.\n",
    .uses = LB_USE_ALL,
    .opts = options,
    .n_opts = 2,
    .versions = versions,
    .n_versions = MATMUL_VERSIONS,
};

/* --tiling BMxBN,S: a tile version 10's kernel has, and 1..256 parts of K. */
static matmul_tiling parse_tiling(const lb_program *prog, const char *text)
{
    matmul_tiling t = {0, 0, 0};
    if (!text) return t;
    char end;
    if (sscanf(text, "%dx%d,%d%c", &t.bm, &t.bn, &t.splits, &end) != 3)
        lb_usage_error(prog, "--tiling '%s': expected BMxBN,S (e.g. 64x128,4)", text);
    if (!matmul_tiling_supported(t) || t.splits > 256)
        lb_usage_error(prog, "--tiling '%s': the tile is 128x256, 128x128 or 64x128, and S is 1..256", text);
    return t;
}

/* Each version's C against cuBLAS's (both carry rounding error: twice the tolerance), and
 * against the CPU directly too when the full reference exists. */
static lb_check check_version(const char *name, const float *got, const float *h_cublas, const float *h_cpu, size_t c_n,
                              int K, int quiet)
{
    lb_check c = lb_check_f32(name, got, h_cublas, c_n, 2 * abs_tol(K), 2e-5, quiet);
    if (h_cpu) c.n_bad += lb_check_f32("vs CPU", got, h_cpu, c_n, abs_tol(K), 1e-5, quiet).n_bad;
    return c;
}

int main(int argc, char **argv)
{
    /* ---- setup: arguments, GPU, cuBLAS, inputs */
    lb_args args = {.size = {{4096}, 1}, .max_size_dims = 3, .block = 16, .iters = 10, .seed = 1};
    lb_parse_args(&program, &args, argc, argv);
    int M, N, K;
    lb_size_mnk(&program, &args, &M, &N, &K);
    if (args.block > 32)
        lb_usage_error(&program, "--block %d: the naive kernel's block is B x B threads, B at most 32", args.block);
    matmul_tiling forced = parse_tiling(&program, tiling_text); /* {0} when not given */
    /* options that would be ignored are refused instead */
    if (do_sweep && (args.size_given || args.version >= 0 || tiling_text))
        lb_usage_error(&program, "--sweep times its own sizes (512..8192) and versions: no --size, version or --tiling with it");
    if (tiling_text && args.version >= 0 && args.version != 10)
        lb_usage_error(&program, "--tiling is version 10's plan: not with version %d", args.version);

    lb_gpu gpu;
    lb_gpu_init(&gpu);
    cublasHandle_t handle;
    CUBLAS_CHECK(cublasCreate(&handle));
    /* CUBLAS_DEFAULT_MATH: FP32 on the FP32 cores, no TF32 tensor cores */
    CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    if (do_sweep) {
        sweep(handle, args.iters);
        CUBLAS_CHECK(cublasDestroy(handle));
        return LB_EXIT_PASS;
    }

    size_t a_n = (size_t)M * K, b_n = (size_t)K * N, c_n = (size_t)M * N;
    lb_require_device_memory(sizeof(float) * (a_n + b_n + c_n), "the matrices");
    if (!args.quiet)
        printf("matmul: C = A @ B, fp32, M=%d N=%d K=%d, %s (%s), seed %llu\n", M, N, K, gpu.prop.name, gpu.sm,
               args.seed);

    float *h_a = lb_host_alloc(sizeof(float) * a_n, "A"), *h_b = lb_host_alloc(sizeof(float) * b_n, "B");
    float *h_cublas = lb_host_alloc(sizeof(float) * c_n, "cuBLAS's C"), *h_c = lb_host_alloc(sizeof(float) * c_n, "C");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_a, a_n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(h_b, b_n, -1.0f, 1.0f, &rng);
    float *d_a, *d_b, *d_c;
    /* A and B with NaN after their ends: a kernel that reads past one gets NaN, and fails */
    CUDA_CHECK(lb_malloc_guarded((void **)&d_a, sizeof(float) * a_n));
    CUDA_CHECK(lb_malloc_guarded((void **)&d_b, sizeof(float) * b_n));
    CUDA_CHECK(cudaMalloc((void **)&d_c, sizeof(float) * c_n));
    CUDA_CHECK(cudaMemcpy(d_a, h_a, sizeof(float) * a_n, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_b, h_b, sizeof(float) * b_n, cudaMemcpyHostToDevice));
    lb_gemm gemm = {h_a, h_b, M, N, K, LB_B_K_BY_N};
    float *h_cpu = lb_gemm_reference(&gemm); /* NULL when too large */

    /* version 10's plan: its own choice for this shape on this GPU, or --tiling's */
    matmul_tiling plan = forced.bm ? forced : matmul_choose_tiling(M, N, K);

    char sz[64];
    snprintf(sz, sizeof sz, "%dx%dx%d", M, N, K);
    lb_report rep = lb_report_vs_cublas(&program, &args);
    lb_report_table(&rep, sz, NULL);

    /* ---- check and time each version; cuBLAS (version 0) always, first: checked against
     * the CPU, its C is then the reference for every kernel, and its time the baseline */
    for (int v = 0; v < MATMUL_VERSIONS; v++) {
        if (v > 0 && !lb_version_wanted(&program, &args, &gpu, v)) continue;
        mm_job job = {handle, d_a, d_b, d_c, M, N, K, v, {args.block, 0, plan}};
        lb_poison_device(d_c, sizeof(float) * c_n); /* NaN: an element never written fails */
        CUDA_CHECK(versions[v].run(&job));
        CUDA_CHECK(cudaMemcpy(v == 0 ? h_cublas : h_c, d_c, sizeof(float) * c_n, cudaMemcpyDeviceToHost));
        lb_check c = v == 0 ? lb_gemm_check("cublas vs CPU", h_cublas, &gemm, h_cpu, abs_tol(K), 1e-5, &rng, args.quiet)
                            : check_version(versions[v].name, h_c, h_cublas, h_cpu, c_n, K, args.quiet);
        float ms = args.check_only ? 0.0f : lb_time_ms(versions[v].run, &job, 2, args.iters);

        /* ---- report: version 2's name carries its build-time tile (tiled16, tiled32) */
        char name[32], verdict[96];
        if (v == 2)
            snprintf(name, sizeof name, "tiled%d", matmul_tile());
        else if (v == 10 && plan.splits > 1)
            snprintf(name, sizeof name, "shape%dx%d_split%d", plan.bm, plan.bn, plan.splits);
        else if (v == 10)
            snprintf(name, sizeof name, "shape%dx%d", plan.bm, plan.bn);
        else
            snprintf(name, sizeof name, "%s", versions[v].name);
        lb_report_row(&rep, v, name, ms, tflops(M, N, K, ms), c.n_bad == 0,
                      lb_check_summary(&c, verdict, sizeof verdict));
    }

    CUBLAS_CHECK(cublasDestroy(handle));
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_c));
    free(h_a);
    free(h_b);
    free(h_cublas);
    free(h_c);
    free(h_cpu);
    return lb_report_finish(&rep);
}
