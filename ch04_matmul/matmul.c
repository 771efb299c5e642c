/* matmul.c - single-precision matrix multiply C = A @ B, from naive to cuBLAS-class.
 *
 *   A is (M,K), B is (K,N), C is (M,N), row-major fp32 (default M = N = K = 4096).
 *   build: make ch04 (TILE=32 for version 2's tile)
 *   run:   ./matmul [version] [--size N | --size M,N,K] [--block B] [--sweep]
 *
 * versions (kernels in matmul_kernels.cu):
 *   0  cuBLAS cublasSgemm, default math (FP32 FFMA, no TF32): the baseline
 *   1  naive, one thread per element of C
 *   2  shared-memory tiles, TILE x TILE
 *   3  2D register blocking, 4x4 outputs per thread
 *   4  128x128 tiles, 8x8 per thread, float4 loads, transposed A tile
 *   5  as 4 with conflict-free 4x4 quads and double buffering
 *   6  tiles copied by cp.async three K steps ahead (K steps of 16, grouped block order)
 *   7  128 threads of 8x16 outputs in 2x2 warp tiles, register double buffering
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

#define N_VERSIONS (MATMUL_LAST_KERNEL + 1)
static const char *const version_name[N_VERSIONS] = {"cublas", "naive", "tiled", "regblock4x4", "float4_8x8", "quads_dbuf", "cp_async", "warptile_8x16"};
static const char *version_title(int v, char *buf, size_t len)
{
    static const char *const titles[N_VERSIONS] = {"cuBLAS sgemm", "naive", "shared tiles", "2D reg. blocking 4x4",
                                                   "8x8, float4, A^T tile", "4x4 quads, double buf.", "cp.async, 3 stages", "2x2 warps, 8x16/thread"};
    if (v == 2) snprintf(buf, len, "shared tiles TILE=%d", matmul_tile());
    else snprintf(buf, len, "%s", titles[v]);
    return buf;
}

/* ---------------------------------------------------------------- CPU reference */

static double dot_row_col(const float *A, const float *B, int N, int K, int r, int c)
{
    double acc = 0.0;
    for (int k = 0; k < K; k++) acc += (double)A[(size_t)r * K + k] * (double)B[(size_t)k * N + c];
    return acc;
}

static void matmul_cpu(const float *A, const float *B, float *C, int M, int N, int K)
{
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) C[(size_t)r * N + c] = (float)dot_row_col(A, B, N, K, r, c);
}

/* ---------------------------------------------------------------- cuBLAS, row-major */

/* cuBLAS is column-major: it sees our row-major C (M,N) as C^T (N,M). Since
 * C^T = B^T A^T, asking cuBLAS for "B times A" with the dimensions swapped, on the same
 * pointers, leaves exactly our row-major C in memory. No transposes are copied. */
static cublasStatus_t sgemm_row_major(cublasHandle_t h, const float *d_a, const float *d_b, float *d_c,
                                      int M, int N, int K)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, d_b, N, d_a, K, &zero, d_c, N);
}

/* ---------------------------------------------------------------- timing jobs */

typedef struct {
    int version, tile;   /* tile > 0: the tiled kernel with that tile (sweep) */
    cublasHandle_t handle;
    const float *d_a, *d_b;
    float *d_c;
    int m, n, k, block;
} mm_job;

static cudaError_t run_version(void *ctx)
{
    mm_job *j = (mm_job *)ctx;
    if (j->tile) return matmul_tiled_launch(j->tile, j->d_a, j->d_b, j->d_c, j->m, j->n, j->k);
    if (j->version == 0) {
        CUBLAS_CHECK(sgemm_row_major(j->handle, j->d_a, j->d_b, j->d_c, j->m, j->n, j->k));
        return cudaGetLastError();
    }
    return matmul_launch(j->version, j->d_a, j->d_b, j->d_c, j->m, j->n, j->k, j->block);
}

static double tflops(int m, int n, int k, double ms) { return 2.0 * m * n * (double)k / (ms * 1e9); }

/* ---------------------------------------------------------------- checking */

/* |error| <= K * 2^-22 + 1e-5 |want|: about 4x the typical rounding of a length-K dot
 * product of values in [-1, 1]; a wrong index or a missed tile gives errors of order 1. */
static double abs_tol(int K) { return K * 2.384185791015625e-07; }

/* The full CPU reference when it is affordable (up to 2^30 multiply-adds), else NULL. */
static float *cpu_reference(const float *A, const float *B, int M, int N, int K)
{
    if ((double)M * N * K > 1073741824.0) return NULL;
    float *ref = lb_host_alloc(sizeof(float) * (size_t)M * N, "the CPU reference");
    matmul_cpu(A, B, ref, M, N, K);
    return ref;
}

/* cuBLAS against the CPU: every element when the full reference exists, else 8 sampled
 * rows and 8 sampled columns computed here. */
static lb_check check_cublas(const float *A, const float *B, const float *C, const float *ref, int M, int N,
                             int K, lb_rng *rng, int quiet)
{
    lb_check total = {0, 0.0, 0.0};
    if (ref) return lb_check_f32("cublas vs CPU", C, ref, (size_t)M * N, abs_tol(K), 1e-5, quiet);
    float *got = lb_host_alloc(sizeof(float) * (size_t)(M > N ? M : N), "samples");
    float *want = lb_host_alloc(sizeof(float) * (size_t)(M > N ? M : N), "samples");
    for (int s = 0; s < 16; s++) {
        int is_row = s < 8, len = is_row ? N : M;
        int idx = (int)(lb_rng_next(rng) % (uint64_t)(is_row ? M : N));
        for (int i = 0; i < len; i++) {
            int r = is_row ? idx : i, c = is_row ? i : idx;
            got[i] = C[(size_t)r * N + c];
            want[i] = (float)dot_row_col(A, B, N, K, r, c);
        }
        lb_check c = lb_check_f32(is_row ? "cublas row vs CPU" : "cublas column vs CPU", got, want,
                                  (size_t)len, abs_tol(K), 1e-5, quiet);
        total.n_bad += c.n_bad;
        if (c.max_abs_err > total.max_abs_err) total.max_abs_err = c.max_abs_err;
        if (c.max_rel_err > total.max_rel_err) total.max_rel_err = c.max_rel_err;
    }
    free(got);
    free(want);
    return total;
}

/* ---------------------------------------------------------------- sweep */

static void sweep(cublasHandle_t handle, int iters)
{
    static const int sizes[] = {512, 1024, 2048, 4096, 8192};
    printf("sweep: TFLOP/s (ratio to cuBLAS) for square sizes; naive by block edge, tiled by TILE\n");
    printf("   size   cuBLAS   naive b8  naive b16  naive b32  tiled 8  tiled 16  tiled 32      v3      v4      v5      v6      v7\n");
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        size_t bytes = sizeof(float) * (size_t)n * n;
        lb_require_device_memory(3 * bytes, "the sweep");
        float *h = lb_host_alloc(bytes, "inputs"), *d_a, *d_b, *d_c;
        lb_rng rng;
        lb_rng_seed(&rng, 1);
        lb_fill_uniform(h, (size_t)n * n, -1.0f, 1.0f, &rng);
        CUDA_CHECK(cudaMalloc((void **)&d_a, bytes));
        CUDA_CHECK(cudaMalloc((void **)&d_b, bytes));
        CUDA_CHECK(cudaMalloc((void **)&d_c, bytes));
        CUDA_CHECK(cudaMemcpy(d_a, h, bytes, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(d_b, h, bytes, cudaMemcpyHostToDevice));
        free(h);
        int reps = n >= 4096 ? (iters < 3 ? iters : 3) : iters;
        mm_job base = {0, 0, handle, d_a, d_b, d_c, n, n, n, 16};
        double t0 = tflops(n, n, n, lb_time_ms(run_version, &base, 1, reps));
        printf("  %5d %8.1f", n, t0);
        mm_job jobs[] = {{1, 0, handle, d_a, d_b, d_c, n, n, n, 8},  {1, 0, handle, d_a, d_b, d_c, n, n, n, 16},
                         {1, 0, handle, d_a, d_b, d_c, n, n, n, 32}, {2, 8, handle, d_a, d_b, d_c, n, n, n, 0},
                         {2, 16, handle, d_a, d_b, d_c, n, n, n, 0}, {2, 32, handle, d_a, d_b, d_c, n, n, n, 0},
                         {3, 0, handle, d_a, d_b, d_c, n, n, n, 0},  {4, 0, handle, d_a, d_b, d_c, n, n, n, 0},
                         {5, 0, handle, d_a, d_b, d_c, n, n, n, 0},  {6, 0, handle, d_a, d_b, d_c, n, n, n, 0},
                         {7, 0, handle, d_a, d_b, d_c, n, n, n, 0}};
        for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
            double t = tflops(n, n, n, lb_time_ms(run_version, &jobs[j], 1, reps));
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
static const lb_opt options[] = {
    {"--sweep", LB_OPT_FLAG, &do_sweep, "TFLOP/s table over naive block and TILE choices, sizes 512..8192"},
};
static const lb_program program = {
    "matmul", "C = A @ B in fp32 (row-major): naive, tiled and register-blocked kernels vs cuBLAS",
    "versions:\n"
    "  0  cuBLAS sgemm (default math, no TF32)\n"
    "  1  naive, one thread per element (--block B: B x B threads)\n"
    "  2  shared-memory tiles (TILE from the build: make TILE=32)\n"
    "  3  2D register blocking, 4x4 outputs per thread\n"
    "  4  128x128 tiles, 8x8 per thread, float4 loads, transposed A tile\n"
    "  5  as 4, conflict-free 4x4 quads, double buffering\n"
    "  6  cp.async pipeline, 3 stages, K steps of 16, grouped block order\n"
    "  7  2x2 warp tiles, 8x16 outputs per thread, double buffering\n"
    "--size is N (square) or M,N,K.\n",
    LB_USE_ALL, options, 1};

int main(int argc, char **argv)
{
    lb_args args = {.size = {{4096}, 1}, .max_size_dims = 3, .block = 16, .iters = 10, .seed = 1,
                    .version = -1, .max_version = N_VERSIONS - 1};
    lb_parse_args(&program, &args, argc, argv);
    int M, N, K;
    lb_size_mnk(&program, &args, &M, &N, &K);
    if (args.block > 32) lb_usage_error(&program, "--block %d: the naive kernel's block is B x B threads, B at most 32", args.block);

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
        printf("matmul: C = A @ B, fp32, M=%d N=%d K=%d, %s (%s), seed %llu\n", M, N, K, gpu.prop.name,
               gpu.sm, args.seed);

    float *h_a = lb_host_alloc(sizeof(float) * a_n, "A"), *h_b = lb_host_alloc(sizeof(float) * b_n, "B");
    float *h_ref = lb_host_alloc(sizeof(float) * c_n, "cuBLAS's C"), *h_c = lb_host_alloc(sizeof(float) * c_n, "C");
    lb_rng rng;
    lb_rng_seed(&rng, args.seed);
    lb_fill_uniform(h_a, a_n, -1.0f, 1.0f, &rng);
    lb_fill_uniform(h_b, b_n, -1.0f, 1.0f, &rng);
    float *d_a, *d_b, *d_c;
    CUDA_CHECK(cudaMalloc((void **)&d_a, sizeof(float) * a_n));
    CUDA_CHECK(cudaMalloc((void **)&d_b, sizeof(float) * b_n));
    CUDA_CHECK(cudaMalloc((void **)&d_c, sizeof(float) * c_n));
    CUDA_CHECK(cudaMemcpy(d_a, h_a, sizeof(float) * a_n, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_b, h_b, sizeof(float) * b_n, cudaMemcpyHostToDevice));

    /* cuBLAS first: checked against the CPU, then the reference for every kernel */
    mm_job base = {0, 0, handle, d_a, d_b, d_c, M, N, K, args.block};
    lb_poison_device(d_c, sizeof(float) * c_n);
    CUDA_CHECK(run_version(&base));
    CUDA_CHECK(cudaMemcpy(h_ref, d_c, sizeof(float) * c_n, cudaMemcpyDeviceToHost));
    lb_check check[N_VERSIONS];
    float *h_cpu = cpu_reference(h_a, h_b, M, N, K);
    check[0] = check_cublas(h_a, h_b, h_ref, h_cpu, M, N, K, &rng, args.quiet);
    int failures = check[0].n_bad != 0;

    int first = args.version < 0 ? 0 : args.version, last = args.version < 0 ? N_VERSIONS - 1 : args.version;
    float ms[N_VERSIONS] = {0};
    for (int v = first; v <= last; v++) {
        mm_job job = {v, 0, handle, d_a, d_b, d_c, M, N, K, args.block};
        if (v > 0) {
            lb_poison_device(d_c, sizeof(float) * c_n);   /* NaN: an element never written fails */
            CUDA_CHECK(run_version(&job));
            CUDA_CHECK(cudaMemcpy(h_c, d_c, sizeof(float) * c_n, cudaMemcpyDeviceToHost));
            /* both sides carry rounding error: twice the tolerance */
            check[v] = lb_check_f32(version_name[v], h_c, h_ref, c_n, 2 * abs_tol(K), 2e-5, args.quiet);
            if (h_cpu) {   /* small enough: against the CPU directly too */
                lb_check c = lb_check_f32("vs CPU", h_c, h_cpu, c_n, abs_tol(K), 1e-5, args.quiet);
                check[v].n_bad += c.n_bad;
            }
            failures += check[v].n_bad != 0;
        }
        if (!args.check_only) ms[v] = lb_time_ms(run_version, &job, 2, args.iters);
    }
    if (!args.check_only && first > 0) ms[0] = lb_time_ms(run_version, &base, 2, args.iters);

    char sz[64], buf[96], title[64];
    snprintf(sz, sizeof sz, "%dx%dx%d", M, N, K);
    int best = -1;
    if (!args.quiet) printf(" ver  kernel                         ms    TFLOP/s  vs cuBLAS   check\n");
    for (int v = first; v <= last; v++) {
        const char *verdict = lb_check_summary(&check[v], buf, sizeof buf);
        if (args.check_only) {
            if (!args.quiet) printf("  %2d  %-24s          -          -          -   %s\n", v, version_title(v, title, sizeof title), verdict);
            continue;
        }
        double t = tflops(M, N, K, ms[v]), ratio = ms[0] / ms[v];
        if (v > 0 && (best < 0 || ms[v] < ms[best])) best = v;
        if (!args.quiet)
            printf("  %2d  %-24s %10.3f %10.2f %10.2f   %s\n", v, version_title(v, title, sizeof title), ms[v], t, ratio, verdict);
        char name[32];
        if (v == 2) snprintf(name, sizeof name, "tiled%d", matmul_tile());
        else snprintf(name, sizeof name, "%s", version_name[v]);
        lb_result r = {"matmul", v, name, sz, ms[v], "tflops", t, "cublas", ratio, check[v].n_bad == 0};
        lb_print_result(&r);
    }
    if (args.quiet) {
        if (best > 0)
            printf("matmul: %s, best v%d %.2f TFLOP/s = %.2fx cuBLAS, %s\n", sz, best, tflops(M, N, K, ms[best]),
                   ms[0] / ms[best], failures ? "FAIL" : "all PASS");
        else
            printf("matmul: %s, %s\n", sz, failures ? "FAIL" : "all versions PASS");
    }

    CUBLAS_CHECK(cublasDestroy(handle));
    CUDA_CHECK(cudaFree(d_a));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_c));
    free(h_a); free(h_b); free(h_ref); free(h_c); free(h_cpu);
    return failures ? LB_EXIT_FAIL : LB_EXIT_PASS;
}
